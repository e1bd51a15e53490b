//! What a nats-server itself sustains on this machine (`nats-ceiling`,
//! the `nats` feature): the ceilings `aep relay --nats` is measured
//! against, with event-sized messages on a loopback server.
//!
//! 1. publish: JetStream publishes with a `Nats-Msg-Id`, into a stream
//!    with one subject per session and a file store, a window of
//!    publishes sent and then every ack of it awaited before the next
//!    window, as a relay node publishes a batch; events stored per
//!    second (the ceiling of a node's ingest);
//! 2. publish and read: the same, with one ordered pull consumer reading
//!    the stream back meanwhile, as every node follows the stream; events
//!    per second from the first publish until the consumer has the last;
//! 3. fan-out: one core NATS publisher and N core subscribers on their
//!    own connections, at most a window of events ahead of the slowest;
//!    deliveries per second until every subscriber has every event.
//!
//! Each phase makes its own stream or subjects and deletes its stream
//! after; every phase is bounded in time.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer, stream};
use async_nats::HeaderMap;
use bytes::Bytes;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use crate::relay::procfs::CpuMeter;
use crate::relay::{Error, Report};

/// What to measure against which server.
#[derive(Debug, Clone)]
pub struct Options {
    /// The server, `nats://127.0.0.1:PORT`.
    pub url: String,
    /// The server's process: its CPU seconds per phase.
    pub pid: Option<u32>,
    /// Events published in each JetStream phase.
    pub events: u64,
    /// Bytes per message.
    pub bytes: usize,
    /// Sessions (subjects) the JetStream events go to, a batch each in turn.
    pub sessions: u64,
    /// Events per session batch.
    pub batch: u64,
    /// Publishes sent before their acks are awaited (aep-relay: 1024).
    pub window: usize,
    /// Core subscriber counts.
    pub fanout: Vec<usize>,
    /// Deliveries per subscriber count.
    pub fanout_deliveries: u64,
    /// Fan-out: events the publisher runs ahead of the slowest subscriber.
    pub fanout_window: u64,
    /// Time limit of each phase.
    pub limit_secs: u64,
}

impl Options {
    /// The defaults against `url`.
    pub fn new(url: impl Into<String>) -> Options {
        Options {
            url: url.into(),
            pid: None,
            events: 500_000,
            bytes: 450,
            sessions: 100,
            batch: 1_000,
            window: 1_024,
            fanout: vec![1, 20, 200],
            fanout_deliveries: 400_000,
            fanout_window: 2_000,
            limit_secs: 180,
        }
    }
}

/// One JetStream figure.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rate {
    /// Events stored (and read back, with a consumer).
    pub events: u64,
    /// From the first publish to the last ack (or the last event read).
    pub seconds: f64,
    /// Events per second.
    pub events_per_s: f64,
    /// CPU seconds the server used meanwhile (with its PID).
    pub server_cpu_seconds: Option<f64>,
}

/// One core fan-out figure.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Fan {
    /// Core subscribers, each on its own connection.
    pub subscribers: usize,
    /// Events published.
    pub events: u64,
    /// Events received, summed over subscribers.
    pub deliveries: u64,
    /// From the first publish until the last subscriber had every event.
    pub seconds: f64,
    /// Deliveries per second.
    pub deliveries_per_s: f64,
    /// CPU seconds the server used meanwhile (with its PID).
    pub server_cpu_seconds: Option<f64>,
}

/// Every figure of one run against one server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ceiling {
    /// The server's version, from its INFO.
    pub server: String,
    /// Bytes per message.
    pub bytes: usize,
    /// Publishes per window of awaited acks.
    pub window: usize,
    /// JetStream publish, acks awaited.
    pub publish: Rate,
    /// The same with one ordered pull consumer reading back.
    pub publish_read: Rate,
    /// Core fan-out, one per subscriber count.
    pub fanout: Vec<Fan>,
}

fn failed(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(format!("{what}: {e}"))
}

