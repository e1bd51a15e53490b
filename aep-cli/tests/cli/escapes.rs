//! Event text printed as text has its control characters escaped: an
//! event cannot clear the screen, retitle the window or hide output of
//! the commands that report on it. JSON output stays JSON.

use crate::common;

use common::run;

const H: &str = r#""time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a""#;

/// A session id and an event id that carry terminal escapes.
fn hostile() -> String {
    let session = r#""session":"s\u001b[2J\u001b]0;owned\u0007\r\nfake: ok""#;
    [
        format!(r#"{{"aep":"0.1","id":"e1","type":"progress.status",{H},{session},"seq":2,"data":{{}}}}"#),
        format!(r#"{{"aep":"0.1","id":"e2","type":"progress.status",{H},{session},"seq":1,"data":{{}}}}"#),
        r#"{"aep":"0.1","id":"e\u001b]0;id\u0007","type":"x"}"#.to_owned(),
    ]
    .join("\n")
        + "\n"
}

fn assert_escaped(text: &str) {
    assert!(
        !text.contains(['\u{1b}', '\u{7}', '\r']),
        "a raw control character: {text:?}"
    );
}

#[test]
fn validate_text_findings_escape_event_text() {
    let out = run(&["validate", "-"], Some(hostile().as_bytes()));
    assert_eq!(out.code, 1, "{out:?}");
    assert_escaped(&out.stdout);
    assert!(
        out.stdout.contains(r"s\x1b[2J\x1b]0;owned\x07\r\nfake: ok"),
        "{}",
        out.stdout
    );
    // One finding, one line: the fake line stays inside it.
    assert!(
        out.stdout.lines().all(|l| l.starts_with("<stdin>:")),
        "{}",
        out.stdout
    );

    // JSON findings stay JSON, the text as it was.
    let out = run(
        &["validate", "--format", "json", "-"],
        Some(hostile().as_bytes()),
    );
    let messages: Vec<String> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["message"].to_string())
        .collect();
    assert!(
        messages.iter().any(|m| m.contains(r"\u001b]0;owned")),
        "{messages:?}"
    );
}

#[test]
fn diagnostics_escape_event_text() {
    let bad = r#"{"aep":"0.1","id":"e1","type":"x","time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a","severity":"lo\u001b]0;owned\u0007ud"}"#;
    for args in [
        &["filter", "{}", "-"][..],
        &["emit", "--ceiling", "metadata", "-"],
        &["convert", "--to", "otlp", "-"],
        &["project", "-"],
    ] {
        let out = run(args, Some(bad.as_bytes()));
        assert!(
            out.stderr.contains(r"lo\x1b]0;owned\x07ud"),
            "{args:?}: {}",
            out.stderr
        );
        assert_escaped(&out.stderr);
    }
}
