//! `aep hook` with a relay: the first hook call starts the adapter daemon,
//! which holds a `PermissionRequest` open over its one relay connection
//! until a scripted responder answers it (a wrong answer nacked `invalid`
//! and the request kept, a right one applied), or until it times out;
//! the hook prints the vendor's decision, and the log and the relay's
//! history validate with no finding.

#![cfg(unix)]

use crate::common;

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aep::control::{Identity, Outcome};
use aep::{Answer, NackReason};
use aep_client::control::ControlClient;
use common::live::{run_bounded, until, TestRelay, WAIT};
use serde_json::{json, Value};

const TOKEN: &str = "hook-live-token";

fn hook(home: &Path, relay: &TestRelay, timeout_ms: u64) -> Command {
    hook_as("claude-code", home, relay, timeout_ms)
}

fn hook_as(agent: &str, home: &Path, relay: &TestRelay, timeout_ms: u64) -> Command {
    let mut command = common::aep();
    command.args(["hook", agent]);
    with_env(&mut command, home, &relay.base, timeout_ms);
    command
}

/// `aep hook claude-code` for the relay at `base`.
fn hook_at(home: &Path, base: &str, timeout_ms: u64) -> Command {
    let mut command = common::aep();
    command.args(["hook", "claude-code"]);
    with_env(&mut command, home, base, timeout_ms);
    command
}

/// `aep hook claude-code` run by `sh -c`, after `script` (which may set
/// the umask or open descriptors the hook inherits).
fn hook_in_sh(script: &str, home: &Path, relay: &TestRelay) -> Command {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("{script}; exec \"$0\" hook claude-code"))
        .arg(env!("CARGO_BIN_EXE_aep"));
    with_env(&mut command, home, &relay.base, 20_000);
    // Long enough that a daemon holding the test's pipe shows.
    command.env("AEP_ADAPTER_IDLE", "5m");
    command
}

fn with_env(command: &mut Command, home: &Path, base: &str, timeout_ms: u64) {
    command
        .current_dir(common::crate_dir())
        .env("AEP_HOME", home)
        .env("AEP_RELAY", base)
        .env("AEP_TOKEN", TOKEN)
        .env("AEP_ATTENTION_TIMEOUT_MS", timeout_ms.to_string())
        .env("AEP_ADAPTER_IDLE", "3s")
        .env_remove("AEP_CAPTURE");
}

/// The pid the daemon of `home` wrote, once it is there.
fn daemon_pid(home: &Path) -> libc::pid_t {
    let file = home.join("run/adapter.pid");
    let mut pid = None;
    until("the daemon writes its pid", || {
        pid = std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| t.trim().parse().ok());
        pid.is_some()
    });
    pid.unwrap()
}

/// Whether `pid` runs (a zombie does not).
fn alive(pid: libc::pid_t) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .next()?
                .to_owned();
            Some(state != "Z")
        })
        .unwrap_or(false)
}

/// Ends the daemon `pid` and waits, within the bound, until it is gone.
fn end_daemon(pid: libc::pid_t) {
    // SAFETY: a signal to a process this test started (by way of a hook).
    unsafe { libc::kill(pid, libc::SIGTERM) };
    until("the daemon ends", || !alive(pid));
}

fn start(mut command: Command, payload: &Value) -> Child {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(payload.to_string().as_bytes()).unwrap();
    drop(stdin);
    child
}

