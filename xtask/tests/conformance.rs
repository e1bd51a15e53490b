//! `cargo xtask conformance` on small hand-written fixture directories: a
//! right pin passes, a deliberately wrong one in each category is
//! reported with what differed and makes the exit status 1, pins the
//! project does not implement are counted but fail nothing, and bad
//! arguments are usage errors.
//!
//! Every expected output here is written by hand from the AEP-0005
//! tables (OTLP, OCSF, CloudEvents) and the protocol rules, not taken
//! from the code under test.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .expect("xtask runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn write(dir: &Path, relative: &str, content: &str) {
    let path = dir.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).expect("create directory");
    std::fs::write(path, content).expect("write fixture");
}

fn write_json(dir: &Path, relative: &str, value: &Value) {
    write(dir, relative, &serde_json::to_string_pretty(value).unwrap());
}

const G0: &str = r#"{"aep":"0.1","id":"g0","type":"session.started","time":"2026-01-02T03:04:05.678Z","source":"aep://host-t/agent/t","agent":"t","session":"s1","seq":0,"capture":"metadata","data":{"client":{"name":"t"}}}"#;
const G1: &str = r#"{"aep":"0.1","id":"g1","type":"tool.completed","subject":"Bash","time":"2026-01-02T03:04:06Z","source":"aep://host-t/agent/t","agent":"t","session":"s1","seq":1,"severity":"warning","capture":"metadata","data":{"tool":{"name":"Bash","call_id":"c1"},"gen_ai.usage.input_tokens":5}}"#;

fn envelope(line: &str) -> Value {
    let mut event: Value = serde_json::from_str(line).unwrap();
    event.as_object_mut().unwrap().remove("data");
    event
}

fn golden(dir: &Path) {
    write(dir, "golden/golden.jsonl", &format!("{G0}\n{G1}\n"));
}

/// The OTLP record of G1 (AEP-0005 §3.2): right.
fn otlp_g1() -> Value {
    json!({
        "time_unix_nano": 1_767_323_046_000_000_000_u64,
        "event_name": "dev.aep.tool.completed",
        "severity_text": "WARN",
        "severity_number": 13,
        "resource": {"service.name": "t"},
        "attributes": {
            "aep.event_id": "g1", "aep.source": "aep://host-t/agent/t", "aep.subject": "Bash",
            "aep.agent_id": "t", "aep.session_id": "s1", "aep.sequence": 1,
            "aep.capture": "metadata", "gen_ai.usage.input_tokens": 5
        },
        "body": {"tool": {"name": "Bash", "call_id": "c1"}}
    })
}

/// The OTLP record of G0 with a wrong severity text (`info` is `INFO`).
fn otlp_g0_wrong() -> Value {
    json!({
        "time_unix_nano": 1_767_323_045_678_000_000_u64,
        "event_name": "dev.aep.session.started",
        "severity_text": "DEBUG",
        "severity_number": 9,
        "resource": {"service.name": "t"},
        "attributes": {
            "aep.event_id": "g0", "aep.source": "aep://host-t/agent/t", "aep.agent_id": "t",
            "aep.session_id": "s1", "aep.sequence": 0, "aep.capture": "metadata"
        },
        "body": {"client": {"name": "t"}}
    })
}

fn metadata(id: &str, time: &str) -> Value {
    json!({"version": "1.8.0", "uid": id, "original_time": time, "product": {"name": "t"}})
}

/// The OCSF record of G0 (AEP-0005 §4.2, §4.3): right.
fn ocsf_g0() -> Value {
    json!({
        "class_uid": 3002, "category_uid": 3, "activity_id": 1, "type_uid": 300201,
        "status_id": 1, "severity_id": 1, "time": 1_767_323_045_678_u64,
        "message": "session.started",
        "metadata": metadata("g0", "2026-01-02T03:04:05.678Z"),
        "user": {"name": "t"}, "session": {"uid": "s1"},
        "unmapped": {"aep": envelope(G0), "data": {"client": {"name": "t"}}}
    })
}

/// The OCSF record of G1 with a wrong process uid (the call id is `c1`).
fn ocsf_g1_wrong() -> Value {
    json!({
        "class_uid": 1007, "category_uid": 1, "activity_id": 2, "type_uid": 100702,
        "status_id": 1, "severity_id": 3, "time": 1_767_323_046_000_u64,
        "message": "tool.completed",
        "metadata": metadata("g1", "2026-01-02T03:04:06Z"),
        "actor": {"app_name": "t"},
        "process": {"name": "Bash", "uid": "c9"},
        "device": {"type_id": 0, "hostname": "host-t"},
        "unmapped": {"aep": envelope(G1),
                     "data": {"tool": {"name": "Bash", "call_id": "c1"},
                              "gen_ai.usage.input_tokens": 5}}
    })
}

