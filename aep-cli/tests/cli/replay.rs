//! `aep replay`: a capture re-emitted as new sessions: redeliveries
//! collapsed first, fresh ids, one epoch, seq without gaps, causes and
//! subjects rewritten, commands skipped, the provenance attributes, the
//! pacing; posted to a relay or written with --dry-run; valid either way.

use crate::common;

use common::live::{jsonl, run_bounded, TestRelay};
use common::write;
use serde_json::Value;

const TOKEN: &str = "replay-test-token";

fn event(
    id: &str,
    kind: &str,
    session: &str,
    seq: Option<u64>,
    epoch: u64,
    time: &str,
    extra: Value,
) -> String {
    let mut e = serde_json::json!({
        "aep": "0.1", "id": id, "type": kind, "time": time,
        "source": "urn:aep:test", "agent": "a", "session": session, "data": {},
    });
    if let Some(seq) = seq {
        e["seq"] = seq.into();
    }
    if epoch > 0 {
        e["epoch"] = epoch.into();
    }
    for (k, v) in extra.as_object().unwrap() {
        e[k] = v.clone();
    }
    e.to_string()
}

/// Two sessions, one resumed under a new epoch, with a redelivery (two
/// rotated segments overlapping), a command, and a request answered.
fn capture() -> Vec<String> {
    let req = serde_json::json!({"run": "r1", "severity": "notice", "data": {"kind": "permission", "prompt": "ok?", "respond_via": ["control"]}});
    vec![
        event("a0", "session.started", "rp-a", Some(0), 0, "2026-11-30T09:00:00Z", serde_json::json!({})),
        event("b0", "session.started", "rp-b", Some(0), 0, "2026-11-30T09:00:01Z", serde_json::json!({})),
        event("a1", "run.started", "rp-a", Some(1), 0, "2026-11-30T09:00:02Z", serde_json::json!({"run": "r1"})),
        event("a2", "attention.requested", "rp-a", Some(2), 0, "2026-11-30T09:00:03Z", req),
        serde_json::json!({"aep":"0.1","id":"cmd","type":"control.attention.respond","time":"2026-11-30T09:00:04Z","source":"urn:aep:cli","agent":"cli","session":"rp-a","subject":"a2","cause":"a2","data":{"answer":{"option":"allow"}}}).to_string(),
        // A restart: epoch 1 starts over at seq 0.
        event("a3", "attention.answered", "rp-a", Some(0), 1, "2026-11-30T09:00:05Z", serde_json::json!({"run": "r1", "subject": "a2", "cause": "a2", "data": {"answer": {"option": "allow"}, "via": "control"}})),
        event("a4", "attention.resolved", "rp-a", Some(1), 1, "2026-11-30T09:00:05Z", serde_json::json!({"run": "r1", "subject": "a2", "cause": "a3", "data": {"resolution": "answered"}})),
        // The overlap of two segments.
        event("a3", "attention.answered", "rp-a", Some(0), 1, "2026-11-30T09:00:05Z", serde_json::json!({"run": "r1", "subject": "a2", "cause": "a2", "data": {"answer": {"option": "allow"}, "via": "control"}})),
        event("a5", "run.finished", "rp-a", Some(2), 1, "2026-11-30T09:10:00Z", serde_json::json!({"run": "r1"})),
    ]
}

fn parse(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_dry_run_writes_new_valid_sessions_with_their_provenance() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "c.jsonl", jsonl(&capture()).as_bytes());
    let run = common::run(&["replay", &file, "--dry-run", "--max-gap", "1000"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("1 command(s)") && run.stderr.contains("1 redelivery"),
        "{}",
        run.stderr
    );
    let events = parse(&run.stdout);
    assert_eq!(events.len(), 7, "the command and the redelivery are gone");
    assert!(events
        .iter()
        .all(|e| e["type"] != "control.attention.respond"));

    let a: Vec<&Value> = events
        .iter()
        .filter(|e| e["aepreplayof"] == "rp-a")
        .collect();
    let b: Vec<&Value> = events
        .iter()
        .filter(|e| e["aepreplayof"] == "rp-b")
        .collect();
    assert_eq!((a.len(), b.len()), (6, 1));
    let session = a[0]["session"].as_str().unwrap();
    assert!(session.starts_with("replay-") && session != "rp-a");
    assert_ne!(b[0]["session"], a[0]["session"]);
    // One epoch, seq from 0 without gaps, in recorded (epoch, seq) order.
    assert!(a
        .iter()
        .all(|e| e["session"] == session && e.get("epoch").is_none()));
    let seqs: Vec<u64> = a.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4, 5]);
    let recorded: Vec<&str> = a
        .iter()
        .map(|e| e["aepreplayid"].as_str().unwrap())
        .collect();
    assert_eq!(recorded, ["a0", "a1", "a2", "a3", "a4", "a5"]);
    // Fresh ids; references follow them.
    let new_id = |old: &str| a.iter().find(|e| e["aepreplayid"] == old).unwrap()["id"].clone();
    assert!(a.iter().all(|e| e["id"] != e["aepreplayid"]));
    assert_eq!(a[3]["subject"], new_id("a2"));
    assert_eq!(a[3]["cause"], new_id("a2"));
    assert_eq!(a[4]["cause"], new_id("a3"));
    assert_eq!(a[0]["aepreplaytime"], "2026-11-30T09:00:00Z");
    // Interleaved by recorded time: b's only event comes second.
    assert_eq!(events[1]["aepreplayof"], "rp-b");
    // The ten-minute gap is capped at --max-gap.
    let ms = |e: &Value| {
        let t = e["time"].as_str().unwrap();
        t[17..19].parse::<u64>().unwrap() * 1000
            + t[20..23].parse::<u64>().unwrap()
            + t[14..16].parse::<u64>().unwrap() * 60_000
    };
    let gap = (ms(a[5]) + 3_600_000 - ms(a[4])) % 3_600_000;
    assert_eq!(gap, 1000, "{} -> {}", a[4]["time"], a[5]["time"]);

    // The replayed stream passes `aep validate`.
    let replayed = write(dir.path(), "r.jsonl", run.stdout.as_bytes());
    let check = common::run(&["validate", &replayed], None);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
}

#[test]
fn a_replay_is_posted_to_the_relay_at_speed() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "c.jsonl", jsonl(&capture()).as_bytes());
    let started = std::time::Instant::now();
    let run = run_bounded(
        relay.aep(&["replay", &file, "--speed", "100", "--max-gap", "50"]),
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let new = run
        .stderr
        .lines()
        .find(|l| l.contains("\"rp-a\"") && l.contains("becomes"))
        .and_then(|l| l.split_whitespace().last())
        .unwrap()
        .to_owned();
    let held = relay.history(&new);
    assert_eq!(held.len(), 6, "{held:?}");
    let text = jsonl(&held);
    let replayed = write(dir.path(), "held.jsonl", text.as_bytes());
    let check = common::run(&["validate", &replayed], None);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);

    let mut wrong = relay.aep(&["replay", &file, "--speed", "1000"]);
    wrong.env("AEP_TOKEN", "nope");
    let run = run_bounded(wrong, None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("aborted"), "{}", run.stderr);
    let run = common::run(&["replay", "no-such.jsonl", "--dry-run"], None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let run = common::run(&["replay", &file, "--speed", "0"], None);
    assert_eq!(run.code, 2, "{}", run.stderr);
}