/// Waits for a hook process: exit 0, its standard output.
fn finish(child: Child) -> String {
    let deadline = Instant::now() + WAIT;
    let mut child = child;
    loop {
        if child.try_wait().unwrap().is_some() || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    String::from_utf8(output.stdout).unwrap()
}

fn payload(session: &str, hook: &str, extra: Value) -> Value {
    let mut payload = json!({"session_id": session, "hook_event_name": hook, "cwd": "/w"});
    for (k, v) in extra.as_object().unwrap() {
        payload[k] = v.clone();
    }
    payload
}

/// The session's `attention.requested` on the relay, once it is there.
fn request_on_relay(relay: &TestRelay, session: &str) -> aep::Event {
    let deadline = Instant::now() + WAIT;
    loop {
        let found = relay
            .history(session)
            .into_iter()
            .find(|l| l.contains("\"type\":\"attention.requested\""));
        if let Some(line) = found {
            return aep::Event::from_json(&line).unwrap();
        }
        assert!(Instant::now() < deadline, "no request reached the relay");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn validate_clean(path: &Path) {
    let run = common::run(&["validate", path.to_str().unwrap()], None);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("0 errors, 0 warnings"),
        "{}",
        run.stderr
    );
}

fn the_log(home: &Path) -> std::path::PathBuf {
    std::fs::read_dir(home.join("logs/claude-code"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("a session log")
}

fn answer(option: Option<&str>, text: Option<&str>) -> Answer {
    let mut answer = Answer::new();
    answer.option = option.map(str::to_owned);
    answer.text = text.map(str::to_owned);
    answer
}

#[test]
fn a_held_permission_is_answered_from_the_relay_and_the_agent_goes_on() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let home = tempfile::tempdir().unwrap();
    let s = "live-1";
    let bash = json!({"tool_name": "Bash", "tool_input": {"command": "cargo test"}});
    for (name, extra) in [
        ("SessionStart", json!({"source": "startup"})),
        ("UserPromptSubmit", json!({"prompt": "run the tests"})),
    ] {
        assert_eq!(
            finish(start(
                hook(home.path(), &relay, 20_000),
                &payload(s, name, extra)
            )),
            ""
        );
    }
    let held = start(
        hook(home.path(), &relay, 20_000),
        &payload(s, "PermissionRequest", bash.clone()),
    );
    let request = request_on_relay(&relay, s);
    assert_eq!(request.subject.as_deref(), Some("Bash"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (wrong, right) = runtime.block_on(async {
        let client = ControlClient::connect(
            &relay.base,
            Some(TOKEN),
            Identity::new("urn:aep:test:responder", "responder"),
        )
        .await
        .unwrap();
        let wrong = client
            .respond(&request, answer(Some("always"), None))
            .await
            .unwrap();
        let right = client
            .respond(&request, answer(None, Some("use cargo nextest instead")))
            .await
            .unwrap();
        (wrong, right)
    });
    assert!(
        matches!(
            wrong.outcome,
            Outcome::Rejected {
                reason: Some(NackReason::Invalid),
                ..
            }
        ),
        "{wrong:?}"
    );
    assert!(matches!(right.outcome, Outcome::Accepted(_)), "{right:?}");
    let stdout = finish(held);
    let decision: Value = serde_json::from_str(stdout.trim()).expect(&stdout);
    assert_eq!(
        decision,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": "use cargo nextest instead"}}})
    );
    assert_eq!(
        finish(start(
            hook(home.path(), &relay, 20_000),
            &payload(s, "Stop", json!({}))
        )),
        ""
    );

    let log = the_log(home.path());
    let events: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "session.started",
            "run.started",
            "attention.requested",
            "control.rejected",
            "control.accepted",
            "attention.answered",
            "attention.resolved",
            "run.finished",
        ]
    );
    assert_eq!(events[2]["data"]["respond_via"], json!(["control"]));
    assert_eq!(events[5]["data"]["answer"]["option"], "deny");
    assert_eq!(events[5]["data"]["via"], "control");
    validate_clean(&log);
    let history = relay.history(s);
    let history_file = home.path().join("history.jsonl");
    std::fs::write(&history_file, history.join("\n") + "\n").unwrap();
    validate_clean(&history_file);
    let ours: Vec<String> = history
        .into_iter()
        .filter(|l| !l.contains("\"type\":\"control.attention.respond\""))
        .collect();
    let logged: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        ours, logged,
        "the relay holds the log, beside the two responds"
    );
}

#[test]
fn an_unanswered_permission_times_out_to_the_vendor_dialog() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let home = tempfile::tempdir().unwrap();
    let s = "live-2";
    let extra = json!({"tool_name": "Write", "tool_input": {"file_path": "/w/a"}});
    finish(start(
        hook(home.path(), &relay, 600),
        &payload(s, "UserPromptSubmit", json!({"prompt": "x"})),
    ));
    let started = Instant::now();
    let held = start(
        hook(home.path(), &relay, 600),
        &payload(s, "PermissionRequest", extra),
    );
    assert_eq!(finish(held), "", "no decision: the vendor asks itself");
    assert!(started.elapsed() >= Duration::from_millis(600));
    let log = the_log(home.path());
    let text = std::fs::read_to_string(&log).unwrap();
    let types: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        types,
        ["run.started", "attention.requested", "attention.timeout"]
    );
    validate_clean(&log);
}

#[test]
fn a_tool_that_ran_anyway_frees_the_held_hook_and_cancel_is_refused() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let home = tempfile::tempdir().unwrap();
    let s = "live-3";
    let tool = json!({"tool_name": "Edit", "tool_input": {"file_path": "/w/b"}});
    finish(start(
        hook(home.path(), &relay, 20_000),
        &payload(s, "UserPromptSubmit", json!({"prompt": "x"})),
    ));
    let held = start(
        hook(home.path(), &relay, 20_000),
        &payload(s, "PermissionRequest", tool.clone()),
    );
    request_on_relay(&relay, s);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cancel = runtime.block_on(async {
        let client = ControlClient::connect(
            &relay.base,
            Some(TOKEN),
            Identity::new("urn:aep:test:responder", "responder"),
        )
        .await
        .unwrap();
        let cancel = aep::Payload::ControlCancel(aep::ControlCancel::new(
            aep::control_cancel::Scope::Session,
        ));
        client
            .send(&aep::control::Address::session(s), &cancel)
            .await
            .unwrap()
    });
    assert!(
        matches!(
            cancel.outcome,
            Outcome::Rejected {
                reason: Some(NackReason::Refused),
                ..
            }
        ),
        "{cancel:?}"
    );
    let mut post = tool.clone();
    post["tool_response"] = json!({"ok": true});
    finish(start(
        hook(home.path(), &relay, 20_000),
        &payload(s, "PostToolUse", post),
    ));
    assert_eq!(finish(held), "", "dismissed: no decision");
    let log = the_log(home.path());
    let text = std::fs::read_to_string(&log).unwrap();
    let types: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        types,
        [
            "run.started",
            "attention.requested",
            "control.rejected",
            "attention.resolved",
            "tool.completed",
        ]
    );
    validate_clean(&log);
}

/// The types of the events a log holds, in order.
fn types_of(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// The log's events of one type.
fn events_of(log: &Path, type_: &str) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == type_)
        .collect()
}

fn values(values: Value) -> Answer {
    let mut answer = Answer::new();
    answer.values = Some(values.as_object().unwrap().clone());
    answer
}

