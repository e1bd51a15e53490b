//! `aep redact` and `aep emit` end to end: the binary's options, its
//! output, and its refusals of bad input.

use crate::common;

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

    let out = run(&["redact", "--json"], Some(b"\"ok \xff\xfe\""));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("not UTF-8 at byte 4"), "{}", out.stderr);

    let out = run(
        &["redact", "--json", "--max-bytes", "4"],
        Some(b"\"too long\""),
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--max-bytes"), "{}", out.stderr);
}

#[test]
fn redact_text_that_is_not_utf8() {
    // One stray byte does not stop the stream: it becomes U+FFFD, and a
    // secret it cuts is still found.
    let out = run(
        &["redact"],
        Some(b"ok \xff\xfe\nid AKIA\xffIOSFODNN7EXAMPLE\ntoken=abc\n"),
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "ok \u{fffd}\u{fffd}\nid [REDACTED:secret]\ntoken=[REDACTED:secret]\n"
    );
    assert_eq!(
        out.stderr,
        "aep redact: <stdin>:1: 2 bytes that are not UTF-8, replaced by U+FFFD\n\
         aep redact: <stdin>:2: 1 bytes that are not UTF-8, replaced by U+FFFD\n"
    );
}

#[test]
fn redact_holds_no_line_over_the_limit() {
    // Input larger than --max-bytes streams through; a line longer than
    // it is replaced and reported.
    let mut input = "token=abc\n".repeat(100);
    input.push_str(&"x".repeat(50));
    input.push_str("\nend\n");
    let out = run(&["redact", "--max-bytes", "16"], Some(input.as_bytes()));
    assert_eq!(out.code, 1, "{out:?}");
    let expected = format!(
        "{}[REDACTED:secret]\nend\n",
        "token=[REDACTED:secret]\n".repeat(100)
    );
    assert_eq!(out.stdout, expected);
    assert_eq!(
        out.stderr,
        "aep redact: <stdin>:101: the line is 50 bytes, over the line limit; \
         replaced by [REDACTED:secret]\n"
    );
}

#[test]
fn redact_pem_blocks_across_lines() {
    let input = "config follows\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq\nZzz999\n-----END RSA PRIVATE KEY-----\ndone\n";
    let out = run(&["redact"], Some(input.as_bytes()));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "config follows\n[REDACTED:secret]\ndone\n")
    );
    // Cut short: dropped to the end, and said so.
    let out = run(
        &["redact"],
        Some(b"a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nrest\n"),
    );
    assert_eq!((out.code, out.stdout.as_str()), (0, "a\n[REDACTED:secret]"));
    assert!(
        out.stderr
            .contains("<stdin>:2: a PEM block with no END line"),
        "{}",
        out.stderr
    );
}

#[test]
fn redact_writes_each_line_as_it_reads_it() {
    // `tail -f log | aep redact`: a line comes out while the input is
    // still open.
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    use std::sync::mpsc;
    use std::time::Duration;

    let mut child = common::aep()
        .args(["redact", "--home", ""])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the aep binary runs");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let stdout = child.stdout.take().expect("stdout is piped");
    let (lines, received) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    for (input, expected) in [
        ("token=abc\n", "token=[REDACTED:secret]"),
        ("password:\n", "password:"),
        (
            "   hunter2 and ghp_AbCdEfGhIjKlMnOpQrStUvWxYz012345\n",
            "   [REDACTED:secret] and [REDACTED:secret]",
        ),
    ] {
        stdin.write_all(input.as_bytes()).expect("aep reads");
        stdin.flush().expect("aep reads");
        let line = received
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no output for {input:?} while the input is open"));
        assert_eq!(line, expected);
    }
    drop(stdin);
    let status = child.wait().expect("aep finishes");
    reader.join().expect("the reader ends");
    assert!(status.success(), "{status:?}");
}

#[test]
fn redact_bare_provider_tokens_and_bearer_tokens() {
    let input = "clone with ghp_AbCdEfGhIjKlMnOpQrStUvWxYz012345 now\n\
                 X-Auth-Token: Bearer mysecrettokenvalue\n\
                 Bearer abcDEFghiJKL\nBearer abc12\nthe bearer of this letter\n";
    let out = run(&["redact"], Some(input.as_bytes()));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "clone with [REDACTED:secret] now\nX-Auth-Token: [REDACTED:secret]\n\
         Bearer [REDACTED:secret]\nBearer [REDACTED:secret]\nthe bearer of this letter\n"
    );
}

#[test]
fn redact_linear_on_hostile_input() {
    // Ten thousand candidates, each inside the last one's span: redacted
    // in one pass (the work is bounded by the library's tests; here, the
    // result).
    let out = run(
        &["redact"],
        Some("-----BEGIN A-----\n".repeat(4000).as_bytes()),
    );
    assert_eq!((out.code, out.stdout.as_str()), (0, "[REDACTED:secret]"));
    let out = run(&["redact"], Some("token:".repeat(10000).as_bytes()));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "token:[REDACTED:secret]")
    );
}

/// `aep ARGS` with `HOME` set to `home`.
fn run_with_home(args: &[&str], home: &str, stdin: &[u8]) -> common::Run {
    let mut command = common::aep();
    command.args(args).env("HOME", home);
    common::run_command(command, Some(stdin))
}

#[test]
fn the_home_directory_defaults_to_home() {
    let out = run_with_home(
        &["redact"],
        "/srv/tester/",
        b"ls /srv/tester/x /srv/testers\n",
    );
    assert_eq!(out.stdout, "ls ~/x /srv/testers\n");
    // Never `/` itself, and an empty --home turns the default off.
    let out = run_with_home(&["redact"], "/", b"cat /etc/hosts\n");
    assert_eq!(out.stdout, "cat /etc/hosts\n");
    let out = run_with_home(
        &["redact", "--home", ""],
        "/srv/tester",
        b"ls /srv/tester/x\n",
    );
    assert_eq!(out.stdout, "ls /srv/tester/x\n");
    // --home wins over it.
    let out = run_with_home(
        &["redact", "--home", "/opt/ada"],
        "/srv/tester",
        b"/opt/ada/x /srv/tester/x\n",
    );
    assert_eq!(out.stdout, "~/x /srv/tester/x\n");

    let event = FULL.replace("ls /home/ada", "ls /srv/tester/x");
    let out = run_with_home(
        &["emit", "--ceiling", "redacted"],
        "/srv/tester",
        event.as_bytes(),
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        emitted(&out.stdout)[0]["data"]["args_redacted"]["cmd"],
        "export API_KEY=[REDACTED:secret] ls ~/x"
    );
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

#[test]
fn emit_redacts_bare_provider_tokens() {
    let event = FULL.replace(
        "export API_KEY=k-123; ls /home/ada",
        "git clone https://x ghp_AbCdEfGhIjKlMnOpQrStUvWxYz012345 -H 'X-Auth-Token: Bearer abc12'",
    );
    let out = run(&["emit", "--ceiling", "redacted"], Some(event.as_bytes()));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        emitted(&out.stdout)[0]["data"]["args_redacted"]["cmd"],
        "git clone https://x [REDACTED:secret] -H 'X-Auth-Token: [REDACTED:secret]'"
    );
}
