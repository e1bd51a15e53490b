//! A session's events, stamped: `source`, `agent`, `session`, a fresh
//! ULID `id`, `time`, the session's `epoch` and a rising `seq`
//! (AEP-0001 §5, §7.2). Transport-free: the caller sends the lines.

use aep::control::{rfc3339, Ids, Stamp};
use aep::emit::Emitter;
use aep::{Capture, Event, Payload, Severity};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The `source` URI the published SDKs use:
/// `aep://<host>/agent/<agent>[/session/<session>]`, each part
/// percent-encoded where it leaves the URI's unreserved characters.
pub fn source_uri(host: &str, agent: &str, session: Option<&str>) -> String {
    let mut uri = format!("aep://{}/agent/{}", encode(host), encode(agent));
    if let Some(session) = session {
        uri.push_str("/session/");
        uri.push_str(&encode(session));
    }
    uri
}

fn encode(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for b in part.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// What to stamp on one event beyond its type and payload.
#[derive(Debug, Clone, Default)]
pub struct Attrs {
    /// `run`.
    pub run: Option<String>,
    /// `step`.
    pub step: Option<String>,
    /// `subject`.
    pub subject: Option<String>,
    /// `cause`.
    pub cause: Option<String>,
    /// `severity` (absent: `info`).
    pub severity: Option<Severity>,
    /// `capture` (absent: `metadata`).
    pub capture: Option<Capture>,
}

/// Stamps the events of one session.
///
/// ```
/// use aep::{Payload, SessionStarted};
/// use aep_client::session::{Attrs, SessionEmitter};
///
/// let mut session = SessionEmitter::new("urn:aep:demo", "demo", "s1", 0);
/// let started = Payload::SessionStarted(SessionStarted::new());
/// let event = session.event(&started, Attrs::default())?;
/// assert_eq!((event.seq, event.epoch), (Some(0), Some(0)));
/// let next = session.event(&started, Attrs::default())?;
/// assert_eq!(next.seq, Some(1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SessionEmitter {
    source: String,
    agent: String,
    session: String,
    epoch: u64,
    next_seq: u64,
    ids: Ids,
    honest: Option<(Capture, Emitter)>,
}

impl SessionEmitter {
    /// A session at `epoch`, its first event at `seq` 0.
    pub fn new(
        source: impl Into<String>,
        agent: impl Into<String>,
        session: impl Into<String>,
        epoch: u64,
    ) -> SessionEmitter {
        SessionEmitter {
            source: source.into(),
            agent: agent.into(),
            session: session.into(),
            epoch,
            next_seq: 0,
            ids: Ids::new(),
            honest: None,
        }
    }

    /// Continues the session at `seq` (the next event's), for an emitter
    /// that kept its counter durably; otherwise start a new epoch.
    pub fn starting_at(mut self, seq: u64) -> SessionEmitter {
        self.next_seq = seq;
        self
    }

    /// Builds [`full`](SessionEmitter::full) events through `emitter` (its
    /// redaction pipeline) at capture `ceiling` (AEP-0003 §9.1).
    pub fn with_ceiling(mut self, ceiling: Capture, emitter: Emitter) -> SessionEmitter {
        self.honest = Some((ceiling, emitter));
        self
    }

    /// The ceiling of [`full`](SessionEmitter::full) events (`metadata`
    /// unless [`with_ceiling`](SessionEmitter::with_ceiling) said
    /// otherwise).
    pub fn ceiling(&self) -> Capture {
        self.honest
            .as_ref()
            .map_or(Capture::Metadata, |(ceiling, _)| *ceiling)
    }

    /// The next `seq` this session will stamp.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The session id.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The `source` of its events.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The `agent` of its events.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The next event's stamp, taking its `seq` (for events built
    /// elsewhere, such as `aep::control::Target`'s acks).
    pub fn stamp(&mut self) -> Stamp {
        let now = now_ms();
        let seq = self.next_seq;
        self.next_seq += 1;
        Stamp::new(self.ids.next(now), rfc3339(now), seq, self.epoch)
    }

    /// The next event of the session, carrying `payload` (its type is the
    /// payload's). The event is checked against the schemas before it is
    /// returned; on an error nothing is taken (no `seq` is used up).
    pub fn event(&mut self, payload: &Payload, attrs: Attrs) -> Result<Event, aep::Violations> {
        let Some(event_type) = payload.event_type() else {
            return Err(violation(
                "/type",
                "an untyped payload names no type: use `raw`".into(),
            ));
        };
        let data = payload
            .to_data()
            .map_err(|e| violation("/data", e.to_string()))?;
        self.raw(event_type, Some(data), attrs)
    }