/// Sends each answer to `request` in turn, as a person's client would.
fn respond_all(relay: &TestRelay, request: &aep::Event, answers: Vec<Answer>) -> Vec<Outcome> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = ControlClient::connect(
            &relay.base,
            Some(TOKEN),
            Identity::new("urn:aep:test:responder", "responder"),
        )
        .await
        .unwrap();
        let mut outcomes = Vec::new();
        for answer in answers {
            outcomes.push(client.respond(request, answer).await.unwrap().outcome);
        }
        outcomes
    })
}

fn is_invalid(outcome: &Outcome) -> bool {
    matches!(
        outcome,
        Outcome::Rejected {
            reason: Some(NackReason::Invalid),
            ..
        }
    )
}

#[test]
fn a_question_is_held_as_a_form_and_the_agent_gets_the_labels_picked() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let home = tempfile::tempdir().unwrap();
    let s = "live-question";
    let questions = json!({"questions": [
        {"question": "Which database?", "header": "DB", "multiSelect": false,
         "options": [{"label": "Postgres"}, {"label": "SQLite", "description": "a file"}]},
        {"question": "Which checks run in CI?", "header": "CI", "multiSelect": true,
         "options": [{"label": "fmt"}, {"label": "clippy"}, {"label": "test"}]},
        {"question": "Which runtime?", "header": "Async", "multiSelect": false,
         "options": [{"label": "tokio"}, {"label": "smol"}]},
        {"question": "Ship it today?", "header": "Ship", "multiSelect": false,
         "options": [{"label": "Yes"}, {"label": "No"}]}
    ]});
    let tool = json!({"tool_name": "AskUserQuestion", "tool_input": questions});
    finish(start(
        hook(home.path(), &relay, 20_000),
        &payload(
            s,
            "UserPromptSubmit",
            json!({"prompt": "set the project up"}),
        ),
    ));
    let held = start(
        hook(home.path(), &relay, 20_000),
        &payload(s, "PermissionRequest", tool.clone()),
    );
    let request = request_on_relay(&relay, s);
    let data: Value = serde_json::from_str(request.data.as_ref().unwrap().get()).unwrap();
    assert_eq!(data["kind"], "form", "{data}");
    assert_eq!(data["respond_via"], json!(["control"]));
    assert_eq!(data["fields"].as_array().unwrap().len(), 4);
    assert_eq!(data["fields"][1]["multi"], true);
    assert_eq!(data["fields"][2]["other"], true);

    let outcomes = respond_all(
        &relay,
        &request,
        vec![
            // The fourth question is required and left out.
            values(json!({"1": "2", "2": ["1", "3"], "3": "async-std"})),
            values(json!({"1": "2", "2": ["1", "3"], "3": "async-std", "4": "1"})),
        ],
    );
    assert!(is_invalid(&outcomes[0]), "{:?}", outcomes[0]);
    assert!(
        matches!(outcomes[1], Outcome::Accepted(_)),
        "{:?}",
        outcomes[1]
    );
    let stdout = finish(held);
    let decision: Value = serde_json::from_str(stdout.trim()).expect(&stdout);
    let mut updated = questions.clone();
    updated["answers"] = json!({
        "Which database?": "SQLite",
        "Which checks run in CI?": "fmt, test",
        "Which runtime?": "async-std",
        "Ship it today?": "Yes",
    });
    assert_eq!(
        decision,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow", "updatedInput": updated}}})
    );

    // The tool then runs with the answers in its input: nothing more to
    // settle.
    let mut post = tool.clone();
    post["tool_input"]["answers"] = updated["answers"].clone();
    post["tool_response"] = json!({"answers": updated["answers"]});
    finish(start(
        hook(home.path(), &relay, 20_000),
        &payload(s, "PostToolUse", post),
    ));
    let log = the_log(home.path());
    assert_eq!(
        types_of(&log),
        [
            "run.started",
            "attention.requested",
            "control.rejected",
            "control.accepted",
            "attention.answered",
            "attention.resolved",
            "tool.completed",
        ]
    );
    // The default posture records attention at `redacted`: the typed
    // "Other" text stays beside the closed choices.
    let answered = &events_of(&log, "attention.answered")[0];
    assert_eq!(
        answered["data"]["answer"]["values"],
        json!({"1": "2", "2": ["1", "3"], "3": "async-std", "4": "1"})
    );
    assert_eq!(
        events_of(&log, "attention.resolved")[0]["data"]["resolution"],
        "answered"
    );
    validate_clean(&log);
}

