//! The HTTP POST emitter (AEP-0003 §3.2): events queue in a bounded
//! outbox and leave as NDJSON batches (at most
//! [`batch_events`](HttpConfig::batch_events) events, or what came within
//! [`batch_wait`](HttpConfig::batch_wait) of the first).
//!
//! What each answer does to a batch:
//!
//! - `2xx`: delivered.
//! - network failure, `408`, `429`, `5xx`: sent again, the same lines
//!   (the same ids, §3.2.4), after an exponential backoff with jitter,
//!   for as long as the emitter is open (and within the close wait).
//! - `400` naming its first bad line (`{"line": n}`, 0-based): that line
//!   is dropped and [reported](Rejected), the rest sent again at once; a
//!   `400` naming no line is bisected until the bad line stands alone.
//! - `413` (`too-many-events`, `payload-too-large`): the batch is split in
//!   halves (and later batches are kept to the smaller size); one event
//!   too large alone is reported.
//! - any other status (`401`, `403`, `415`, `426`...): the batch is
//!   reported, not retried (it would be refused the same way).
//!
//! Nothing is lost silently: every line is delivered, dropped from the
//! outbox (`debug`/`info` only, counted in [`Stats::dropped`]), reported
//! as [`Rejected`], or counted undelivered when [`close`](HttpEmitter::close)
//! gives up.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep::Severity;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::error::Error;
use crate::outbox::{Outbox, Queued};
use crate::transport::{Flushed, Transport};

mod batch;
mod deliver;

pub use batch::{BatchAnswer, BatchPoster};
use deliver::{run, Poster};

/// The rejections kept for [`HttpEmitter::rejected`].
pub(crate) const KEPT_REJECTIONS: usize = 1024;
/// The most of a response body read.
pub(crate) const MAX_RESPONSE: usize = 64 * 1024;

/// A line the relay refused for good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// The event line as sent.
    pub line: String,
    /// The HTTP status.
    pub status: u16,
    /// The body's `error` code (`invalid-event`, `too-many-events`...),
    /// empty when the body had none.
    pub code: String,
    /// The body's `detail`, or the body itself.
    pub detail: String,
}

/// Called with each rejected line, on the emitter's task: keep it short.
pub type OnReject = Arc<dyn Fn(&Rejected) + Send + Sync>;

/// How an [`HttpEmitter`] posts.
#[derive(Clone)]
pub struct HttpConfig {
    /// The relay's base URL (`http://127.0.0.1:8787`); events go to
    /// `{relay}/events`.
    pub relay: String,
    /// The bearer token, if the relay wants one.
    pub token: Option<String>,
    /// Most events in one batch (default 256).
    pub batch_events: usize,
    /// Most bytes in one batch, unless one event is larger (default 1 MiB).
    pub batch_bytes: usize,
    /// How long a batch waits for more events after its first (default
    /// 50 ms).
    pub batch_wait: Duration,
    /// Lines the outbox holds (default 4 096).
    pub outbox: usize,
    /// The first and the longest wait between retries (default 100 ms and
    /// 5 s).
    pub backoff: (Duration, Duration),
    /// How long one request may take (default 30 s).
    pub timeout: Duration,
    /// Called with every rejected line.
    pub on_reject: Option<OnReject>,
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("relay", &self.relay)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("batch_events", &self.batch_events)
            .field("batch_bytes", &self.batch_bytes)
            .field("batch_wait", &self.batch_wait)
            .field("outbox", &self.outbox)
            .field("backoff", &self.backoff)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl HttpConfig {
    /// The defaults for `relay`.
    pub fn new(relay: impl Into<String>, token: Option<String>) -> HttpConfig {
        HttpConfig {
            relay: relay.into(),
            token,
            batch_events: 256,
            batch_bytes: 1 << 20,
            batch_wait: Duration::from_millis(50),
            outbox: 4096,
            backoff: (Duration::from_millis(100), Duration::from_secs(5)),
            timeout: Duration::from_secs(30),
            on_reject: None,
        }
    }
}

/// Counters of an [`HttpEmitter`]'s life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Lines the relay accepted.
    pub delivered: u64,
    /// Requests that carried a batch (accepted or not).
    pub requests: u64,
    /// Requests sent again after a network failure or a retryable status.
    pub retries: u64,
    /// Lines refused for good ([`Rejected`]).
    pub rejected: u64,
    /// Lines dropped from the full outbox (`debug`/`info`).
    pub dropped: u64,
}