/// A class subset whose Process Activity class lacks `device`.
fn ocsf_classes() -> Value {
    let sets = json!({"1": "x", "2": "x", "3": "x"});
    json!({"version": "1.8.0", "classes": {
        "3002": {"category_uid": 3, "activity": sets, "severity": sets, "status": sets,
                 "disposition": sets,
                 "attributes": ["class_uid", "category_uid", "activity_id", "type_uid",
                                "status_id", "severity_id", "time", "message", "metadata",
                                "user", "session", "unmapped"]},
        "1007": {"category_uid": 1, "activity": sets, "severity": sets, "status": sets,
                 "disposition": sets,
                 "attributes": ["class_uid", "category_uid", "activity_id", "type_uid",
                                "status_id", "severity_id", "time", "message", "metadata",
                                "actor", "process", "unmapped"]}
    }})
}

/// The CloudEvent of G0 (AEP-0005 §1): right.
fn ce_g0() -> Value {
    json!({
        "specversion": "1.0", "id": "g0", "source": "aep://host-t/agent/t",
        "type": "dev.aep.session.started", "time": "2026-01-02T03:04:05.678Z",
        "datacontenttype": "application/json", "aepversion": "0.1", "aepagentid": "t",
        "aepsessionid": "s1", "aepsequence": 0, "aepcapture": "metadata",
        "data": {"client": {"name": "t"}}
    })
}

/// The CloudEvent of G1 with a wrong sequence (G1's `seq` is 1).
fn ce_g1_wrong() -> Value {
    json!({
        "specversion": "1.0", "id": "g1", "source": "aep://host-t/agent/t",
        "type": "dev.aep.tool.completed", "subject": "Bash", "time": "2026-01-02T03:04:06Z",
        "datacontenttype": "application/json", "aepversion": "0.1", "aepagentid": "t",
        "aepsessionid": "s1", "aepsequence": 2, "aepseverity": "warning",
        "aepcapture": "metadata",
        "data": {"tool": {"name": "Bash", "call_id": "c1"}, "gen_ai.usage.input_tokens": 5}
    })
}

