//! An admitted event as the relay keeps and delivers it: its bytes,
//! rendered once as an SSE message that the WebSocket text shares, and
//! the few attributes buffering and back-pressure read.

use std::ops::Range;
use std::sync::Arc;

use aep::{Capture, Event, EventRef, Severity};
use bytes::{BufMut, Bytes, BytesMut};

use crate::budget::{Holders, Shareable};

/// Where an entry sits in a session's history: `(epoch, seq)` for a
/// positioned event; a command or `attention.routed` (no `seq`) sorts
/// right after the position that was last when it arrived (`minor` > 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Key {
    pub epoch: u64,
    pub seq: i128,
    pub minor: u32,
}

impl Key {
    /// The position a resume asks to continue strictly after.
    pub fn after(epoch: u64, seq: i128) -> Key {
        Key {
            epoch,
            seq,
            minor: 0,
        }
    }
}

/// What a buffered entry costs beyond its frame and dedupe key: the
/// `Stored` itself and its `Arc`, the buffer's `(Key, Arc)` slot, the
/// dedupe set's entry and the key's `Arc` (a round figure above their
/// sizes, so the byte bounds hold in resident memory too).
pub(crate) const ENTRY_OVERHEAD: usize = std::mem::size_of::<Stored>() + 128;

/// What a [`Stored`] reads of an event besides its text: ingest gives the
/// borrowed envelope it checked, down-levelling the owned copy it made.
pub(crate) trait Envelope {
    fn event_type(&self) -> &str;
    fn session_id(&self) -> Option<&str>;
    fn position(&self) -> Option<u64>;
    fn epoch_number(&self) -> u64;
    fn severity_level(&self) -> Severity;
    fn capture_level(&self) -> Capture;
    /// `(source, id)`.
    fn identity(&self) -> (&str, &str);
}

impl Envelope for Event {
    fn event_type(&self) -> &str {
        &self.type_
    }

    fn session_id(&self) -> Option<&str> {
        self.session.as_deref()
    }

    fn position(&self) -> Option<u64> {
        self.seq
    }

    fn epoch_number(&self) -> u64 {
        self.epoch_or_default()
    }

    fn severity_level(&self) -> Severity {
        self.severity_or_default()
    }

    fn capture_level(&self) -> Capture {
        self.capture_or_default()
    }

    fn identity(&self) -> (&str, &str) {
        (&self.source, &self.id)
    }
}

impl Envelope for EventRef<'_> {
    fn event_type(&self) -> &str {
        self.type_()
    }

    fn session_id(&self) -> Option<&str> {
        self.session()
    }

    fn position(&self) -> Option<u64> {
        self.seq()
    }

    fn epoch_number(&self) -> u64 {
        self.epoch_or_default()
    }

    fn severity_level(&self) -> Severity {
        self.severity_or_default()
    }

    fn capture_level(&self) -> Capture {
        self.capture_or_default()
    }

    fn identity(&self) -> (&str, &str) {
        self.dedupe_key()
    }
}

/// One event, serialised once and shared by every delivery of it.
#[derive(Debug)]
pub(crate) struct Stored {
    /// `event: T\ndata: JSON\n[id: s:e:q\n]\n`.
    frame: Bytes,
    /// The JSON text within `frame`.
    json: Range<usize>,
    pub session: Option<Arc<str>>,
    pub epoch: u64,
    pub seq: Option<u64>,
    pub severity: Severity,
    pub capture: Capture,
    /// `(source, id)`, length-prefixed so no two pairs share a key.
    pub dedupe: Arc<[u8]>,
    /// Whether this is an `agent.*` event (live only, never buffered).
    pub agent_scoped: bool,
    /// The consumers' queues holding it (counted once in
    /// `--max-queued-bytes`, however many).
    holders: Holders,
}

impl Shareable for Stored {
    fn holders(&self) -> &Holders {
        &self.holders
    }

    fn size(&self) -> usize {
        Stored::size(self)
    }
}

