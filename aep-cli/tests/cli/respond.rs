//! `aep respond` without a terminal: the answer flags, the request it
//! picks, the rules an answer must pass, and the event it writes, checked
//! against AEP-0004 §2/§6 and AEP-0006 (capture by answer type).

use std::io::Write;
use std::process::{Command, Output, Stdio};

use aep::{Capture, Event};
use serde_json::{json, Value};

const SOURCE: &str = "urn:aep:agent:demo";

/// One envelope of the demo agent's session `s1`.
fn event(id: &str, type_: &str, seq: u64, data: Value) -> Value {
    json!({
        "aep": "0.1", "id": id, "type": type_, "time": "2026-12-03T09:00:00Z",
        "source": SOURCE, "agent": "demo", "session": "s1", "run": "r1", "seq": seq,
        "capture": "redacted", "data": data,
    })
}

/// A form with one field of every kind: a string, a bounded number, a
/// boolean, a closed select, a select with `other`, a closed multi-select
/// and a multi-select with `other`.
fn form_fields() -> Value {
    let choices = json!([{"id": "a", "label": "Alpha"}, {"id": "b", "label": "Beta"}]);
    json!([
        {"id": "name", "type": "string", "label": "Name", "required": true},
        {"id": "port", "type": "number", "label": "Port", "min": 1, "max": 65535},
        {"id": "tls", "type": "boolean", "label": "TLS"},
        {"id": "pick", "type": "select", "label": "Pick", "choices": choices},
        {"id": "open", "type": "select", "label": "Open", "other": true, "choices": choices},
        {"id": "many", "type": "select", "label": "Many", "multi": true, "choices": choices},
        {"id": "more", "type": "select", "label": "More", "multi": true, "other": true, "choices": choices},
    ])
}

fn form_request() -> Value {
    event(
        "req-form",
        "attention.requested",
        2,
        json!({"kind": "form", "prompt": "Set up", "fields": form_fields()}),
    )
}

