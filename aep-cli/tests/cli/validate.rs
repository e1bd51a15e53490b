//! `aep validate` end to end: output formats, exit statuses, several
//! files, standard input. The fixtures are hand-written streams whose
//! findings are derived from the protocol's rules in their comments here.

use crate::common;

use common::{fixture, heads, read, run, EXAMPLE};
use serde_json::Value;

#[test]
fn a_valid_capture_exits_0_with_a_summary_and_no_findings() {
    let run = run(&["validate", EXAMPLE], None);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        "aep validate: 1 file, 11 lines, 11 events: 0 errors, 0 warnings\n"
    );
}

/// errors.jsonl, by line: 2 is not JSON; 4 reuses seq 1 of line 3 (a seq
/// that does not advance); 5 is line 3 again with its members reordered
/// (a legal redelivery, a warning); 6 has `"seq": -3` (envelope); 8 is a
/// second, different terminal of run r1.
const ERRORS: [&str; 5] = [
    "tests/fixtures/errors.jsonl:2: error[json]",
    "tests/fixtures/errors.jsonl:4: error[seq-regression]",
    "tests/fixtures/errors.jsonl:5: warning[duplicate]",
    "tests/fixtures/errors.jsonl:6: error[envelope]",
    "tests/fixtures/errors.jsonl:8: error[run-terminal-exclusivity]",
];

#[test]
fn findings_name_file_line_severity_and_rule_and_errors_exit_1() {
    let run = run(&["validate", &fixture("errors.jsonl")], None);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(heads(&run), ERRORS, "{}", run.stdout);
    assert_eq!(
        run.stderr,
        "aep validate: 1 file, 9 lines, 7 events: 4 errors, 1 warning\n"
    );
}

#[test]
fn envelope_findings_name_the_attribute() {
    let run = run(&["validate", &fixture("errors.jsonl")], None);
    let envelope = run.stdout.lines().nth(3).unwrap();
    assert!(envelope.contains("`/seq`"), "{envelope}");
    assert!(envelope.contains("non-negative"), "{envelope}");
}

#[test]
fn warnings_alone_exit_0() {
    let run = run(&["validate", &fixture("warnings.jsonl")], None);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        heads(&run),
        ["tests/fixtures/warnings.jsonl:4: warning[duplicate]"]
    );
    assert!(
        run.stderr.ends_with(": 0 errors, 1 warning\n"),
        "{}",
        run.stderr
    );
}

#[test]
fn json_findings_parse_back_with_every_member() {
    let run = run(
        &["validate", "--format", "json", &fixture("errors.jsonl")],
        None,
    );
    assert_eq!(run.code, 1, "{run:?}");
    let records: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    let heads: Vec<String> = records
        .iter()
        .map(|r| {
            format!(
                "{}:{}: {}[{}]",
                r["file"].as_str().unwrap(),
                r["line"].as_u64().unwrap(),
                r["severity"].as_str().unwrap(),
                r["rule"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(heads, ERRORS);
    for record in &records {
        assert!(record["message"].as_str().is_some_and(|m| !m.is_empty()));
        let keys: Vec<&str> = record
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        for key in &keys {
            assert!(
                ["file", "line", "rule", "severity", "message", "id"].contains(key),
                "unexpected member {key} in {record}"
            );
        }
    }
    // Line 2 is not JSON: no id. Line 5 redelivers e2; line 8 is e6.
    assert_eq!(records[0].get("id"), None);
    assert_eq!(records[2]["id"], "e2");
    assert_eq!(records[4]["id"], "e6");
    // The text and json formats report the same messages.
    let text = common::run(&["validate", &fixture("errors.jsonl")], None);
    for (line, record) in text.stdout.lines().zip(&records) {
        assert!(
            line.ends_with(record["message"].as_str().unwrap()),
            "{line}"
        );
    }
}

#[test]
fn each_file_is_its_own_stream() {
    // The same capture twice: in one stream every line would be a
    // redelivery; as two files nothing is.
    let run = run(&["validate", EXAMPLE, EXAMPLE], None);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        "aep validate: 2 files, 22 lines, 22 events: 0 errors, 0 warnings\n"
    );
    // Two copies in one stream (through stdin) are redeliveries: warnings.
    let mut twice = read(EXAMPLE);
    twice.extend(read(EXAMPLE));
    let run = common::run(&["validate", "-"], Some(&twice));
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout.lines().count(), 11, "{}", run.stdout);
    assert!(run
        .stdout
        .lines()
        .all(|l| l.starts_with("<stdin>:") && l.contains(": warning[duplicate]: ")));
}

#[test]
fn stdin_is_named_in_findings() {
    let run = run(&["validate", "-"], Some(&read(&fixture("errors.jsonl"))));
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.starts_with("<stdin>:2: error[json]: "),
        "{}",
        run.stdout
    );
}

#[test]
fn a_clean_file_and_a_broken_one_exit_1_and_report_both() {
    let run = run(&["validate", EXAMPLE, &fixture("errors.jsonl")], None);
    assert_eq!(run.code, 1);
    assert_eq!(heads(&run), ERRORS);
    assert!(
        run.stderr.starts_with("aep validate: 2 files, 20 lines,"),
        "{}",
        run.stderr
    );
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["validate"][..],
        &["validate", "--format", "yaml", EXAMPLE],
        &["validate", "--max-line-bytes", "0", EXAMPLE],
        &["validate", "--max-line-bytes", "lots", EXAMPLE],
        &["validate", "--no-such-flag", EXAMPLE],
        &["no-such-command"],
        &[],
    ] {
        let run = run(args, None);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert_eq!(run.stdout, "", "{args:?}");
        assert!(!run.stderr.is_empty(), "{args:?}");
    }
}

#[test]
fn help_explains_formats_exit_statuses_and_examples() {
    let run = run(&["validate", "--help"], None);
    assert_eq!(run.code, 0);
    for needle in [
        "Usage: aep validate [OPTIONS] <FILE>...",
        "--format <FORMAT>",
        "--max-line-bytes <BYTES>",
        "[default: 4MiB]",
        "Exit status:",
        "Examples:",
        "`-` reads standard input",
    ] {
        assert!(
            run.stdout.contains(needle),
            "missing {needle:?}:\n{}",
            run.stdout
        );
    }
    let top = common::run(&["--help"], None);
    assert!(top.stdout.contains("validate") && top.stdout.contains("project"));
}

#[test]
fn lines_of_an_unsupported_version_are_reported_once_and_counted() {
    let mut text = String::from_utf8(read(EXAMPLE)).unwrap();
    for n in 0..3 {
        text.push_str(&format!("{{\"aep\":\"2.0\",\"id\":\"next_{n}\"}}\n"));
    }
    let run = run(&["validate", "-"], Some(text.as_bytes()));
    // A warning: the lines may be valid in their own version.
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(heads(&run), ["<stdin>:12: warning[unsupported-version]"]);
    assert_eq!(
        run.stderr,
        "aep validate: 1 file, 14 lines, 11 events: 0 errors, 1 warning; \
         3 lines of an unsupported version skipped\n"
    );
}
