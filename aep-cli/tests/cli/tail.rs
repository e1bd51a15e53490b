//! `aep tail` against an in-process relay: one readable line per event,
//! control characters escaped, the raw line with --json, the state file
//! that makes a restarted tail resume where it stopped (no repeat, no
//! gap), and the replay-exhausted warning.

use crate::common;

use std::time::Duration;

use common::live::{run_bounded, session, spawn, stderr_of, stop, Lines, TestRelay};

const TOKEN: &str = "tail-test-token";

#[test]
fn a_restarted_tail_resumes_after_what_it_showed() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let state_arg = state.to_str().unwrap();
    let events = session("urn:aep:test", "tail-1", 0, 10, 0);

    let mut child = spawn(relay.aep(&[
        "tail",
        "--json",
        "--session",
        "tail-1",
        "--state",
        state_arg,
    ]));
    let lines = Lines::of(&mut child);
    // Connected: what is posted now arrives live.
    Lines::of_stderr(&mut child).until("connected");
    relay.post(&events[..6]);
    assert_eq!(lines.take(6), events[..6]);
    assert_eq!(stop(&mut child, "TERM"), Some(0));
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    assert_eq!(
        saved["relays"][&relay.base],
        serde_json::json!([{"session": "tail-1", "epoch": 0, "seq": 5}])
    );

    // Posted while no tail runs, then a restart: exactly the missed ones.
    relay.post(&events[6..]);
    let mut child = spawn(relay.aep(&["tail", "--json", "--state", state_arg]));
    let lines = Lines::of(&mut child);
    assert_eq!(lines.take(4), events[6..]);
    assert!(
        lines.rest(Duration::from_millis(500)).is_empty(),
        "nothing twice"
    );
    assert_eq!(stop(&mut child, "TERM"), Some(0));
    let stderr = stderr_of(&mut child);
    assert!(stderr.contains("resuming 1 session"), "{stderr}");
}

#[test]
fn lines_are_readable_escaped_and_uncoloured_on_a_pipe() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let mut child = spawn(relay.aep(&[
        "tail",
        "--no-resume",
        "--type",
        "attention.*",
        "--severity",
        "notice",
    ]));
    let lines = Lines::of(&mut child);
    Lines::of_stderr(&mut child).until("connected");
    let hostile = r#"{"aep":"0.1","id":"a1","type":"attention.requested","time":"2026-11-30T09:00:07Z","source":"urn:aep:test","agent":"a","session":"tail-\u001b[2J","run":"r1","seq":3,"severity":"warning","data":{"kind":"permission","prompt":"Allow\r\nrm -rf /?"}}"#;
    let quiet = r#"{"aep":"0.1","id":"a2","type":"attention.requested","time":"2026-11-30T09:00:08Z","source":"urn:aep:test","agent":"a","session":"tail-\u001b[2J","run":"r1","seq":4,"data":{"kind":"permission","prompt":"info level"}}"#;
    let other = r#"{"aep":"0.1","id":"a3","type":"tool.requested","time":"2026-11-30T09:00:09Z","source":"urn:aep:test","agent":"a","session":"tail-\u001b[2J","run":"r1","seq":5,"severity":"error","data":{"tool":{"name":"Bash"}}}"#;
    relay.post(&[hostile.to_owned(), quiet.to_owned(), other.to_owned()]);
    let got = lines.take(1);
    assert_eq!(
        got[0],
        r#"09:00:07  tail-\x1b[2J  attention.requested [r1]  kind=permission prompt="Allow\r\nrm -rf /?""#
    );
    assert!(
        lines.rest(Duration::from_millis(500)).is_empty(),
        "the filter holds"
    );
    assert_eq!(stop(&mut child, "TERM"), Some(0));
}

#[test]
fn a_resume_past_what_the_relay_holds_is_warned_about() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default().buffer(3));
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    std::fs::write(
        &state,
        serde_json::json!({"version": 1, "relays": {&relay.base: [{"session": "tail-gap", "epoch": 0, "seq": 1}]}}).to_string(),
    )
    .unwrap();
    let events = session("urn:aep:test", "tail-gap", 0, 10, 0);
    relay.post(&events);
    let mut child = spawn(relay.aep(&["tail", "--json", "--state", state.to_str().unwrap()]));
    let lines = Lines::of(&mut child);
    // The relay holds seq 7..9 only.
    assert_eq!(lines.take(3), events[7..]);
    assert_eq!(stop(&mut child, "TERM"), Some(0));
    let stderr = stderr_of(&mut child);
    assert!(
        stderr.contains("warning: replay-exhausted") && stderr.contains("\"tail-gap\" before 0:7"),
        "{stderr}"
    );
}

#[test]
fn a_bad_filter_and_a_refused_token_end_with_status_2() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let run = run_bounded(
        relay.aep(&["tail", "--no-resume", "--filter", r#"{"seq": 3}"#]),
        None,
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("not filterable"), "{}", run.stderr);
    let mut wrong = relay.aep(&["tail", "--no-resume"]);
    wrong.env("AEP_TOKEN", "nope");
    let run = run_bounded(wrong, None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("refused the token"), "{}", run.stderr);
}

/// `aep ARGS` with no relay or token from the environment.
fn bare(args: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_aep"));
    command
        .args(args)
        .env_remove("AEP_RELAY")
        .env_remove("AEP_TOKEN");
    command
}

#[test]
fn a_relay_never_reached_is_given_up_on_with_its_url_and_cause() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    for command in ["tail", "sink"] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut args = vec![command, "--relay", url.as_str()];
        if command == "sink" {
            args.extend(["--out", out.to_str().unwrap()]);
        }
        let run = run_bounded(bare(&args), None);
        assert_ne!(run.code, 0, "{command}: {}", run.stderr);
        assert!(
            run.stderr
                .contains(&format!("never reached the relay at {url}"))
                && run.stderr.contains("connection refused"),
            "{command}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("reconnecting"), "{}", run.stderr);
    }
}

#[test]
fn a_wrong_or_missing_token_and_an_endpoint_url_are_said_apart() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let missing = run_bounded(bare(&["tail", "--relay", &relay.base]), None);
    assert_ne!(missing.code, 0);
    assert!(
        missing.stderr.contains("needs a token"),
        "{}",
        missing.stderr
    );
    let mut wrong = bare(&["tail", "--relay", &relay.base]);
    wrong.env("AEP_TOKEN", "not-the-token");
    let wrong = run_bounded(wrong, None);
    assert_ne!(wrong.code, 0);
    assert!(
        wrong.stderr.contains("refused the token"),
        "{}",
        wrong.stderr
    );
    let endpoint = format!("{}/stream", relay.base);
    let run = run_bounded(bare(&["tail", "--relay", &endpoint]), None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains(&format!("give its base URL: {}", relay.base)),
        "{}",
        run.stderr
    );
}

#[test]
fn a_sink_given_a_file_for_its_directory_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("afile");
    std::fs::write(&file, "").unwrap();
    let run = run_bounded(bare(&["sink", "--out", file.to_str().unwrap()]), None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("is a file; give a directory"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_usage_error_never_shows_the_token_flag_when_the_environment_gives_it() {
    let mut cancel = bare(&["cancel"]);
    cancel.env("AEP_TOKEN", "from-the-environment");
    let run = run_bounded(cancel, None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("Usage: aep cancel"), "{}", run.stderr);
    assert!(!run.stderr.contains("--token"), "{}", run.stderr);
    assert!(
        !run.stderr.contains("from-the-environment"),
        "{}",
        run.stderr
    );
}
