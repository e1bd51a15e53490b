//! Ingest: NDJSON batches posted over several keep-alive connections at
//! once, as fast as the relay accepts them, with no subscriber.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::client::Target;
use super::events::{Generator, Severity, FIRST_SEQ};
use super::procfs::CpuMeter;
use super::Error;

/// The ingest figure.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ingest {
    /// Events posted (and accepted).
    pub events: u64,
    /// Events per POST.
    pub batch: u64,
    /// Connections posting at once.
    pub connections: usize,
    /// From the first POST to the last answer.
    pub seconds: f64,
    /// Accepted events per second.
    pub events_per_s: f64,
    /// CPU seconds the relay used meanwhile (with its PID).
    pub relay_cpu_seconds: Option<f64>,
}

impl Ingest {
    /// Accepted events per CPU second of the relay.
    pub fn events_per_cpu_s(&self) -> Option<f64> {
        self.relay_cpu_seconds.map(|s| self.events as f64 / s)
    }
}

/// The bodies of the ingest run: batch `i` goes to session `i %
/// sessions`, each session's positions rising.
pub fn bodies(generator: &Generator, events: u64, batch: u64, sessions: u64) -> Vec<Bytes> {
    let batches = events.div_ceil(batch);
    (0..batches)
        .map(|i| {
            let session = generator.session(&format!("ingest-{}", i % sessions));
            let first = FIRST_SEQ + (i / sessions) * batch;
            let count = batch.min(events - i * batch);
            generator.batch(&session, first, count, Severity::Info)
        })
        .collect()
}

/// Posts `bodies` over `connections` connections; fails on the first
/// refusal or after `limit`.
pub async fn post_all(
    target: &Target,
    bodies: Arc<Vec<Bytes>>,
    connections: usize,
    limit: Duration,
) -> Result<Duration, Error> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut conns = Vec::with_capacity(connections);
    for _ in 0..connections.max(1) {
        conns.push(target.connect().await?);
    }
    let start = Instant::now();
    let workers: Vec<_> = conns
        .into_iter()
        .map(|mut conn| {
            let bodies = bodies.clone();
            let next = next.clone();
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(body) = bodies.get(i) else {
                        return Ok::<(), Error>(());
                    };
                    conn.post_events(body.clone()).await?;
                }
            })
        })
        .collect();
    let all = async {
        for worker in workers {
            worker
                .await
                .map_err(|e| Error::new(format!("an ingest connection failed: {e}")))??;
        }
        Ok::<(), Error>(())
    };
    tokio::time::timeout(limit, all)
        .await
        .map_err(|_| Error::new(format!("ingest: not done within {limit:?}")))??;
    Ok(start.elapsed())
}

/// Runs the ingest measurement: posts `bodies` (see [`bodies`]); with
/// the relay's `pid`, its CPU time is metered too.
pub async fn run(
    target: &Target,
    pid: Option<u32>,
    bodies: &[Bytes],
    connections: usize,
    limit: Duration,
) -> Result<Ingest, Error> {
    let events = bodies
        .iter()
        .map(|b| memchr::memchr_iter(b'\n', b).count() as u64)
        .sum();
    let batch = bodies
        .first()
        .map_or(0, |b| memchr::memchr_iter(b'\n', b).count() as u64);
    let cpu = CpuMeter::start(pid);
    let elapsed = post_all(target, Arc::new(bodies.to_vec()), connections, limit).await?;
    let relay_cpu_seconds = cpu.seconds();
    let seconds = elapsed.as_secs_f64();
    Ok(Ingest {
        events,
        batch,
        connections,
        seconds,
        events_per_s: events as f64 / seconds,
        relay_cpu_seconds,
    })
}
