//! `relay-load`: a load generator for AEP relays (any implementation of
//! AEP-0003's HTTP ingest and SSE fan-out), measuring in one run:
//!
//! - memory per buffered event and per idle SSE connection (with the
//!   relay's PID, from `/proc`),
//! - ingest: NDJSON batches over several connections, no subscriber,
//! - fan-out: deliveries per second to 1, 20 and 200 SSE subscribers,
//! - end-to-end latency at a steady rate, at one SSE subscriber,
//! - and, in process, the `EventRef` decode rate of the ingest run's own
//!   lines: the ceiling ingest is compared with.
//!
//! Everything is bounded: only loopback addresses, fixed counts, and a
//! time limit on every phase.

pub mod client;
pub mod decode;
pub mod events;
pub mod fanout;
pub mod ingest;
pub mod latency;
pub mod memory;
pub mod procfs;
pub mod report;
pub mod sse;

use std::fmt;
use std::time::{Duration, Instant};

use client::{Conn, Target};
use events::Generator;
use serde::{Deserialize, Serialize};
use sse::Subscriber;
use tokio::sync::Notify;

pub use report::{compare, compare_with, Report};

/// A failure of the load run, naming where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

impl Error {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Error {
        Error(message.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// What to run against which relay.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    /// The relay's root, `http://127.0.0.1:PORT`.
    pub url: String,
    /// Where the fan-out and latency subscribers read (another node of a
    /// cluster); `None`: `url`.
    pub read_url: Option<String>,
    /// What the relay is called in the report.
    pub label: String,
    /// The relay's process, for the memory figures (none: not measured).
    pub pid: Option<u32>,
    /// Prefix of every session and id, so each run's sessions are fresh.
    pub tag: String,
    /// Events posted in the ingest run.
    pub ingest_events: u64,
    /// Events per POST in the ingest, fan-out and memory runs.
    pub batch: u64,
    /// Connections posting at once in the ingest run.
    pub connections: usize,
    /// Sessions the ingest run spreads its batches over.
    pub ingest_sessions: u64,
    /// Subscriber counts of the fan-out runs.
    pub fanout: Vec<usize>,
    /// Deliveries aimed at per fan-out run (events = this / subscribers,
    /// in whole batches).
    pub fanout_deliveries: u64,
    /// Batches posted ahead of the slowest subscriber.
    pub window: u64,
    /// Events per second of the latency run.
    pub rate: u64,
    /// Seconds of the latency run.
    pub latency_seconds: u64,
    /// Events per POST in the latency run.
    pub latency_batch: u64,
    /// Events buffered to measure memory per buffered event (whole
    /// sessions of the relay's replay depth).
    pub fill_events: u64,
    /// Idle SSE connections opened to measure memory per connection.
    pub idle: usize,
    /// Timed passes of the in-process decode.
    pub decode_passes: usize,
    /// Time limit of each phase, seconds.
    pub limit_secs: u64,
    /// The phases to run (the in-process decode always runs).
    pub phases: Phases,
}

/// Which measurements a run makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phases {
    /// Memory per buffered event and per idle connection (needs a PID).
    pub memory: bool,
    /// Ingest.
    pub ingest: bool,
    /// Fan-out.
    pub fanout: bool,
    /// Latency.
    pub latency: bool,
}

impl Phases {
    /// Every phase.
    pub const ALL: Phases = Phases {
        memory: true,
        ingest: true,
        fanout: true,
        latency: true,
    };

    /// Parses a comma-separated list of `memory`, `ingest`, `fanout`,
    /// `latency`.
    pub fn parse(list: &str) -> Result<Phases, Error> {
        let mut phases = Phases {
            memory: false,
            ingest: false,
            fanout: false,
            latency: false,
        };
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "memory" => phases.memory = true,
                "ingest" => phases.ingest = true,
                "fanout" => phases.fanout = true,
                "latency" => phases.latency = true,
                other => {
                    return Err(Error::new(format!(
                        "unknown phase `{other}` (memory, ingest, fanout, latency)"
                    )))
                }
            }
        }
        Ok(phases)
    }
}

impl Options {
    /// The full run against `url`.
    pub fn new(url: impl Into<String>, label: impl Into<String>) -> Options {
        Options {
            url: url.into(),
            read_url: None,
            label: label.into(),
            pid: None,
            tag: run_tag(),
            ingest_events: 500_000,
            batch: 1_000,
            connections: 4,
            ingest_sessions: 100,
            fanout: vec![1, 20, 200],
            fanout_deliveries: 400_000,
            window: 2,
            rate: 2_000,
            latency_seconds: 10,
            latency_batch: 10,
            fill_events: 100_000,
            idle: 1_000,
            decode_passes: 3,
            limit_secs: 180,
            phases: Phases::ALL,
        }
    }
}

/// A tag unlikely to repeat between runs: six base-36 digits of the
/// clock's microseconds (short, to keep the events near their size).
fn run_tag() -> String {
    let mut n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    let mut tag = String::from("rl");
    for _ in 0..6 {
        tag.push(char::from(
            b"0123456789abcdefghijklmnopqrstuvwxyz"[(n % 36) as usize],
        ));
        n /= 36;
    }
    tag
}