impl Stored {
    /// Renders `event`, whose JSON text is `json` (one line: no CR or LF).
    pub fn new(event: &impl Envelope, json: &[u8]) -> Stored {
        debug_assert!(!json.iter().any(|b| matches!(b, b'\r' | b'\n')));
        let session: Option<Arc<str>> = event.session_id().map(Arc::from);
        let epoch = event.epoch_number();
        let (frame, json) = render(event, json, session.as_deref());
        let (source, id) = event.identity();
        Stored {
            frame: frame.freeze(),
            json,
            session,
            epoch,
            seq: event.position(),
            severity: event.severity_level(),
            capture: event.capture_level(),
            dedupe: dedupe_key(source, id),
            agent_scoped: event.event_type().starts_with("agent."),
            holders: Holders::default(),
        }
    }

    /// Renders a down-levelled or otherwise re-encoded event.
    pub fn encode(event: &Event) -> Result<Stored, serde_json::Error> {
        let json = serde_json::to_vec(event)?;
        Ok(Stored::new(event, &json))
    }

    /// The SSE message.
    pub fn sse(&self) -> Bytes {
        self.frame.clone()
    }

    /// The event's JSON text: a WebSocket text frame, an SSE `data:`.
    pub fn json(&self) -> Bytes {
        self.frame.slice(self.json.clone())
    }

    /// The bytes this entry holds in a replay buffer, for the byte bounds
    /// and the buffered-bytes gauge: its frame, its dedupe key, and
    /// [`ENTRY_OVERHEAD`] for the structures that hold it, so that many
    /// small events are charged what they cost, not only their text.
    pub fn size(&self) -> usize {
        self.frame.len() + self.dedupe.len() + ENTRY_OVERHEAD
    }

    /// Its place in a session's history (`minor` 0: a positioned event).
    pub fn key(&self) -> Option<Key> {
        self.seq.map(|seq| Key::after(self.epoch, seq.into()))
    }
}

/// The SSE message of `event` (`json` its text, `session` its session),
/// and where the JSON sits in it.
///
/// The buffer is sized exactly: a frame that outgrew its buffer would be
/// copied on the way, and keep up to twice its size for as long as it is
/// buffered.
fn render(event: &impl Envelope, json: &[u8], session: Option<&str>) -> (BytesMut, Range<usize>) {
    let epoch = event.epoch_number();
    let event_type = event.event_type();
    let id = match (session, event.position()) {
        (Some(s), Some(seq)) if sse_safe(s) => Some((s, seq)),
        _ => None,
    };
    let id_len = id.map_or(0, |(s, seq)| {
        "id: ::\n".len() + s.len() + decimal_len(epoch) + decimal_len(seq)
    });
    let len = "event: \ndata: \n\n".len() + event_type.len() + json.len() + id_len;
    let mut frame = BytesMut::with_capacity(len);
    frame.put_slice(b"event: ");
    frame.put_slice(event_type.as_bytes());
    frame.put_slice(b"\ndata: ");
    let start = frame.len();
    frame.put_slice(json);
    let end = frame.len();
    frame.put_u8(b'\n');
    if let Some((s, seq)) = id {
        frame.put_slice(b"id: ");
        frame.put_slice(s.as_bytes());
        frame.put_u8(b':');
        frame.put_slice(decimal(epoch, &mut [0; 20]));
        frame.put_u8(b':');
        frame.put_slice(decimal(seq, &mut [0; 20]));
        frame.put_u8(b'\n');
    }
    frame.put_u8(b'\n');
    (frame, start..end)
}

