//! `aep filter` end to end: matching lines pass byte for byte, invalid
//! filters exit 2 with their reason, lines that are not events are reported
//! by number and not written.

use crate::common;

use common::{run, write, EXAMPLE};

/// An event line with the given members after the required ones.
fn line(id: &str, type_: &str, extra: &str) -> String {
    format!(
        r#"{{"aep":"0.1","id":"{id}","type":"{type_}","time":"2026-12-01T10:00:00Z","source":"urn:a","agent":"claude-code","session":"s1","seq":{}{extra}}}"#,
        id.trim_start_matches('e')
    )
}

fn stream() -> Vec<u8> {
    let mut bytes = Vec::new();
    // 1: a tool event with odd spacing and an escape, CRLF-ended.
    bytes.extend_from_slice(
        br#"{ "aep":"0.1", "id":"e1","type":"tool.denied","time":"2026-12-01T10:00:00Z","source":"urn:a","agent":"claude\u002dcode","session":"s1","seq":1 }"#,
    );
    bytes.extend_from_slice(b"\r\n");
    // 2: an attention request at warning.
    bytes.extend_from_slice(
        line(
            "e2",
            "attention.requested",
            r#","severity":"warning","data":{"b":1, "a":2}"#,
        )
        .as_bytes(),
    );
    bytes.push(b'\n');
    // 3: a progress event at the default severity, with an extension.
    bytes.extend_from_slice(line("e3", "progress.status", r#","acmetenant":"t1""#).as_bytes());
    bytes.push(b'\n');
    // 4: an error event at critical, last line without a newline.
    bytes.extend_from_slice(line("e4", "error.raised", r#","severity":"critical""#).as_bytes());
    bytes
}

#[test]
fn matching_lines_pass_byte_for_byte_in_order() {
    let input = stream();
    let lines: Vec<&[u8]> = input.split_inclusive(|&b| b == b'\n').collect();
    let run = run(&["filter", r#"{"type": "tool.*"}"#, "-"], Some(&input));
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    // The CRLF ending and the `\u002d` escape are kept.
    assert_eq!(run.stdout.as_bytes(), lines[0]);

    let run = common::run(
        &[
            "filter",
            r#"{"type": ["attention.*", "error.*"], "severity": {"gte": "notice"}}"#,
        ],
        Some(&input),
    );
    assert_eq!(run.code, 0, "{run:?}");
    // Line 2 as it came (member order and spacing of `data` kept); line 4
    // gains only the newline it lacked.
    let mut want = lines[1].to_vec();
    want.extend_from_slice(lines[3]);
    want.push(b'\n');
    assert_eq!(run.stdout.as_bytes(), want.as_slice());
}

#[test]
fn defaults_apply_and_absent_attributes_never_match() {
    let input = stream();
    // severity absent on lines 1 and 3: read as `info`.
    let run = run(&["filter", r#"{"severity": "info"}"#], Some(&input));
    let ids: Vec<&str> = run
        .stdout
        .lines()
        .map(|l| {
            if l.contains("\"e1\"") {
                "e1"
            } else if l.contains("\"e3\"") {
                "e3"
            } else {
                l
            }
        })
        .collect();
    assert_eq!(ids, ["e1", "e3"]);
    // Only line 3 carries the extension.
    let run = common::run(&["filter", r#"{"acmetenant": "t1"}"#], Some(&input));
    assert_eq!(run.stdout.lines().count(), 1);
    assert!(run.stdout.contains("\"e3\""));
    let run = common::run(&["filter", r#"{"subject": "x"}"#], Some(&input));
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
}

#[test]
fn an_invalid_filter_exits_2_with_its_reason_and_reads_nothing() {
    for (filter, words) in [
        (r#"{"seq": 3}"#, "key `seq`: not filterable"),
        (r#"{"time": "x"}"#, "key `time`: not filterable"),
        (
            r#"{"Type": "x"}"#,
            "key `Type`: neither a filterable core attribute",
        ),
        (r#"{"type": "*"}"#, "is not a type pattern"),
        (
            r#"{"agent": "claude*"}"#,
            "key `agent`: \"claude*\" is a pattern",
        ),
        (
            r#"{"agent": ["codex", "c*"]}"#,
            "key `agent`: \"c*\" is a pattern",
        ),
        (
            r#"{"severity": {"gt": "info"}}"#,
            "`gt` is not a severity operator",
        ),
        (r#"{"agent": []}"#, "needs at least one element"),
        (r#"{"agent": {"a": 1}}"#, "only allowed on `severity`"),
        (r#"["type"]"#, "a filter is a JSON object"),
        ("{", "not JSON"),
    ] {
        let run = run(&["filter", filter, "/no/such/file.jsonl"], Some(&stream()));
        assert_eq!(run.code, 2, "{filter}: {run:?}");
        assert_eq!(run.stdout, "");
        assert!(
            run.stderr
                .starts_with("aep filter: error: invalid filter: ")
                && run.stderr.contains(words),
            "{filter}: {}",
            run.stderr
        );
        // The input is never opened: no second diagnostic.
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    }
}

#[test]
fn lines_that_are_not_events_are_reported_by_number_and_exit_1() {
    let good = line("e1", "tool.denied", "");
    let input = format!(
        "{good}\nnot json\n\n{}\n{}\n{good}\n",
        // A missing required attribute, a `null` optional one.
        r#"{"aep":"0.1","id":"e2","type":"tool.denied","time":"2026-12-01T10:00:00Z","source":"urn:a","session":"s1","seq":2}"#,
        line("e3", "tool.denied", r#","run":null"#),
    );
    let run = run(&["filter", "{}"], Some(input.as_bytes()));
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, format!("{good}\n{good}\n"));
    let places: Vec<&str> = run
        .stderr
        .lines()
        .map(|l| l.split(": not an event").next().unwrap())
        .collect();
    assert_eq!(
        places,
        [
            "aep filter: <stdin>:2",
            "aep filter: <stdin>:3",
            "aep filter: <stdin>:4",
            "aep filter: <stdin>:5"
        ],
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("agent"), "{}", run.stderr);
}

#[test]
fn long_lines_and_other_versions_are_skipped() {
    let good = line("e1", "tool.denied", "");
    let future = r#"{"aep":"1.0","id":"f1","type":"tool.denied"}"#;
    let input = format!("{good}\n{future}\n{}\n{future}\n{good}\n", "x".repeat(600));
    let run = run(
        &["filter", "--max-line-bytes", "512", "{}"],
        Some(input.as_bytes()),
    );
    // The long line is an error; other versions are skipped, not errors.
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, format!("{good}\n{good}\n"));
    assert!(
        run.stderr.contains("<stdin>:2: `aep` is \"1.0\""),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("<stdin>:3: the line is 600 bytes"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("2 lines of an unsupported version skipped"),
        "{}",
        run.stderr
    );
}

#[test]
fn several_files_are_read_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(
        dir.path(),
        "a.jsonl",
        format!("{}\n", line("e1", "tool.denied", "")).as_bytes(),
    );
    let run = run(
        &[
            "filter",
            r#"{"type": ["tool.denied", "session.started"]}"#,
            &a,
            EXAMPLE,
            &a,
        ],
        None,
    );
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", run.stdout);
    assert_eq!(lines[0], lines[2]);
    assert!(lines[0].contains("\"e1\""));
    assert!(lines[1].contains("\"evt_01\""));
}
