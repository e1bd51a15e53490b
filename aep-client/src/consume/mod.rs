//! Consuming a relay: SSE (AEP-0003 §3.3) and WebSocket (§3.5, §6.5)
//! subscriptions as one [`Stream`] of [`Item`]s: events (decoded, with
//! their exact line) and [`Notice`]s, the `replay-exhausted` markers among
//! them, never hidden.
//!
//! What a [`Subscription`] does for its caller:
//!
//! - **filter and ceiling**: the `attr-match` filter is checked before
//!   anything is sent (it fails closed, AEP-0003 §6.2) and applied again
//!   to what arrives; an event above the capture ceiling is down-levelled
//!   here if the relay did not.
//! - **resume** (§7): positions given at the start and every position the
//!   caller has taken since ([`Subscription::positions`], to persist) are
//!   sent on each reconnect: `from` on both bindings, `Last-Event-ID` too
//!   on SSE. At most [`budget`](Subscribe::budget) positions ride the
//!   live request (the most recently moved); the rest are read with
//!   `live=0` requests of the same size before live delivery resumes. A
//!   relay refusing the set as too large (a `400` or `limit-exceeded`)
//!   halves it.
//! - **dedupe** on `(source, id)` in bounded memory: a redelivery at a
//!   reconnect or a relay's at-least-once hop reaches the caller once.
//! - **reconnects** with exponential backoff and jitter; a refusal that
//!   will not change (a bad token, a refused filter) ends the stream with
//!   the error instead.
//!
//! Every buffer is bounded: the stream's queue, the dedupe memory, the
//! position map, one event's size.
//!
//! ```no_run
//! # async fn run() -> Result<(), aep_client::Error> {
//! use futures_util::StreamExt;
//! use aep_client::consume::{Item, Notice, Position, Subscribe};
//!
//! let mut sub = Subscribe::new("http://127.0.0.1:8787")
//!     .token("secret")
//!     .filter(serde_json::json!({"type": ["attention.*"]}))?
//!     .resume([Position::new("s1", 0, 41)])
//!     .start();
//! while let Some(item) = sub.next().await {
//!     match item? {
//!         Item::Event(delivered) => println!("{}", delivered.line),
//!         Item::Notice(Notice::ReplayExhausted { session, earliest }) => {
//!             eprintln!("{session}: history before {}:{} is gone", earliest.epoch, earliest.seq)
//!         }
//!         Item::Notice(other) => eprintln!("{other:?}"),
//!     }
//!     let _save_these = sub.positions();
//! }
//! # Ok(()) }
//! ```

mod dedupe;
mod driver;
mod positions;
mod sse;
mod ws;

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use aep::filter::Filter;
use aep::{Capture, Event};
use futures_util::Stream;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::error::Error;

pub use positions::Position;
use positions::Positions;

/// Which binding a subscription rides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// `GET /stream` (read-only, plain HTTP).
    Sse,
    /// `/socket` with a `subscribe` frame.
    WebSocket,
}

/// An event as delivered: decoded, and its exact line (what the relay
/// sent, unless it had to be down-levelled here).
#[derive(Debug, Clone, PartialEq)]
pub struct Delivered {
    /// The event.
    pub event: Event,
    /// Its JSON line.
    pub line: String,
}

/// What a subscription says besides events.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Notice {
    /// The first connection is up; `resumed` positions rode it.
    Connected {
        /// Positions sent on the live request.
        resumed: usize,
    },
    /// Connected again after a drop (resumed from the positions taken).
    Reconnected {
        /// Positions sent on the live request.
        resumed: usize,
    },
    /// The connection dropped (why); a reconnect follows.
    Disconnected(Error),
    /// The relay no longer holds the session's history from the asked
    /// position: delivery goes on from `earliest`. Consult a history store
    /// for the gap (AEP-0003 §5).
    ReplayExhausted {
        /// The session.
        session: String,
        /// The earliest position the relay still held.
        earliest: Position,
    },
    /// A history read ([`Subscribe::history`]) is complete; the stream
    /// ends.
    ReplayComplete,
    /// The relay refused the resume set as too large: at most `budget`
    /// positions ride the live request from now on.
    BudgetShrunk {
        /// The new budget.
        budget: usize,
    },
    /// Something the relay asked or answered could not be honoured (a
    /// refused `from=all`, a `live=0` read that failed): what was missed
    /// is said here.
    Degraded(String),
    /// A line that is not a usable event (not JSON, an unsupported
    /// version, too long): skipped, with the reason and a short excerpt.
    Skipped {
        /// Why.
        reason: String,
        /// The start of the line.
        excerpt: String,
    },
    /// The position map was full: this session's position was forgotten
    /// (a later reconnect will not resume it).
    Forgot(Position),
}

