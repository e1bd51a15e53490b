//! SSE subscribers: each reads its stream, counts measured events and
//! probes apart (by the `event:` line), and, for the latency run, reads
//! each event's send time from its `sentus` attribute. Counting scans
//! lines without decoding JSON, so the subscribers cost little beside
//! the relay.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use memchr::memmem;
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinHandle;

use super::client::{query_escape, Target};
use super::events::{MEASURED_TYPE, PROBE_TYPE, SENT_ATTRIBUTE};
use super::Error;

/// Splits a byte stream into lines (without `\n`, `\r` kept), across
/// chunk boundaries.
#[derive(Debug, Default)]
pub struct Lines {
    carry: Vec<u8>,
}

impl Lines {
    /// Calls `line` for every line `chunk` completes.
    pub fn feed(&mut self, chunk: &[u8], mut line: impl FnMut(&[u8])) {
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', chunk) {
            if self.carry.is_empty() {
                line(&chunk[start..end]);
            } else {
                self.carry.extend_from_slice(&chunk[start..end]);
                line(&self.carry);
                self.carry.clear();
            }
            start = end + 1;
        }
        self.carry.extend_from_slice(&chunk[start..]);
    }
}

/// The clock send times are read on: microseconds since the run began.
#[derive(Debug, Clone, Copy)]
pub struct Clock(Instant);

impl Clock {
    /// A clock starting now.
    pub fn start() -> Clock {
        Clock(Instant::now())
    }

    /// Microseconds since the start.
    pub fn now_us(&self) -> u64 {
        self.0.elapsed().as_micros() as u64
    }
}

/// What one subscriber has read so far, shared with the run.
#[derive(Debug, Default)]
pub struct Counts {
    /// Measured events received.
    pub measured: AtomicU64,
    /// Probe events received.
    pub probes: AtomicU64,
    /// Set when the stream ended or failed before the subscriber was done.
    pub ended: AtomicBool,
    /// Why it ended early.
    pub error: Mutex<Option<Error>>,
}

impl Counts {
    /// Why the subscriber ended early, if it did.
    pub fn failure(&self) -> Option<Error> {
        if !self.ended.load(Ordering::Acquire) {
            return None;
        }
        let error = self.error.lock().unwrap_or_else(|e| e.into_inner()).clone();
        Some(error.unwrap_or_else(|| Error::new("a subscriber's stream ended early")))
    }
}

/// The kind of the SSE message being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Measured,
    Probe,
    Other,
}

/// Reads SSE lines into counts and latency samples.
struct Tally {
    kind: Kind,
    measured: u64,
    probes: u64,
    /// With a clock: one latency sample (µs) per measured event.
    latency: Option<(Clock, Vec<u64>, memmem::Finder<'static>)>,
}

impl Tally {
    fn line(&mut self, line: &[u8]) {
        if let Some(kind) = line.strip_prefix(b"event: ") {
            self.kind = if kind == MEASURED_TYPE.as_bytes() {
                Kind::Measured
            } else if kind == PROBE_TYPE.as_bytes() {
                Kind::Probe
            } else {
                Kind::Other
            };
        } else if line.starts_with(b"data:") {
            match self.kind {
                Kind::Measured => {
                    self.measured += 1;
                    if let Some((clock, samples, finder)) = &mut self.latency {
                        if let Some(sent) = sent_us(line, finder) {
                            samples.push(clock.now_us().saturating_sub(sent));
                        }
                    }
                }
                Kind::Probe => self.probes += 1,
                Kind::Other => {}
            }
            self.kind = Kind::Other;
        }
    }
}

/// The send time a data line carries.
fn sent_us(line: &[u8], finder: &memmem::Finder<'_>) -> Option<u64> {
    let at = finder.find(line)? + finder.needle().len();
    let digits = line[at..].iter().take_while(|b| b.is_ascii_digit());
    let mut value: u64 = 0;
    let mut any = false;
    for d in digits {
        value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        any = true;
    }
    any.then_some(value)
}

/// A running subscriber.
pub struct Subscriber {
    /// Its counts.
    pub counts: Arc<Counts>,
    task: JoinHandle<Result<Vec<u64>, Error>>,
}

impl Subscriber {
    /// Waits (at most `limit`) for it to finish; gives its latency
    /// samples.
    pub async fn finish(self, limit: Duration) -> Result<Vec<u64>, Error> {
        let abort = self.task.abort_handle();
        match tokio::time::timeout(limit, self.task).await {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => Err(Error::new(format!("a subscriber task failed: {e}"))),
            Err(_) => {
                abort.abort();
                Err(Error::new(format!(
                    "a subscriber did not finish within {limit:?}"
                )))
            }
        }
    }

