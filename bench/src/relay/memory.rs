//! Memory of the relay process, read from `/proc/PID/status`: what each
//! buffered event costs (fill sessions up to the relay's replay depth,
//! compare peak and current RSS before and after) and what each idle SSE
//! connection costs (open many on a session nobody posts to).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, Semaphore};

use super::client::Target;
use super::events::Generator;
use super::ingest;
use super::procfs::{resident, Resident};
use super::sse::{self, Plan, Subscriber};
use super::{ready, Error};

/// What buffered events cost.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Buffered {
    /// Sessions filled.
    pub sessions: u64,
    /// Events per session (the relay's replay depth).
    pub depth: u64,
    /// Events buffered.
    pub events: u64,
    /// Before filling.
    pub before: Resident,
    /// After filling.
    pub after: Resident,
    /// Growth of peak RSS per buffered event, bytes.
    pub peak_bytes_per_event: f64,
    /// Growth of current RSS per buffered event, bytes.
    pub rss_bytes_per_event: f64,
}

/// What idle SSE connections cost.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Idle {
    /// Connections opened.
    pub connections: usize,
    /// Before opening them.
    pub before: Resident,
    /// With all of them registered.
    pub after: Resident,
    /// Growth of current RSS per connection, bytes.
    pub rss_bytes_per_connection: f64,
}

fn per(before: u64, after: u64, count: u64) -> f64 {
    (after as f64 - before as f64) * 1024.0 / count.max(1) as f64
}

/// Fills `sessions` fresh sessions with `depth` events each.
pub async fn buffered(
    target: &Target,
    pid: u32,
    generator: &Generator,
    sessions: u64,
    depth: u64,
    limit: Duration,
) -> Result<Buffered, Error> {
    let fill = Generator::new(generator.session("fill"));
    let batch = depth.min(1_000);
    // One session per batch cycle: the batches of a session are `sessions`
    // apart, as in the ingest run, so all sessions grow together.
    let bodies = Arc::new(ingest::bodies(&fill, sessions * depth, batch, sessions));
    let before = resident(pid)?;
    ingest::post_all(target, bodies, 2, limit).await?;
    // Let the relay finish what the last answers started.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = resident(pid)?;
    let events = sessions * depth;
    Ok(Buffered {
        sessions,
        depth,
        events,
        before,
        after,
        peak_bytes_per_event: per(before.peak_kib, after.peak_kib, events),
        rss_bytes_per_event: per(before.current_kib, after.current_kib, events),
    })
}

/// Opens `connections` SSE streams on a session nobody posts to; closes
/// them again after measuring.
pub async fn idle(
    target: &Target,
    pid: u32,
    generator: &Generator,
    connections: usize,
    limit: Duration,
) -> Result<Idle, Error> {
    let session = generator.session("idle");
    let before = resident(pid)?;
    let progress = Arc::new(Notify::new());
    let connecting = Arc::new(Semaphore::new(64));
    let subscribers: Vec<Subscriber> = (0..connections)
        .map(|_| {
            sse::spawn(
                target,
                Plan {
                    session: session.clone(),
                    until: u64::MAX,
                    clock: None,
                    progress: progress.clone(),
                    connecting: connecting.clone(),
                },
            )
        })
        .collect();
    let deadline = Instant::now() + limit;
    let measured = async {
        let mut prober = target.connect().await?;
        ready(
            &mut prober,
            generator,
            &session,
            &subscribers,
            &progress,
            deadline,
        )
        .await?;
        drop(prober);
        tokio::time::sleep(Duration::from_millis(500)).await;
        resident(pid)
    }
    .await;
    for subscriber in subscribers {
        subscriber.close();
    }
    let after = measured?;
    // Give the relay a moment to notice the closed connections.
    tokio::time::sleep(Duration::from_millis(500)).await;
    Ok(Idle {
        connections,
        before,
        after,
        rss_bytes_per_connection: per(before.current_kib, after.current_kib, connections as u64),
    })
}
