//! `aep cancel` against an in-process relay and a control target (`aep
//! demo`, or one that never answers): each outcome's exit status, the
//! same id on every attempt, and the reason redacted.

use crate::common;

use std::time::{Duration, Instant};

use common::live::{demo, run_bounded, stop, wait_for, SilentTarget, TestRelay};

const TOKEN: &str = "cancel-test-token";

#[test]
fn accepted_rejected_and_refused_have_their_exit_status() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let mut agent = demo(&relay, "cancel-1");
    wait_for(&relay, "cancel-1", |e| e["type"] == "run.started");

    // A run that is not running: the agent's nack, `invalid`.
    let run = run_bounded(relay.aep(&["cancel", "cancel-1", "--run", "nope"]), None);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr.contains("rejected by the target: invalid"),
        "{}",
        run.stderr
    );

    // The run, with a reason holding a secret and a home directory.
    let reason = "wrong branch, token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB in /home/ana/repo";
    let run = run_bounded(
        relay.aep(&["cancel", "cancel-1", "--run", "r1", "--reason", reason]),
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("accepted by aep-demo"),
        "{}",
        run.stderr
    );
    let command = wait_for(&relay, "cancel-1", |e| {
        e["type"] == "control.cancel" && e["run"] == "r1"
    });
    assert_eq!(command["capture"], "redacted");
    assert!(command.get("seq").is_none());
    let text = command["data"]["reason"].as_str().unwrap();
    assert!(
        !text.contains("ghp_") && !text.contains("/home/ana"),
        "{text}"
    );
    let cancelled = wait_for(&relay, "cancel-1", |e| e["type"] == "run.cancelled");
    assert_eq!(cancelled["cause"], command["id"]);

    // No agent owns the session: the relay's refusal on its behalf.
    let run = run_bounded(
        relay.aep(&["cancel", "nobody-home", "--ack-window", "2000"]),
        None,
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("refused by the relay on the target's behalf: no-route"),
        "{}",
        run.stderr
    );
    assert_eq!(stop(&mut agent, "TERM"), Some(0));
}

#[test]
fn a_silent_target_times_out_after_the_retries_with_one_id() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let target = SilentTarget::start(&relay, "cancel-silent");
    let started = Instant::now();
    let run = run_bounded(
        relay.aep(&[
            "cancel",
            "cancel-silent",
            "--ack-window",
            "400",
            "--retries",
            "2",
        ]),
        None,
    );
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(run.stderr.contains("timeout"), "{}", run.stderr);
    // Three windows at least: the first attempt and two retries.
    assert!(started.elapsed() >= Duration::from_millis(1200));
    let received = target.received.lock().unwrap().clone();
    assert_eq!(received.len(), 3, "{received:?}");
    assert!(
        received.iter().all(|r| r == &received[0]),
        "the same bytes each time"
    );
}

#[test]
fn a_relay_without_a_token_refuses_and_an_absent_one_is_a_failure() {
    let relay = TestRelay::start(None, aep_relay::Config::default());
    let run = run_bounded(relay.aep(&["cancel", "s", "--ack-window", "2000"]), None);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("unauthorized"), "{}", run.stderr);

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut nowhere = common::aep();
    nowhere.args([
        "cancel",
        "s",
        "--relay",
        &format!("http://127.0.0.1:{port}"),
    ]);
    let run = run_bounded(nowhere, None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let run = common::run(&["cancel", "s", "--relay", "not-a-url"], None);
    assert_eq!(run.code, 2, "{}", run.stderr);
}