    /// Closes its connection.
    pub fn close(self) {
        self.task.abort();
    }
}

/// What a subscriber is for.
pub struct Plan {
    /// The session its filter names.
    pub session: String,
    /// It ends after this many measured events.
    pub until: u64,
    /// Record latency samples on this clock.
    pub clock: Option<Clock>,
    /// Woken whenever any subscriber reads a chunk.
    pub progress: Arc<Notify>,
    /// Taken while connecting, so a burst of connections waits in turn
    /// instead of overflowing the relay's accept backlog.
    pub connecting: Arc<Semaphore>,
}

/// The `/stream` path whose filter names `session`.
pub fn stream_path(session: &str) -> String {
    let filter = format!(r#"{{"session":{}}}"#, serde_json::Value::from(session));
    format!("/stream?filter={}", query_escape(&filter))
}

/// Starts a subscriber.
pub fn spawn(target: &Target, plan: Plan) -> Subscriber {
    let counts = Arc::new(Counts::default());
    let shared = counts.clone();
    let target = target.clone();
    let task = tokio::spawn(async move {
        let result = read(&target, &plan, &shared).await;
        if let Err(e) = &result {
            *shared.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.clone());
        }
        if result.is_err() || shared.measured.load(Ordering::Relaxed) < plan.until {
            shared.ended.store(true, Ordering::Release);
        }
        plan.progress.notify_waiters();
        result
    });
    Subscriber { counts, task }
}

async fn read(target: &Target, plan: &Plan, counts: &Counts) -> Result<Vec<u64>, Error> {
    let conn = {
        let _permit = plan.connecting.acquire().await;
        target.connect().await?
    };
    let path = stream_path(&plan.session);
    let mut stream = conn.stream(&path).await?;
    let mut lines = Lines::default();
    let mut tally = Tally {
        kind: Kind::Other,
        measured: 0,
        probes: 0,
        latency: plan.clock.map(|clock| {
            let needle = format!("\"{SENT_ATTRIBUTE}\":");
            let finder = memmem::Finder::new(needle.as_bytes()).into_owned();
            (
                clock,
                Vec::with_capacity(plan.until.min(1 << 20) as usize),
                finder,
            )
        }),
    };
    while tally.measured < plan.until {
        let Some(frame) = stream.body.frame().await else {
            return Err(Error::new(format!(
                "GET {path}: the stream ended after {} of {} events",
                tally.measured, plan.until
            )));
        };
        let frame = frame.map_err(|e| Error::new(format!("GET {path}: {e}")))?;
        if let Ok(data) = frame.into_data() {
            lines.feed(&data, |line| tally.line(line));
            counts.measured.store(tally.measured, Ordering::Release);
            counts.probes.store(tally.probes, Ordering::Release);
            plan.progress.notify_waiters();
        }
    }
    Ok(tally
        .latency
        .map(|(_, samples, _)| samples)
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_span_chunks() {
        let mut lines = Lines::default();
        let mut seen = Vec::new();
        for chunk in [&b"event: a\nda"[..], b"ta: {", b"}\n\n", b": ping\n\nx"] {
            lines.feed(chunk, |l| seen.push(String::from_utf8(l.to_vec()).unwrap()));
        }
        assert_eq!(seen, ["event: a", "data: {}", "", ": ping", ""]);
    }

    #[test]
    fn counts_measured_and_probes_apart_and_reads_send_times() {
        let finder = memmem::Finder::new(b"\"sentus\":").into_owned();
        let mut tally = Tally {
            kind: Kind::Other,
            measured: 0,
            probes: 0,
            latency: Some((Clock::start(), Vec::new(), finder)),
        };
        let text = format!(
            "event: {MEASURED_TYPE}\ndata: {{\"sentus\":0,\"x\":1}}\nid: s:0:1\n\n\
             : ping\n\n\
             event: {PROBE_TYPE}\ndata: {{}}\n\n\
             data: {{\"untyped\":true}}\n\n\
             event: {MEASURED_TYPE}\ndata: {{\"sentus\":5}}\n\n"
        );
        let mut lines = Lines::default();
        lines.feed(text.as_bytes(), |l| tally.line(l));
        assert_eq!((tally.measured, tally.probes), (2, 1));
        assert_eq!(tally.latency.unwrap().1.len(), 2);
    }

    #[test]
    fn send_times_are_digits_only() {
        let finder = memmem::Finder::new(b"\"sentus\":");
        assert_eq!(sent_us(br#"{"sentus":1234,"a":1}"#, &finder), Some(1234));
        assert_eq!(sent_us(br#"{"sentus":"12"}"#, &finder), None);
        assert_eq!(sent_us(br#"{"a":1}"#, &finder), None);
        assert_eq!(
            sent_us(br#"{"sentus":99999999999999999999999}"#, &finder),
            None
        );
    }

    #[test]
    fn the_filter_is_escaped() {
        assert_eq!(
            stream_path("a b"),
            "/stream?filter=%7B%22session%22%3A%22a%20b%22%7D"
        );
    }
}