#[test]
fn a_one_question_form_takes_a_plain_option_and_times_out_without_a_decision() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let home = tempfile::tempdir().unwrap();
    let s = "live-question-2";
    let one = json!({"tool_name": "AskUserQuestion", "tool_input": {"questions": [
        {"question": "Which database?", "header": "DB",
         "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]}});
    finish(start(
        hook(home.path(), &relay, 20_000),
        &payload(s, "UserPromptSubmit", json!({"prompt": "x"})),
    ));
    let held = start(
        hook(home.path(), &relay, 20_000),
        &payload(s, "PermissionRequest", one.clone()),
    );
    let request = request_on_relay(&relay, s);
    let outcomes = respond_all(&relay, &request, vec![answer(Some("1"), None)]);
    assert!(matches!(outcomes[0], Outcome::Accepted(_)), "{outcomes:?}");
    let decision: Value = serde_json::from_str(finish(held).trim()).unwrap();
    assert_eq!(
        decision["hookSpecificOutput"]["decision"]["updatedInput"]["answers"],
        json!({"Which database?": "Postgres"})
    );

    // Asked again and left unanswered: the hook lets go with no decision,
    // so the vendor asks in its own dialog.
    let held = start(
        hook(home.path(), &relay, 600),
        &payload(s, "PermissionRequest", one),
    );
    assert_eq!(finish(held), "");
    let log = the_log(home.path());
    let types = types_of(&log);
    assert_eq!(types.last().map(String::as_str), Some("attention.timeout"));
    validate_clean(&log);
}

fn elicitation(s: &str) -> Value {
    payload(
        s,
        "Elicitation",
        json!({"mcp_server_name": "db", "elicitation_id": "e-1",
            "message": "Connect to which database?",
            "requested_schema": {"type": "object", "properties": {
                "host": {"type": "string"},
                "port": {"type": "integer"},
                "mode": {"type": "string", "enum": ["ro", "rw"]}},
                "required": ["host", "mode"]}}),
    )
}

#[test]
fn an_elicitation_is_held_as_a_form_and_answered_as_its_content() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let home = tempfile::tempdir().unwrap();
    let s = "live-elicit";
    finish(start(
        hook(home.path(), &relay, 20_000),
        &payload(s, "UserPromptSubmit", json!({"prompt": "x"})),
    ));
    let held = start(hook(home.path(), &relay, 20_000), &elicitation(s));
    let request = request_on_relay(&relay, s);
    let data: Value = serde_json::from_str(request.data.as_ref().unwrap().get()).unwrap();
    assert_eq!(data["kind"], "form", "{data}");
    assert_eq!(data["respond_via"], json!(["control"]));
    let outcomes = respond_all(
        &relay,
        &request,
        vec![
            // A closed select takes no other value.
            values(json!({"host": "db.internal", "mode": "admin"})),
            values(json!({"host": "db.internal", "port": 5432, "mode": "ro"})),
        ],
    );
    assert!(is_invalid(&outcomes[0]), "{:?}", outcomes[0]);
    assert!(
        matches!(outcomes[1], Outcome::Accepted(_)),
        "{:?}",
        outcomes[1]
    );
    let decision: Value = serde_json::from_str(finish(held).trim()).unwrap();
    assert_eq!(
        decision,
        json!({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept",
            "content": {"host": "db.internal", "port": 5432, "mode": "ro"}}})
    );
    let log = the_log(home.path());
    let answered = &events_of(&log, "attention.answered")[0];
    assert_eq!(answered["data"]["via"], "control");
    assert_eq!(
        answered["data"]["answer"]["values"],
        json!({"host": "db.internal", "port": 5432, "mode": "ro"})
    );
    validate_clean(&log);
}

#[test]
fn an_elicitation_answered_in_the_vendor_dialog_settles_out_of_band() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let home = tempfile::tempdir().unwrap();
    let s = "live-elicit-2";
    finish(start(
        hook(home.path(), &relay, 20_000),
        &payload(s, "UserPromptSubmit", json!({"prompt": "x"})),
    ));
    let held = start(hook(home.path(), &relay, 20_000), &elicitation(s));
    let request = request_on_relay(&relay, s);
    let result = |id: &str| {
        payload(
            s,
            "ElicitationResult",
            json!({"mcp_server_name": "db", "elicitation_id": id, "action": "accept",
                "content": {"host": "db.internal", "mode": "rw"}}),
        )
    };
    // A result for no pending request emits nothing.
    finish(start(hook(home.path(), &relay, 20_000), &result("e-other")));
    finish(start(hook(home.path(), &relay, 20_000), &result("e-1")));
    assert_eq!(finish(held), "", "settled elsewhere: no decision");
    let log = the_log(home.path());
    assert_eq!(
        types_of(&log),
        [
            "run.started",
            "attention.requested",
            "attention.answered",
            "attention.resolved",
        ]
    );
    let answered = &events_of(&log, "attention.answered")[0];
    assert_eq!(answered["subject"], request.id.as_str());
    assert_eq!(answered["data"]["via"], "oob");
    assert_eq!(
        answered["data"]["answer"]["values"],
        json!({"host": "db.internal", "mode": "rw"})
    );
    validate_clean(&log);
}

#[test]
fn a_codex_permission_is_held_and_answered_and_cancel_is_refused() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let home = tempfile::tempdir().unwrap();
    let s = "live-codex";
    let codex = |name: &str, extra: Value| {
        let mut payload = payload(s, name, extra);
        payload["turn_id"] = json!("turn-1");
        payload["model"] = json!("gpt-5-codex");
        payload
    };
    let bash = json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf target"}});
    finish(start(
        hook_as("codex", home.path(), &relay, 20_000),
        &codex("UserPromptSubmit", json!({"prompt": "clean up"})),
    ));
    let held = start(
        hook_as("codex", home.path(), &relay, 20_000),
        &codex("PermissionRequest", bash.clone()),
    );
    let request = request_on_relay(&relay, s);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (cancel, allow) = runtime.block_on(async {
        let client = ControlClient::connect(
            &relay.base,
            Some(TOKEN),
            Identity::new("urn:aep:test:responder", "responder"),
        )
        .await
        .unwrap();
        let cancel = aep::Payload::ControlCancel(aep::ControlCancel::new(
            aep::control_cancel::Scope::Session,
        ));
        let cancel = client
            .send(&aep::control::Address::session(s), &cancel)
            .await
            .unwrap();
        let allow = client
            .respond(&request, answer(Some("allow"), None))
            .await
            .unwrap();
        (cancel.outcome, allow.outcome)
    });
    assert!(
        matches!(
            cancel,
            Outcome::Rejected {
                reason: Some(NackReason::Refused),
                ..
            }
        ),
        "{cancel:?}"
    );
    assert!(matches!(allow, Outcome::Accepted(_)), "{allow:?}");
    let decision: Value = serde_json::from_str(finish(held).trim()).unwrap();
    assert_eq!(
        decision,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"}}})
    );
    let mut post = bash.clone();
    post["tool_response"] = json!("ok");
    finish(start(
        hook_as("codex", home.path(), &relay, 20_000),
        &codex("PostToolUse", post),
    ));
    finish(start(
        hook_as("codex", home.path(), &relay, 20_000),
        &codex("Stop", json!({})),
    ));
    let log = std::fs::read_dir(home.path().join("logs/codex"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("a session log");
    let types = types_of(&log);
    assert_eq!(
        types,
        [
            "run.started",
            "attention.requested",
            "control.rejected",
            "control.accepted",
            "attention.answered",
            "attention.resolved",
            "tool.completed",
            "run.finished",
        ]
    );
    assert_eq!(events_of(&log, "run.started")[0]["run"], "turn-1");
    validate_clean(&log);
}

#[test]
fn the_started_daemon_keeps_none_of_the_hooks_descriptors_and_has_its_own_session() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let home = tempfile::tempdir().unwrap();
    // Descriptor 3 is the hook's standard output pipe again, as a
    // vendor's extra pipe would be: it must reach its end when the hook
    // exits, whatever the daemon it started does.
    let mut child = start(
        hook_in_sh("exec 3>&1", home.path(), &relay),
        &payload("spawn-1", "UserPromptSubmit", json!({"prompt": "x"})),
    );
    let mut out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let read = std::io::Read::read_to_string(&mut out, &mut text);
        let _ = tx.send(read.map(|_| text));
    });
    let read = rx.recv_timeout(WAIT);
    let pid = daemon_pid(home.path());
    let pipe_ended = matches!(read, Ok(Ok(ref text)) if text.is_empty());
    let alive_after = alive(pid);
    // SAFETY: getsid reads a session id; 0 is this process.
    let (theirs, ours) = unsafe { (libc::getsid(pid), libc::getsid(0)) };
    end_daemon(pid);
    assert!(pipe_ended, "the pipe did not end: {read:?}");
    assert!(alive_after, "the daemon outlives the hook");
    assert_ne!(theirs, -1, "the daemon's session reads");
    assert_ne!(theirs, ours, "the daemon is a session of its own");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let stderr = common::live::stderr_of(&mut child);
    assert_eq!(stderr, "", "the call went through the daemon");
}