/// Only loopback servers are measured.
fn loopback(url: &str) -> Result<(), Error> {
    let rest = url.strip_prefix("nats://").unwrap_or(url);
    let host = rest.rsplit_once(':').map_or(rest, |(host, _)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ok = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if ok {
        Ok(())
    } else {
        Err(Error::new(format!(
            "{url}: only a loopback server is measured (nats://127.0.0.1:PORT)"
        )))
    }
}

/// Runs every phase against `options.url`.
pub async fn run(options: &Options) -> Result<Ceiling, Error> {
    loopback(&options.url)?;
    if options.events == 0 || options.batch == 0 || options.window == 0 || options.sessions == 0 {
        return Err(Error::new(
            "events, batch, window and sessions must be at least 1",
        ));
    }
    let client = connect(&options.url).await?;
    let server = client.server_info().version;
    let payload = payload(options.bytes);
    let js = jetstream::new(client.clone());
    let limit = Duration::from_secs(options.limit_secs);
    let publish = bounded(
        limit,
        "publish",
        jetstream_phase(&js, options, &payload, false),
    )
    .await?;
    let publish_read = bounded(
        limit,
        "publish and read",
        jetstream_phase(&js, options, &payload, true),
    )
    .await?;
    let mut fanout = Vec::new();
    for &subscribers in &options.fanout {
        let what = format!("fan-out to {subscribers}");
        fanout.push(bounded(limit, &what, fan(options, subscribers, &payload)).await?);
    }
    Ok(Ceiling {
        server,
        bytes: options.bytes,
        window: options.window,
        publish,
        publish_read,
        fanout,
    })
}

async fn bounded<T>(
    limit: Duration,
    what: &str,
    phase: impl std::future::Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    tokio::time::timeout(limit, phase)
        .await
        .map_err(|_| Error::new(format!("{what}: not done within {} s", limit.as_secs())))?
}

async fn connect(url: &str) -> Result<async_nats::Client, Error> {
    async_nats::ConnectOptions::new()
        .name("nats-ceiling")
        .connect(url)
        .await
        .map_err(|e| failed(&format!("cannot connect to NATS at {url}"), e))
}

/// A message of `bytes` bytes (JSON text, as an event is).
fn payload(bytes: usize) -> Bytes {
    let mut text = String::from(r#"{"message":""#);
    while text.len() + 2 < bytes {
        text.push(char::from(b'a' + (text.len() % 26) as u8));
    }
    text.push_str(r#""}"#);
    Bytes::from(text)
}

/// Publishes `options.events` into a fresh stream, a window at a time,
/// optionally read back by one ordered consumer.
async fn jetstream_phase(
    js: &jetstream::Context,
    options: &Options,
    payload: &Bytes,
    read: bool,
) -> Result<Rate, Error> {
    let name = if read {
        "CEILING_READ"
    } else {
        "CEILING_PUBLISH"
    };
    let prefix = format!("ceiling.{}", name.to_ascii_lowercase());
    // What an earlier, interrupted run left.
    let _ = js.delete_stream(name).await;
    let stream = js
        .create_stream(stream::Config {
            name: name.to_owned(),
            subjects: vec![format!("{prefix}.>")],
            max_messages_per_subject: -1,
            discard: stream::DiscardPolicy::Old,
            duplicate_window: Duration::from_secs(120),
            storage: stream::StorageType::File,
            ..Default::default()
        })
        .await
        .map_err(|e| {
            failed(
                &format!("cannot create the stream {name} (JetStream on?)"),
                e,
            )
        })?;
    let events = options.events;
    let reader = if read {
        let consumer = stream
            .create_consumer(consumer::pull::OrderedConfig {
                deliver_policy: consumer::DeliverPolicy::All,
                max_batch: 64,
                ..Default::default()
            })
            .await
            .map_err(|e| failed("cannot create the ordered consumer", e))?;
        let mut messages = consumer
            .messages()
            .await
            .map_err(|e| failed("cannot read the ordered consumer", e))?;
        Some(tokio::spawn(async move {
            let mut seen = 0;
            while seen < events {
                match messages.next().await {
                    Some(Ok(_)) => seen += 1,
                    Some(Err(e)) => return Err(failed("reading the stream back", e)),
                    None => return Err(Error::new("the ordered consumer ended")),
                }
            }
            Ok(Instant::now())
        }))
    } else {
        None
    };
    let subjects: Vec<String> = (0..options.sessions)
        .map(|s| format!("{prefix}.s.{s:032x}"))
        .collect();
    let cpu = CpuMeter::start(options.pid);
    let start = Instant::now();
    let mut sent = 0u64;
    while sent < events {
        let window = (events - sent).min(options.window as u64);
        let mut acks = Vec::with_capacity(window as usize);
        for i in sent..sent + window {
            let subject = &subjects[((i / options.batch) % options.sessions) as usize];
            let mut headers = HeaderMap::new();
            headers.insert("Nats-Msg-Id", format!("{i:064x}").as_str());
            let ack = js
                .publish_with_headers(subject.clone(), headers, payload.clone())
                .await
                .map_err(|e| failed("publish", e))?;
            acks.push(ack);
        }
        for ack in acks {
            let ack = ack.await.map_err(|e| failed("publish ack", e))?;
            if ack.duplicate {
                return Err(Error::new("a publish was taken for a duplicate"));
            }
        }
        sent += window;
    }
    let mut end = Instant::now();
    if let Some(reader) = reader {
        end = reader.await.map_err(|e| failed("the reader", e))??.max(end);
    }
    let seconds = (end - start).as_secs_f64();
    let server_cpu_seconds = cpu.seconds();
    let _ = js.delete_stream(name).await;
    Ok(Rate {
        events,
        seconds,
        events_per_s: events as f64 / seconds,
        server_cpu_seconds,
    })
}

/// One publisher, `subscribers` core subscribers on their own connections.
async fn fan(options: &Options, subscribers: usize, payload: &Bytes) -> Result<Fan, Error> {
    let subscribers = subscribers.max(1);
    let events = options
        .fanout_deliveries
        .div_ceil(subscribers as u64)
        .max(1);
    let subject = format!("ceiling.fanout.{subscribers}");
    let counts: Arc<Vec<AtomicU64>> =
        Arc::new((0..subscribers).map(|_| AtomicU64::new(0)).collect());
    let done = Arc::new(tokio::sync::Notify::new());
    let mut clients = Vec::with_capacity(subscribers);
    let mut tasks = Vec::with_capacity(subscribers);
    for i in 0..subscribers {
        let client = connect(&options.url).await?;
        let mut subscription = client
            .subscribe(subject.clone())
            .await
            .map_err(|e| failed("subscribe", e))?;
        // Registered with the server before anything is published.
        client.flush().await.map_err(|e| failed("flush", e))?;
        let (counts, done) = (counts.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            while subscription.next().await.is_some() {
                let seen = counts[i].fetch_add(1, Ordering::Release) + 1;
                if seen % 256 == 0 || seen == events {
                    done.notify_one();
                }
                if seen == events {
                    break;
                }
            }
        }));
        clients.push(client);
    }
    let publisher = connect(&options.url).await?;
    let slowest = || {
        counts
            .iter()
            .map(|c| c.load(Ordering::Acquire))
            .min()
            .unwrap_or(0)
    };
    let cpu = CpuMeter::start(options.pid);
    let start = Instant::now();
    let mut sent = 0u64;
    while sent < events {
        let ahead = sent.saturating_sub(slowest());
        if ahead >= options.fanout_window.max(1) {
            publisher.flush().await.map_err(|e| failed("flush", e))?;
            // Woken by a subscriber's progress, or looked again shortly.
            let _ = tokio::time::timeout(Duration::from_millis(5), done.notified()).await;
            continue;
        }
        let room = (options.fanout_window.max(1) - ahead).min(events - sent);
        for _ in 0..room {
            publisher
                .publish(subject.clone(), payload.clone())
                .await
                .map_err(|e| failed("publish", e))?;
        }
        sent += room;
    }
    publisher.flush().await.map_err(|e| failed("flush", e))?;
    while slowest() < events {
        let _ = tokio::time::timeout(Duration::from_millis(5), done.notified()).await;
    }
    let seconds = start.elapsed().as_secs_f64();
    let server_cpu_seconds = cpu.seconds();
    for task in tasks {
        task.abort();
    }
    drop(clients);
    let deliveries = events * subscribers as u64;
    Ok(Fan {
        subscribers,
        events,
        deliveries,
        seconds,
        deliveries_per_s: deliveries as f64 / seconds,
        server_cpu_seconds,
    })
}

/// `value` with thousands separators, no decimals.
fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The reports of `relays` labelled `label`.
fn of<'a>(relays: &'a [Report], label: &'a str) -> impl Iterator<Item = &'a Report> {
    relays.iter().filter(move |r| r.label == label)
}

fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut sorted: Vec<f64> = values.into_iter().collect();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[n / 2]),
        n => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

