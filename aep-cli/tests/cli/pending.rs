//! `aep pending` and `aep sessions` against a relay: what waits on a
//! person, read from the relay's history; and `aep respond` naming the
//! requests instead of guessing between them.

use crate::common;

use common::live::{run_bounded, TestRelay};
use serde_json::{json, Value};

const TOKEN: &str = "pending-test-token";

/// One event of `session` (source `urn:aep:test:SESSION`).
fn event(session: &str, seq: u64, type_: &str, data: Value) -> Value {
    let mut e = json!({
        "aep": "0.1", "id": format!("{session}-{seq}"), "type": type_,
        "time": format!("2026-12-01T10:00:{seq:02}Z"),
        "source": format!("urn:aep:test:{session}"), "agent": format!("agent-{session}"),
        "session": session, "seq": seq, "data": data,
    });
    if seq >= 1 {
        e["run"] = json!("r1");
    }
    e
}

/// A session that started a run; then `rest` (from seq 2).
fn session(name: &str, rest: &[(&str, Value)]) -> Vec<String> {
    let mut lines = vec![
        event(name, 0, "session.started", json!({})),
        event(name, 1, "run.started", json!({})),
    ];
    for (i, (type_, data)) in rest.iter().enumerate() {
        let mut e = event(name, 2 + i as u64, type_, data.clone());
        if type_.starts_with("attention.") {
            e["id"] = json!(format!("{name}-req"));
        }
        lines.push(e);
    }
    lines.into_iter().map(|e| e.to_string()).collect()
}