/// One thing a subscription yields.
// Events are the common item: boxing them would cost an allocation each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// An event.
    Event(Delivered),
    /// A notice.
    Notice(Notice),
}

/// One item of a connection, before dedupe and bookkeeping.
#[derive(Debug, PartialEq)]
pub(crate) enum Raw {
    /// An event line and its SSE `id:`.
    Event(String, Option<String>),
    Exhausted(Position),
    Complete,
    /// Not usable: why, and an excerpt.
    Skipped(String, String),
    /// The connection is over.
    End(Error),
}

/// What the driver needs.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub relay: String,
    pub token: Option<String>,
    pub binding: Binding,
    pub filter: Filter,
    pub filter_json: Option<Value>,
    pub capture: Option<Capture>,
    pub live: bool,
    pub replay_all: bool,
    pub budget: usize,
    pub dedupe: usize,
    pub max_sessions: usize,
    pub backoff: (Duration, Duration),
    pub idle_timeout: Duration,
    pub max_event_bytes: usize,
    pub queue: usize,
    pub agent: String,
    pub instance: String,
}

/// A subscription, built: [`start`](Subscribe::start) it.
#[derive(Debug, Clone)]
pub struct Subscribe {
    settings: Settings,
    positions: Vec<Position>,
}

impl Subscribe {
    /// A live subscription to everything on `relay` (its base URL), over
    /// SSE, without resume.
    pub fn new(relay: impl Into<String>) -> Subscribe {
        Subscribe {
            settings: Settings {
                relay: relay.into(),
                token: None,
                binding: Binding::Sse,
                filter: Filter::all(),
                filter_json: None,
                capture: None,
                live: true,
                replay_all: false,
                budget: 64,
                dedupe: 65_536,
                max_sessions: 100_000,
                backoff: (Duration::from_millis(100), Duration::from_secs(10)),
                idle_timeout: Duration::from_secs(90),
                max_event_bytes: 16 << 20,
                queue: 256,
                agent: "aep-client".into(),
                instance: format!("aep-client/{}", std::process::id()),
            },
            positions: Vec::new(),
        }
    }

    /// The bearer token.
    pub fn token(mut self, token: impl Into<String>) -> Subscribe {
        self.settings.token = Some(token.into());
        self
    }

    /// The bearer token, if any.
    pub fn token_opt(mut self, token: Option<String>) -> Subscribe {
        self.settings.token = token;
        self
    }

    /// Rides the WebSocket instead of SSE.
    pub fn binding(mut self, binding: Binding) -> Subscribe {
        self.settings.binding = binding;
        self
    }

    /// The `attr-match` filter (AEP-0003 §6); refused here when the relay
    /// would refuse it (fail closed).
    pub fn filter(mut self, filter: Value) -> Result<Subscribe, Error> {
        self.settings.filter =
            Filter::from_value(&filter).map_err(|e| Error::Invalid(format!("filter: {e}")))?;
        self.settings.filter_json = Some(filter);
        Ok(self)
    }

    /// The capture ceiling (AEP-0003 §6.4).
    pub fn capture(mut self, ceiling: Capture) -> Subscribe {
        self.settings.capture = Some(ceiling);
        self
    }

    /// Resumes after these positions (the last event processed in each
    /// session).
    pub fn resume(mut self, positions: impl IntoIterator<Item = Position>) -> Subscribe {
        self.positions.extend(positions);
        self
    }

    /// On a cold start (no positions), asks for every session the relay
    /// holds from its earliest position (`from=all`, AEP-0003 §5); a relay
    /// that refuses it is followed live, with a [`Notice::Degraded`].
    pub fn replay_all(mut self) -> Subscribe {
        self.settings.replay_all = true;
        self
    }

