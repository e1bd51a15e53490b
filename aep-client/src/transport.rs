//! One interface for the three emitter bindings (AEP-0003 §3.1, §3.2,
//! §3.5): a [`Transport`] takes event lines; a [`Publisher`] stamps a
//! session's events with [`SessionEmitter`] and hands them to one.
//!
//! | transport | delivery | on a full queue |
//! |---|---|---|
//! | [`JsonlFile`](crate::jsonl::JsonlFile) | one atomic `write` per line, fsync optional | none (writes block) |
//! | [`HttpEmitter`](crate::http::HttpEmitter) | NDJSON batches, retried with the same ids | drops `debug`/`info` first, counted |
//! | [`Socket`](crate::socket::Socket) | WebSocket after `hello`, reconnecting | drops `debug`/`info` first, counted |

use std::future::Future;
use std::time::Duration;

use aep::{Event, Payload, Severity};

use crate::error::Error;
use crate::session::{Attrs, SessionEmitter};

/// What a transport reports when it closes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flushed {
    /// Lines still queued or in flight when the wait ended: not
    /// delivered.
    pub undelivered: usize,
    /// Lines dropped from the bounded queue (`debug`/`info` only,
    /// AEP-0003 §8.4), over the transport's life.
    pub dropped: u64,
}

/// Where event lines go. Each implementation keeps AEP-0003 §8.4: a
/// bounded queue that drops `debug`/`info` first and counts the drops,
/// and never drops `notice` and above (the caller waits instead).
pub trait Transport: Send + Sync {
    /// Queues (or writes) one event line: one JSON object, no newline.
    /// `severity` decides what may be dropped under pressure.
    fn send(
        &self,
        line: String,
        severity: Severity,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// Lines dropped so far.
    fn dropped(&self) -> u64;

    /// Delivers what is queued, waiting at most `wait`, and stops.
    fn close(self, wait: Duration) -> impl Future<Output = Flushed> + Send
    where
        Self: Sized;
}

/// A session's events, stamped and sent through one transport.
///
/// ```no_run
/// # async fn run() -> Result<(), aep_client::Error> {
/// use std::time::Duration;
/// use aep::{Payload, SessionStarted};
/// use aep_client::http::{HttpConfig, HttpEmitter};
/// use aep_client::session::{Attrs, SessionEmitter};
/// use aep_client::transport::Publisher;
///
/// let session = SessionEmitter::new("urn:aep:demo", "demo", "s1", 0);
/// let http = HttpEmitter::start(HttpConfig::new("http://127.0.0.1:8787", None));
/// let mut publisher = Publisher::new(session, http);
/// publisher.emit(&Payload::SessionStarted(SessionStarted::new()), Attrs::default()).await?;
/// let flushed = publisher.close(Duration::from_secs(5)).await;
/// assert_eq!(flushed.undelivered, 0);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Publisher<T> {
    session: SessionEmitter,
    transport: T,
}

impl<T: Transport> Publisher<T> {
    /// Emits `session`'s events through `transport`.
    pub fn new(session: SessionEmitter, transport: T) -> Publisher<T> {
        Publisher { session, transport }
    }

    /// Stamps `payload` as the session's next event and sends it; its
    /// `capture` is the one in `attrs` (see
    /// [`emit_full`](Publisher::emit_full) for full content).
    pub async fn emit(&mut self, payload: &Payload, attrs: Attrs) -> Result<Event, Error> {
        let event = self
            .session
            .event(payload, attrs)
            .map_err(|v| Error::Invalid(v.to_string()))?;
        self.send(&event).await?;
        Ok(event)
    }

    /// Stamps `payload`, which holds full content, as the session's next
    /// event at the session's ceiling ([`SessionEmitter::full`]) and sends
    /// it.
    pub async fn emit_full(&mut self, payload: &Payload, attrs: Attrs) -> Result<Event, Error> {
        let event = self
            .session
            .full(payload, attrs)
            .map_err(|v| Error::Invalid(v.to_string()))?;
        self.send(&event).await?;
        Ok(event)
    }

    /// Sends an event built elsewhere (an ack from `aep::control::Target`,
    /// an `agent.*` event), at its own severity.
    pub async fn send(&self, event: &Event) -> Result<(), Error> {
        let line = serde_json::to_string(event).map_err(|e| Error::Invalid(e.to_string()))?;
        self.transport.send(line, event.severity_or_default()).await
    }

    /// The session's stamper (its ids, `seq` and epoch).
    pub fn session(&mut self) -> &mut SessionEmitter {
        &mut self.session
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// Closes the transport, delivering what it holds within `wait`.
    pub async fn close(self, wait: Duration) -> Flushed {
        self.transport.close(wait).await
    }
}