#[test]
fn the_daemon_socket_is_the_users_alone_under_any_umask() {
    use std::os::unix::fs::PermissionsExt;
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let home = tempfile::tempdir().unwrap();
    let out = finish(start(
        hook_in_sh("umask 000", home.path(), &relay),
        &payload("spawn-2", "UserPromptSubmit", json!({"prompt": "x"})),
    ));
    let pid = daemon_pid(home.path());
    let mode = std::fs::metadata(home.path().join("run/adapter.sock"))
        .map(|m| m.permissions().mode() & 0o777);
    end_daemon(pid);
    assert_eq!(out, "");
    assert_eq!(mode.unwrap(), 0o600, "the socket's mode");
}

#[test]
fn a_daemon_that_failed_to_start_is_not_started_again_for_a_while() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let dir = tempfile::tempdir().unwrap();
    // A socket path past the length a Unix socket takes: the daemon
    // cannot listen, every time.
    let home = dir.path().join("h".repeat(120));
    let s = "spawn-3";
    let first = run_bounded(
        hook(&home, &relay, 20_000),
        Some(
            payload(s, "UserPromptSubmit", json!({"prompt": "x"}))
                .to_string()
                .as_bytes(),
        ),
    );
    assert_eq!(
        (first.code, first.stdout.as_str()),
        (0, ""),
        "{}",
        first.stderr
    );
    assert!(
        first.stderr.contains("the next start is tried after"),
        "{}",
        first.stderr
    );
    assert!(home.join("run/adapter.failed").exists());
    let adapter_log = home.join("logs/adapter.log");
    let starts = || {
        std::fs::read_to_string(&adapter_log)
            .unwrap_or_default()
            .matches("cannot listen on")
            .count()
    };
    until("the failed daemon says why and exits", || {
        starts() == 1 && !home.join("run/adapter.pid").exists()
    });
    let second = run_bounded(
        hook(&home, &relay, 20_000),
        Some(payload(s, "Stop", json!({})).to_string().as_bytes()),
    );
    assert_eq!(
        (second.code, second.stdout.as_str()),
        (0, ""),
        "{}",
        second.stderr
    );
    assert!(
        second
            .stderr
            .contains("the daemon start is skipped and retried after"),
        "{}",
        second.stderr
    );
    assert_eq!(starts(), 1, "no second start");
    // Both calls were recorded and sent by the hooks themselves.
    let text = std::fs::read_to_string(the_log(&home)).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert_eq!(relay.history(s).len(), 2);
}

