//! End-to-end latency at a steady rate: small batches posted on a fixed
//! tick over a few connections, each event stamped with its send time
//! (the `sentus` extension attribute, microseconds on the run's clock)
//! just before its POST, and read back by one SSE subscriber.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, Notify, Semaphore};
use tokio::time::MissedTickBehavior;

use super::client::{Conn, Target};
use super::events::{Generator, Severity, FIRST_SEQ};
use super::sse::{self, Clock, Plan};
use super::{ready, wait_for, Error};

/// The latency figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Latency {
    /// The rate asked for, events per second.
    pub rate: u64,
    /// Events per POST.
    pub batch: u64,
    /// How long events were sent.
    pub seconds: f64,
    /// Events sent (and received).
    pub events: u64,
    /// The rate achieved, events per second.
    pub achieved_rate: f64,
    /// Median latency, milliseconds.
    pub p50_ms: f64,
    /// 99th percentile latency, milliseconds.
    pub p99_ms: f64,
    /// Largest latency, milliseconds.
    pub max_ms: f64,
}

/// Connections posting in turn.
const POSTERS: usize = 4;

/// Runs the latency measurement: `rate` events per second for
/// `seconds`, in batches of `batch`, posted to `target` and read from
/// `readers` (another node of a cluster, or the same relay).
pub async fn run(
    target: &Target,
    readers: &Target,
    generator: &Generator,
    rate: u64,
    seconds: u64,
    batch: u64,
    limit: Duration,
) -> Result<Latency, Error> {
    let session = generator.session("latency");
    let rate = rate.max(1);
    let batch = batch.clamp(1, rate);
    let ticks = rate * seconds / batch;
    let events = ticks * batch;
    if events == 0 {
        return Err(Error::new("latency: the run would send no event"));
    }
    let tick = Duration::from_secs_f64(batch as f64 / rate as f64);
    let clock = Clock::start();
    let progress = Arc::new(Notify::new());
    let subscriber = sse::spawn(
        readers,
        Plan {
            session: session.clone(),
            until: events,
            clock: Some(clock),
            progress: progress.clone(),
            connecting: Arc::new(Semaphore::new(1)),
        },
    );
    let deadline = Instant::now() + limit;
    let subscribers = [subscriber];
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

    let (free, mut pool) = mpsc::channel::<Conn>(POSTERS);
    for _ in 0..POSTERS {
        free.send(target.connect().await?)
            .await
            .map_err(|_| Error::new("latency: the connection pool closed"))?;
    }
    let (failed, mut failure) = mpsc::channel::<Error>(1);
    // Tick `i` is due at `start + i * tick`; a late tick is sent at once,
    // so the rate holds on average even when the machine is busy.
    let mut ticker = tokio::time::interval(tick);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Burst);
    let start = Instant::now();
    for i in 0..ticks {
        ticker.tick().await;
        if let Ok(e) = failure.try_recv() {
            return Err(e);
        }
        if Instant::now() > deadline {
            return Err(Error::new(format!("latency: not done within {limit:?}")));
        }
        let conn = tokio::time::timeout_at(deadline.into(), pool.recv())
            .await
            .ok()
            .flatten()
            .ok_or_else(|| Error::new("latency: no connection came back to post on"))?;
        let mut body = Vec::with_capacity(batch as usize * 280);
        let now = clock.now_us();
        for seq in FIRST_SEQ + i * batch..FIRST_SEQ + (i + 1) * batch {
            generator.event(&mut body, &session, seq, Severity::Notice, Some(now));
            body.push(b'\n');
        }
        let free = free.clone();
        let failed = failed.clone();
        tokio::spawn(async move {
            let mut conn = conn;
            match conn.post_events(body.into()).await {
                Ok(()) => {
                    let _ = free.send(conn).await;
                }
                Err(e) => {
                    let _ = failed.try_send(e);
                }
            }
        });
    }
    let sending = start.elapsed().as_secs_f64();
    wait_for(&subscribers, events, &progress, deadline).await?;
    let [subscriber] = subscribers;
    let mut samples = subscriber
        .finish(deadline.saturating_duration_since(Instant::now()))
        .await?;
    if samples.len() as u64 != events {
        return Err(Error::new(format!(
            "latency: {} of {events} events carried a readable send time",
            samples.len()
        )));
    }
    samples.sort_unstable();
    let ms = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize] as f64 / 1e3;
    Ok(Latency {
        rate,
        batch,
        seconds: sending,
        events,
        achieved_rate: events as f64 / sending,
        p50_ms: ms(0.50),
        p99_ms: ms(0.99),
        max_ms: ms(1.0),
    })
}
