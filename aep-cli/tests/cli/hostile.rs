//! Hostile input: every case gives its documented exit status and a
//! message, never a panic, and a huge line is not held in memory.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;

use common::{aep, heads, read, run, write, EXAMPLE};

/// One valid event, sequenced `seq` in session `ses_h`.
fn event(id: &str, seq: u64) -> String {
    format!(
        r#"{{"aep":"0.1","id":"{id}","type":"progress.status","time":"2026-11-30T12:00:00Z","source":"urn:aep:agent:h","agent":"h","session":"ses_h","seq":{seq},"data":{{"phase":"test"}}}}"#
    )
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

#[test]
fn a_line_over_the_limit_is_one_finding_and_the_rest_is_read() {
    let dir = tmp();
    let long = format!("{{\"pad\":\"{}\"}}", "x".repeat(2000));
    let text = format!("{}\n{long}\n{}\n", event("h1", 0), event("h2", 1));
    let path = write(dir.path(), "long.jsonl", text.as_bytes());
    let run = run(&["validate", "--max-line-bytes", "1KiB", &path], None);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(heads(&run), [format!("{path}:2: error[line-too-long]")]);
    assert!(
        run.stdout.contains("1024"),
        "names the limit: {}",
        run.stdout
    );
    assert!(run.stderr.contains("3 lines, 2 events"), "{}", run.stderr);
    // Under the default limit the same line is only not an event.
    let run = common::run(&["validate", &path], None);
    assert_eq!(heads(&run)[0], format!("{path}:2: error[envelope]"));
}

/// A 256 MiB line through standard input: the peak resident memory of the
/// process, read while it waits for more input, stays far below it.
#[cfg(target_os = "linux")]
#[test]
fn a_huge_line_is_not_held_in_memory() {
    let mut child = aep()
        .args(["validate", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let chunk = vec![b'7'; 1 << 20];
    stdin.write_all(b"[").unwrap();
    for _ in 0..256 {
        stdin.write_all(&chunk).unwrap();
    }
    stdin.flush().unwrap();
    // The pipe holds at most 64 KiB: the process has read all the rest.
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let peak_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    stdin.write_all(b"]\n").unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.starts_with("<stdin>:1: error[line-too-long]: "),
        "{stdout}"
    );
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        "aep validate: 1 file, 1 line, 0 events: 1 error, 0 warnings\n"
    );
    assert!(peak_kib < 64 * 1024, "peak RSS {peak_kib} KiB");
}

#[test]
fn invalid_utf8_and_nul_bytes_are_json_findings() {
    let dir = tmp();
    let mut bytes = Vec::new();
    bytes.extend_from_slice(event("h1", 0).as_bytes());
    bytes.extend_from_slice(b"\n{\"aep\":\"0.1\",\"id\":\"\xff\xfe\"}\n");
    bytes.extend_from_slice(b"\0\0\0\n");
    bytes.extend_from_slice(event("h2", 1).replace("test", "te\0st").as_bytes());
    bytes.extend_from_slice(b"\n");
    bytes.extend_from_slice(event("h3", 2).as_bytes());
    bytes.extend_from_slice(b"\n");
    let path = write(dir.path(), "binary.jsonl", &bytes);
    let run = run(&["validate", &path], None);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        heads(&run),
        [
            format!("{path}:2: error[json]"),
            format!("{path}:3: error[json]"),
            format!("{path}:4: error[json]"),
        ]
    );
    assert!(run.stderr.contains("5 lines, 2 events"), "{}", run.stderr);
}

#[test]
fn deep_nesting_is_a_finding_not_a_stack_overflow() {
    let dir = tmp();
    let depth = 100_000;
    let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let in_data = event("h2", 1).replace(
        r#""data":{"phase":"test"}"#,
        &format!(r#""data":{{"phase":"test","x":{deep}}}"#),
    );
    let text = format!("{deep}\n{in_data}\n{}\n", event("h3", 2));
    let path = write(dir.path(), "deep.jsonl", text.as_bytes());
    let run = run(&["validate", &path], None);
    assert_eq!(run.code, 1, "{run:?}");
    // An array is not an event object; the nesting in `data` is past the
    // parser's recursion limit, a payload error naming the place, and a
    // payload that cannot be read cannot pass the capture check either.
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", run.stdout);
    assert!(lines[2].starts_with(&format!("{path}:2: error[capture]: ")));
    assert!(lines[0].starts_with(&format!("{path}:1: error[envelope]: ")));
    assert!(lines[1].starts_with(&format!("{path}:2: error[payload]: ")));
    assert!(lines[1].contains("/data/x/0/0/0"), "{}", lines[1]);
    assert!(
        lines[1].ends_with("recursion limit exceeded"),
        "{}",
        lines[1]
    );
}

#[test]
fn a_torn_last_line_is_still_read() {
    let dir = tmp();
    // Complete but without its newline: legal, read as a line.
    let whole = format!("{}\n{}", event("h1", 0), event("h2", 1));
    let path = write(dir.path(), "no-newline.jsonl", whole.as_bytes());
    let run = run(&["validate", &path], None);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("2 lines, 2 events"), "{}", run.stderr);
    // Cut in the middle of the event: a finding on the last line.
    let torn = &whole[..whole.len() - 20];
    let path = write(dir.path(), "torn.jsonl", torn.as_bytes());
    let run = common::run(&["validate", &path], None);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(heads(&run), [format!("{path}:2: error[json]")]);
}