/// `aep adapter serve` for `home` and the relay at `base`, started by the
/// test (so that the test ends it by its pid), once it listens; its
/// standard error goes to `home/serve.log`.
fn serve(home: &Path, base: &str, extra: &[(&str, &str)]) -> Child {
    let log = std::fs::File::create(home.join("serve.log")).unwrap();
    let mut command = common::aep();
    command
        .args(["adapter", "serve"])
        .current_dir(common::crate_dir())
        .env("AEP_HOME", home)
        .env("AEP_RELAY", base)
        .env("AEP_TOKEN", TOKEN)
        .env("AEP_ATTENTION_TIMEOUT_MS", "20000")
        .env("AEP_ADAPTER_IDLE", "10m")
        .env_remove("AEP_CAPTURE")
        .envs(extra.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    let mut child = command.spawn().unwrap();
    let socket = home.join("run/adapter.sock");
    until("the daemon listens", || {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the daemon exited: {}",
            std::fs::read_to_string(home.join("serve.log")).unwrap_or_default()
        );
        std::os::unix::net::UnixStream::connect(&socket).is_ok()
    });
    child
}

/// Ends a daemon the test started: SIGTERM by its pid, then a bounded
/// wait for it to be gone, with exit 0.
fn stop_serve(mut daemon: Child, home: &Path) {
    let code = common::live::stop(&mut daemon, "TERM");
    let log = std::fs::read_to_string(home.join("serve.log")).unwrap_or_default();
    assert_eq!(code, Some(0), "{log}");
    assert!(!log.contains("panicked"), "{log}");
}

#[test]
fn a_relay_that_never_answers_never_holds_up_a_hook_and_the_daemon_still_stops() {
    // Takes connections into its backlog and never answers them.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", silent.local_addr().unwrap());
    let home = tempfile::tempdir().unwrap();
    let daemon = serve(home.path(), &base, &[("AEP_ADAPTER_QUEUE", "4")]);
    let s = "down-1";
    let calls = 24;
    for i in 0..calls {
        let extra = json!({"tool_name": "Bash", "tool_input": {"command": format!("echo {i}")}});
        let child = start(
            hook_at(home.path(), &base, 20_000),
            &payload(s, "PreToolUse", extra),
        );
        let output = finish_with_stderr(child);
        assert_eq!(output.0, "");
        assert_eq!(output.1, "", "the daemon recorded the call itself");
    }
    // A permission prompt is not held: nobody could see it.
    let tool = json!({"tool_name": "Write", "tool_input": {"file_path": "/w/a"}});
    let (stdout, stderr) = finish_with_stderr(start(
        hook_at(home.path(), &base, 20_000),
        &payload(s, "PermissionRequest", tool),
    ));
    assert_eq!((stdout.as_str(), stderr.as_str()), ("", ""));
    let log = the_log(home.path());
    let types = types_of(&log);
    assert_eq!(types.len(), calls + 1, "{types:?}");
    assert_eq!(
        types.last().map(String::as_str),
        Some("attention.requested")
    );
    stop_serve(daemon, home.path());
    drop(silent);
    validate_clean(&log);
}

/// Waits for a hook process: exit 0, its standard output and error.
fn finish_with_stderr(child: Child) -> (String, String) {
    let deadline = Instant::now() + WAIT;
    let mut child = child;
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    (String::from_utf8(output.stdout).unwrap(), stderr)
}

#[test]
fn a_held_hook_that_died_is_settled_dismissed() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let home = tempfile::tempdir().unwrap();
    let daemon = serve(home.path(), &relay.base, &[]);
    let s = "gone-1";
    finish(start(
        hook(home.path(), &relay, 20_000),
        &payload(s, "UserPromptSubmit", json!({"prompt": "x"})),
    ));
    let tool = json!({"tool_name": "Edit", "tool_input": {"file_path": "/w/b"}});
    let mut held = start(
        hook(home.path(), &relay, 20_000),
        &payload(s, "PermissionRequest", tool),
    );
    let request = request_on_relay(&relay, s);
    held.kill().unwrap();
    held.wait().unwrap();
    let log = the_log(home.path());
    until("the request is settled dismissed", || {
        std::fs::read_to_string(&log).unwrap().lines().any(|l| {
            let event: Value = serde_json::from_str(l).unwrap();
            event["type"] == "attention.resolved"
                && event["subject"] == request.id.as_str()
                && event["data"]["resolution"] == "dismissed"
        })
    });
    assert_eq!(
        types_of(&log),
        ["run.started", "attention.requested", "attention.resolved"]
    );
    until("the relay has the settlement", || {
        relay
            .history(s)
            .iter()
            .any(|l| l.contains("\"type\":\"attention.resolved\""))
    });
    stop_serve(daemon, home.path());
    validate_clean(&log);
    let state: Value = std::fs::read_dir(home.path().join("state/claude-code"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .next()
        .expect("the session's state");
    assert!(state.get("pending").is_none(), "{state}");
}

/// A TCP proxy on 127.0.0.1 that waits `delay` before it connects each
/// accepted connection through to `to`; its `http://` address.
fn slow_proxy(to: &str, delay: Duration) -> String {
    let to = to.trim_start_matches("http://").to_owned();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let to = to.clone();
            std::thread::spawn(move || {
                std::thread::sleep(delay);
                let Ok(server) = std::net::TcpStream::connect(&to) else {
                    return;
                };
                let (Ok(mut client_r), Ok(mut server_w)) = (client.try_clone(), server.try_clone())
                else {
                    return;
                };
                let up = std::thread::spawn(move || {
                    let _ = std::io::copy(&mut client_r, &mut server_w);
                    let _ = server_w.shutdown(std::net::Shutdown::Write);
                });
                let (mut server_r, mut client_w) = (server, client);
                let _ = std::io::copy(&mut server_r, &mut client_w);
                let _ = client_w.shutdown(std::net::Shutdown::Write);
                let _ = up.join();
            });
        }
    });
    base
}

