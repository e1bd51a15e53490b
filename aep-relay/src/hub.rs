//! The relay's shared state: buffers, subscriptions and routes behind one
//! lock, taken once per batch and never held across an await. Replays
//! are snapshotted under the lock (with the subscription registered in
//! the same critical section, so replay then live has no gap and no
//! duplicate at the seam) and filtered and encoded outside it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use aep::filter::Filter;
use aep::{Capture, EventRef};
use bytes::Bytes;
use tokio::sync::mpsc;

use crate::buffer::{Admission, Buffers, Earliest};
use crate::config::Config;
use crate::fanout::{self, Forms, Outbox, Subscriber};
use crate::ingest::Admitted;
use crate::metrics::Metrics;
use crate::routing::{Declared, Refused, Roster, Routes};
use crate::stored::{Key, Stored};

/// Where a replay starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum From {
    /// Explicit positions: `(session, epoch, seq)`, `seq` -1 for the start.
    Positions(Vec<(String, u64, i128)>),
    /// Every held session from its earliest held position.
    All,
}

/// A subscription request.
pub(crate) struct Request {
    pub filter: Filter,
    pub ceiling: Option<Capture>,
    pub from: Option<From>,
    /// Replay this session's whole buffer too (SSE `live=0` history reads).
    pub history: Option<String>,
    /// Register for live delivery under this id, into this queue.
    pub live: Option<(u64, Outbox)>,
}

/// One item of a replay, in delivery order.
pub(crate) enum ReplayItem {
    /// The asked position predates what the session holds.
    Exhausted {
        session: String,
        earliest: Earliest,
    },
    Event(Arc<Stored>),
}

/// A subscription's replay, made as it is read: the held events are
/// shared with the buffer, and each is filtered and down-levelled only
/// when the consumer is ready for it, so a consumer that does not read
/// holds no copy of what it was promised.
pub(crate) struct Replay {
    sessions: std::vec::IntoIter<(String, crate::buffer::Replay)>,
    current: std::vec::IntoIter<Arc<Stored>>,
    filter: Filter,
    ceiling: Option<Capture>,
}

impl Iterator for Replay {
    type Item = ReplayItem;

    fn next(&mut self) -> Option<ReplayItem> {
        loop {
            for stored in self.current.by_ref() {
                if let Some(form) = replay_form(&stored, &self.filter, self.ceiling) {
                    return Some(ReplayItem::Event(form));
                }
            }
            let (session, replay) = self.sessions.next()?;
            self.current = replay.events.into_iter();
            if let Some(earliest) = replay.exhausted {
                return Some(ReplayItem::Exhausted { session, earliest });
            }
        }
    }
}

struct State {
    buffers: Buffers,
    subscribers: Vec<Subscriber>,
    routes: Routes,
}

pub(crate) struct Hub {
    pub config: Config,
    pub metrics: Metrics,
    state: Mutex<State>,
    ids: AtomicU64,
}

impl Hub {
    pub fn new(config: Config) -> Hub {
        Hub {
            state: Mutex::new(State {
                buffers: Buffers::new(config.buffer, config.max_sessions),
                subscribers: Vec::new(),
                routes: Routes::new(config.claim_grace),
            }),
            config,
            metrics: Metrics::default(),
            ids: AtomicU64::new(1),
        }
    }

    /// A fresh id for a connection or subscription.
    pub fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock would be a bug; the state is
        // still consistent between statements, so keep serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Buffers and fans out `batch`, in order; `from` is the emitting
    /// WebSocket connection, whose positioned events claim their session.
    pub fn ingest(&self, batch: &[Admitted], from: Option<u64>) {
        let mut state = self.lock();
        let state = &mut *state;
        let depths = fanout::depths(&state.subscribers);
        let mut closed = Vec::new();
        for admitted in batch {
            self.metrics.events_in.inc();
            let admission = state.buffers.admit(&admitted.stored);
            if admission == Admission::Duplicate {
                self.metrics.duplicates.inc();
            }
            forget_evicted(state);
            // Only an event the buffer accepted claims its session, under
            // its own `source` (a replayed duplicate claims nothing).
            if let (Admission::Buffered, Some(conn), Some(session), Some(_)) = (
                &admission,
                from,
                &admitted.stored.session,
                admitted.stored.seq,
            ) {
                let source = admitted.event.source();
                state.routes.claim(conn, session, source, Instant::now());
            }
            fanout::fan_out(
                &state.subscribers,
                &depths,
                &mut closed,
                &admitted.event,
                &admitted.stored,
                &self.metrics,
            );
        }
        self.remove_closed(state, &closed);
        self.update_gauges(state);
    }

    /// Ends the subscriptions whose consumer is gone or was cut off.
    fn remove_closed(&self, state: &mut State, closed: &[u64]) {
        if !closed.is_empty() {
            state.subscribers.retain(|s| !closed.contains(&s.id));
            self.metrics
                .subscriptions
                .set(state.subscribers.len() as u64);
        }
    }