#[derive(Default)]
pub(crate) struct Shared {
    pub(crate) delivered: AtomicU64,
    pub(crate) requests: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) rejected: AtomicU64,
    pub(crate) in_flight: AtomicUsize,
    pub(crate) kept: Mutex<VecDeque<Rejected>>,
    /// When closing: the moment to give up retrying.
    pub(crate) deadline: Mutex<Option<Instant>>,
}

/// Posts events to a relay in batches, with retries. Dropping it stops
/// the background task; [`close`](HttpEmitter::close) delivers first.
pub struct HttpEmitter {
    outbox: Outbox,
    shared: Arc<Shared>,
    task: Option<JoinHandle<()>>,
}

impl HttpEmitter {
    /// Starts the emitter's task (on the current tokio runtime).
    pub fn start(config: HttpConfig) -> HttpEmitter {
        let outbox = Outbox::new(config.outbox);
        let shared = Arc::new(Shared::default());
        let poster = Poster::new(config, shared.clone());
        let task = tokio::spawn(run(poster, outbox.clone()));
        HttpEmitter {
            outbox,
            shared,
            task: Some(task),
        }
    }

    /// Queues an event line (one JSON object, no newline). A full outbox
    /// drops `debug`/`info` lines first (counted); a `notice`-and-above
    /// line waits for room.
    pub async fn send(&self, line: String, severity: Severity) -> Result<(), Error> {
        if line.contains(['\n', '\r']) {
            return Err(Error::Invalid(
                "an NDJSON line cannot hold a line break".into(),
            ));
        }
        self.outbox
            .push(Queued { line, severity })
            .await
            .map_err(|_| Error::Closed)
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        let s = &self.shared;
        Stats {
            delivered: s.delivered.load(Ordering::Relaxed),
            requests: s.requests.load(Ordering::Relaxed),
            retries: s.retries.load(Ordering::Relaxed),
            rejected: s.rejected.load(Ordering::Relaxed),
            dropped: self.outbox.dropped(),
        }
    }

    /// Takes the rejected lines kept so far (the latest 1 024; the count
    /// of all is in [`Stats::rejected`]).
    pub fn rejected(&self) -> Vec<Rejected> {
        let mut kept = self.shared.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.drain(..).collect()
    }

    /// Lines queued or in flight.
    pub fn pending(&self) -> usize {
        self.outbox.len() + self.shared.in_flight.load(Ordering::Relaxed)
    }

    /// Delivers what is queued, retrying within `wait`, then stops. What
    /// could not be delivered by then is counted in
    /// [`Flushed::undelivered`].
    pub async fn close(mut self, wait: Duration) -> Flushed {
        let deadline = Instant::now() + wait;
        *self
            .shared
            .deadline
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(deadline);
        self.outbox.close();
        if let Some(task) = self.task.take() {
            let abort = task.abort_handle();
            if tokio::time::timeout_at(deadline + Duration::from_millis(200), task)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
        Flushed {
            undelivered: self.pending(),
            dropped: self.outbox.dropped(),
        }
    }
}

impl Drop for HttpEmitter {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl Transport for HttpEmitter {
    async fn send(&self, line: String, severity: Severity) -> Result<(), Error> {
        HttpEmitter::send(self, line, severity).await
    }

    fn dropped(&self) -> u64 {
        self.outbox.dropped()
    }

    async fn close(self, wait: Duration) -> Flushed {
        HttpEmitter::close(self, wait).await
    }
}