/// The number of decimal digits of `n`.
fn decimal_len(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// `n` in decimal, written into the end of `buf` (once per event, so
/// without the formatting machinery).
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

/// The dedupe key of `(source, id)`: `len(source):source id`, made in
/// one allocation.
pub(crate) fn dedupe_key(source: &str, id: &str) -> Arc<[u8]> {
    let mut digits = [0; 20];
    let length = decimal(source.len() as u64, &mut digits);
    length
        .iter()
        .chain(b":")
        .chain(source.as_bytes())
        .chain(id.as_bytes())
        .copied()
        .collect()
}

/// Whether a session id can go into an SSE `id:` line: no CR, LF or NUL
/// (a browser ignores an id holding NUL).
fn sse_safe(session: &str) -> bool {
    !session.contains(['\r', '\n', '\0'])
}

/// `text` with the whitespace between JSON tokens removed: a body spread
/// over several lines becomes one line, its value and member order
/// unchanged. `text` must be valid JSON (CR and LF then only ever occur
/// between tokens, since strings cannot hold them raw).
pub(crate) fn compact(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    for &b in text {
        if in_string {
            out.push(b);
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
            out.push(b);
        } else if !matches!(b, b' ' | b'\t' | b'\r' | b'\n') {
            out.push(b);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(json: &str) -> Event {
        Event::from_json(json).unwrap()
    }

    const LINE: &str = r#"{"aep":"0.1","id":"e1","type":"session.started","time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a","session":"s:1","seq":4,"epoch":2}"#;

    #[test]
    fn frame_carries_type_data_and_position() {
        let stored = Stored::new(&event(LINE), LINE.as_bytes());
        let sse = String::from_utf8(stored.sse().to_vec()).unwrap();
        assert_eq!(
            sse,
            format!("event: session.started\ndata: {LINE}\nid: s:1:2:4\n\n")
        );
        assert_eq!(&stored.json()[..], LINE.as_bytes());
        assert_eq!(stored.key(), Some(Key::after(2, 4)));
    }

    #[test]
    fn frames_are_sized_exactly() {
        let cases = [
            LINE.to_owned(),
            LINE.replace(r#","epoch":2"#, ""),
            LINE.replace(r#""seq":4"#, r#""seq":0"#),
            LINE.replace(r#""seq":4"#, &format!(r#""seq":{}"#, u64::MAX))
                .replace(r#""epoch":2"#, &format!(r#""epoch":{}"#, u64::MAX)),
            LINE.replace(r#""epoch":2"#, r#""epoch":1000000000"#),
            LINE.replace(r#""s:1""#, r#""s\nx""#),
            r#"{"aep":"0.1","id":"h","type":"agent.heartbeat","time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a"}"#.to_owned(),
        ];
        for line in cases {
            let event = event(&line);
            let (frame, json) = render(&event, line.as_bytes(), event.session.as_deref());
            assert_eq!(frame.capacity(), frame.len(), "{line}");
            assert_eq!(&frame[json], line.as_bytes());
        }
    }

    #[test]
    fn no_id_line_for_unsafe_sessions_or_missing_seq() {
        let line = LINE.replace(r#""s:1""#, r#""s\nx""#);
        let stored = Stored::new(&event(&line), line.as_bytes());
        assert!(!String::from_utf8(stored.sse().to_vec())
            .unwrap()
            .contains("\nid:"));
        let agent = r#"{"aep":"0.1","id":"h","type":"agent.heartbeat","time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a"}"#;
        let stored = Stored::new(&event(agent), agent.as_bytes());
        assert!(stored.agent_scoped);
        assert!(!String::from_utf8(stored.sse().to_vec())
            .unwrap()
            .contains("\nid:"));
    }

    #[test]
    fn compaction_keeps_strings_and_order() {
        let text = b"{\n  \"b\": \"x y\\\" \\n z\",\r\n  \"a\" : [1, 2]\n}\n";
        assert_eq!(
            String::from_utf8(compact(text)).unwrap(),
            r#"{"b":"x y\" \n z","a":[1,2]}"#
        );
    }

    #[test]
    fn dedupe_keys_do_not_collide_across_the_split() {
        assert_ne!(dedupe_key("ab", "c"), dedupe_key("a", "bc"));
        assert_eq!(&dedupe_key("urn:a", "e1")[..], b"5:urn:ae1");
        let long = "s".repeat(1234);
        assert!(dedupe_key(&long, "x").starts_with(b"1234:sss"));
    }

    #[test]
    fn decimals() {
        for n in [0, 7, 10, 99, 100, 4_294_967_296, u64::MAX] {
            let mut buf = [0; 20];
            assert_eq!(decimal(n, &mut buf), n.to_string().as_bytes());
            assert_eq!(decimal_len(n), n.to_string().len());
        }
    }
}
