//! Property tests with fixed seeds and bounded case counts, over generated
//! conformant streams:
//!
//! - the batch projection repairs any arrival order;
//! - redeliveries (byte-identical or with members reordered) change neither
//!   the projection nor the validator's errors;
//! - whatever is done to the bytes of a stream, validating and projecting it
//!   ends with findings, never a panic, and the summary adds up.

use std::panic::{catch_unwind, AssertUnwindSafe};

use aep::projection::{project, Snapshot};
use aep::reader::EventReader;
use aep::stream::{validate_reader, Finding, Level, Options, Summary};
use aep::Event;
use serde_json::{json, Value};

/// xorshift64*: a small, seedable generator, so every failure replays.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

/// One emitter's session being generated.
struct Session {
    source: String,
    session: String,
    epoch: u64,
    seq: u64,
}

impl Session {
    /// Appends an event of `kind` with the `extra` members, at the next
    /// position; returns its id.
    fn emit(&mut self, events: &mut Vec<Value>, kind: &str, extra: Value) -> String {
        let id = format!("e{}", events.len());
        let n = events.len();
        let mut event = json!({
            "aep": "0.1", "id": id, "type": kind,
            "time": format!("2026-12-01T10:{:02}:{:02}Z", n / 60 % 60, n % 60),
            "source": self.source, "agent": "gen", "session": self.session,
            "epoch": self.epoch, "seq": self.seq,
        });
        for (k, v) in extra.as_object().unwrap() {
            event[k] = v.clone();
        }
        events.push(event);
        self.seq += 1;
        id
    }
}

/// A conformant stream, as JSON objects in emission order: sessions from
/// two sources (sharing session names), each started, with runs (some
/// closed, some without a start), attention requests closed before the
/// end, epoch bumps that restart seq, commands and their acks, and an end.
fn conformant_stream(rng: &mut Rng) -> Vec<Value> {
    let mut events = Vec::new();
    for s in 0..1 + rng.below(4) {
        let mut g = Session {
            source: format!("urn:aep:agent:{}", s % 2),
            session: format!("s{}", s / 2),
            epoch: 0,
            seq: 0,
        };
        g.emit(&mut events, "session.started", json!({}));
        for r in 0..rng.below(4) {
            let run = format!("r{r}");
            let started = rng.below(4) != 0;
            if started {
                g.emit(&mut events, "run.started", json!({"run": run}));
            }
            for _ in 0..rng.below(3) {
                let kind = ["permission", "input", "review"][rng.below(3)];
                let data = json!({"data": {"kind": kind, "prompt": "1"}});
                let request = g.emit(&mut events, "attention.requested", data);
                if rng.below(2) == 0 {
                    let answer = json!({"subject": request, "data": {"answer": {}}});
                    g.emit(&mut events, "attention.answered", answer);
                }
                let (kind, data) = if rng.below(2) == 0 {
                    ("attention.resolved", json!({"resolution": "answered"}))
                } else {
                    ("attention.timeout", json!({"after_ms": 1000}))
                };
                g.emit(&mut events, kind, json!({"subject": request, "data": data}));
            }
            if rng.below(3) == 0 {
                // A restart: a new epoch, seq from 0.
                g.epoch += 1 + rng.below(3) as u64;
                g.seq = 0;
            }
            if rng.below(3) != 0 || !started {
                let terminal = ["run.finished", "run.failed", "run.cancelled"][rng.below(3)];
                let data = if terminal == "run.failed" {
                    json!({"reason": "crash"})
                } else {
                    json!({})
                };
                g.emit(&mut events, terminal, json!({"run": run, "data": data}));
            }
        }
        if rng.below(2) == 0 {
            // A command from a console, and the target's ack.
            let command = format!("c{}", events.len());
            events.push(json!({
                "aep": "0.1", "id": command, "type": "control.pause",
                "time": "2026-12-01T11:00:00Z", "source": "urn:aep:console:c",
                "agent": "console", "session": g.session,
            }));
            g.emit(&mut events, "control.accepted", json!({"cause": command}));
        }
        if rng.below(4) != 0 {
            g.emit(
                &mut events,
                "session.ended",
                json!({"data": {"reason": "normal"}}),
            );
        }
    }
    events
}

/// The members of `value` written in reverse order, as text (a `Map` may
/// sort its keys, so the text is written by hand).
fn reordered_text(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let members: Vec<String> = map
                .iter()
                .rev()
                .map(|(k, v)| format!("{}:{}", Value::from(k.as_str()), reordered_text(v)))
                .collect();
            format!("{{{}}}", members.join(","))
        }
        other => other.to_string(),
    }
}