#[test]
fn the_first_permission_after_the_start_waits_for_a_slow_hello() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let proxy = slow_proxy(&relay.base, Duration::from_millis(400));
    let home = tempfile::tempdir().unwrap();
    let daemon = serve(home.path(), &proxy, &[]);
    let s = "slow-1";
    let tool = json!({"tool_name": "Bash", "tool_input": {"command": "make"}});
    let held = start(
        hook_at(home.path(), &proxy, 20_000),
        &payload(s, "PermissionRequest", tool),
    );
    let request = request_on_relay(&relay, s);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let answered = runtime.block_on(async {
        let client = ControlClient::connect(
            &relay.base,
            Some(TOKEN),
            Identity::new("urn:aep:test:responder", "responder"),
        )
        .await
        .unwrap();
        client
            .respond(&request, answer(Some("allow"), None))
            .await
            .unwrap()
    });
    assert!(
        matches!(answered.outcome, Outcome::Accepted(_)),
        "{answered:?}"
    );
    let stdout = finish(held);
    let decision: Value = serde_json::from_str(stdout.trim()).expect(&stdout);
    assert_eq!(
        decision["hookSpecificOutput"]["decision"]["behavior"], "allow",
        "{decision}"
    );
    let log = the_log(home.path());
    let events: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events[0]["type"], "attention.requested");
    assert_eq!(events[0]["data"]["respond_via"], json!(["control"]));
    stop_serve(daemon, home.path());
    validate_clean(&log);
}

/// A TCP proxy on 127.0.0.1 to a relay that can be cut (every connection
/// closed, new ones refused) and opened again.
struct GateProxy {
    /// `http://127.0.0.1:PORT`.
    base: String,
    up: std::sync::Arc<std::sync::atomic::AtomicBool>,
    open: std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
}

impl GateProxy {
    fn start(to: &str) -> GateProxy {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{Arc, Mutex};
        let to = to.trim_start_matches("http://").to_owned();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let up = Arc::new(AtomicBool::new(true));
        let open: Arc<Mutex<Vec<std::net::TcpStream>>> = Arc::default();
        let (gate, streams) = (up.clone(), open.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                if !gate.load(Ordering::SeqCst) {
                    let _ = client.shutdown(std::net::Shutdown::Both);
                    continue;
                }
                let Ok(server) = std::net::TcpStream::connect(&to) else {
                    continue;
                };
                for stream in [&client, &server] {
                    if let Ok(clone) = stream.try_clone() {
                        streams.lock().unwrap().push(clone);
                    }
                }
                pipe(client, server);
            }
        });
        GateProxy { base, up, open }
    }

    /// Closes every connection and refuses new ones.
    fn cut(&self) {
        self.up.store(false, std::sync::atomic::Ordering::SeqCst);
        for stream in self.open.lock().unwrap().drain(..) {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }

    /// Lets connections through again.
    fn open(&self) {
        self.up.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Copies both ways between two connections, on threads.
fn pipe(client: std::net::TcpStream, server: std::net::TcpStream) {
    let (Ok(mut client_r), Ok(mut server_w)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut client_r, &mut server_w);
        let _ = server_w.shutdown(std::net::Shutdown::Write);
    });
    let (mut server_r, mut client_w) = (server, client);
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut server_r, &mut client_w);
        let _ = client_w.shutdown(std::net::Shutdown::Write);
    });
}

#[test]
fn lines_recorded_while_the_relay_was_away_reach_it_once_it_is_back() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let proxy = GateProxy::start(&relay.base);
    let home = tempfile::tempdir().unwrap();
    let daemon = serve(home.path(), &proxy.base, &[]);
    let s = "back-1";
    for (name, extra) in [
        ("SessionStart", json!({"source": "startup"})),
        ("UserPromptSubmit", json!({"prompt": "go"})),
    ] {
        finish(start(
            hook_at(home.path(), &proxy.base, 20_000),
            &payload(s, name, extra),
        ));
    }
    until("the relay has the first lines", || {
        relay.history(s).len() == 2
    });
    proxy.cut();
    // The calls below find the link down: their lines wait in the log.
    until("the daemon sees the link drop", || {
        std::fs::read_to_string(home.path().join("serve.log"))
            .unwrap_or_default()
            .contains("the relay connection dropped")
    });
    for i in 0..6 {
        let extra = json!({"tool_name": "Bash", "tool_input": {"command": format!("echo {i}")}});
        finish(start(
            hook_at(home.path(), &proxy.base, 20_000),
            &payload(s, "PreToolUse", extra),
        ));
    }
    proxy.open();
    let log = the_log(home.path());
    let logged = || -> Vec<String> {
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(logged().len(), 8);
    until("the relay caught up", || relay.history(s).len() >= 8);
    stop_serve(daemon, home.path());
    assert_eq!(relay.history(s), logged(), "each line once, in order");
}

