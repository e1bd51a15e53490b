//! The ingest ceiling: how fast this process decodes the very lines the
//! ingest run posts with `aep::EventRef::from_json` (UTF-8 check, then
//! the strict borrowed envelope decode a relay's admission starts with),
//! on one thread.

use std::hint::black_box;
use std::time::Instant;

use aep::EventRef;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::Error;

/// The decode figure.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Decode {
    /// Lines decoded per pass.
    pub events: u64,
    /// Timed passes (after one warm-up); the median is reported.
    pub passes: usize,
    /// Events per second, median pass.
    pub events_per_s: f64,
}

/// Decodes every line of `bodies` `passes` times.
pub fn run(bodies: &[Bytes], passes: usize) -> Result<Decode, Error> {
    let pass =
        || -> Result<u64, Error> {
            let mut events = 0;
            for body in bodies {
                for line in body.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                    let text = std::str::from_utf8(line)
                        .map_err(|e| Error::new(format!("a generated line is not UTF-8: {e}")))?;
                    black_box(EventRef::from_json(text).map_err(|e| {
                        Error::new(format!("a generated line does not decode: {e}"))
                    })?);
                    events += 1;
                }
            }
            Ok(events)
        };
    let events = pass()?;
    let mut times = Vec::with_capacity(passes);
    for _ in 0..passes.max(1) {
        let start = Instant::now();
        pass()?;
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(Decode {
        events,
        passes: times.len(),
        events_per_s: events as f64 / times[times.len() / 2],
    })
}