fn decode(lines: &[String]) -> Vec<Event> {
    lines
        .iter()
        .map(|l| Event::from_json(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn validate(text: &str) -> (Summary, Vec<Finding>) {
    let mut findings = Vec::new();
    let summary = validate_reader(
        text.as_bytes(),
        Options::default(),
        |f| findings.push(f),
        |_| {},
    )
    .expect("reading from memory does not fail");
    (summary, findings)
}

#[test]
fn generated_streams_are_conformant() {
    for seed in 1..=200 {
        let mut rng = Rng(seed);
        let lines: Vec<String> = conformant_stream(&mut rng)
            .iter()
            .map(Value::to_string)
            .collect();
        let (summary, findings) = validate(&lines.join("\n"));
        assert_eq!(
            (summary.errors, summary.warnings),
            (0, 0),
            "seed {seed}: {findings:#?}"
        );
        assert!(
            project(&decode(&lines)).violations.is_empty(),
            "seed {seed}"
        );
    }
}

#[test]
fn the_batch_projection_repairs_any_arrival_order() {
    for seed in 1..=200 {
        let mut rng = Rng(seed);
        let mut lines: Vec<String> = conformant_stream(&mut rng)
            .iter()
            .map(Value::to_string)
            .collect();
        let in_order = project(&decode(&lines));
        rng.shuffle(&mut lines);
        assert_eq!(project(&decode(&lines)), in_order, "seed {seed}");
    }
}

#[test]
fn redeliveries_change_neither_the_projection_nor_the_errors() {
    for seed in 1..=200 {
        let mut rng = Rng(seed);
        let events = conformant_stream(&mut rng);
        let lines: Vec<String> = events.iter().map(Value::to_string).collect();
        let expected: Snapshot = project(&decode(&lines));
        // Copies go after their original, so file order stays conformant.
        let mut with_copies = Vec::new();
        let mut copies = 0;
        for (event, line) in events.iter().zip(&lines) {
            with_copies.push(line.clone());
            for _ in 0..rng.below(3) {
                with_copies.push(if rng.below(2) == 0 {
                    line.clone()
                } else {
                    reordered_text(event)
                });
                copies += 1;
            }
        }
        assert_eq!(project(&decode(&with_copies)), expected, "seed {seed}");
        let (summary, findings) = validate(&with_copies.join("\n"));
        assert_eq!(summary.errors, 0, "seed {seed}: {findings:#?}");
        assert_eq!(summary.warnings, copies, "seed {seed}");
        assert!(findings.iter().all(|f| f.rule.name() == "duplicate"));
        // `reordered_text` does reorder (when there is more than one
        // member), so the test is not comparing a text with itself.
        assert_ne!(reordered_text(&events[0]), lines[0]);
    }
}

fn mutate(rng: &mut Rng, bytes: &mut Vec<u8>) {
    const TOKENS: &[&[u8]] = &[
        b"null",
        b"{",
        b"}",
        b"[",
        b"]",
        b"\"",
        b",",
        b":",
        b"\n",
        b"\r\n",
        b"\\u0000",
        b"\\ud800",
        b"1e400",
        b"-1",
        b"18446744073709551616",
        b"\"aep\":\"1.0\"",
        b"\"seq\":0",
        b"\"epoch\":9",
        b"\"type\":\"session.ended\"",
        b"\xff",
        b"\xe2\x82",
        b"\0",
    ];
    for _ in 0..=rng.below(4) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(4) {
            0 if !bytes.is_empty() => {
                let end = (at + rng.below(16)).min(bytes.len());
                bytes.drain(at.min(end)..end);
            }
            1 if !bytes.is_empty() => {
                let i = at.min(bytes.len() - 1);
                bytes[i] = rng.next_u64() as u8;
            }
            _ => {
                let token = TOKENS[rng.below(TOKENS.len())];
                bytes.splice(at..at, token.iter().copied());
            }
        }
    }
}

#[test]
fn mutated_streams_give_findings_never_panics() {
    for seed in 1..=300 {
        let mut rng = Rng(seed);
        let mut bytes = conformant_stream(&mut rng)
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
            .into_bytes();
        mutate(&mut rng, &mut bytes);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let mut findings = Vec::new();
            let options = Options {
                max_line_bytes: 64 + rng.below(2048),
            };
            let summary = validate_reader(
                bytes.as_slice(),
                options.clone(),
                |f| findings.push(f),
                |_| {},
            )
            .unwrap();
            let errors = findings.iter().filter(|f| f.level == Level::Error).count() as u64;
            assert_eq!(summary.errors, errors);
            assert_eq!(summary.warnings, findings.len() as u64 - errors);
            assert!(findings.windows(2).all(|w| w[0].line <= w[1].line));
            assert!(findings
                .iter()
                .all(|f| f.line >= 1 && f.line <= summary.lines));
            let events: Vec<Event> =
                EventReader::with_max_line_bytes(bytes.as_slice(), options.max_line_bytes)
                    .flatten()
                    .collect();
            let _ = serde_json::to_string(&project(&events)).unwrap();
        }));
        assert!(
            outcome.is_ok(),
            "seed {seed}: {}",
            String::from_utf8_lossy(&bytes)
        );
    }
}
