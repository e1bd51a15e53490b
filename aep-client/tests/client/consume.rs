//! Subscriptions against an in-process relay, on both bindings: resume
//! across a relay restart and across a cut connection, the position
//! budget with 1 000 saved positions, `replay-exhausted`, dedupe.

use std::collections::HashSet;
use std::time::Duration;

use crate::common::*;
use aep_client::consume::{Binding, Item, Notice, Position, Subscribe, Subscription};

/// Reads until `n` events arrived: their ids and the notices between.
async fn collect(sub: &mut Subscription, n: usize) -> (Vec<String>, Vec<Notice>) {
    let mut ids = Vec::new();
    let mut notices = Vec::new();
    within(30, &format!("{n} events"), async {
        while ids.len() < n {
            match sub.recv().await.expect("the stream goes on") {
                Ok(Item::Event(d)) => ids.push(d.event.id),
                Ok(Item::Notice(notice)) => notices.push(notice),
                Err(e) => panic!("the subscription failed: {e}"),
            }
        }
    })
    .await;
    (ids, notices)
}

/// No event arrives for a short while.
async fn quiet(sub: &mut Subscription) {
    let late = tokio::time::timeout(Duration::from_millis(300), async {
        loop {
            if let Some(Ok(Item::Event(d))) = sub.recv().await {
                return d.event.id;
            }
        }
    })
    .await;
    assert!(late.is_err(), "an unexpected event: {late:?}");
}

fn lines(session: &str, seqs: std::ops::Range<u64>) -> Vec<String> {
    seqs.map(|seq| line(session, seq, "info")).collect()
}

fn ids(session: &str, seqs: std::ops::Range<u64>) -> Vec<String> {
    seqs.map(|seq| format!("{session}-{seq}")).collect()
}

fn subscribe(base: &str, binding: Binding) -> Subscribe {
    Subscribe::new(base)
        .token(TOKEN)
        .binding(binding)
        .backoff(Duration::from_millis(20), Duration::from_millis(200))
}

async fn resume_across_a_restart(binding: Binding) {
    let mut relay = TestRelay::start(config()).await;
    let mut sub = subscribe(&relay.base, binding).start();
    let (_, notices) = collect_notice(&mut sub).await;
    assert!(matches!(notices, Notice::Connected { resumed: 0 }));
    assert_eq!(post(&relay.base, &lines("s-r", 0..10)).await, 202);
    let (first, _) = collect(&mut sub, 10).await;
    assert_eq!(first, ids("s-r", 0..10));
    assert_eq!(sub.positions(), [Position::new("s-r", 0, 9)]);

    relay.stop().await;
    relay.start_again().await;
    // The restarted relay holds 10..20 before or after the consumer is
    // back: either way the resume from (0, 9) gets all of them, once.
    assert_eq!(post(&relay.base, &lines("s-r", 10..20)).await, 202);
    let (second, notices) = collect(&mut sub, 10).await;
    assert_eq!(second, ids("s-r", 10..20));
    assert!(
        notices
            .iter()
            .any(|n| matches!(n, Notice::Reconnected { resumed: 1 })),
        "{notices:?}"
    );
    quiet(&mut sub).await;
}

