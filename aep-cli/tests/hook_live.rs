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
use common::live::{until, TestRelay, WAIT};
use serde_json::{json, Value};

const TOKEN: &str = "hook-live-token";

fn hook(home: &Path, relay: &TestRelay, timeout_ms: u64) -> Command {
    hook_at(home, &relay.base, timeout_ms)
}

/// `aep hook claude-code` for the relay at `base`.
fn hook_at(home: &Path, base: &str, timeout_ms: u64) -> Command {
    let mut command = common::aep();
    command
        .args(["hook", "claude-code"])
        .current_dir(common::crate_dir())
        .env("AEP_HOME", home)
        .env("AEP_RELAY", base)
        .env("AEP_TOKEN", TOKEN)
        .env("AEP_ATTENTION_TIMEOUT_MS", timeout_ms.to_string())
        .env("AEP_ADAPTER_IDLE", "3s")
        .env_remove("AEP_CAPTURE");
    command
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
fn end_daemon(mut daemon: Child, home: &Path) {
    let code = common::live::stop(&mut daemon, "TERM");
    let log = std::fs::read_to_string(home.join("serve.log")).unwrap_or_default();
    assert_eq!(code, Some(0), "{log}");
    assert!(!log.contains("panicked"), "{log}");
}

/// The types of the events in a log.
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
    end_daemon(daemon, home.path());
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
    end_daemon(daemon, home.path());
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
    end_daemon(daemon, home.path());
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
    end_daemon(daemon, home.path());
    assert_eq!(relay.history(s), logged(), "each line once, in order");
}
