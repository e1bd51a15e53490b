//! `aep project` end to end. Expected states are worked out by hand from
//! the projection's rules (AEP-0001 §7, AEP-0002 §2 convention 5 and §7).

use crate::common;

use common::{fixture, read, run, EXAMPLE};
use serde_json::{json, Value};

fn parse(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}:\n{stdout}"))
}

#[test]
fn the_example_projects_to_one_closed_session() {
    let run = run(&["project", EXAMPLE], None);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr, "");
    // The respond command comes from another source and folds no state;
    // the request evt_04 is resolved by evt_07, so nothing is pending.
    assert_eq!(
        parse(&run.stdout),
        json!({
            "sessions": [{
                "source": "urn:aep:agent:demo", "session": "ses_1", "agent": "demo",
                "started": "2026-11-30T09:00:00Z", "ended": "2026-11-30T09:00:11Z",
                "position": {"epoch": 0, "seq": 9},
                "runs": [{"run": "run_1", "status": "finished",
                          "started": "2026-11-30T09:00:01Z", "ended": "2026-11-30T09:00:10Z"}],
                "pending": []
            }],
            "violations": []
        })
    );
    // Pretty by default, one line with --compact, the same value.
    assert!(
        run.stdout.starts_with("{\n  \"sessions\": ["),
        "{}",
        run.stdout
    );
    let compact = common::run(&["project", "--compact", EXAMPLE], None);
    assert_eq!(compact.stdout.lines().count(), 1);
    assert_eq!(parse(&compact.stdout), parse(&run.stdout));
}

#[test]
fn violations_exit_1_and_undecodable_lines_are_noted() {
    let path = fixture("errors.jsonl");
    let run = run(&["project", &path], None);
    assert_eq!(run.code, 1, "{run:?}");
    let src = "urn:aep:agent:fx";
    // Batch order by seq: e1 (0), e2 (1), e3 (1: does not advance), the
    // redelivered e2 (dropped silently), e5 (3), e6 (4: a second
    // terminal of r1, the first status stays), e7 (5).
    assert_eq!(
        parse(&run.stdout),
        json!({
            "sessions": [{
                "source": src, "session": "ses_e", "agent": "fx",
                "started": "2026-11-30T10:00:00Z", "ended": "2026-11-30T10:00:06Z",
                "position": {"epoch": 0, "seq": 5},
                "runs": [{"run": "r1", "status": "finished",
                          "started": "2026-11-30T10:00:01Z", "ended": "2026-11-30T10:00:04Z"}],
                "pending": []
            }],
            "violations": [
                {"rule": "seq-regression", "source": src, "session": "ses_e", "id": "e3"},
                {"rule": "run-terminal-exclusivity", "source": src, "session": "ses_e", "run": "r1"}
            ]
        })
    );
    // Line 2 is not JSON: skipped. Line 6 has a negative seq: folded
    // without it, so it moves no position.
    let notes: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(notes.len(), 3, "{}", run.stderr);
    assert!(notes[0].starts_with(&format!("aep project: {path}:2: not an event: ")));
    assert!(notes[0].ends_with("; skipped"), "{}", notes[0]);
    assert!(notes[1].starts_with(&format!("aep project: {path}:6: not a valid event (")));
    assert!(
        notes[1].ends_with("folded from the attributes the projection reads, without `seq` (-3 is not a non-negative integer)"),
        "{}",
        notes[1]
    );
    assert_eq!(
        notes[2],
        "aep project: 1 line could not be read; the rest is projected"
    );
}

/// The published SDKs' projection folds what it can read of an event; so
/// does `aep project`, and it says what it could not read.
#[test]
fn an_event_the_envelope_refuses_still_folds() {
    let h = r#""time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a","session":"s""#;
    let text = [
        format!(
            r#"{{"aep":"0.1","id":"e1","type":"run.started",{h},"run":"r","seq":1,"step":null}}"#
        ),
        format!(
            r#"{{"aep":"0.1","id":"e2","type":"run.finished",{h},"run":"r","seq":2,"Region":"eu"}}"#
        ),
        format!(r#"{{"aep":"0.1","id":"e3","type":"session.ended",{h},"seq":3,"meta":{{"a":1}}}}"#),
    ]
    .join("\n");
    let run = run(&["project", "-"], Some(text.as_bytes()));
    assert_eq!(run.code, 0, "{run:?}");
    let state = parse(&run.stdout);
    assert_eq!(state["sessions"][0]["ended"], "2026-12-03T09:00:00Z");
    assert_eq!(
        state["sessions"][0]["runs"],
        json!([{"run": "r", "status": "finished",
                "started": "2026-12-03T09:00:00Z", "ended": "2026-12-03T09:00:00Z"}])
    );
    let notes: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(notes.len(), 3, "{}", run.stderr);
    for (n, (note, place)) in notes.iter().zip(["/step", "Region", "meta"]).enumerate() {
        assert!(
            note.starts_with(&format!(
                "aep project: <stdin>:{}: not a valid event",
                n + 1
            )),
            "{note}"
        );
        assert!(note.contains(place), "{note}");
    }
}

#[test]
fn lines_that_cannot_be_read_exit_1() {
    let run = run(&["project", "-"], Some(b"garbage\n[1]\n{\"id\": 7}\n"));
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        parse(&run.stdout),
        json!({"sessions": [], "violations": []})
    );
    assert!(
        run.stderr
            .ends_with("aep project: 3 lines could not be read; the rest is projected\n"),
        "{}",
        run.stderr
    );
}

#[test]
fn files_are_one_capture_and_order_does_not_matter() {
    // The example cut in two, the halves given in reverse order.
    let text = String::from_utf8(read(EXAMPLE)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let dir = tempfile::tempdir().unwrap();
    let first = common::write(
        dir.path(),
        "a.jsonl",
        (lines[..5].join("\n") + "\n").as_bytes(),
    );
    let second = common::write(dir.path(), "b.jsonl", lines[5..].join("\n").as_bytes());
    let split = run(&["project", &second, &first], None);
    let whole = run(&["project", EXAMPLE], None);
    assert_eq!(split.code, 0, "{split:?}");
    assert_eq!(split.stdout, whole.stdout);
    // And through standard input.
    let piped = run(&["project", "-"], Some(text.as_bytes()));
    assert_eq!(piped.stdout, whole.stdout);
}

#[test]
fn an_unsupported_version_is_noted_once() {
    let mut text = String::from_utf8(read(EXAMPLE)).unwrap();
    for n in 0..3 {
        text.push_str(&format!(
            "{{\"aep\":\"1.0\",\"id\":\"future_{n}\",\"shape\":\"unknown\"}}\n"
        ));
    }
    let run = run(&["project", "-"], Some(text.as_bytes()));
    assert_eq!(run.code, 0, "{run:?}");
    let notes: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(notes.len(), 2, "{}", run.stderr);
    assert!(
        notes[0].starts_with("aep project: <stdin>:12: "),
        "{}",
        notes[0]
    );
    assert!(notes[0].contains("\"1.0\""), "{}", notes[0]);
    assert_eq!(
        notes[1],
        "aep project: <stdin>: 3 lines of an unsupported version skipped in all"
    );
}

#[test]
fn a_missing_input_prints_nothing() {
    let run = run(&["project", EXAMPLE, "no-such.jsonl"], None);
    assert_eq!(run.code, 2);
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        "aep project: error: no-such.jsonl: no such file\n"
    );
}