async fn collect_notice(sub: &mut Subscription) -> ((), Notice) {
    let item = within(10, "a notice", sub.recv()).await;
    match item {
        Some(Ok(Item::Notice(notice))) => ((), notice),
        other => panic!("expected a notice: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_resumes_across_a_relay_restart() {
    resume_across_a_restart(Binding::Sse).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_resumes_across_a_relay_restart() {
    resume_across_a_restart(Binding::WebSocket).await;
}

async fn resume_across_a_cut(binding: Binding) {
    let relay = TestRelay::start(config()).await;
    let proxy = Proxy::start(relay.addr).await;
    let mut sub = subscribe(&proxy.base, binding).start();
    collect_notice(&mut sub).await;
    assert_eq!(post(&relay.base, &lines("s-c", 0..5)).await, 202);
    let (first, _) = collect(&mut sub, 5).await;
    assert_eq!(first, ids("s-c", 0..5));
    proxy.cut();
    // Posted while the consumer is away: the relay's buffer holds them.
    assert_eq!(post(&relay.base, &lines("s-c", 5..10)).await, 202);
    let (second, notices) = collect(&mut sub, 5).await;
    assert_eq!(second, ids("s-c", 5..10));
    assert!(
        notices.iter().any(|n| matches!(n, Notice::Disconnected(_))),
        "{notices:?}"
    );
    assert!(
        notices
            .iter()
            .any(|n| matches!(n, Notice::Reconnected { resumed: 1 })),
        "{notices:?}"
    );
    quiet(&mut sub).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_resumes_across_a_disconnect() {
    resume_across_a_cut(Binding::Sse).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_resumes_across_a_disconnect() {
    resume_across_a_cut(Binding::WebSocket).await;
}

async fn budget_with_a_thousand_positions(binding: Binding) {
    let relay = TestRelay::start(config().max_from(100).max_sessions(2000)).await;
    let mut batch = Vec::new();
    for i in 0..1000 {
        batch.extend(lines(&format!("b{i}"), 0..2));
    }
    assert_eq!(post(&relay.base, &batch).await, 202);
    let saved = (0..1000).map(|i| Position::new(format!("b{i}"), 0, 0));
    let mut sub = subscribe(&relay.base, binding)
        .resume(saved)
        .budget(300)
        .start();
    let (got, notices) = collect(&mut sub, 1000).await;
    let distinct: HashSet<&String> = got.iter().collect();
    assert_eq!(distinct.len(), 1000, "each session's next event, once");
    assert!(
        got.iter().all(|id| id.ends_with("-1")),
        "nothing at or before a saved position"
    );
    let shrunk: Vec<usize> = notices
        .iter()
        .filter_map(|n| match n {
            Notice::BudgetShrunk { budget } => Some(*budget),
            _ => None,
        })
        .collect();
    assert_eq!(shrunk, [150, 75], "{notices:?}");
    assert!(
        notices
            .iter()
            .any(|n| matches!(n, Notice::Connected { resumed: 75 })),
        "{notices:?}"
    );
    // Live delivery goes on, for a session read back through history too.
    assert_eq!(post(&relay.base, &lines("b3", 2..3)).await, 202);
    let (live, _) = collect(&mut sub, 1).await;
    assert_eq!(live, ["b3-2"]);
    assert_eq!(sub.positions().len(), 1000);
    quiet(&mut sub).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_budget_with_a_thousand_saved_positions() {
    budget_with_a_thousand_positions(Binding::Sse).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_budget_with_a_thousand_saved_positions() {
    budget_with_a_thousand_positions(Binding::WebSocket).await;
}

async fn replay_exhausted(binding: Binding) {
    let relay = TestRelay::start(config().buffer(4)).await;
    assert_eq!(post(&relay.base, &lines("s-x", 0..10)).await, 202);
    let mut sub = subscribe(&relay.base, binding)
        .resume([Position::new("s-x", 0, 1)])
        .start();
    let mut items = Vec::new();
    within(10, "the replay", async {
        while items.len() < 6 {
            items.push(sub.recv().await.unwrap().unwrap());
        }
    })
    .await;
    assert!(matches!(
        items[0],
        Item::Notice(Notice::Connected { resumed: 1 })
    ));
    assert_eq!(
        items[1],
        Item::Notice(Notice::ReplayExhausted {
            session: "s-x".into(),
            earliest: Position::new("s-x", 0, 6),
        })
    );
    let delivered: Vec<String> = items[2..]
        .iter()
        .map(|i| match i {
            Item::Event(d) => d.event.id.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(delivered, ids("s-x", 6..10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_surfaces_replay_exhausted() {
    replay_exhausted(Binding::Sse).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_surfaces_replay_exhausted() {
    replay_exhausted(Binding::WebSocket).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivered_event_reaches_the_caller_once() {
    let relay = TestRelay::start(config()).await;
    let mut sub = subscribe(&relay.base, Binding::Sse).start();
    collect_notice(&mut sub).await;
    let twice = vec![
        line("s-d", 0, "info"),
        line("s-d", 0, "info"),
        line("s-d", 1, "info"),
    ];
    assert_eq!(post(&relay.base, &twice).await, 202);
    let (got, _) = collect(&mut sub, 2).await;
    assert_eq!(got, ["s-d-0", "s-d-1"]);
    quiet(&mut sub).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_ends_the_stream_with_the_error() {
    let relay = TestRelay::start(config()).await;
    for binding in [Binding::Sse, Binding::WebSocket] {
        let mut sub = Subscribe::new(&relay.base)
            .token("wrong")
            .binding(binding)
            .start();
        let item = within(10, "the refusal", sub.recv()).await;
        assert!(
            matches!(item, Some(Err(aep_client::Error::Http { status: 401, .. }))),
            "{binding:?}: {item:?}"
        );
        assert!(sub.recv().await.is_none());
    }
}
