//! `aep respond` with a relay: the pending requests read from the relay's
//! history, the answer sent to the agent (`aep demo`) over the WebSocket
//! and settled by its ack; free text redacted on the way.

use crate::common;

use common::live::{demo, run_bounded, stop, wait_for, TestRelay};

const TOKEN: &str = "respond-relay-test-token";

#[test]
fn requests_are_read_from_the_relay_and_answers_acked() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let mut agent = demo(&relay, "respond-1");
    let permission = wait_for(&relay, "respond-1", |e| {
        e["type"] == "attention.requested" && e["data"]["kind"] == "permission"
    });
    let id = permission["id"].as_str().unwrap();

    let run = run_bounded(
        relay.aep(&[
            "respond",
            "--session",
            "respond-1",
            "--id",
            id,
            "--option",
            "allow",
        ]),
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("accepted by aep-demo"),
        "{}",
        run.stderr
    );
    let answered = wait_for(&relay, "respond-1", |e| e["type"] == "attention.answered");
    assert_eq!(answered["subject"], id);
    assert_eq!(answered["data"]["answer"]["option"], "allow");

    // Answered: no longer pending.
    let run = run_bounded(
        relay.aep(&[
            "respond",
            "--session",
            "respond-1",
            "--id",
            id,
            "--option",
            "allow",
        ]),
        None,
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("no longer pending"), "{}", run.stderr);

    // The form, the last pending request of every session the relay holds
    // (no --session), through AEP_RELAY: its free text is redacted.
    wait_for(&relay, "respond-1", |e| {
        e["type"] == "attention.requested" && e["data"]["kind"] == "form"
    });
    let values = r#"{"branch":"fix/build","target":"staging","notify":"mail ana@example.com, key AKIAABCDEFGHIJKLMNOP"}"#;
    let mut command = common::aep();
    command
        .args(["respond", "--values", values])
        .env("AEP_RELAY", &relay.base)
        .env("AEP_TOKEN", TOKEN);
    let run = run_bounded(command, None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let sent = wait_for(&relay, "respond-1", |e| {
        e["type"] == "control.attention.respond" && e["data"]["answer"].get("values").is_some()
    });
    assert_eq!(sent["capture"], "redacted");
    let notify = sent["data"]["answer"]["values"]["notify"].as_str().unwrap();
    assert!(
        !notify.contains("ana@example.com") && !notify.contains("AKIA"),
        "{notify}"
    );
    assert_eq!(stop(&mut agent, "TERM"), Some(0));
}

#[test]
fn nothing_pending_and_usage_errors_keep_their_status() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let run = run_bounded(
        relay.aep(&["respond", "--session", "empty", "--option", "x"]),
        None,
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("no attention request is pending"),
        "{}",
        run.stderr
    );
    // A FILE and --relay: one or the other.
    let run = run_bounded(
        relay.aep(&["respond", "--option", "x", "capture.jsonl"]),
        None,
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    // The echo is the emitter's, not sent through a relay.
    let run = run_bounded(
        relay.aep(&["respond", "--emit", "answered", "--option", "x"]),
        None,
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    // A relay that cannot be read.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut nowhere = common::aep();
    nowhere.args([
        "respond",
        "--relay",
        &format!("http://127.0.0.1:{port}"),
        "--option",
        "x",
    ]);
    let run = run_bounded(nowhere, None);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn a_history_whose_start_is_evicted_is_said_not_hidden() {
    // The relay keeps 3 events of the session; its first ones, the
    // request among them, are gone. `aep respond` must not only say there
    // is nothing to answer: it says the history it read is incomplete.
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default().buffer(3));
    relay.post(&common::live::session(
        "urn:aep:test:evicted",
        "evicted",
        0,
        6,
        0,
    ));
    let run = run_bounded(
        relay.aep(&["respond", "--session", "evicted", "--option", "allow"]),
        None,
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("warning: the relay no longer holds the start of session \"evicted\""),
        "{}",
        run.stderr
    );
}
