//! `aep redact` and `aep emit` end to end: the binary's options, its
//! output, and its refusals of bad input.

mod common;

use common::run;
use serde_json::{json, Value};

#[test]
fn redact_text_by_default() {
    let input = "login with password=hunter2 as ada@example.com\nin /home/ada/src and /srv/ada/x\n";
    let out = run(&["redact", "--home", "/srv/ada"], Some(input.as_bytes()));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "login with password=[REDACTED:secret] as [REDACTED:pii]\nin ~/src and ~/x\n"
    );
    assert_eq!(out.stderr, "");
}

#[test]
fn redact_options() {
    let input = "key k9-operator-value, mail ada@example.com, call 415-555-2671";
    let out = run(
        &["redact", "--secret", "k9-operator-value", "--no-pii"],
        Some(input.as_bytes()),
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "key [REDACTED:secret], mail ada@example.com, call 415-555-2671"
    );
}

#[test]
fn redact_secret_from_the_environment() {
    let mut command = common::aep();
    command
        .args(["redact", "--secret-env", "AEP_TEST_SECRET"])
        .env("AEP_TEST_SECRET", "from-env-42");
    let out = common::run_command(command, Some(b"x from-env-42 y"));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "x [REDACTED:secret] y")
    );
}

#[test]
fn redact_json() {
    let input = json!({"cmd": "curl -H 'Authorization: Bearer abc123.def'", "n": 7,
                       "headers": {"X-Api-Key": 12345}, "files": ["/home/bob/a"]});
    let out = run(&["redact", "--json"], Some(input.to_string().as_bytes()));
    assert_eq!(out.code, 0, "{out:?}");
    let got: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        got,
        json!({"cmd": "curl -H 'Authorization: Bearer [REDACTED:secret]'", "n": 7,
               "headers": {"X-Api-Key": "[REDACTED:secret]"}, "files": ["~/a"]})
    );
}

#[test]
fn redact_refuses_bad_input_naming_the_place() {
    let out = run(&["redact", "--json"], Some(b"{\"a\": \n  tru}"));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("<stdin>:2:"), "{}", out.stderr);
    assert_eq!(out.stdout, "");

    let out = run(&["redact"], Some(b"ok \xff\xfe"));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("not UTF-8 at byte 3"), "{}", out.stderr);

    let out = run(&["redact", "--max-bytes", "4"], Some(b"too long"));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--max-bytes"), "{}", out.stderr);
}

const FULL: &str = r#"{"aep":"0.1","id":"e1","type":"tool.requested","time":"2026-12-03T09:00:00Z","source":"urn:aep:agent:demo","agent":"demo","session":"s1","run":"r1","seq":1,"data":{"tool":{"name":"Bash"},"args":{"cmd":"export API_KEY=k-123; ls /home/ada"}}}"#;

fn emitted(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn emit_at_each_ceiling() {
    // sha256 of {"cmd":"export API_KEY=k-123; ls /home/ada"}, first 16 bytes.
    let digest = "1ebedbb116979be2de5b84bf572cbc7b";
    let input = format!("{FULL}\n\n{FULL}\n");
    let out = run(
        &["emit", "--ceiling", "redacted", "-"],
        Some(input.as_bytes()),
    );
    assert_eq!(out.code, 0, "{out:?}");
    let events = emitted(&out.stdout);
    assert_eq!(events.len(), 2, "blank lines are skipped");
    assert_eq!(events[0]["capture"], "redacted");
    assert_eq!(
        events[0]["data"],
        json!({"tool": {"name": "Bash"}, "args_digest": digest,
               "args_redacted": {"cmd": "export API_KEY=[REDACTED:secret] ls ~"}})
    );

    let out = run(&["emit", "--ceiling", "metadata"], Some(FULL.as_bytes()));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        emitted(&out.stdout)[0]["data"],
        json!({"tool": {"name": "Bash"}, "args_digest": digest})
    );

    let out = run(&["emit", "--ceiling", "none"], Some(FULL.as_bytes()));
    let events = emitted(&out.stdout);
    assert_eq!(
        (events[0]["capture"].clone(), events[0].get("data")),
        (json!("none"), None)
    );

    // What emit writes, validate accepts.
    let out = run(&["emit", "--ceiling", "redacted"], Some(FULL.as_bytes()));
    let check = run(&["validate", "-"], Some(out.stdout.as_bytes()));
    assert_eq!(check.code, 0, "{check:?}");
}

#[test]
fn emit_reports_bad_lines_and_goes_on() {
    let input = format!("not json\n{FULL}\n");
    let out = run(&["emit", "--ceiling", "full"], Some(input.as_bytes()));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("<stdin>:1:"), "{}", out.stderr);
    assert_eq!(emitted(&out.stdout).len(), 1);

    let out = run(&["emit", "--ceiling", "loud"], Some(FULL.as_bytes()));
    assert_eq!(out.code, 2, "{out:?}");
    let out = run(&["emit", "--ceiling", "full", "no/such/file.jsonl"], None);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("no/such/file.jsonl"), "{}", out.stderr);
}
