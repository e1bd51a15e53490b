//! Fan-out: subscribers connect first (each filtering on one fresh
//! session), then batches to that session are posted, and the run ends
//! when every subscriber has every event. At most `window` batches are
//! in flight beyond the slowest subscriber, so no relay reaches its
//! per-consumer bound and cuts a subscriber off: the figure is the rate
//! the relay sustains, not how fast it fills queues.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, Semaphore};

use super::client::Target;
use super::events::{Generator, Severity, FIRST_SEQ};
use super::procfs::CpuMeter;
use super::sse::{self, Plan, Subscriber};
use super::{ready, wait_for, Error};

/// One fan-out figure.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Fanout {
    /// Subscribers, all taking every event.
    pub subscribers: usize,
    /// Events posted.
    pub events: u64,
    /// Events received, summed over subscribers.
    pub deliveries: u64,
    /// From the first POST until the last subscriber had every event.
    pub seconds: f64,
    /// Deliveries per second.
    pub deliveries_per_s: f64,
    /// CPU seconds the relay used meanwhile (with its PID).
    pub relay_cpu_seconds: Option<f64>,
}

impl Fanout {
    /// Deliveries per CPU second of the relay.
    pub fn deliveries_per_cpu_s(&self) -> Option<f64> {
        self.relay_cpu_seconds.map(|s| self.deliveries as f64 / s)
    }
}

/// How one fan-out run is shaped.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Subscribers.
    pub subscribers: usize,
    /// Events posted.
    pub events: u64,
    /// Events per POST.
    pub batch: u64,
    /// Batches posted ahead of the slowest subscriber.
    pub window: u64,
}

/// Runs one fan-out measurement, posting to `target` and reading from
/// `readers` (another node of a cluster, or the same relay); with the
/// relay's `pid`, its CPU time is metered too.
pub async fn run(
    target: &Target,
    readers: &Target,
    pid: Option<u32>,
    generator: &Generator,
    shape: Shape,
    limit: Duration,
) -> Result<Fanout, Error> {
    let session = generator.session(&format!("fanout-{}", shape.subscribers));
    let batches: Vec<_> = (0..shape.events.div_ceil(shape.batch))
        .map(|i| {
            let first = i * shape.batch;
            let count = shape.batch.min(shape.events - first);
            generator.batch(&session, FIRST_SEQ + first, count, Severity::Notice)
        })
        .collect();
    let progress = Arc::new(Notify::new());
    let connecting = Arc::new(Semaphore::new(64));
    let subscribers: Vec<Subscriber> = (0..shape.subscribers)
        .map(|_| {
            sse::spawn(
                readers,
                Plan {
                    session: session.clone(),
                    until: shape.events,
                    clock: None,
                    progress: progress.clone(),
                    connecting: connecting.clone(),
                },
            )
        })
        .collect();
    let deadline = Instant::now() + limit;
    let mut poster = target.connect().await?;
    ready(
        &mut poster,
        generator,
        &session,
        &subscribers,
        &progress,
        deadline,
    )
    .await?;

    let cpu = CpuMeter::start(pid);
    let start = Instant::now();
    for (i, body) in batches.into_iter().enumerate() {
        let i = i as u64;
        if i >= shape.window {
            // Post batch `i` once the slowest has batch `i - window`.
            let needed = (i + 1 - shape.window) * shape.batch;
            wait_for(&subscribers, needed, &progress, deadline).await?;
        }
        poster.post_events(body).await?;
    }
    wait_for(&subscribers, shape.events, &progress, deadline).await?;
    let seconds = start.elapsed().as_secs_f64();
    let relay_cpu_seconds = cpu.seconds();
    for subscriber in subscribers {
        subscriber
            .finish(deadline.saturating_duration_since(Instant::now()))
            .await?;
    }
    let deliveries = shape.events * shape.subscribers as u64;
    Ok(Fanout {
        subscribers: shape.subscribers,
        events: shape.events,
        deliveries,
        seconds,
        deliveries_per_s: deliveries as f64 / seconds,
        relay_cpu_seconds,
    })
}
