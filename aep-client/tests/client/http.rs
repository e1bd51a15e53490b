//! The HTTP emitter against an in-process relay: batching, retries across
//! a relay restart, the 400-bad-line drop-and-resend, outbox drops.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::*;
use aep::{Payload, ProgressStatus, Severity};
use aep_client::consume::{Item, Notice, Subscribe};
use aep_client::http::{HttpConfig, HttpEmitter, Rejected};
use aep_client::session::{Attrs, SessionEmitter};
use aep_client::transport::Publisher;

fn quick(base: &str) -> HttpConfig {
    let mut config = HttpConfig::new(base, Some(TOKEN.into()));
    config.batch_events = 20;
    config.batch_wait = Duration::from_millis(20);
    config.backoff = (Duration::from_millis(20), Duration::from_millis(200));
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_survive_a_relay_restart_without_loss_or_duplicates() {
    let mut relay = TestRelay::start(config()).await;
    let mut sub = Subscribe::new(&relay.base)
        .token(TOKEN)
        .filter(serde_json::json!({"session": "s-http"}))
        .unwrap()
        .backoff(Duration::from_millis(20), Duration::from_millis(200))
        .start();
    let first = within(10, "the consumer connects", sub.recv()).await;
    assert!(matches!(
        first,
        Some(Ok(Item::Notice(Notice::Connected { .. })))
    ));

    let session = SessionEmitter::new("urn:aep:test:http", "test", "s-http", 0);
    let mut publisher = Publisher::new(session, HttpEmitter::start(quick(&relay.base)));
    let mut sent = Vec::new();
    for i in 0..100 {
        if i == 40 {
            relay.stop().await;
        }
        if i == 70 {
            relay.start_again().await;
        }
        let mut status = ProgressStatus::new();
        status.percent = Some(f64::from(i));
        let attrs = Attrs {
            severity: Some(Severity::Notice),
            ..Attrs::default()
        };
        let event = publisher
            .emit(&Payload::ProgressStatus(status), attrs)
            .await
            .unwrap();
        sent.push(event.id);
        if i % 10 == 0 {
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
    }
    let stats = publisher.transport().stats();
    let flushed = publisher.close(Duration::from_secs(15)).await;
    assert_eq!(flushed.undelivered, 0, "{stats:?}");

    let mut got = Vec::new();
    within(30, "every event reaches the consumer", async {
        while got.len() < sent.len() {
            match sub.recv().await.expect("the stream goes on").unwrap() {
                Item::Event(d) => got.push(d.event.id),
                Item::Notice(_) => {}
            }
        }
    })
    .await;
    let distinct: HashSet<&String> = got.iter().collect();
    assert_eq!(distinct.len(), got.len(), "no event twice after dedupe");
    assert_eq!(distinct, sent.iter().collect(), "every event, none other");
    // Nothing more arrives (no late duplicate).
    let late = tokio::time::timeout(Duration::from_millis(300), async {
        loop {
            if let Some(Ok(Item::Event(d))) = sub.recv().await {
                return d.event.id;
            }
        }
    })
    .await;
    assert!(late.is_err(), "a duplicate arrived: {late:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batching_and_retry_counters() {
    let mut relay = TestRelay::start(config()).await;
    let emitter = HttpEmitter::start(quick(&relay.base));
    for seq in 0..60 {
        emitter
            .send(line("s-batch", seq, "info"), Severity::Info)
            .await
            .unwrap();
    }
    within(10, "the first batches", async {
        while emitter.stats().delivered < 60 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let stats = emitter.stats();
    assert!(
        stats.requests <= 10,
        "60 events in batches of 20: {stats:?}"
    );
    relay.stop().await;
    emitter
        .send(line("s-batch", 60, "warning"), Severity::Warning)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    relay.start_again().await;
    let flushed = emitter.close(Duration::from_secs(10)).await;
    assert_eq!(flushed.undelivered, 0);
    assert_eq!(history_ids(&relay.base, "s-batch").await, ["s-batch-60"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_line_is_dropped_reported_and_the_rest_resent() {
    let relay = TestRelay::start(config()).await;
    let seen: Arc<Mutex<Vec<Rejected>>> = Arc::default();
    let mut config = quick(&relay.base);
    config.batch_wait = Duration::from_millis(300);
    let hook = seen.clone();
    config.on_reject = Some(Arc::new(move |r: &Rejected| {
        hook.lock().unwrap().push(r.clone())
    }));
    let emitter = HttpEmitter::start(config);
    let bad = r#"{"aep":"0.1","id":"bad","type":"progress.status"}"#.to_owned();
    emitter
        .send(line("s-bad", 0, "info"), Severity::Info)
        .await
        .unwrap();
    emitter.send(bad.clone(), Severity::Info).await.unwrap();
    emitter
        .send(line("s-bad", 1, "info"), Severity::Info)
        .await
        .unwrap();
    let stats_before = emitter.stats();
    let rejected_hook;
    {
        let flushed = emitter_close(emitter).await;
        assert_eq!(flushed.0.undelivered, 0);
        let stats = flushed.1;
        assert_eq!(stats.rejected, 1, "{stats:?} (before: {stats_before:?})");
        assert_eq!(stats.delivered, 2);
        assert_eq!(stats.requests, 2, "one refused batch, one resend");
        assert_eq!(flushed.2.len(), 1);
        let r = &flushed.2[0];
        assert_eq!(
            (r.line.as_str(), r.status, r.code.as_str()),
            (bad.as_str(), 400, "invalid-event")
        );
        rejected_hook = seen.lock().unwrap().clone();
    }
    assert_eq!(rejected_hook.len(), 1);
    assert_eq!(
        history_ids(&relay.base, "s-bad").await,
        ["s-bad-0", "s-bad-1"]
    );
}

async fn emitter_close(
    emitter: HttpEmitter,
) -> (
    aep_client::transport::Flushed,
    aep_client::http::Stats,
    Vec<Rejected>,
) {
    // Wait for the batch to go, then read the counters before closing.
    within(10, "the batch is settled", async {
        while emitter.pending() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let stats = emitter.stats();
    let rejected = emitter.rejected();
    (emitter.close(Duration::from_secs(5)).await, stats, rejected)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_outbox_drops_info_first_and_counts_never_notice() {
    let addr = free_addr().await;
    let mut config = quick(&format!("http://{addr}"));
    config.outbox = 4;
    config.batch_events = 1;
    let emitter = HttpEmitter::start(config);
    let mut warnings = Vec::new();
    for seq in 0..23u64 {
        let (severity, name) = if seq % 8 == 7 {
            warnings.push(format!("s-drop-{seq}"));
            (Severity::Warning, "warning")
        } else {
            (Severity::Info, "info")
        };
        emitter
            .send(line("s-drop", seq, name), severity)
            .await
            .unwrap();
    }
    let dropped = emitter.stats().dropped;
    assert!(
        dropped >= 14,
        "23 lines into 4 places (+1 in flight): {dropped} dropped"
    );
    let relay = TestRelay::start_at(config_for_drops(), addr).await;
    let flushed = emitter.close(Duration::from_secs(10)).await;
    assert_eq!(flushed.undelivered, 0);
    assert_eq!(flushed.dropped, dropped);
    let held = history_ids(&relay.base, "s-drop").await;
    for warning in &warnings {
        assert!(held.contains(warning), "{warning} was dropped: {held:?}");
    }
    assert_eq!(
        held.len() as u64 + dropped,
        23,
        "every line delivered or counted"
    );
}

fn config_for_drops() -> aep_relay::Config {
    config()
}