impl Ceiling {
    /// The run's figures as a Markdown table.
    pub fn table(&self) -> String {
        summary(std::slice::from_ref(self), &[])
    }
}

/// A relay's figure in one report.
type RelayFigure = Box<dyn Fn(&Report) -> Option<f64>>;

/// One row of the summary: a ceiling's figures over runs (per second,
/// and the count and server CPU seconds it was measured on).
struct Row {
    name: String,
    relay: &'static str,
    unit: &'static str,
    rates: Vec<f64>,
    per_cpu: Vec<f64>,
    /// The relay figure the ceiling bounds, from one report.
    of_relay: RelayFigure,
}

/// The medians of `ceilings` as a Markdown table (with the server's
/// figure per CPU-second of it when measured with its PID), and beside
/// them the medians of each group of relay reports (grouped by label)
/// as a share of the ceiling: ingest against publish and read back, and
/// against publish alone; fan-out against core fan-out to as many
/// subscribers.
pub fn summary(ceilings: &[Ceiling], relays: &[Report]) -> String {
    let mut labels: Vec<&str> = Vec::new();
    for report in relays {
        if !labels.contains(&report.label.as_str()) {
            labels.push(&report.label);
        }
    }
    let (server, bytes, window) = ceilings.first().map_or((String::new(), 0, 0), |c| {
        (c.server.clone(), c.bytes, c.window)
    });
    let rate = |r: &Rate| r.events_per_s;
    let cpu = |n: u64, s: Option<f64>| s.filter(|s| *s > 0.0).map(|s| n as f64 / s);
    let ingest = |r: &Report| r.ingest.as_ref().map(|i| i.events_per_s);
    let mut rows = vec![
        Row {
            name: format!(
                "JetStream publish, acks awaited {window} at a time, read back by one ordered consumer"
            ),
            relay: "ingest",
            unit: "events/s",
            rates: ceilings.iter().map(|c| rate(&c.publish_read)).collect(),
            per_cpu: ceilings
                .iter()
                .filter_map(|c| cpu(c.publish_read.events, c.publish_read.server_cpu_seconds))
                .collect(),
            of_relay: Box::new(ingest),
        },
        Row {
            name: format!("JetStream publish, acks awaited {window} at a time"),
            relay: "ingest",
            unit: "events/s",
            rates: ceilings.iter().map(|c| rate(&c.publish)).collect(),
            per_cpu: ceilings
                .iter()
                .filter_map(|c| cpu(c.publish.events, c.publish.server_cpu_seconds))
                .collect(),
            of_relay: Box::new(ingest),
        },
    ];
    let mut counts: Vec<usize> = ceilings
        .iter()
        .flat_map(|c| c.fanout.iter().map(|f| f.subscribers))
        .collect();
    counts.sort_unstable();
    counts.dedup();
    for n in counts {
        let fans = || {
            ceilings
                .iter()
                .flat_map(move |c| c.fanout.iter().filter(move |f| f.subscribers == n))
        };
        rows.push(Row {
            name: format!(
                "core NATS fan-out to {n} subscriber{}",
                if n == 1 { "" } else { "s" }
            ),
            relay: if n == 1 {
                "fan-out to 1 SSE subscriber"
            } else {
                "fan-out to as many SSE subscribers"
            },
            unit: "deliveries/s",
            rates: fans().map(|f| f.deliveries_per_s).collect(),
            per_cpu: fans()
                .filter_map(|f| cpu(f.deliveries, f.server_cpu_seconds))
                .collect(),
            of_relay: Box::new(move |r: &Report| {
                r.fanout
                    .iter()
                    .find(|f| f.subscribers == n)
                    .map(|f| f.deliveries_per_s)
            }),
        });
    }
    let mut out = String::new();
    let _ = write!(
        out,
        "| nats-server {server}, {bytes}-byte messages (median of {}) | per second | per server CPU-second |",
        ceilings.len()
    );
    if !labels.is_empty() {
        out.push_str(" relay figure |");
    }
    for label in &labels {
        let _ = write!(out, " `{label}` | share |");
    }
    out.push_str("\n|---|---:|---:|");
    if !labels.is_empty() {
        out.push_str("---|");
    }
    for _ in &labels {
        out.push_str("---:|---:|");
    }
    out.push('\n');
    let show = |v: Option<f64>, unit: &str| match v {
        Some(v) if unit.is_empty() => thousands(v),
        Some(v) => format!("{} {unit}", thousands(v)),
        None => "-".to_owned(),
    };
    for row in &rows {
        let ceiling = median(row.rates.iter().copied());
        let _ = write!(
            out,
            "| {} | {} | {} |",
            row.name,
            show(ceiling, row.unit),
            show(median(row.per_cpu.iter().copied()), ""),
        );
        if !labels.is_empty() {
            let _ = write!(out, " {} |", row.relay);
        }
        for label in &labels {
            let ours = median(of(relays, label).filter_map(|r| (row.of_relay)(r)));
            let share = match (ours, ceiling) {
                (Some(ours), Some(ceiling)) if ceiling > 0.0 => {
                    format!("{:.0}%", 100.0 * ours / ceiling)
                }
                _ => "-".to_owned(),
            };
            let _ = write!(out, " {} | {share} |", show(ours, row.unit));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_servers() {
        for ok in [
            "nats://127.0.0.1:4222",
            "nats://localhost:1",
            "nats://[::1]:4222",
            "127.0.0.1:4222",
        ] {
            assert_eq!(loopback(ok), Ok(()), "{ok}");
        }
        for no in ["nats://10.0.0.1:4222", "nats://example.com:4222"] {
            assert!(loopback(no).is_err(), "{no}");
        }
    }

    #[test]
    fn payloads_have_their_size() {
        for bytes in [16, 450, 1000] {
            assert_eq!(payload(bytes).len(), bytes);
        }
    }
}
