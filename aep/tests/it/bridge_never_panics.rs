//! Mangled input never makes a bridge panic: corpus lines and their
//! CloudEvents, with bytes flipped, cut and duplicated, go through every
//! bridge function. Whatever decodes must convert or be refused with an
//! error; nothing is asserted about which.

use std::path::PathBuf;

use aep::bridge::cloudevents::{forward, inverse, CloudEvent};
use aep::bridge::{ocsf, otlp};
use aep::{Capture, Event};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// `text` with a few random edits: a byte replaced by one of JSON's
/// structural characters or a digit, a cut, a duplicated span.
fn mangle(text: &str, rng: &mut Rng) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(bytes.len());
        match rng.below(4) {
            0 => {
                let alphabet = b"{}[]\",:0-9.eZ+ \\";
                bytes[at] = alphabet[rng.below(alphabet.len())];
            }
            1 => bytes.truncate(at),
            2 => {
                let end = (at + rng.below(16)).min(bytes.len());
                let span = bytes[at..end].to_vec();
                bytes.splice(at..at, span);
            }
            _ => {
                bytes.remove(at.min(bytes.len().saturating_sub(1)));
            }
        }
        if bytes.is_empty() {
            break;
        }
    }
    bytes
}

fn exercise_event(event: &Event) {
    if let Ok(ce) = forward(event) {
        let _ = ce.check();
        let _ = inverse(&ce);
    }
    for max_capture in Capture::ALL {
        let _ = otlp::to_log_record(
            event,
            &otlp::Options {
                max_capture,
                ..otlp::Options::default()
            },
        );
        let _ = ocsf::project(event, &ocsf::Options { max_capture });
    }
}

#[test]
fn mangled_events_and_cloudevents_never_panic() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/valid.jsonl");
    let corpus = std::fs::read_to_string(path).expect("valid.jsonl");
    let mut rng = Rng(0x5eed_b41d_9e00_0001);
    let (mut events, mut cloudevents) = (0, 0);
    for line in corpus.lines() {
        let ce_text = serde_json::from_str::<Event>(line)
            .ok()
            .and_then(|e| forward(&e).ok())
            .map(|ce| serde_json::to_string(&ce).unwrap())
            .unwrap_or_default();
        for _ in 0..40 {
            if let Ok(event) = serde_json::from_slice::<Event>(&mangle(line, &mut rng)) {
                events += 1;
                exercise_event(&event);
            }
            if let Ok(ce) = serde_json::from_slice::<CloudEvent>(&mangle(&ce_text, &mut rng)) {
                cloudevents += 1;
                let _ = ce.check();
                if let Ok(inbound) = inverse(&ce) {
                    exercise_event(&inbound.event);
                }
            }
        }
    }
    // Enough of the mangled lines still decode to reach the bridges.
    assert!(events > 500 && cloudevents > 500, "{events} {cloudevents}");
}