/// Runs every measurement against the relay `options.url`.
pub async fn run(options: &Options) -> Result<Report, Error> {
    let target = Target::parse(&options.url)?;
    let readers = match &options.read_url {
        Some(url) => Target::parse(url)?,
        None => Target::parse(&options.url)?,
    };
    let limit = Duration::from_secs(options.limit_secs.max(1));
    let generator = Generator::new(options.tag.clone());
    let buffer = discover(&target, limit.min(Duration::from_secs(15))).await?;

    let phases = options.phases;
    let (buffered, idle) = match options.pid.filter(|_| phases.memory) {
        Some(pid) => {
            let depth = buffer.max(1);
            let sessions = options.fill_events.div_ceil(depth).max(1);
            let buffered =
                memory::buffered(&target, pid, &generator, sessions, depth, limit).await?;
            let idle = memory::idle(&target, pid, &generator, options.idle, limit).await?;
            (Some(buffered), Some(idle))
        }
        None => (None, None),
    };
    let bodies = ingest::bodies(
        &generator,
        options.ingest_events,
        options.batch,
        options.ingest_sessions.max(1),
    );
    let ingest = if phases.ingest {
        Some(ingest::run(&target, options.pid, &bodies, options.connections, limit).await?)
    } else {
        None
    };
    let mut fanouts = Vec::new();
    for &subscribers in options.fanout.iter().filter(|_| phases.fanout) {
        let subscribers = subscribers.max(1);
        let per = options.fanout_deliveries / subscribers as u64;
        let events = per.div_ceil(options.batch).max(1) * options.batch;
        let shape = fanout::Shape {
            subscribers,
            events,
            batch: options.batch,
            window: options.window.max(1),
        };
        fanouts.push(fanout::run(&target, &readers, options.pid, &generator, shape, limit).await?);
    }
    let latency = if phases.latency {
        Some(
            latency::run(
                &target,
                &readers,
                &generator,
                options.rate,
                options.latency_seconds,
                options.latency_batch,
                limit + Duration::from_secs(options.latency_seconds),
            )
            .await?,
        )
    } else {
        None
    };
    let decode = decode::run(&bodies, options.decode_passes)?;
    Ok(Report {
        label: options.label.clone(),
        url: options.url.clone(),
        buffer,
        buffered,
        idle,
        ingest,
        fanout: fanouts,
        latency,
        decode,
    })
}

/// Waits (at most `patience`) for the relay to answer, then reads its
/// replay depth from discovery (`GET /events`, `capabilities.replay.buffer`).
async fn discover(target: &Target, patience: Duration) -> Result<u64, Error> {
    let deadline = Instant::now() + patience;
    let body = loop {
        let attempt = async { target.connect().await?.get("/events").await }.await;
        match attempt {
            Ok(body) => break body,
            Err(e) if Instant::now() > deadline => {
                return Err(Error::new(format!("the relay did not answer: {e}")))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    let discovery: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| Error::new(format!("GET /events: not JSON: {e}")))?;
    discovery
        .pointer("/capabilities/replay/buffer")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| Error::new("GET /events: discovery has no capabilities.replay.buffer"))
}

/// Posts probes to `session` until every subscriber has received one:
/// then each is registered with the relay, whatever the relay's way of
/// answering a subscription (some send no response head until the
/// first event).
async fn ready(
    conn: &mut Conn,
    generator: &Generator,
    session: &str,
    subscribers: &[Subscriber],
    progress: &Notify,
    deadline: Instant,
) -> Result<(), Error> {
    let all_probed = || {
        subscribers
            .iter()
            .all(|s| s.counts.probes.load(std::sync::atomic::Ordering::Acquire) > 0)
    };
    for attempt in 0..events::FIRST_SEQ {
        conn.post_events(generator.probe(session, attempt)).await?;
        let wait = (Instant::now() + Duration::from_millis(100)).min(deadline);
        loop {
            let notified = progress.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            check_ended(subscribers)?;
            if all_probed() {
                return Ok(());
            }
            if tokio::time::timeout_at(wait.into(), notified)
                .await
                .is_err()
            {
                break;
            }
        }
        if Instant::now() >= deadline {
            break;
        }
    }
    let probed = subscribers
        .iter()
        .filter(|s| s.counts.probes.load(std::sync::atomic::Ordering::Acquire) > 0)
        .count();
    Err(Error::new(format!(
        "only {probed} of {} subscribers of {session} registered in time",
        subscribers.len()
    )))
}

/// Waits until every subscriber has `needed` measured events.
async fn wait_for(
    subscribers: &[Subscriber],
    needed: u64,
    progress: &Notify,
    deadline: Instant,
) -> Result<(), Error> {
    let slowest = || {
        subscribers
            .iter()
            .map(|s| s.counts.measured.load(std::sync::atomic::Ordering::Acquire))
            .min()
            .unwrap_or(u64::MAX)
    };
    loop {
        let notified = progress.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if slowest() >= needed {
            return Ok(());
        }
        check_ended(subscribers)?;
        if tokio::time::timeout_at(deadline.into(), notified)
            .await
            .is_err()
        {
            return Err(Error::new(format!(
                "the slowest of {} subscribers had {} of {needed} events at the time limit",
                subscribers.len(),
                slowest()
            )));
        }
    }
}

fn check_ended(subscribers: &[Subscriber]) -> Result<(), Error> {
    match subscribers.iter().find_map(|s| s.counts.failure()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