fn permission() -> (&'static str, Value) {
    (
        "attention.requested",
        json!({"kind": "permission", "prompt": "Run rm -rf build?", "options": [
            {"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}]}),
    )
}

fn form() -> (&'static str, Value) {
    (
        "attention.requested",
        json!({"kind": "form", "prompt": "Where to deploy?", "fields": [
            {"id": "branch", "type": "string", "label": "Branch", "required": true},
            {"id": "target", "type": "select", "label": "Target", "choices": [
                {"id": "staging", "label": "Staging"}, {"id": "prod", "label": "Production"}]}]}),
    )
}

/// A relay holding `alpha` (a permission waits), `beta` (a form waits)
/// and `gamma` (ended, nothing waits).
fn relay_with_requests() -> TestRelay {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    relay.post(&session("alpha", &[permission()]));
    relay.post(&session("beta", &[form()]));
    relay.post(&session(
        "gamma",
        &[
            ("run.finished", json!({"duration_ms": 5})),
            ("session.ended", json!({})),
        ],
    ));
    relay
}

#[test]
fn pending_lists_each_request_with_the_line_that_answers_it() {
    let relay = relay_with_requests();
    let run = run_bounded(relay.aep(&["pending"]), None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = &run.stdout;
    let alpha = out.lines().find(|l| l.contains("alpha-req")).expect(out);
    for needle in [
        "alpha",
        "permission",
        "Run rm -rf build?",
        &format!(
            "aep respond --relay {} --session alpha --request alpha-req --option allow",
            relay.base
        ),
    ] {
        assert!(alpha.contains(needle), "`{needle}` not in: {alpha}");
    }
    let beta = out.lines().find(|l| l.contains("beta-req")).expect(out);
    for needle in [
        "form",
        "Where to deploy?",
        r#"--session beta --request beta-req --values '{"branch":"TEXT","target":"staging"}'"#,
    ] {
        assert!(beta.contains(needle), "`{needle}` not in: {beta}");
    }
    assert!(!out.contains("gamma"), "{out}");

    let run = run_bounded(relay.aep(&["pending", "--json"]), None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let rows: Value = serde_json::from_str(&run.stdout).expect("one JSON array");
    let rows = rows.as_array().expect("an array");
    assert_eq!(rows.len(), 2, "{rows:?}");
    let form = rows.iter().find(|r| r["request"] == "beta-req").unwrap();
    assert_eq!(form["session"], "beta");
    assert_eq!(form["kind"], "form");
    assert_eq!(form["fields"], json!(["branch", "target"]));
    assert!(form["respond"]
        .as_str()
        .unwrap()
        .contains("--request beta-req --values"));
    let permission = rows.iter().find(|r| r["request"] == "alpha-req").unwrap();
    assert_eq!(permission["options"], json!(["allow", "deny"]));
    assert!(permission["age_seconds"].is_u64());

    // One session's only.
    let run = run_bounded(relay.aep(&["pending", "--session", "beta", "--json"]), None);
    let rows: Value = serde_json::from_str(&run.stdout).expect("one JSON array");
    assert_eq!(rows.as_array().unwrap().len(), 1);
}

#[test]
fn pending_says_when_nothing_waits() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    relay.post(&session("quiet", &[]));
    let run = run_bounded(relay.aep(&["pending"]), None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "nothing waits on a person\n");
    let run = run_bounded(relay.aep(&["pending", "--json"]), None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim(), "[]");
}

#[test]
fn sessions_show_their_state_runs_and_requests_waiting() {
    let relay = relay_with_requests();
    let run = run_bounded(relay.aep(&["sessions"]), None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let row = |name: &str| -> Vec<String> {
        run.stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row in:\n{}", run.stdout))
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    let header: Vec<&str> = run
        .stdout
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["SESSION", "AGENT", "STATE", "RUNS", "LAST", "PENDING"]
    );
    let alpha = row("alpha");
    assert_eq!(
        (&alpha[1][..], &alpha[2][..], &alpha[3][..], &alpha[5][..]),
        ("agent-alpha", "active", "1", "1")
    );
    let gamma = row("gamma");
    assert_eq!((&gamma[2][..], &gamma[5][..]), ("ended", "0"));

    let run = run_bounded(relay.aep(&["sessions", "--json"]), None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let rows: Value = serde_json::from_str(&run.stdout).expect("one JSON array");
    let of = |name: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["session"] == name)
            .unwrap_or_else(|| panic!("no {name} in {rows}"))
            .clone()
    };
    assert_eq!(of("beta")["state"], "active");
    assert_eq!(of("beta")["pending"], 1);
    assert_eq!(of("gamma")["state"], "ended");
    assert_eq!(of("gamma")["pending"], 0);
    assert_eq!(of("gamma")["runs"], 1);
    assert_eq!(of("gamma")["last_activity"], "2026-12-01T10:00:03Z");
    assert_eq!(of("alpha")["agent"], "agent-alpha");
}

#[test]
fn respond_does_not_guess_between_requests_and_reads_aep_relay() {
    let relay = relay_with_requests();
    // No --relay: AEP_RELAY names it. Two requests wait, none is named,
    // the answer fits either, and this is no terminal: both are listed,
    // exit 2.
    let mut command = common::aep();
    command
        .args(["respond", "--text", "go ahead"])
        .env("AEP_RELAY", &relay.base)
        .env("AEP_TOKEN", TOKEN);
    let run = run_bounded(command, None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    for needle in [
        "2 attention requests are pending",
        "--request ID",
        "session alpha  request alpha-req  permission",
        "session beta  request beta-req  form",
    ] {
        assert!(
            run.stderr.contains(needle),
            "`{needle}` not in: {}",
            run.stderr
        );
    }
    assert!(run.stdout.is_empty());
}

#[test]
fn a_kind_mismatch_names_the_request_its_session_and_fields() {
    let relay = relay_with_requests();
    let run = run_bounded(
        relay.aep(&["respond", "--session", "beta", "--option", "allow"]),
        None,
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    for needle in [
        "the request `beta-req` of session `beta` is a form",
        "fields: branch, target",
        r#"--session beta --request beta-req --values '{"branch":"TEXT","target":"staging"}'"#,
    ] {
        assert!(
            run.stderr.contains(needle),
            "`{needle}` not in: {}",
            run.stderr
        );
    }
}

#[test]
fn respond_without_a_relay_uses_the_default_one() {
    // Without --relay, AEP_RELAY or a FILE, `aep respond` reads the relay
    // every live command defaults to (not a terminal's standard input).
    let free = std::net::TcpListener::bind("127.0.0.1:8787").is_ok();
    if !free {
        eprintln!("127.0.0.1:8787 is in use: the default relay is not checked");
        return;
    }
    let mut command = common::aep();
    command
        .args(["respond", "--option", "allow"])
        .env_remove("AEP_RELAY")
        .env_remove("AEP_TOKEN");
    let run = run_bounded(command, None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("http://127.0.0.1:8787"),
        "{}",
        run.stderr
    );
}
