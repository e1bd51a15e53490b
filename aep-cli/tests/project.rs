//! `aep project` end to end. Expected states are worked out by hand from
//! the projection's rules (AEP-0001 §7, AEP-0002 §2 convention 5 and §7).

mod common;

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
    let notes: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(notes.len(), 2, "{}", run.stderr);
    assert!(notes[0].starts_with(&format!("aep project: {path}: line 2: ")));
    assert!(notes[1].starts_with(&format!("aep project: {path}: line 6: ")));
    assert!(notes.iter().all(|n| n.ends_with("skipped")), "{notes:?}");
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
        notes[0].starts_with("aep project: <stdin>: line 12: "),
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
