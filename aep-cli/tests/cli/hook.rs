//! `aep hook` without a live relay (`hook_live.rs` has the relay side):
//! scripted vendor sessions (payloads as the vendors' hook references
//! document them) recorded into logs that validate; concurrent hook
//! processes of one session; fail-open against a dead or silent relay and
//! bad input; `--install` and `--uninstall` on configurations with other
//! hooks present.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::live::run_bounded;
use serde_json::{json, Value};

/// `aep hook AGENT` with its files under `home` and no relay.
fn hook(home: &Path, agent: &str) -> Command {
    let mut command = common::aep();
    command
        .args(["hook", agent])
        .env("AEP_HOME", home)
        .env_remove("AEP_RELAY")
        .env_remove("AEP_TOKEN")
        .env_remove("AEP_CAPTURE")
        .env("AEP_ADAPTER_IDLE", "2s");
    command
}

/// Runs one hook call; it must exit 0 with nothing on standard output.
fn call(mut command: Command, payload: &Value) -> common::Run {
    command.current_dir(common::crate_dir());
    let run = run_bounded(command, Some(payload.to_string().as_bytes()));
    assert_eq!(run.code, 0, "a hook call exits 0: {}", run.stderr);
    assert_eq!(
        run.stdout, "",
        "a hook call leaves the decision to the vendor"
    );
    run
}

/// The one session log of `agent` under `home`, as events.
fn log(home: &Path, agent: &str) -> (std::path::PathBuf, Vec<Value>) {
    let dir = home.join("logs").join(agent);
    let logs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(logs.len(), 1, "one session log in {}", dir.display());
    let text = std::fs::read_to_string(&logs[0]).unwrap();
    let events = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (logs[0].clone(), events)
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
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

/// The payloads of one Claude Code session, in the members its hooks
/// reference documents.
fn claude_code_session(session: &str) -> Vec<Value> {
    let base = json!({"session_id": session, "transcript_path": "/home/u/.claude/projects/p/t.jsonl",
        "cwd": "/home/u/project", "permission_mode": "default"});
    let with = |hook: &str, extra: Value| {
        let mut payload = base.clone();
        payload["hook_event_name"] = json!(hook);
        for (k, v) in extra.as_object().unwrap() {
            payload[k] = v.clone();
        }
        payload
    };
    vec![
        with(
            "SessionStart",
            json!({"source": "startup", "model": "claude-sonnet-4-5"}),
        ),
        with(
            "UserPromptSubmit",
            json!({"prompt": "fix the failing test, token=ghp_abcdefghijklmnopqrstuvwxyz0123456789"}),
        ),
        with(
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_input": {"command": "cargo test"}, "tool_use_id": "toolu_01"}),
        ),
        with(
            "PermissionRequest",
            json!({"tool_name": "Bash", "tool_input": {"command": "cargo test"}}),
        ),
        with(
            "Notification",
            json!({"message": "Claude needs your permission to use Bash", "notification_type": "permission_prompt"}),
        ),
        with(
            "PostToolUse",
            json!({"tool_name": "Bash", "tool_input": {"command": "cargo test"}, "tool_use_id": "toolu_01", "tool_response": {"stdout": "ok", "exitCode": 0}}),
        ),
        with(
            "PreToolUse",
            json!({"tool_name": "Read", "tool_input": {"file_path": "/home/u/project/x.rs"}, "tool_use_id": "toolu_02"}),
        ),
        with(
            "PostToolUseFailure",
            json!({"tool_name": "Read", "tool_input": {"file_path": "/home/u/project/x.rs"}, "tool_use_id": "toolu_02", "error": "File does not exist.", "is_interrupt": false}),
        ),
        with(
            "SubagentStart",
            json!({"agent_id": "agent_7", "agent_type": "Explore"}),
        ),
        with(
            "SubagentStop",
            json!({"agent_id": "agent_7", "agent_type": "Explore", "stop_hook_active": false}),
        ),
        with(
            "PreCompact",
            json!({"trigger": "auto", "custom_instructions": ""}),
        ),
        with("PostCompact", json!({"trigger": "auto"})),
        with("Stop", json!({"stop_hook_active": false})),
        with("SessionEnd", json!({"reason": "prompt_input_exit"})),
    ]
}

#[test]
fn a_claude_code_session_is_logged_in_order_and_valid() {
    let home = tempfile::tempdir().unwrap();
    for payload in claude_code_session("cc-1") {
        let run = call(hook(home.path(), "claude-code"), &payload);
        assert_eq!(run.stderr, "", "nothing went wrong");
    }
    let (path, events) = log(home.path(), "claude-code");
    assert_eq!(
        types(&events),
        [
            "session.started",
            "run.started",
            "tool.requested",
            "attention.requested",
            "attention.resolved",
            "tool.completed",
            "tool.requested",
            "tool.failed",
            "delegation.subagent.started",
            "delegation.subagent.stopped",
            "session.compacted",
            "run.finished",
            "session.ended",
        ],
        "the duplicate Notification and PreCompact emit nothing"
    );
    // Not held open, the request is answered in Claude Code's own dialog,
    // and the tool finishing closes it.
    assert_eq!(events[3]["data"]["respond_via"], json!(["oob"]));
    assert_eq!(events[4]["subject"], events[3]["id"]);
    assert_eq!(events[4]["data"]["resolution"], "dismissed");
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..13).collect::<Vec<_>>());
    let epoch = &events[0]["epoch"];
    assert!(events
        .iter()
        .all(|e| &e["epoch"] == epoch && e["session"] == "cc-1"));
    let run = events[1]["run"].as_str().expect("the prompt opens a run");
    for event in &events[1..12] {
        if !event["type"].as_str().unwrap().starts_with("session.") {
            assert_eq!(event["run"], run, "{event}");
        }
    }
    assert!(events[0].get("run").is_none() && events[12].get("run").is_none());
    // The prompt is above the metadata ceiling: not on the wire at all.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("ghp_") && !text.contains("failing test"));
    validate_clean(&path);
}