#[test]
fn crlf_line_endings_read_like_lf() {
    let dir = tmp();
    let crlf = String::from_utf8(read(EXAMPLE))
        .unwrap()
        .replace('\n', "\r\n");
    let path = write(dir.path(), "crlf.jsonl", crlf.as_bytes());
    let run = run(&["validate", &path], None);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "");
    let project = common::run(&["project", &path], None);
    let lf = common::run(&["project", EXAMPLE], None);
    assert_eq!(project.stdout, lf.stdout);
}

#[test]
fn an_empty_file_and_empty_stdin_are_clean() {
    let dir = tmp();
    let path = write(dir.path(), "empty.jsonl", b"");
    for args in [&["validate", path.as_str()][..], &["validate", "-"]] {
        let run = run(args, Some(b""));
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(run.stdout, "");
        assert_eq!(
            run.stderr,
            "aep validate: 1 file, 0 lines, 0 events: 0 errors, 0 warnings\n"
        );
    }
    let run = run(&["project", &path], None);
    assert_eq!(run.code, 0, "{run:?}");
    let state: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(state, serde_json::json!({"sessions": [], "violations": []}));
}

#[test]
fn a_missing_file_and_a_directory_exit_2_naming_the_path() {
    let dir = tmp();
    let missing = dir.path().join("nope.jsonl");
    let missing = missing.to_str().unwrap();
    let folder = dir.path().to_str().unwrap();
    for command in ["validate", "project"] {
        let run = run(&[command, missing], None);
        assert_eq!(run.code, 2, "{run:?}");
        assert_eq!(run.stdout, "");
        assert!(
            run.stderr.contains(&format!("{missing}: no such file")),
            "{}",
            run.stderr
        );
        let run = common::run(&[command, folder], None);
        assert_eq!(run.code, 2, "{run:?}");
        assert!(
            run.stderr.contains(&format!("{folder}: is a directory")),
            "{}",
            run.stderr
        );
    }
    // The other files are still validated, and the status stays 2.
    let run = run(&["validate", missing, EXAMPLE], None);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("1 file, 11 lines"), "{}", run.stderr);
}

#[cfg(unix)]
#[test]
fn an_unreadable_file_exits_2() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tmp();
    let path = write(dir.path(), "secret.jsonl", event("h1", 0).as_bytes());
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::File::open(&path).is_ok() {
        return; // running as root: permissions do not apply
    }
    let run = run(&["validate", &path], None);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains(&format!("{path}: permission denied")));
}

#[test]
fn a_closed_pipe_ends_the_run_quietly() {
    let dir = tmp();
    let path = write(dir.path(), "junk.jsonl", &b"x\n".repeat(200_000));
    let mut child = aep()
        .args(["validate", &path])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(first.contains(":1: error[json]: "), "{first}");
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "not killed by a signal: {status:?}");
    assert_eq!(stderr, "", "quiet");
}

/// A valid stream of just over 9 MiB, past the progress threshold;
/// returns its path and line count.
fn big_file(dir: &std::path::Path) -> (String, u64) {
    let mut text = String::with_capacity(9 << 20);
    let mut seq = 0;
    while text.len() < 9 << 20 {
        text.push_str(&event(&format!("h{seq}"), seq));
        text.push('\n');
        seq += 1;
    }
    (write(dir, "big.jsonl", text.as_bytes()), seq)
}

#[test]
fn progress_never_reaches_a_pipe() {
    let dir = tmp();
    let (path, lines) = big_file(dir.path());
    let run = run(&["validate", &path], None);
    assert_eq!(run.code, 0, "{}", run.stdout.lines().next().unwrap_or(""));
    assert_eq!(
        run.stderr,
        format!("aep validate: 1 file, {lines} lines, {lines} events: 0 errors, 0 warnings\n")
    );
}

/// On a terminal (a pseudo-terminal from util-linux `script`, when the
/// machine has it) the same file shows a progress bar.
#[cfg(target_os = "linux")]
#[test]
fn progress_shows_on_a_terminal() {
    let script = std::path::Path::new("/usr/bin/script");
    if !script.exists() {
        eprintln!("skipped: no /usr/bin/script to make a terminal");
        return;
    }
    let dir = tmp();
    let (path, lines) = big_file(dir.path());
    let command = format!("{} validate {path}", env!("CARGO_BIN_EXE_aep"));
    let output = std::process::Command::new(script)
        .args(["-qefc", &command, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let screen = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{screen}");
    assert!(
        screen.contains(&format!("{path} [")),
        "no bar in {screen:?}"
    );
    assert!(screen.contains("MiB"), "{screen:?}");
    assert!(!screen.contains("panicked"), "{screen:?}");
    assert!(
        screen.contains(&format!("{lines} lines, {lines} events: 0 errors")),
        "{screen:?}"
    );
}

#[test]
fn a_closed_pipe_ends_a_projection_quietly() {
    // 20,000 sessions: far more JSON than a pipe buffer holds.
    let dir = tmp();
    let text: String = (0..20_000)
        .map(|n| event(&format!("p{n}"), 0).replace("ses_h", &format!("ses_{n}")) + "\n")
        .collect();
    let path = write(dir.path(), "many.jsonl", text.as_bytes());
    let mut child = aep()
        .args(["project", &path])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert_eq!(first, "{\n");
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "not killed by a signal: {status:?}");
    assert_eq!(stderr, "", "quiet");
}
