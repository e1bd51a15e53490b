//! The events the relay benchmark posts: `progress.status` events of
//! about [`EVENT_BYTES`] bytes, valid AEP, with ids and sessions fresh for
//! each run (a run tag prefixes them), and the probe events that tell a
//! subscriber is registered.

use std::io::Write;

use bytes::Bytes;

/// The type of every measured event.
pub const MEASURED_TYPE: &str = "progress.status";
/// The type of probe events, which subscribers count apart.
pub const PROBE_TYPE: &str = "progress.task.planned";
/// The size each measured event line is padded to.
pub const EVENT_BYTES: usize = 250;
/// The first `seq` of measured events in a session; probes take the
/// positions below it, so measured events always append.
pub const FIRST_SEQ: u64 = 1_000;
/// The extension attribute carrying a latency event's send time.
pub const SENT_ATTRIBUTE: &str = "sentus";

const SOURCE: &str = "urn:aep:agent:load";
const AGENT: &str = "load";
const WORDS: &[&str] = &[
    "running",
    "the",
    "relay",
    "benchmark",
    "batch",
    "after",
    "batch",
    "of",
    "generated",
    "progress",
    "events",
    "to",
    "measure",
    "ingest",
    "and",
    "fan-out",
];

/// Severity of generated events. Fan-out and latency events are
/// `notice`, which neither relay sheds under back-pressure (both drop
/// `debug` and `info` toward a slow consumer past a soft bound).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// For ingest and memory runs, which have no subscribers (the
    /// default: the attribute is left out).
    Info,
    /// For events subscribers must all receive.
    Notice,
}

/// Makes the run's events.
#[derive(Debug, Clone)]
pub struct Generator {
    tag: String,
}

impl Generator {
    /// A generator whose sessions and ids start with `tag` (lowercase
    /// letters, digits and `-` keep them readable in a relay's logs).
    pub fn new(tag: impl Into<String>) -> Generator {
        Generator { tag: tag.into() }
    }

    /// The session id for `name` in this run.
    pub fn session(&self, name: &str) -> String {
        format!("{}-{name}", self.tag)
    }

    /// Appends one measured event line (no newline): position `seq` of
    /// `session`, with its send time in `sentus` when given.
    pub fn event(
        &self,
        out: &mut Vec<u8>,
        session: &str,
        seq: u64,
        severity: Severity,
        sent_us: Option<u64>,
    ) {
        let start = out.len();
        let second = seq % 86_400;
        let _ = write!(
            out,
            r#"{{"aep":"0.1","id":"{session}.{seq}","type":"{MEASURED_TYPE}","time":"2026-12-03T{:02}:{:02}:{:02}.{:03}Z","source":"{SOURCE}","agent":"{AGENT}","session":"{session}","seq":{seq}"#,
            second / 3600,
            second / 60 % 60,
            second % 60,
            seq % 1000,
        );
        if severity == Severity::Notice {
            out.extend_from_slice(br#","severity":"notice""#);
        }
        if let Some(us) = sent_us {
            let _ = write!(out, r#","{SENT_ATTRIBUTE}":{us}"#);
        }
        // The message is model-like text: `redacted` capture (AEP-0001 §8).
        out.extend_from_slice(br#","capture":"redacted","data":{"message":""#);
        // Pad the message with words to reach the target size.
        let tail = br#""}}"#;
        let mut word = seq as usize;
        loop {
            let room = EVENT_BYTES.saturating_sub(out.len() - start + tail.len());
            if room == 0 {
                break;
            }
            let w = WORDS[word % WORDS.len()].as_bytes();
            out.extend_from_slice(&w[..w.len().min(room)]);
            if room > w.len() {
                out.push(b' ');
            }
            word += 1;
        }
        out.extend_from_slice(tail);
    }

    /// An NDJSON body of `count` measured events of `session` from
    /// position `first`.
    pub fn batch(&self, session: &str, first: u64, count: u64, severity: Severity) -> Bytes {
        let mut out = Vec::with_capacity((EVENT_BYTES + 24) * count as usize);
        for seq in first..first + count {
            self.event(&mut out, session, seq, severity, None);
            out.push(b'\n');
        }
        Bytes::from(out)
    }

    /// A probe event (`attempt` below [`FIRST_SEQ`]) of `session`, as a
    /// one-line NDJSON body.
    pub fn probe(&self, session: &str, attempt: u64) -> Bytes {
        let seq = attempt.min(FIRST_SEQ - 1);
        let line = format!(
            r#"{{"aep":"0.1","id":"{session}.probe.{attempt}","type":"{PROBE_TYPE}","time":"2026-12-03T09:00:00.000Z","source":"{SOURCE}","agent":"{AGENT}","session":"{session}","seq":{seq},"severity":"notice","data":{{"parent":"relay-load"}}}}
"#
        );
        Bytes::from(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(line: &[u8]) -> aep::Event {
        let text = std::str::from_utf8(line).unwrap();
        let event = aep::Event::from_json(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        event.validate().unwrap_or_else(|v| panic!("{text}: {v}"));
        event
    }

    #[test]
    fn measured_events_are_valid_and_near_the_target_size() {
        let generator = Generator::new("rl0a1b2c");
        let session = generator.session("ingest-99");
        for seq in [FIRST_SEQ, FIRST_SEQ + 7, 999_999] {
            let mut line = Vec::new();
            generator.event(&mut line, &session, seq, Severity::Info, None);
            assert_eq!(
                line.len(),
                EVENT_BYTES,
                "{}",
                String::from_utf8_lossy(&line)
            );
            valid(&line);
            for sent in [None, Some(98_765_432_u64)] {
                let mut line = Vec::new();
                generator.event(&mut line, &session, seq, Severity::Notice, sent);
                assert!(line.len() <= EVENT_BYTES + 40);
                let event = valid(&line);
                assert_eq!(event.type_, MEASURED_TYPE);
                assert_eq!(event.seq, Some(seq));
                assert_eq!(event.session.as_deref(), Some(session.as_str()));
                assert_eq!(event.severity, Some(aep::Severity::Notice));
                assert_eq!(
                    event.extensions.get(SENT_ATTRIBUTE),
                    sent.map(|s| aep::ExtensionValue::Integer(s as i64))
                        .as_ref()
                );
            }
        }
    }

    #[test]
    fn batches_hold_unique_ids_one_per_line() {
        let generator = Generator::new("t2");
        let body = generator.batch("s", FIRST_SEQ, 50, Severity::Info);
        let ids: std::collections::HashSet<String> = body
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| valid(l).id)
            .collect();
        assert_eq!(ids.len(), 50);
        assert!(body.ends_with(b"\n"));
    }

    #[test]
    fn probes_are_valid_and_sit_before_measured_events() {
        let generator = Generator::new("t3");
        let probe = generator.probe("s", 5_000);
        let event = valid(probe.trim_ascii_end());
        assert_eq!(event.type_, PROBE_TYPE);
        assert!(event.seq.unwrap() < FIRST_SEQ);
    }
}