#[test]
fn a_codex_session_takes_its_runs_from_turn_ids() {
    let home = tempfile::tempdir().unwrap();
    let base =
        json!({"session_id": "th-1", "cwd": "/w", "model": "gpt-5-codex", "transcript_path": null});
    let script = [
        ("SessionStart", json!({"source": "startup"})),
        (
            "UserPromptSubmit",
            json!({"turn_id": "turn-1", "prompt": "hello"}),
        ),
        (
            "PreToolUse",
            json!({"turn_id": "turn-1", "tool_name": "Bash", "tool_use_id": "c1", "tool_input": {"command": "ls"}}),
        ),
        (
            "PermissionRequest",
            json!({"turn_id": "turn-1", "tool_name": "Bash", "tool_input": {"command": "ls"}}),
        ),
        (
            "PostToolUse",
            json!({"turn_id": "turn-1", "tool_name": "Bash", "tool_use_id": "c1", "tool_input": {"command": "ls"}, "tool_response": "a\nb"}),
        ),
        (
            "Stop",
            json!({"turn_id": "turn-1", "stop_hook_active": false, "last_assistant_message": "done"}),
        ),
        (
            "UserPromptSubmit",
            json!({"turn_id": "turn-2", "prompt": "again"}),
        ),
        (
            "PreCompact",
            json!({"turn_id": "turn-2", "trigger": "manual"}),
        ),
        (
            "PostCompact",
            json!({"turn_id": "turn-2", "trigger": "manual"}),
        ),
        (
            "Stop",
            json!({"turn_id": "turn-2", "stop_hook_active": false}),
        ),
    ];
    for (name, extra) in script {
        let mut payload = base.clone();
        payload["hook_event_name"] = json!(name);
        for (k, v) in extra.as_object().unwrap() {
            payload[k] = v.clone();
        }
        call(hook(home.path(), "codex"), &payload);
    }
    let (path, events) = log(home.path(), "codex");
    let runs: Vec<Option<&str>> = events.iter().map(|e| e["run"].as_str()).collect();
    assert_eq!(
        runs,
        [
            None,
            Some("turn-1"),
            Some("turn-1"),
            Some("turn-1"),
            Some("turn-1"),
            Some("turn-1"),
            Some("turn-1"),
            Some("turn-2"),
            None,
            Some("turn-2"),
        ],
        "{:?}",
        types(&events)
    );
    assert_eq!(events[4]["type"], "attention.resolved");
    assert_eq!(events[8]["type"], "session.compacted");
    assert_eq!(events[0]["data"]["client"]["name"], "codex");
    validate_clean(&path);
}

