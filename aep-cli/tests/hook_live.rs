//! `aep hook` with a relay: the first hook call starts the adapter daemon,
//! which holds a `PermissionRequest` open over its one relay connection
//! until a scripted responder answers it (a wrong answer nacked `invalid`
//! and the request kept, a right one applied), or until it times out;
//! the hook prints the vendor's decision, and the log and the relay's
//! history validate with no finding.

#![cfg(unix)]

mod common;

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
    let mut command = common::aep();
    command.args(["hook", "claude-code"]);
    with_env(&mut command, home, relay, timeout_ms);
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
    with_env(&mut command, home, relay, 20_000);
    // Long enough that a daemon holding the test's pipe shows.
    command.env("AEP_ADAPTER_IDLE", "5m");
    command
}

fn with_env(command: &mut Command, home: &Path, relay: &TestRelay, timeout_ms: u64) {
    command
        .current_dir(common::crate_dir())
        .env("AEP_HOME", home)
        .env("AEP_RELAY", &relay.base)
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