/// One right and one wrong case in every category, and a directory no
/// runner knows.
fn every_category(dir: &Path) {
    golden(dir);
    let g0: Value = serde_json::from_str(G0).unwrap();
    write_json(
        dir,
        "invalid/cases.json",
        &json!({"cases": [
            {"name": "negative seq", "rule": "seq >= 0",
             "event": {"aep": "0.1", "id": "x", "type": "progress.status",
                       "time": "2026-01-02T03:04:05Z", "source": "aep://h", "agent": "a",
                       "session": "s", "seq": -1}},
            {"name": "a valid event", "rule": "none really", "events": [g0]}
        ]}),
    );
    let full = json!({"aep": "0.1", "id": "d", "type": "tool.completed",
        "time": "2026-01-02T03:04:05Z", "source": "aep://h", "agent": "a", "session": "s",
        "seq": 0, "capture": "metadata", "data": {"tool": {"name": "Bash"}}});
    write_json(
        dir,
        "downlevel/cases.json",
        &json!({"cases": [
            {"name": "none drops data", "ceiling": "none", "event": full,
             "expect_capture": "none", "expect_data": null},
            {"name": "none keeps data (wrong)", "ceiling": "none", "event": full,
             "expect_capture": "none", "expect_data": {"tool": {"name": "Bash"}}}
        ]}),
    );
    let fields = json!([{"id": "n", "type": "number", "label": "N"},
                        {"id": "s", "type": "string", "label": "S"}]);
    write_json(
        dir,
        "capture-gating/cases.json",
        &json!({"cases": [
            {"name": "free text goes", "fields": fields, "values": {"n": 3, "s": "free"},
             "ceiling": "metadata", "expect": {"n": 3}},
            {"name": "free text stays (wrong)", "fields": fields, "values": {"n": 3, "s": "free"},
             "ceiling": "metadata", "expect": {"n": 3, "s": "free"}}
        ]}),
    );
    let question = json!({"questions": [{"question": "Pick?", "header": "H",
        "multiSelect": false, "options": [{"label": "A"}, {"label": "B"}]}]});
    write_json(
        dir,
        "mappings/claude-code.json",
        &json!({
            "ask_user_question": {
                "input": question,
                "expected_data": {"kind": "form", "prompt": "claude-code asks 1 question",
                    "fields": [{"id": "1", "type": "select", "label": "H: Pick?", "required": true,
                        "other": true,
                        "choices": [{"id": "1", "label": "A"}, {"id": "2", "label": "B"}]}],
                    "respond_via": ["control"]},
                "expected_data_metadata": {"kind": "form", "prompt": "claude-code asks 1 question",
                    "fields": [{"id": "1", "type": "select", "label": "H", "required": true,
                        "other": true,
                        "choices": [{"id": "1", "label": "1"}, {"id": "2", "label": "2"}]}],
                    "respond_via": ["control"]}
            }
        }),
    );
    write_json(
        dir,
        "mappings/codex.json",
        &json!({"identity": {"session_from": "id"},
        "hooks": {"A": {"input": {"hook_event_name": "Stop", "session_id": "s"},
                        "expected": {"type": "run.finished", "data": {}}},
                  "B": {"input": {"hook_event_name": "PreCompact", "session_id": "s"},
                        "expected": {"type": "session.compacted", "data": {}}},
                  "C": {"input": {"hook_event_name": "Stop"}, "expected_someday": null}}}),
    );
    write_json(
        dir,
        "attr-match/cases.json",
        &json!({
            "match": [
                {"name": "glob", "filter": {"type": ["tool.*"]}, "event": {"type": "tool.failed"},
                 "match": true},
                {"name": "other agent (wrong)", "filter": {"agent": "a"},
                 "event": {"type": "x.y.z", "agent": "b"}, "match": true}
            ],
            "invalid": [
                {"name": "seq", "filter": {"seq": 1}},
                {"name": "a valid filter (wrong)", "filter": {"agent": "x"}}
            ]
        }),
    );
    write(
        dir,
        "ce-roundtrip/ce-expected.jsonl",
        &format!("{}\n{}\n", ce_g0(), ce_g1_wrong()),
    );
    let mut inbound_ce = ce_g0();
    inbound_ce["acmeregion"] = json!("eu-1");
    let mut inbound_event = g0.clone();
    inbound_event["acmeregion"] = json!("eu-1");
    write_json(
        dir,
        "ce-roundtrip/inbound-cases.json",
        &json!({"cases": [
            {"name": "extension kept", "rule": "r", "ce": inbound_ce, "expected": inbound_event}
        ]}),
    );
    write_json(
        dir,
        "otlp/otlp-expected.json",
        &json!({"0": otlp_g0_wrong(), "1": otlp_g1()}),
    );
    write_json(
        dir,
        "ocsf/ocsf-expected.json",
        &json!({"0": ocsf_g0(), "1": ocsf_g1_wrong()}),
    );
    write_json(dir, "ocsf/ocsf-classes.json", &ocsf_classes());
    write_json(
        dir,
        "redaction/cases.json",
        &json!({
            "text_cases": [
                {"name": "aws key", "input": "key AKIAIOSFODNN7EXAMPLE",
                 "must_not_contain": ["AKIAIOSFODNN7EXAMPLE"], "must_contain": ["[REDACTED:secret]"]},
                {"name": "prose (wrong)", "input": "plain words", "must_contain": ["[REDACTED"]}
            ],
            "value_cases": [
                {"name": "token key", "input": {"token": "abcdefgh", "n": 1},
                 "must_not_contain": ["abcdefgh"], "must_contain": ["\"n\": 1"]}
            ]
        }),
    );
    std::fs::create_dir_all(dir.join("lifecycle")).unwrap();
}