    /// A history read (`live=0`): what the relay holds after the
    /// positions (or of the session the filter names, or everything with
    /// [`replay_all`](Subscribe::replay_all)), then
    /// [`Notice::ReplayComplete`] and the end.
    pub fn history(mut self) -> Subscribe {
        self.settings.live = false;
        self
    }

    /// At most `positions` resume positions on the live request (default
    /// 64); the rest are read with `live=0` requests.
    pub fn budget(mut self, positions: usize) -> Subscribe {
        self.settings.budget = positions;
        self
    }

    /// `(source, id)` pairs remembered for dedupe (default 65 536).
    pub fn dedupe_capacity(mut self, pairs: usize) -> Subscribe {
        self.settings.dedupe = pairs;
        self
    }

    /// Sessions whose positions are tracked (default 100 000).
    pub fn max_sessions(mut self, sessions: usize) -> Subscribe {
        self.settings.max_sessions = sessions;
        self
    }

    /// The first and the longest wait between reconnects (default 100 ms
    /// and 10 s).
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Subscribe {
        self.settings.backoff = (initial, max);
        self
    }

    /// How long a silent connection is kept (default 90 s; relays ping
    /// every 30 s at most).
    pub fn idle_timeout(mut self, idle: Duration) -> Subscribe {
        self.settings.idle_timeout = idle;
        self
    }

    /// The largest event accepted (default 16 MiB); larger ones are
    /// skipped with a [`Notice::Skipped`].
    pub fn max_event_bytes(mut self, bytes: usize) -> Subscribe {
        self.settings.max_event_bytes = bytes;
        self
    }

    /// The WebSocket `hello` identity (default `aep-client` and
    /// `aep-client/{pid}`).
    pub fn identity(mut self, agent: impl Into<String>, instance: impl Into<String>) -> Subscribe {
        self.settings.agent = agent.into();
        self.settings.instance = instance.into();
        self
    }

    /// Starts the subscription's task (on the current tokio runtime).
    pub fn start(self) -> Subscription {
        let mut positions = Positions::new(self.settings.max_sessions);
        for p in &self.positions {
            positions.advance(&p.session, p.epoch, p.seq);
        }
        let positions = Arc::new(Mutex::new(positions));
        let (tx, rx) = mpsc::channel(self.settings.queue.max(1));
        let task = tokio::spawn(driver::run(self.settings, positions.clone(), tx));
        Subscription {
            rx,
            positions,
            task,
            forgotten: None,
        }
    }
}

/// A running subscription: a [`Stream`] of `Result<Item, Error>`. An
/// `Err` is final (a refusal that will not change); the stream ends after
/// it. Dropping the subscription stops it.
pub struct Subscription {
    rx: mpsc::Receiver<Result<Item, Error>>,
    positions: Arc<Mutex<Positions>>,
    task: JoinHandle<()>,
    forgotten: Option<Position>,
}

impl Subscription {
    /// The next item; `None` at the end.
    pub async fn recv(&mut self) -> Option<Result<Item, Error>> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }

    /// The position of every session whose events the caller has taken
    /// (least recently moved first): persist them to resume later.
    pub fn positions(&self) -> Vec<Position> {
        self.positions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .all()
    }

    /// Stops the subscription.
    pub fn close(self) {}

    /// Records what the caller takes.
    fn took(&mut self, item: &Result<Item, Error>) {
        if let Ok(Item::Event(delivered)) = item {
            let e = &delivered.event;
            if let (Some(session), Some(seq)) = (&e.session, e.seq) {
                let mut positions = self.positions.lock().unwrap_or_else(|e| e.into_inner());
                self.forgotten = positions.advance(session, e.epoch_or_default(), seq);
            }
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Stream for Subscription {
    type Item = Result<Item, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Some(position) = self.forgotten.take() {
            return Poll::Ready(Some(Ok(Item::Notice(Notice::Forgot(position)))));
        }
        let polled = self.rx.poll_recv(cx);
        if let Poll::Ready(Some(item)) = &polled {
            self.took(item);
        }
        polled
    }
}