#[test]
fn eight_hook_processes_at_once_keep_seq_rising_and_lose_nothing() {
    let home = tempfile::tempdir().unwrap();
    call(
        hook(home.path(), "claude-code"),
        &json!({"hook_event_name": "SessionStart", "session_id": "many", "source": "startup"}),
    );
    let children: Vec<_> = (0..8)
        .map(|i| {
            let mut child = hook(home.path(), "claude-code")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let payload = json!({"hook_event_name": "PreToolUse", "session_id": "many",
                "tool_name": "Bash", "tool_use_id": format!("call-{i}"), "tool_input": {"n": i}});
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(payload.to_string().as_bytes()).unwrap();
            drop(stdin);
            child
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0));
        assert!(output.stdout.is_empty());
    }
    let (path, events) = log(home.path(), "claude-code");
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..9).collect::<Vec<_>>(), "file order is seq order");
    let mut calls: Vec<&str> = events[1..]
        .iter()
        .map(|e| e["data"]["tool"]["call_id"].as_str().unwrap())
        .collect();
    calls.sort_unstable();
    let expected: Vec<String> = (0..8).map(|i| format!("call-{i}")).collect();
    assert_eq!(calls, expected, "every call is there once");
    validate_clean(&path);
}

#[test]
fn a_corrupt_state_starts_a_new_epoch_and_says_so() {
    let home = tempfile::tempdir().unwrap();
    let payload = json!({"hook_event_name": "Notification", "session_id": "torn",
        "message": "idle", "notification_type": "idle_prompt"});
    call(hook(home.path(), "codex"), &payload);
    call(hook(home.path(), "codex"), &payload);
    let state_dir = home.path().join("state").join("codex");
    let state = std::fs::read_dir(&state_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    std::fs::write(&state, b"{\"epoch\": 12, \"next_s").unwrap();
    let run = call(hook(home.path(), "codex"), &payload);
    assert!(run.stderr.contains("corrupt"), "{}", run.stderr);
    let (path, events) = log(home.path(), "codex");
    let positions: Vec<(u64, u64)> = events
        .iter()
        .map(|e| (e["epoch"].as_u64().unwrap(), e["seq"].as_u64().unwrap()))
        .collect();
    assert_eq!(positions[0].1, 0);
    assert_eq!(positions[1], (positions[0].0, 1));
    assert!(
        positions[2].0 > positions[0].0 && positions[2].1 == 0,
        "{positions:?}"
    );
    let hook_log = std::fs::read_to_string(home.path().join("logs/codex/hook.log")).unwrap();
    assert!(hook_log.contains("corrupt"), "{hook_log}");
    validate_clean(&path);
}

#[test]
fn a_missing_or_silent_relay_and_bad_input_never_hold_the_agent() {
    let home = tempfile::tempdir().unwrap();
    // Nothing listens on a port just let go.
    let gone = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}", gone.local_addr().unwrap());
    drop(gone);
    // This one takes connections and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mute = format!("http://{}", silent.local_addr().unwrap());

    // A permission prompt is held only over a live relay connection:
    // with none, it is recorded at once for the vendor's own dialog.
    let payload = json!({"hook_event_name": "PermissionRequest", "session_id": "open",
        "tool_name": "Bash", "tool_input": {"command": "ls"}});
    for relay in [&dead, &mute] {
        let home = tempfile::tempdir().unwrap();
        let mut command = hook(home.path(), "claude-code");
        command.env("AEP_RELAY", relay);
        let started = Instant::now();
        call(command, &payload);
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "bounded: {:?}",
            started.elapsed()
        );
        let (_, events) = log(home.path(), "claude-code");
        assert_eq!(types(&events), ["attention.requested"]);
        assert_eq!(events[0]["data"]["respond_via"], json!(["oob"]));
    }
    drop(silent);

    for input in ["not json", "{}", "{\"session_id\": 7}", "[]", ""] {
        let mut command = hook(home.path(), "claude-code");
        command.current_dir(common::crate_dir());
        let run = run_bounded(command, Some(input.as_bytes()));
        assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{input}");
        assert!(
            run.stderr.starts_with("aep hook claude-code: "),
            "{input}: {}",
            run.stderr
        );
    }
    let bad = hook(home.path(), "codex");
    let run = call(
        bad,
        &json!({"hook_event_name": "PreToolUse", "session_id": "open"}),
    );
    assert!(run.stderr.contains("tool_name"), "{}", run.stderr);
    let unknown = call(
        hook(home.path(), "codex"),
        &json!({"hook_event_name": "BrandNewHook", "session_id": "open"}),
    );
    assert_eq!(unknown.stderr, "");
    let dir = home.path().join("logs/codex");
    let text: String = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert!(
        text.contains("\"type\":\"x.codex.session.brand_new_hook\""),
        "{text}"
    );
}

