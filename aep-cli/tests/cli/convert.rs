//! `aep convert`, run as a binary.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn corpus_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/valid.jsonl")
}

fn corpus() -> Vec<Value> {
    std::fs::read_to_string(corpus_path())
        .expect("valid.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON"))
        .collect()
}

/// Runs `aep ARGS` with `stdin` as standard input.
fn aep(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_aep"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the aep binary runs");
    let mut pipe = child.stdin.take().expect("stdin");
    let input = stdin.to_owned();
    let writer = std::thread::spawn(move || {
        // The command may stop reading early; a broken pipe is fine here.
        let _ = pipe.write_all(input.as_bytes());
    });
    let output = child.wait_with_output().expect("the command ends");
    writer.join().expect("the writer ends");
    output
}

fn lines(output: &Output) -> Vec<Value> {
    String::from_utf8(output.stdout.clone())
        .expect("UTF-8")
        .lines()
        .map(|line| serde_json::from_str(line).expect("each output line is JSON"))
        .collect()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn cloudevents_there_and_back_is_the_identity() {
    let file = corpus_path();
    let there = aep(
        &["convert", "--to", "cloudevents", file.to_str().unwrap()],
        "",
    );
    assert_eq!(there.status.code(), Some(0), "{}", stderr(&there));
    assert_eq!(stderr(&there), "");
    let ces = lines(&there);
    assert_eq!(ces.len(), corpus().len());
    assert!(ces.iter().all(
        |ce| ce["specversion"] == "1.0" && ce["type"].as_str().unwrap().starts_with("dev.aep.")
    ));
    let text = String::from_utf8(there.stdout).unwrap();
    let back = aep(&["convert", "--from", "cloudevents", "-"], &text);
    assert_eq!(back.status.code(), Some(0), "{}", stderr(&back));
    assert_eq!(lines(&back), corpus());
}

#[test]
fn otlp_exports_every_event_at_the_default_ceiling() {
    let text = std::fs::read_to_string(corpus_path()).unwrap();
    let output = aep(&["convert", "--to", "otlp"], &text);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let records = lines(&output);
    assert_eq!(records.len(), corpus().len());
    for (record, event) in records.iter().zip(corpus()) {
        assert_eq!(
            record["event_name"],
            format!("dev.aep.{}", event["type"].as_str().unwrap())
        );
        // `metadata` by default: an event above it leaves as its envelope
        // alone, stating its own capture.
        assert_eq!(
            record["attributes"].get("aep.capture"),
            event.get("capture"),
            "{record}"
        );
        if ["redacted", "full"].contains(&event["capture"].as_str().unwrap_or("metadata")) {
            assert!(record.get("body").is_none(), "{record}");
            assert!(
                record["attributes"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .all(|k| k.starts_with("aep.")),
                "{record}"
            );
        }
    }
    let bare = aep(&["convert", "--to", "otlp", "--max-capture", "none"], &text);
    let records = lines(&bare);
    assert_eq!(records.len(), corpus().len());
    assert!(records.iter().all(|r| r.get("body").is_none()));
    assert!(records.iter().all(|r| r["attributes"]
        .as_object()
        .unwrap()
        .keys()
        .all(|k| k.starts_with("aep."))));
}

#[test]
fn ocsf_prints_the_security_families_only() {
    let text = std::fs::read_to_string(corpus_path()).unwrap();
    let output = aep(&["convert", "--to", "ocsf"], &text);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let families = ["session.", "tool.", "attention."];
    let expected: Vec<Value> = corpus()
        .into_iter()
        .filter(|e| {
            let t = e["type"].as_str().unwrap();
            families.iter().any(|f| t.starts_with(f))
                && !["attention.routed", "session.compacted"].contains(&t)
        })
        .collect();
    let records = lines(&output);
    assert_eq!(records.len(), expected.len());
    for (record, event) in records.iter().zip(&expected) {
        assert_eq!(record["metadata"]["uid"], event["id"]);
        assert_eq!(record["message"], event["type"]);
    }
}

#[test]
fn refused_lines_are_named_and_the_rest_converts() {
    let good = r#"{"aep":"0.1","id":"e1","type":"agent.idle","time":"2026-11-30T12:00:00Z","source":"urn:x","agent":"a"}"#;
    let input = [
        good,
        "{not json",
        "",
        r#"{"aep":"1.0","id":"e2"}"#,
        &format!(r#"{{"aep":"0.1","pad":"{}"}}"#, "x".repeat(300)),
        &good.replace("e1", "e3"),
    ]
    .join("\n");
    let output = aep(
        &["convert", "--to", "cloudevents", "--max-line-bytes", "256"],
        &input,
    );
    assert_eq!(output.status.code(), Some(1));
    let ids: Vec<Value> = lines(&output).iter().map(|ce| ce["id"].clone()).collect();
    assert_eq!(ids, ["e1", "e3"]);
    let diagnostics = stderr(&output);
    assert!(
        diagnostics.contains("<stdin>:2: error: not an AEP event"),
        "{diagnostics}"
    );
    assert!(
        diagnostics.contains("<stdin>:4: error: `aep` version `1.0`"),
        "{diagnostics}"
    );
    assert!(
        diagnostics.contains("<stdin>:5: error: the line is 322 bytes"),
        "{diagnostics}"
    );
    assert!(!diagnostics.contains("<stdin>:3:"), "{diagnostics}");
    assert!(
        diagnostics.contains("2 converted, 3 refused"),
        "{diagnostics}"
    );
}

#[test]
fn from_cloudevents_warns_on_dropped_attributes_and_refuses_foreign_types() {
    let input = [
        r#"{"specversion":"1.0","id":"i1","source":"urn:x","type":"dev.aep.agent.idle","time":"2026-11-30T12:00:00Z","aepversion":"0.1","aepagentid":"a","region":"eu","Bad-Name":"x"}"#,
        r#"{"specversion":"1.0","id":"o1","source":"/orders","type":"com.example.order.created"}"#,
        r#"{"specversion":"1.0","id":"i2","source":"urn:x","type":"dev.aep.session.started","time":"2026-11-30T12:00:00Z","aepversion":"0.1","aepagentid":"a"}"#,
    ]
    .join("\n");
    let output = aep(&["convert", "--from", "cloudevents"], &input);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        lines(&output),
        [
            serde_json::json!({"aep":"0.1","id":"i1","type":"agent.idle","time":"2026-11-30T12:00:00Z","source":"urn:x","agent":"a","region":"eu"})
        ]
    );
    let diagnostics = stderr(&output);
    assert!(
        diagnostics.contains("aep convert: <stdin>:1: warning: dropped attribute `Bad-Name`"),
        "{diagnostics}"
    );
    assert!(
        diagnostics.contains("<stdin>:2: error: type `com.example.order.created`"),
        "{diagnostics}"
    );
    assert!(
        diagnostics.contains("<stdin>:3: error: not a valid AEP event"),
        "{diagnostics}"
    );
    assert!(diagnostics.contains("`session`"), "{diagnostics}");
}

#[test]
fn cloudevents_down_level_only_when_asked() {
    let event = r#"{"aep":"0.1","id":"e1","type":"tool.requested","subject":"Bash","time":"2026-11-30T12:00:00Z","source":"urn:x","agent":"a","session":"s","seq":1,"capture":"full","data":{"tool":{"name":"Bash"},"args":{"command":"ls"}}}"#;
    let lossless = lines(&aep(&["convert", "--to", "cloudevents"], event));
    assert_eq!(lossless[0]["aepcapture"], "full");
    assert_eq!(lossless[0]["data"]["args"]["command"], "ls");
    let ceiling = lines(&aep(
        &[
            "convert",
            "--to",
            "cloudevents",
            "--max-capture",
            "metadata",
        ],
        event,
    ));
    assert_eq!(ceiling[0]["aepcapture"], "metadata");
    assert_eq!(
        ceiling[0]["data"],
        serde_json::json!({"tool": {"name": "Bash"}})
    );
}

#[test]
fn unreadable_input_and_bad_usage_exit_2() {
    let missing = aep(&["convert", "--to", "otlp", "/nonexistent/aep.jsonl"], "");
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("/nonexistent/aep.jsonl: no such file"));
    let directory = aep(&["convert", "--to", "otlp", env!("CARGO_MANIFEST_DIR")], "");
    assert_eq!(directory.status.code(), Some(2));
    for args in [
        &["convert"][..],
        &["convert", "--to", "cloudevents", "--from", "cloudevents"],
        &["convert", "--to", "xml"],
        &["convert", "--to", "otlp", "--max-capture", "everything"],
    ] {
        let output = aep(args, "");
        assert_eq!(output.status.code(), Some(2), "{args:?}");
    }
}