#[test]
fn a_wrong_pin_in_any_category_is_a_failure_with_what_differed() {
    let scratch = tempfile::tempdir().expect("temporary directory");
    every_category(scratch.path());
    let result = xtask(&["conformance", scratch.path().to_str().unwrap()]);
    let stdout = text(&result.stdout);
    assert_eq!(
        result.status.code(),
        Some(1),
        "{stdout}{}",
        text(&result.stderr)
    );
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(
        lines,
        [
            "golden          3/3",
            "invalid         1/2",
            "downlevel       1/2",
            "capture-gating  1/2",
            "mappings        2/4 (1 not implemented)",
            "hook-runtime    2/3",
            "attr-match      2/4",
            "ce-roundtrip    3/5",
            "otlp            1/2",
            "ocsf            1/2",
            "redaction       2/3",
            "lifecycle       not implemented (no runner for this category)",
            "",
            "FAILED: 13 failure(s)",
        ],
        "{stdout}"
    );
    for expected in [
        "  FAIL a valid event\n       `aep validate` accepted it, but it violates none really",
        "  FAIL none keeps data (wrong)\n       data: missing, expected {\"tool\":{\"name\":\"Bash\"}}",
        "  FAIL free text stays (wrong)\n       /s: missing, expected \"free\"",
        "  FAIL claude-code.json ask_user_question expected_data_metadata\n       /fields/0/label: expected \"H\", got \"1\"",
        "  FAIL codex.json hooks B expected\n       expected 1 event(s), got 0: []",
        // The same pin through `aep hook` with a relay and the daemon.
        "  FAIL codex.json hooks.B\n       expected 1 event(s), the log holds 0: []",
        "  not implemented: codex.json 1",
        "  FAIL match: other agent (wrong)\n       expected match = true, got false",
        "  FAIL refuse: a valid filter (wrong)\n       `aep filter '{\"agent\":\"x\"}'` was not refused",
        "  FAIL forward[1] tool.completed\n       /aepsequence: expected 2, got 1",
        "  FAIL inverse[1] tool.completed\n       /seq: expected 1, got 2",
        "  FAIL otlp[0] session.started\n       /severity_text: expected \"DEBUG\", got \"INFO\"",
        "  FAIL ocsf[1] tool.completed\n       /process/uid: expected \"c9\", got \"c1\"\n       not attributes of class 1007: [\"device\"]",
        "  FAIL text: prose (wrong)\n       the output lacks \"[REDACTED\": \"plain words\"",
    ] {
        assert!(stdout.contains(expected), "missing {expected:?} in:\n{stdout}");
    }
}

#[test]
fn right_pins_pass_and_absent_categories_fail_nothing() {
    let scratch = tempfile::tempdir().expect("temporary directory");
    golden(scratch.path());
    write_json(
        scratch.path(),
        "otlp/otlp-expected.json",
        &json!({"1": otlp_g1()}),
    );
    let result = xtask(&["conformance", scratch.path().to_str().unwrap()]);
    let stdout = text(&result.stdout);
    assert_eq!(
        result.status.code(),
        Some(0),
        "{stdout}{}",
        text(&result.stderr)
    );
    assert!(stdout.starts_with("golden          3/3\n"), "{stdout}");
    assert!(stdout.contains("\notlp            1/1\n"), "{stdout}");
    assert!(
        stdout.contains("\nocsf            absent (no `ocsf` directory)\n"),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("\nOK: every implemented case passed\n"),
        "{stdout}"
    );
}

#[test]
fn a_malformed_fixture_file_fails_its_category() {
    let scratch = tempfile::tempdir().expect("temporary directory");
    golden(scratch.path());
    write(scratch.path(), "otlp/otlp-expected.json", "{not json");
    let result = xtask(&["conformance", scratch.path().to_str().unwrap()]);
    let stdout = text(&result.stdout);
    assert_eq!(result.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("otlp            0/0\n  ERROR "), "{stdout}");
    assert!(stdout.contains("otlp-expected.json: not JSON"), "{stdout}");
}

#[test]
fn unreadable_fixtures_and_bad_arguments_exit_2() {
    let empty = tempfile::tempdir().expect("temporary directory");
    let missing = empty.path().join("missing");
    for args in [
        vec!["conformance"],
        vec!["conformance", "--frobnicate"],
        vec!["conformance", "a", "b"],
    ] {
        let result = xtask(&args);
        assert_eq!(result.status.code(), Some(2), "{args:?}");
        assert!(
            text(&result.stderr).contains("cargo xtask conformance FIXTURES"),
            "{args:?}"
        );
    }
    let result = xtask(&["conformance", missing.to_str().unwrap()]);
    assert_eq!(result.status.code(), Some(2));
    assert!(text(&result.stderr).contains("is not a directory"));
    let result = xtask(&["conformance", empty.path().to_str().unwrap()]);
    assert_eq!(result.status.code(), Some(2), "{}", text(&result.stderr));
    assert!(text(&result.stderr).contains("holds no fixture category"));
}