#[test]
fn a_relay_url_without_a_scheme_starts_no_daemon_and_says_so_once() {
    let home = tempfile::tempdir().unwrap();
    let mut command = hook(home.path(), "claude-code");
    command.env("AEP_RELAY", "127.0.0.1:8787");
    let run = call(
        command,
        &json!({"hook_event_name": "UserPromptSubmit", "session_id": "noscheme", "prompt": "x"}),
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("AEP_RELAY"), "{}", run.stderr);
    assert!(
        run.stderr.contains("http://127.0.0.1:8787"),
        "{}",
        run.stderr
    );
    assert!(
        !home.path().join("run").exists(),
        "no daemon was started: {:?}",
        std::fs::read_dir(home.path().join("run"))
            .map(|d| d.map(|e| e.unwrap().file_name()).collect::<Vec<_>>())
    );
    assert!(!home.path().join("logs/adapter.log").exists());
    let (path, events) = log(home.path(), "claude-code");
    assert_eq!(types(&events), ["run.started"]);
    validate_clean(&path);
}

#[test]
fn install_and_uninstall_leave_other_hooks_alone() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    let theirs = json!({
        "permissions": {"deny": ["Read(./.env)"]},
        "hooks": {"PreToolUse": [{"matcher": "Bash",
            "hooks": [{"type": "command", "command": "./check-bash.sh"}]}]}
    });
    // Their own formatting: 4-space and 2-space indentation, keys out of
    // order, escapes, no trailing newline. Only our entries may change it.
    let original = "{\n    \"permissions\": {\"deny\": [\"Read(./.env)\"]},\n  \"hooks\": {\"PreToolUse\": [{\"matcher\": \"Bash\",\n            \"hooks\": [{\"type\": \"command\", \"command\": \"./check-bash.sh\"}]}]}\n}";
    assert_eq!(serde_json::from_str::<Value>(original).unwrap(), theirs);
    std::fs::write(&settings, original).unwrap();
    let path = settings.to_str().unwrap();
    let install = |extra: &[&str]| {
        let mut command = common::aep();
        command
            .args(["hook", "claude-code", "--settings", path])
            .args(extra)
            .env("AEP_ATTENTION_TIMEOUT_MS", "90000");
        common::run_command(command, None)
    };
    let run = install(&["--install"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let installed: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(installed["permissions"], theirs["permissions"]);
    let pre = installed["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre[0], theirs["hooks"]["PreToolUse"][0]);
    let ours = &pre[1]["hooks"][0];
    assert!(ours["command"]
        .as_str()
        .unwrap()
        .ends_with("aep hook claude-code"));
    assert_eq!(ours["timeout"], 100, "past the attention timeout");
    let hooked: Vec<&String> = installed["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(hooked.len(), 20, "{hooked:?}");

    let installed_text = std::fs::read_to_string(&settings).unwrap();
    let first_insertion = original.find("}]}]}").unwrap() + "}]}".len();
    assert!(
        installed_text.starts_with(&original[..first_insertion]),
        "{installed_text}"
    );

    let again = install(&["--install"]);
    assert!(
        again.stdout.contains("already installed"),
        "{}",
        again.stdout
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), installed_text);

    let run = install(&["--uninstall"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        original,
        "uninstall gives back the exact bytes"
    );

    std::fs::write(&settings, "{\"hooks\": [").unwrap();
    let broken = install(&["--install"]);
    assert_eq!(broken.code, 2);
    assert!(
        broken.stderr.contains("left as it was"),
        "{}",
        broken.stderr
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), "{\"hooks\": [");
}