    fn update_gauges(&self, state: &State) {
        let m = &self.metrics;
        m.sessions.set(state.buffers.sessions() as u64);
        m.buffered_events.set(state.buffers.events() as u64);
        m.buffered_bytes.set(state.buffers.bytes() as u64);
    }

    /// Registers a subscription (when live) and snapshots its replay.
    pub fn subscribe(&self, request: Request) -> Replay {
        let mut raw: Vec<(String, crate::buffer::Replay)> = Vec::new();
        {
            let mut state = self.lock();
            let mut seen = std::collections::HashSet::new();
            match &request.from {
                Some(From::All) => {
                    for name in state.buffers.names() {
                        let mut replay = state.buffers.replay(&name, None);
                        replay.exhausted = None;
                        raw.push((name.to_string(), replay));
                    }
                }
                Some(From::Positions(positions)) => {
                    for (session, epoch, seq) in positions {
                        if seen.insert(session.clone()) {
                            let after = Key::after(*epoch, *seq);
                            raw.push((session.clone(), state.buffers.replay(session, Some(after))));
                        }
                    }
                }
                None => {}
            }
            if let Some(session) = &request.history {
                if request.from != Some(From::All) && seen.insert(session.clone()) {
                    raw.push((session.clone(), state.buffers.replay(session, None)));
                }
            }
            if let Some((id, outbox)) = request.live.clone() {
                state.subscribers.push(Subscriber {
                    id,
                    filter: request.filter.clone(),
                    ceiling: request.ceiling,
                    outbox,
                });
                self.metrics
                    .subscriptions
                    .set(state.subscribers.len() as u64);
            }
        }
        Replay {
            sessions: raw.into_iter(),
            current: Vec::new().into_iter(),
            filter: request.filter,
            ceiling: request.ceiling,
        }
    }

    /// Ends subscriptions.
    pub fn unsubscribe(&self, ids: &[u64]) {
        let mut state = self.lock();
        state.subscribers.retain(|s| !ids.contains(&s.id));
        self.metrics
            .subscriptions
            .set(state.subscribers.len() as u64);
    }

    /// Ends every subscription feeding `outbox`.
    pub fn unsubscribe_outbox(&self, outbox: &Outbox) {
        let mut state = self.lock();
        state.subscribers.retain(|s| !s.outbox.same(outbox));
        self.metrics
            .subscriptions
            .set(state.subscribers.len() as u64);
    }

    /// Registers a WebSocket connection's declarations and command queue.
    pub fn connect(&self, conn: u64, declared: Declared, commands: mpsc::Sender<Bytes>) {
        self.lock().routes.connect(conn, declared, commands);
    }

    /// Forgets a connection; its claims are held for the claim grace.
    pub fn disconnect(&self, conn: u64) {
        self.lock().routes.disconnect(conn, Instant::now());
    }

    /// Whether connection `conn` may send this acknowledgement: only the
    /// connection its command was routed to may (says why not).
    pub fn check_ack(&self, conn: u64, ack: &Admitted) -> Result<(), String> {
        let event = &ack.event;
        self.lock()
            .routes
            .check_ack(conn, event.cause(), event.session())
    }

    /// Routes a command (its exact frame text) to its one owner, then
    /// keeps it in the session's history and fans it out.
    pub fn route(&self, command: &Admitted, frame: Bytes) -> Result<(), Refused> {
        if !self.config.authenticated() {
            return Err(Refused::Unauthorized);
        }
        let session = command.event.session().unwrap_or_default();
        let mut state = self.lock();
        let event = &command.event;
        state
            .routes
            .route(session, event.type_(), event.id(), frame, Instant::now())?;
        self.metrics.commands_routed.inc();
        self.metrics.events_in.inc();
        let state = &mut *state;
        state.buffers.admit(&command.stored);
        forget_evicted(state);
        let depths = fanout::depths(&state.subscribers);
        let mut closed = Vec::new();
        fanout::fan_out(
            &state.subscribers,
            &depths,
            &mut closed,
            &command.event,
            &command.stored,
            &self.metrics,
        );
        self.remove_closed(state, &closed);
        self.update_gauges(state);
        Ok(())
    }

    /// The live claims, one entry per (connection, session), within
    /// `budget` bytes; the reply is assembled outside the lock.
    pub fn roster(&self, budget: usize) -> Roster {
        self.lock().routes.roster(budget)
    }
}

/// Drops the claims of the sessions the buffer just evicted.
fn forget_evicted(state: &mut State) {
    for session in state.buffers.take_evicted() {
        state.routes.forget_session(&session);
    }
}

/// The form of a buffered event a replay delivers: `None` when the filter
/// does not take it.
fn replay_form(
    stored: &Arc<Stored>,
    filter: &Filter,
    ceiling: Option<Capture>,
) -> Option<Arc<Stored>> {
    let json = stored.json();
    let event = EventRef::from_slice(&json).ok()?;
    if !filter.matches(&event) {
        return None;
    }
    Some(Forms::new(&event, stored).at(ceiling))
}