fn permission_request() -> Value {
    event(
        "req-perm",
        "attention.requested",
        3,
        json!({"kind": "permission", "prompt": "Run rm?", "options": [
            {"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}]}),
    )
}

fn input_request() -> Value {
    event(
        "req-input",
        "attention.requested",
        4,
        json!({"kind": "input", "prompt": "Which branch?"}),
    )
}

fn resolved(id: &str, subject: &str, seq: u64) -> Value {
    let mut e = event(
        id,
        "attention.resolved",
        seq,
        json!({"resolution": "answered"}),
    );
    e["subject"] = json!(subject);
    e
}

/// Writes `lines` as a JSONL file.
fn capture(lines: &[Value]) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("a temporary file");
    for line in lines {
        writeln!(file, "{line}").expect("write the capture");
    }
    file
}

/// Runs `aep respond ARGS FILE` with standard input closed.
fn respond(args: &[&str], file: &tempfile::NamedTempFile) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aep"))
        .arg("respond")
        .args(args)
        .arg(file.path())
        .stdin(Stdio::null())
        .output()
        .expect("run aep")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The one event written, after checking the exit status and that it is
/// one line.
fn written(output: &Output) -> (Event, Value) {
    assert_eq!(output.status.code(), Some(0), "{}", stderr(output));
    let text = std::str::from_utf8(&output.stdout).expect("UTF-8");
    assert_eq!(text.lines().count(), 1, "one line: {text}");
    let event: Event = serde_json::from_str(text).expect("an AEP event");
    event.validate().expect("a valid event");
    let json: Value = serde_json::from_str(text).unwrap();
    (event, json)
}

/// Exit status 1, nothing on standard output, and every `needle` in the
/// message.
fn refused(output: &Output, needles: &[&str]) {
    let message = stderr(output);
    assert_eq!(output.status.code(), Some(1), "{message}");
    assert!(output.stdout.is_empty(), "nothing is written");
    for needle in needles {
        assert!(message.contains(needle), "`{needle}` in: {message}");
    }
}

fn answer_form(values: Value) -> Output {
    let file = capture(&[form_request()]);
    respond(&["--values", &values.to_string()], &file)
}

#[test]
fn a_form_answer_is_a_command_as_aep_0004_wants_it() {
    let before = std::time::SystemTime::now();
    let (event, json) = written(&answer_form(json!({"name": "app", "port": 5432})));
    assert_eq!(event.type_, "control.attention.respond");
    assert_eq!(event.subject.as_deref(), Some("req-form"));
    assert_eq!(event.cause.as_deref(), Some("req-form"));
    assert_eq!(event.session.as_deref(), Some("s1"));
    assert_eq!(json.get("seq"), None, "a command has no seq");
    assert_eq!(event.source, "urn:aep:aep-cli", "the documented default");
    assert_eq!(event.agent, "aep-cli", "the documented default");
    let id: ulid::Ulid = event.id.parse().expect("a ULID id");
    let time = humantime::parse_rfc3339(&event.time).expect("an RFC 3339 UTC time");
    assert!(event.time.ends_with('Z'), "UTC: {}", event.time);
    let slack = std::time::Duration::from_secs(1);
    assert!(time + slack >= before, "time is now: {}", event.time);
    assert!(id.datetime() + slack >= before, "the ULID is fresh");
    assert_eq!(
        json["data"],
        json!({"answer": {"values": {"name": "app", "port": 5432}}})
    );
}

#[test]
fn two_answers_have_two_ids() {
    let (a, _) = written(&answer_form(json!({"name": "x"})));
    let (b, _) = written(&answer_form(json!({"name": "x"})));
    assert_ne!(a.id, b.id);
}

#[test]
fn each_field_type_is_answered_and_sets_the_capture() {
    // (values, capture): free text (a string field, an `other` text)
    // needs `redacted`; numbers, booleans and choice ids stay `metadata`.
    let cases = [
        (json!({"name": "app"}), Capture::Redacted),
        (json!({"name": "app", "port": 1}), Capture::Redacted),
        (json!({"name": ""}), Capture::Redacted),
    ];
    for (values, capture) in cases {
        let (event, _) = written(&answer_form(values.clone()));
        assert_eq!(event.capture, Some(capture), "{values}");
    }
    // The same form without its required string field shows the
    // metadata side.
    let closed = event(
        "req-closed",
        "attention.requested",
        2,
        json!({"kind": "form", "prompt": "Pick", "fields": form_fields().as_array().unwrap()[1..].to_vec()}),
    );
    let file = capture(&[closed]);
    let cases = [
        (json!({"port": 5432}), Capture::Metadata),
        (json!({"port": 0.5e1}), Capture::Metadata),
        (json!({"tls": false}), Capture::Metadata),
        (json!({"pick": "b"}), Capture::Metadata),
        (json!({"open": "a"}), Capture::Metadata),
        (json!({"open": "Gamma, my own"}), Capture::Redacted),
        (json!({"many": ["a", "b"]}), Capture::Metadata),
        (json!({"more": ["b"]}), Capture::Metadata),
        (json!({"more": ["b", "my own"]}), Capture::Redacted),
        (json!({"more": "only mine"}), Capture::Redacted),
        (json!({}), Capture::Metadata),
    ];
    for (values, capture) in cases {
        let output = respond(&["--values", &values.to_string()], &file);
        let (event, json) = written(&output);
        assert_eq!(event.capture, Some(capture), "{values}");
        assert_eq!(json["data"]["answer"]["values"], values);
    }
}

#[test]
fn every_must_reject_case_exits_1_naming_field_and_rule() {
    let cases = [
        // AEP-0006: every required field must be answered ...
        (json!({"port": 80}), vec!["field `name`", "required"]),
        // ... and a select without `other` takes only its choice ids.
        (
            json!({"name": "n", "pick": "c"}),
            vec!["field `pick`", "`c` is not one of its choices"],
        ),
        (
            json!({"name": "n", "many": ["a", "zz"]}),
            vec!["field `many`", "`zz` is not one of its choices"],
        ),
        // The field types and bounds.
        (
            json!({"name": 7}),
            vec!["field `name`", "expected a string"],
        ),
        (
            json!({"name": "n", "port": "80"}),
            vec!["field `port`", "expected a number"],
        ),
        (
            json!({"name": "n", "port": 0}),
            vec!["field `port`", "0 is outside [1, 65535]"],
        ),
        (
            json!({"name": "n", "port": 65536}),
            vec!["field `port`", "65536 is outside [1, 65535]"],
        ),
        (
            json!({"name": "n", "tls": "yes"}),
            vec!["field `tls`", "expected a boolean"],
        ),
        (
            json!({"name": "n", "pick": ["a"]}),
            vec!["field `pick`", "`multi`"],
        ),
        (
            json!({"name": "n", "many": "a"}),
            vec!["field `many`", "expected an array of choice ids"],
        ),
        (
            json!({"name": "n", "zzz": 1}),
            vec!["field `zzz`", "no such field"],
        ),
    ];
    for (values, needles) in cases {
        refused(&answer_form(values), &needles);
    }
}

#[test]
fn every_broken_rule_is_listed() {
    let output = answer_form(json!({"pick": "c", "port": -1}));
    refused(&output, &["field `name`", "field `pick`", "field `port`"]);
}

/// Exit status 2 (a usage error), nothing on standard output, and every
/// `needle` in the message.
fn usage_error(output: &Output, needles: &[&str]) {
    let message = stderr(output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(output.stdout.is_empty(), "nothing is written");
    for needle in needles {
        assert!(message.contains(needle), "`{needle}` in: {message}");
    }
}

#[test]
fn values_that_are_not_an_object_are_a_usage_error() {
    usage_error(&answer_form(json!([1])), &["--values", "JSON object"]);
    let file = capture(&[form_request()]);
    usage_error(
        &respond(&["--values", "{name"], &file),
        &["--values", "not JSON"],
    );
    // A field given twice would lose one of its values.
    usage_error(
        &respond(
            &["--values", r#"{"name": "a", "port": 1, "name": "b"}"#],
            &file,
        ),
        &["--values", "`name` is given twice"],
    );
}

#[test]
fn a_form_takes_only_values_and_values_only_a_form() {
    let file = capture(&[form_request()]);
    // The refusal names the request, its session and the form's fields,
    // and shows the line that answers it.
    let path = file.path().to_str().unwrap();
    for wrong in [["--option", "a"], ["--text", "hi"]] {
        refused(
            &respond(&wrong, &file),
            &[
                "the request `req-form` of session `s1` is a form",
                "fields: name, port, tls, pick, open, many, more",
                &format!(
                    "aep respond --session s1 --request req-form --values \
                     '{{\"name\":\"TEXT\",\"port\":1,\"tls\":true,\"pick\":\"a\",\"open\":\"a\",\"many\":[\"a\"],\"more\":[\"a\"]}}' {path}"
                ),
            ],
        );
    }
    let file = capture(&[permission_request()]);
    refused(
        &respond(&["--values", "{}"], &file),
        &[
            "--values answers a form",
            "the request `req-perm` of session `s1` is of kind `permission`",
            "--option (allow, deny)",
            "aep respond --session s1 --request req-perm --option allow",
        ],
    );
}

#[test]
fn an_option_answers_a_permission_at_metadata() {
    let file = capture(&[permission_request()]);
    let (event, json) = written(&respond(&["--option", "deny"], &file));
    assert_eq!(json["data"], json!({"answer": {"option": "deny"}}));
    assert_eq!(event.capture, Some(Capture::Metadata));
    refused(
        &respond(&["--option", "maybe"], &file),
        &["`maybe`", "allow, deny"],
    );
}

#[test]
fn text_answers_an_input_at_redacted() {
    let file = capture(&[input_request()]);
    let (event, json) = written(&respond(&["--text", "main"], &file));
    assert_eq!(json["data"], json!({"answer": {"text": "main"}}));
    assert_eq!(event.capture, Some(Capture::Redacted));
    assert_eq!(event.subject.as_deref(), Some("req-input"));
    refused(&respond(&["--option", "x"], &file), &["no options"]);
    refused(&respond(&["--text", ""], &file), &["empty"]);
}

#[test]
fn the_one_pending_request_is_answered() {
    // req-input is resolved, so req-perm is the one pending.
    let file = capture(&[
        permission_request(),
        input_request(),
        resolved("res-1", "req-input", 5),
    ]);
    let (event, _) = written(&respond(&["--option", "allow"], &file));
    assert_eq!(event.subject.as_deref(), Some("req-perm"));
}

#[test]
fn several_pending_requests_are_not_guessed_between() {
    // req-form and req-perm are pending (req-input is resolved): off a
    // terminal, with no --request and an answer both could take, the
    // command names both and stops.
    let file = capture(&[
        form_request(),
        permission_request(),
        input_request(),
        resolved("res-1", "req-input", 5),
    ]);
    let output = respond(&["--text", "go ahead"], &file);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    let err = stderr(&output);
    for needle in [
        "2 attention requests are pending",
        "--request ID",
        "session s1  request req-form  form",
        "session s1  request req-perm  permission",
        "aep respond --session s1 --request req-perm --option allow",
    ] {
        assert!(err.contains(needle), "`{needle}` not in: {err}");
    }
    assert!(!err.contains("req-input"), "{err}");
    // An answer only one of them takes picks that one: no guess, and it
    // says which.
    let picked = respond(&["--option", "allow"], &file);
    assert!(
        stderr(&picked)
            .contains("answering the one this answer fits: request req-perm of session s1"),
        "{}",
        stderr(&picked)
    );
    let (event, _) = written(&picked);
    assert_eq!(event.subject.as_deref(), Some("req-perm"));
    let (event, _) = written(&respond(&["--values", "{\"name\":\"n\"}"], &file));
    assert_eq!(event.subject.as_deref(), Some("req-form"));
    // Named, either is answered.
    let (event, _) = written(&respond(
        &["--request", "req-perm", "--option", "allow"],
        &file,
    ));
    assert_eq!(event.subject.as_deref(), Some("req-perm"));
    let (event, _) = written(&respond(
        &["--id", "req-form", "--values", "{\"name\":\"n\"}"],
        &file,
    ));
    assert_eq!(event.subject.as_deref(), Some("req-form"));
}

#[test]
fn nothing_pending_or_an_unknown_id_exits_1() {
    let file = capture(&[input_request(), resolved("res-1", "req-input", 5)]);
    refused(
        &respond(&["--text", "x"], &file),
        &["no attention request is pending"],
    );
    refused(
        &respond(&["--id", "req-input", "--text", "x"], &file),
        &["`req-input`", "no longer pending"],
    );
    refused(
        &respond(&["--id", "req-nope", "--text", "x"], &file),
        &["`req-nope`", "no attention.requested"],
    );
}

#[test]
fn the_sender_is_named_by_the_flags() {
    let file = capture(&[input_request()]);
    let args = [
        "--source",
        "urn:example:console",
        "--agent",
        "ops",
        "--text",
        "x",
    ];
    let (event, _) = written(&respond(&args, &file));
    assert_eq!(event.source, "urn:example:console");
    assert_eq!(event.agent, "ops");
}

#[test]
fn an_event_that_would_break_the_protocol_is_not_written() {
    let file = capture(&[input_request()]);
    let output = respond(&["--source", "not a uri", "--text", "x"], &file);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    assert!(stderr(&output).contains("/source"), "{}", stderr(&output));
}

#[test]
fn the_answered_echo_continues_the_emitters_session() {
    // A later event of the session (seq 9) moves the position.
    let later = event("tick", "progress.status", 9, json!({"message": "working"}));
    let file = capture(&[form_request(), later]);
    let values = json!({"name": "n", "tls": true}).to_string();
    let (event, json) = written(&respond(
        &["--emit", "answered", "--values", &values],
        &file,
    ));
    assert_eq!(event.type_, "attention.answered");
    assert_eq!(event.source, SOURCE, "the request's emitter");
    assert_eq!(event.agent, "demo");
    assert_eq!(event.session.as_deref(), Some("s1"));
    assert_eq!(event.run.as_deref(), Some("r1"));
    assert_eq!(event.seq, Some(10));
    assert_eq!(event.subject.as_deref(), Some("req-form"));
    assert_eq!(event.capture, Some(Capture::Redacted));
    assert_eq!(
        json["data"],
        json!({"answer": {"values": {"name": "n", "tls": true}}, "via": "control"})
    );
}

#[test]
fn without_a_terminal_an_answer_flag_is_needed() {
    let file = capture(&[input_request()]);
    let output = respond(&[], &file);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert!(stderr(&output).contains("--values, --option or --text"));
}

#[test]
fn the_request_and_its_answer_validate_as_one_stream() {
    let request = form_request();
    let file = capture(std::slice::from_ref(&request));
    let output = respond(
        &["--values", "{\"name\":\"n\",\"more\":[\"a\",\"x\"]}"],
        &file,
    );
    let (_, answer) = written(&output);
    let stream = capture(&[request, answer]);
    let output = Command::new(env!("CARGO_BIN_EXE_aep"))
        .args(["validate", "--format", "json"])
        .arg(stream.path())
        .output()
        .expect("run aep validate");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        stderr(&output)
    );
}

#[test]
fn a_request_answered_only_out_of_band_draws_a_warning() {
    let mut request = input_request();
    request["data"]["respond_via"] = json!(["oob"]);
    let file = capture(&[request.clone()]);
    let output = respond(&["--text", "x"], &file);
    written(&output);
    assert!(
        stderr(&output).contains("only out of band"),
        "{}",
        stderr(&output)
    );
    request["data"]["respond_via"] = json!(["oob", "control"]);
    let file = capture(&[request]);
    let output = respond(&["--text", "x"], &file);
    written(&output);
    assert_eq!(stderr(&output), "");
}

#[test]
fn a_request_that_breaks_its_schema_is_not_answered() {
    // A select field without its choices breaks the field_spec schema.
    let broken = event(
        "req-broken",
        "attention.requested",
        2,
        json!({"kind": "form", "prompt": "Pick", "fields": [
            {"id": "x", "type": "select", "label": "X"}]}),
    );
    let file = capture(&[broken]);
    refused(
        &respond(&["--values", "{}"], &file),
        &["`req-broken`", "cannot be answered", "choices"],
    );
}

#[test]
fn the_capture_may_come_on_standard_input() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_aep"))
        .args(["respond", "--option", "allow", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run aep");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "{}", permission_request()).unwrap();
    drop(stdin);
    let output = child.wait_with_output().expect("wait");
    let (event, _) = written(&output);
    assert_eq!(event.subject.as_deref(), Some("req-perm"));
}

/// `redacted` claims the text went through the redaction pipeline
/// (AEP-0001 §8.2(e)): a secret typed into an answer never leaves at
/// `redacted` as it was typed.
#[test]
fn free_text_is_redacted_before_it_claims_redacted() {
    let secret = "password=hunter2 AKIAIOSFODNN7EXAMPLE in /home/ada/x";
    let file = capture(&[input_request()]);
    for emit in ["respond", "answered"] {
        let (event, json) = written(&respond(&["--emit", emit, "--text", secret], &file));
        assert_eq!(event.capture, Some(Capture::Redacted), "{emit}");
        let text = json["data"]["answer"]["text"]
            .as_str()
            .expect("a text answer");
        for leaked in ["hunter2", "AKIAIOSFODNN7EXAMPLE", "/home/ada"] {
            assert!(
                !text.contains(leaked),
                "{emit}: `{leaked}` leaked in {text}"
            );
        }
        assert!(text.contains("[REDACTED:secret]"), "{emit}: {text}");
    }

    // A string field's value and an `other` text go the same way; choice
    // ids and numbers stay as they are.
    let file = capture(&[form_request()]);
    let values = json!({"name": "token: ghp_abcdefghijklmnopqrstuvwxyz0123456789", "port": 80,
                        "open": "mine, secret=s3cr3t", "pick": "a"});
    let (event, json) = written(&respond(&["--values", &values.to_string()], &file));
    assert_eq!(event.capture, Some(Capture::Redacted));
    let written_values = &json["data"]["answer"]["values"];
    let text = written_values.to_string();
    assert!(
        !text.contains("ghp_abc") && !text.contains("s3cr3t"),
        "{text}"
    );
    assert_eq!(written_values["port"], 80);
    assert_eq!(written_values["pick"], "a");

    // The operator's own secrets and home, as `aep emit` takes them.
    let file = capture(&[input_request()]);
    let (_, json) = written(&respond(
        &[
            "--text",
            "k9-value at /srv/ada/a",
            "--secret",
            "k9-value",
            "--home",
            "/srv/ada",
        ],
        &file,
    ));
    assert_eq!(json["data"]["answer"]["text"], "[REDACTED:secret] at ~/a");
}

/// A person who must send the text verbatim says so, and the event says
/// `full`.
#[test]
fn verbatim_free_text_is_sent_at_full() {
    let secret = "password=hunter2";
    let file = capture(&[input_request()]);
    let (event, json) = written(&respond(&["--text", secret, "--capture", "full"], &file));
    assert_eq!(event.capture, Some(Capture::Full));
    assert_eq!(json["data"]["answer"]["text"], secret);
    // An answer without free text stays `metadata` whatever is asked.
    let file = capture(&[permission_request()]);
    let (event, _) = written(&respond(&["--option", "allow", "--capture", "full"], &file));
    assert_eq!(event.capture, Some(Capture::Metadata));
    // Only the two levels that carry free text can be asked for.
    let output = respond(&["--option", "allow", "--capture", "metadata"], &file);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

/// Every diagnostic names the command that printed it.
#[test]
fn a_skipped_line_is_noted_under_the_commands_name() {
    let mut file = capture(&[permission_request()]);
    writeln!(file, "not an event").unwrap();
    let output = respond(&["--option", "allow"], &file);
    let (_, _) = written(&output);
    let notes = stderr(&output);
    assert!(notes.starts_with("aep respond: "), "{notes}");
    assert!(
        notes.contains(":2: ") || notes.contains("line 2"),
        "{notes}"
    );
}
