//! `aep post` against an in-process relay: everything accepted, bad lines
//! dropped and reported by their line number in the file while the rest
//! of their batch goes through, commands skipped, and the failures that
//! stop it (a relay that cannot be reached, a refused token).

use crate::common;

use common::live::{jsonl, run_bounded, session, TestRelay};

const TOKEN: &str = "post-test-token";

#[test]
fn a_capture_is_posted_whole() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let lines = session("urn:aep:test", "post-all", 0, 40, 0);
    let run = run_bounded(
        relay.aep(&["post", "--batch", "16", "-"]),
        Some(jsonl(&lines).as_bytes()),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("40 accepted, 0 already held, 0 refused"),
        "{}",
        run.stderr
    );
    assert_eq!(relay.history("post-all"), lines);
}

#[test]
fn a_capture_posted_twice_is_already_held_the_second_time() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let lines = session("urn:aep:test", "post-twice", 0, 10, 0);
    let first = run_bounded(
        relay.aep(&["post", "--batch", "4", "-"]),
        Some(jsonl(&lines).as_bytes()),
    );
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        first
            .stderr
            .contains("10 accepted, 0 already held, 0 refused"),
        "{}",
        first.stderr
    );
    let second = run_bounded(
        relay.aep(&["post", "--batch", "4", "-"]),
        Some(jsonl(&lines).as_bytes()),
    );
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(
        second
            .stderr
            .contains("0 accepted, 10 already held, 0 refused"),
        "{}",
        second.stderr
    );
    assert_eq!(relay.history("post-twice"), lines, "each line once");
}

#[test]
fn bad_lines_are_reported_by_their_line_in_the_file_and_the_rest_goes_through() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let good = session("urn:aep:test", "post-bad", 0, 12, 0);
    let mut lines: Vec<String> = good.clone();
    // Line 3: an envelope the relay refuses (no `time`); line 7: not JSON;
    // line 9: a command (skipped, not refused); line 12: a blank line; line
    // 14: a bad `seq`.
    lines.insert(2, r#"{"aep":"0.1","id":"x1","type":"progress.status","source":"urn:aep:test","agent":"a","session":"post-bad","seq":99,"data":{}}"#.into());
    lines.insert(6, "{not json".into());
    lines.insert(8, r#"{"aep":"0.1","id":"c1","type":"control.cancel","time":"2026-11-30T09:00:00Z","source":"urn:aep:cli","agent":"c","session":"post-bad","data":{"scope":"session"}}"#.into());
    lines.insert(11, "   ".into());
    lines.insert(13, r#"{"aep":"0.1","id":"x2","type":"progress.status","time":"2026-11-30T09:00:00Z","source":"urn:aep:test","agent":"a","session":"post-bad","seq":-4,"data":{}}"#.into());
    let run = run_bounded(
        relay.aep(&["post", "--batch", "4", "-"]),
        Some(jsonl(&lines).as_bytes()),
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let reported: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("refused") || l.contains("not sent") || l.contains("skipped"))
        .filter(|l| l.starts_with("aep post: <stdin>:"))
        .collect();
    assert_eq!(reported.len(), 4, "{}", run.stderr);
    assert!(
        reported[0].starts_with("aep post: <stdin>:3: refused by the relay: invalid-event:"),
        "{reported:?}"
    );
    assert!(
        reported[0].contains("time"),
        "the relay's reason: {reported:?}"
    );
    assert!(
        reported[1].starts_with("aep post: <stdin>:7: not sent: not JSON"),
        "{reported:?}"
    );
    assert!(
        reported[2].starts_with("aep post: <stdin>:9: `control.cancel` skipped"),
        "{reported:?}"
    );
    assert!(
        reported[3].starts_with("aep post: <stdin>:14: refused by the relay: invalid-event:"),
        "{reported:?}"
    );
    assert!(
        run.stderr
            .contains("12 accepted, 0 already held, 3 refused, 1 command(s) skipped"),
        "{}",
        run.stderr
    );
    // Every good line arrived once, in order.
    assert_eq!(relay.history("post-bad"), good);
}

#[test]
fn an_unreachable_relay_a_refused_token_and_a_missing_file_are_failures() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let lines = jsonl(&session("urn:aep:test", "post-fail", 0, 3, 0));
    let mut wrong = relay.aep(&["post", "-"]);
    wrong.env("AEP_TOKEN", "not-the-token");
    let run = run_bounded(wrong, Some(lines.as_bytes()));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("refused the token"), "{}", run.stderr);

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut nowhere = common::aep();
    nowhere.args(["post", "--relay", &format!("http://127.0.0.1:{port}"), "-"]);
    let run = run_bounded(nowhere, Some(lines.as_bytes()));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("cannot be reached"), "{}", run.stderr);

    let run = run_bounded(relay.aep(&["post", "no-such-capture.jsonl"]), None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("no-such-capture.jsonl: no such file"),
        "{}",
        run.stderr
    );
    assert!(relay.history("post-fail").is_empty());
}

#[test]
fn a_refused_type_is_said_in_words_not_as_the_schemas_regex() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let line = r#"{"aep":"0.1","id":"e1","type":"Tool","time":"2026-12-01T10:00:00Z","source":"urn:aep:test","agent":"a","session":"s","seq":0}"#;
    let run = run_bounded(
        relay.aep(&["post", "-"]),
        Some(format!("{line}\n").as_bytes()),
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("/type: does not match the pattern: Event type. Either a core type"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("^((agent"), "no regex: {}", run.stderr);
}