    /// The next event of the session with a type and `data` given as is
    /// (vendor `x.*` types, untyped payloads). Its `capture` is the one in
    /// `attrs`, as the caller claims it: see [`full`](SessionEmitter::full)
    /// for an event that is honest by construction.
    pub fn raw(
        &mut self,
        event_type: &str,
        data: Option<aep::Data>,
        attrs: Attrs,
    ) -> Result<Event, aep::Violations> {
        let event = self.build(event_type, data, attrs);
        event.validate()?;
        self.next_seq += 1;
        Ok(event)
    }

    /// The next event of the session, built from `payload` holding **full
    /// content** (a tool's real arguments, a model's real prompt) and
    /// emitted at the session's ceiling through [`aep::emit::Emitter`]:
    /// digests from the original content, free text through the redaction
    /// pipeline at `redacted`, structural synthesis at `metadata`, and
    /// `capture` set to the level honoured. `attrs.capture` is ignored.
    ///
    /// ```
    /// use aep::emit::Emitter;
    /// use aep::{Capture, Payload, ProgressStatus};
    /// use aep_client::session::{Attrs, SessionEmitter};
    ///
    /// let mut session = SessionEmitter::new("urn:aep:demo", "demo", "s1", 0)
    ///     .with_ceiling(Capture::Metadata, Emitter::default());
    /// let mut status = ProgressStatus::new();
    /// status.message = Some("using token=abc123".into());
    /// status.percent = Some(40.0);
    /// let event = session.full(&Payload::ProgressStatus(status), Attrs::default())?;
    /// // The free-text message is above the ceiling: gone, and said so.
    /// assert_eq!(event.capture, Some(Capture::Metadata));
    /// assert_eq!(event.data.as_ref().unwrap().get(), r#"{"percent":40}"#);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn full(&mut self, payload: &Payload, attrs: Attrs) -> Result<Event, aep::Violations> {
        let Some(event_type) = payload.event_type() else {
            return Err(violation(
                "/type",
                "an untyped payload names no type: use `raw`".into(),
            ));
        };
        let data = payload
            .to_data()
            .map_err(|e| violation("/data", e.to_string()))?;
        let mut event = self.build(event_type, Some(data), attrs);
        event.capture = Some(Capture::Full);
        let ceiling = self.ceiling();
        let emitted = match &self.honest {
            Some((_, emitter)) => emitter.emit(&event, ceiling),
            None => Emitter::default().emit(&event, ceiling),
        }
        .map_err(|e| violation("/data", e.to_string()))?;
        emitted.validate()?;
        self.next_seq += 1;
        Ok(emitted)
    }

    /// The next event, not yet validated and taking no `seq`.
    fn build(&mut self, event_type: &str, data: Option<aep::Data>, attrs: Attrs) -> Event {
        let now = now_ms();
        let mut event = Event::new(
            self.ids.next(now),
            event_type,
            rfc3339(now),
            self.source.clone(),
            self.agent.clone(),
        );
        event.session = Some(self.session.clone());
        event.seq = Some(self.next_seq);
        event.epoch = Some(self.epoch);
        event.run = attrs.run;
        event.step = attrs.step;
        event.subject = attrs.subject;
        event.cause = attrs.cause;
        event.severity = attrs.severity;
        event.capture = attrs.capture;
        event.data = data;
        event
    }
}

impl SessionEmitter {
    /// An agent-scoped event (`agent.*`: no `session`, `run`, `step` or
    /// `seq`, AEP-0001 §5.2) from this emitter's identity; it takes no
    /// position.
    pub fn agent_event(&mut self, payload: &Payload) -> Result<Event, aep::Violations> {
        let Some(event_type) = payload.event_type() else {
            return Err(violation(
                "/type",
                "an untyped payload names no type".into(),
            ));
        };
        let now = now_ms();
        let mut event = Event::new(
            self.ids.next(now),
            event_type,
            rfc3339(now),
            self.source.clone(),
            self.agent.clone(),
        );
        event.data = Some(
            payload
                .to_data()
                .map_err(|e| violation("/data", e.to_string()))?,
        );
        event.validate()?;
        Ok(event)
    }
}

fn violation(pointer: &str, message: String) -> aep::Violations {
    aep::Violations(vec![aep::Violation {
        pointer: pointer.to_owned(),
        message,
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_uris_encode_their_parts() {
        assert_eq!(
            source_uri("host-a", "demo", None),
            "aep://host-a/agent/demo"
        );
        assert_eq!(
            source_uri("h", "my agent", Some("s/1")),
            "aep://h/agent/my%20agent/session/s%2F1"
        );
    }

    #[test]
    fn a_refused_event_takes_no_seq() {
        let mut session = SessionEmitter::new("urn:a", "a", "s", 3);
        assert!(session.raw("not a type", None, Attrs::default()).is_err());
        let ok = session
            .raw("x.demo.tick.done", None, Attrs::default())
            .unwrap();
        assert_eq!((ok.seq, ok.epoch), (Some(0), Some(3)));
        assert_eq!(session.stamp().seq, 1);
    }
}