#[test]
fn a_daemon_serving_another_token_is_replaced_not_used() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let home = tempfile::tempdir().unwrap();
    let s = "live-replaced";
    // The first hook was given a wrong token, and its daemon keeps it.
    let mut wrong = hook(home.path(), &relay, 20_000);
    wrong.env("AEP_TOKEN", "not-the-token");
    finish(start(
        wrong,
        &payload(s, "UserPromptSubmit", json!({"prompt": "x"})),
    ));
    let first = daemon_pid(home.path());
    // A hook with the right token is not sent through it: the call is
    // recorded by the hook, and the old daemon steps down.
    let (_, stderr) = finish_with_stderr(start(
        hook(home.path(), &relay, 20_000),
        &payload(
            s,
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_input": {}}),
        ),
    ));
    assert!(
        stderr.contains("another relay, token or capture"),
        "{stderr}"
    );
    until("the old daemon steps down", || !alive(first));
    // The next hook starts a daemon with its own token, which the relay
    // takes: its events arrive.
    finish(start(
        hook(home.path(), &relay, 20_000),
        &payload(s, "Stop", json!({})),
    ));
    let second = daemon_pid(home.path());
    assert_ne!(first, second);
    until("the run's end reaches the relay", || {
        relay
            .history(s)
            .iter()
            .any(|l| l.contains("\"type\":\"run.finished\""))
    });
    let log = the_log(home.path());
    assert_eq!(
        types_of(&log),
        ["run.started", "tool.requested", "run.finished"]
    );
    validate_clean(&log);
    end_daemon(second);
}

#[test]
fn each_hook_is_recorded_at_its_own_capture_and_sent_to_its_own_relay() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let home = tempfile::tempdir().unwrap();
    let s = "live-posture";
    let mut full = hook(home.path(), &relay, 20_000);
    full.env("AEP_CAPTURE", "full");
    finish(start(
        full,
        &payload(s, "UserPromptSubmit", json!({"prompt": "x"})),
    ));
    let first = daemon_pid(home.path());
    // A hook set to metadata is not recorded at the first one's `full`.
    let mut metadata = hook(home.path(), &relay, 20_000);
    metadata.env("AEP_CAPTURE", "metadata");
    let secret = json!({"tool_name": "Bash", "tool_input": {"command": "echo SECRET-TEXT"}});
    finish(start(metadata, &payload(s, "PreToolUse", secret.clone())));
    until("the first daemon steps down", || !alive(first));
    // A relay given by `--relay` alone reaches the daemon the hook starts.
    let mut flag = hook(home.path(), &relay, 20_000);
    flag.env_remove("AEP_RELAY")
        .args(["--relay", &relay.base])
        .env("AEP_CAPTURE", "metadata");
    finish(start(flag, &payload(s, "PreToolUse", secret)));
    until("the flagged call reaches the relay", || {
        relay
            .history(s)
            .iter()
            .filter(|l| l.contains("\"type\":\"tool.requested\""))
            .count()
            >= 1
    });
    let log = the_log(home.path());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("SECRET-TEXT"), "{text}");
    assert_eq!(
        types_of(&log),
        ["run.started", "tool.requested", "tool.requested"]
    );
    validate_clean(&log);
    end_daemon(daemon_pid(home.path()));
}

#[test]
fn a_daemon_that_stops_closes_what_it_held() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let home = tempfile::tempdir().unwrap();
    let s = "live-stopped";
    finish(start(
        hook(home.path(), &relay, 20_000),
        &payload(s, "UserPromptSubmit", json!({"prompt": "x"})),
    ));
    let held = start(
        hook(home.path(), &relay, 20_000),
        &payload(
            s,
            "PermissionRequest",
            json!({"tool_name": "Bash", "tool_input": {"command": "make"}}),
        ),
    );
    let request = request_on_relay(&relay, s);
    end_daemon(daemon_pid(home.path()));
    assert_eq!(finish(held), "", "back to the vendor's dialog");
    let log = the_log(home.path());
    assert_eq!(
        types_of(&log),
        ["run.started", "attention.requested", "attention.resolved"]
    );
    let resolved = &events_of(&log, "attention.resolved")[0];
    assert_eq!(resolved["subject"], request.id.as_str());
    assert_eq!(resolved["data"]["resolution"], "dismissed");
    validate_clean(&log);
}

#[test]
fn a_hook_that_comes_while_the_old_daemon_lets_go_starts_the_next_and_marks_no_failure() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let home = tempfile::tempdir().unwrap();
    // The home as a daemon on its way out leaves it (idling out, or
    // stepping down for another token): its lock still held, nobody
    // listening on the socket any more.
    let run = home.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(run.join("adapter.lock"))
        .unwrap();
    lock.try_lock().unwrap();
    let s = "live-letting-go";
    let first = start(
        hook(home.path(), &relay, 20_000),
        &payload(s, "UserPromptSubmit", json!({"prompt": "x"})),
    );
    let adapter_log = home.path().join("logs/adapter.log");
    until("a daemon the hook started finds the home held", || {
        std::fs::read_to_string(&adapter_log)
            .unwrap_or_default()
            .contains("another daemon serves")
    });
    // The old daemon is gone.
    drop(lock);
    let (stdout, stderr) = finish_with_stderr(first);
    assert_eq!(
        (stdout.as_str(), stderr.as_str()),
        ("", ""),
        "the next daemon recorded the call"
    );
    assert!(
        !run.join("adapter.failed").exists(),
        "no failed start is remembered"
    );
    let daemon = daemon_pid(home.path());
    assert!(alive(daemon));
    // The next hook goes through the same daemon.
    let (_, stderr) = finish_with_stderr(start(
        hook(home.path(), &relay, 20_000),
        &payload(s, "Stop", json!({})),
    ));
    assert_eq!(stderr, "");
    assert_eq!(daemon_pid(home.path()), daemon);
    let log = the_log(home.path());
    assert_eq!(types_of(&log), ["run.started", "run.finished"]);
    end_daemon(daemon);
    validate_clean(&log);
}
