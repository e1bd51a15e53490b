//! `aep timeline`: a session's history from a relay or a file,
//! deduplicated and in (epoch, seq) order, flat or as the `cause` tree.

use crate::common;

use common::live::{jsonl, run_bounded, TestRelay};
use common::write;

const TOKEN: &str = "timeline-test-token";

fn event(
    id: &str,
    kind: &str,
    seq: Option<u64>,
    epoch: u64,
    cause: Option<&str>,
    data: &str,
) -> String {
    let mut e = serde_json::json!({
        "aep": "0.1", "id": id, "type": kind, "time": "2026-11-30T09:00:00Z",
        "source": "urn:aep:test", "agent": "a", "session": "tl-1", "data": serde_json::from_str::<serde_json::Value>(data).unwrap(),
    });
    if let Some(seq) = seq {
        e["seq"] = seq.into();
    }
    if epoch > 0 {
        e["epoch"] = epoch.into();
    }
    if let Some(cause) = cause {
        e["cause"] = cause.into();
    }
    e.to_string()
}

/// A session in a shuffled order with a redelivery, another session's
/// event, and a cause chain.
fn capture() -> Vec<String> {
    vec![
        event("e3", "attention.requested", Some(3), 0, Some("e2"), r#"{"kind":"permission","prompt":"Allow?"}"#),
        event("e1", "run.started", Some(1), 0, None, "{}"),
        event("e2", "tool.requested", Some(2), 0, Some("e1"), r#"{"tool":{"name":"Bash"}}"#),
        event("e2", "tool.requested", Some(2), 0, Some("e1"), r#"{"tool":{"name":"Bash"}}"#),
        event("e5", "attention.resolved", Some(4), 0, Some("e3"), r#"{"resolution":"answered"}"#),
        event("e4", "attention.answered", Some(0), 1, Some("e3"), r#"{"answer":{"option":"allow"}}"#),
        serde_json::json!({"aep":"0.1","id":"o1","type":"run.started","time":"2026-11-30T09:00:00Z","source":"urn:aep:test","agent":"a","session":"other","seq":1,"data":{}}).to_string(),
    ]
}

fn types(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .map(|l| {
            l.split_whitespace()
                .find(|w| w.contains('.') && !w.contains(':'))
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

#[test]
fn a_file_timeline_is_deduplicated_and_ordered_and_the_dag_follows_causes() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "c.jsonl", jsonl(&capture()).as_bytes());
    let run = common::run(&["timeline", "tl-1", "--file", &file], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        types(&run.stdout),
        [
            "run.started",
            "tool.requested",
            "attention.requested",
            "attention.resolved",
            "attention.answered"
        ],
        "{}",
        run.stdout
    );
    assert!(run.stderr.contains("1 redelivered"), "{}", run.stderr);

    let run = common::run(&["timeline", "tl-1", "--file", &file, "--dag"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let shape: Vec<String> = run
        .stdout
        .lines()
        .map(|l| l[..l.find("09:00:00").unwrap()].to_owned())
        .collect();
    assert_eq!(
        shape,
        ["", "`-- ", "    `-- ", "        |-- ", "        `-- "],
        "{}",
        run.stdout
    );
    assert_eq!(
        types(&run.stdout),
        [
            "run.started",
            "tool.requested",
            "attention.requested",
            "attention.resolved",
            "attention.answered"
        ]
    );

    let run = common::run(&["timeline", "tl-1", "--file", &file, "--json"], None);
    let ids: Vec<String> = run
        .stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(ids, ["e1", "e2", "e3", "e5", "e4"]);

    let run = common::run(&["timeline", "nobody", "--file", &file], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let run = common::run(&["timeline", "tl-1", "--file", "no-such.jsonl"], None);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn a_relay_timeline_reads_the_held_history() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    relay.post(&capture());
    let run = run_bounded(relay.aep(&["timeline", "tl-1"]), None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        types(&run.stdout),
        [
            "run.started",
            "tool.requested",
            "attention.requested",
            "attention.resolved",
            "attention.answered"
        ],
        "{}",
        run.stdout
    );
    let run = run_bounded(relay.aep(&["timeline", "nobody"]), None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let mut refused = relay.aep(&["timeline", "tl-1"]);
    refused.env("AEP_TOKEN", "wrong");
    let run = run_bounded(refused, None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("401"), "{}", run.stderr);
}
