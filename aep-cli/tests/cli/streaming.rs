//! The commands that pass a stream on, used live: a line leaves as soon as
//! it is decided while the input stays open, and every line is written
//! whole, even with several writers appending to one file (AEP-0003 §3.1).

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Long enough for a slow machine; the test only fails on reaching it.
/// Lines per appender: enough for the appenders to overlap.
const LINES: u64 = 3000;

const PATIENCE: Duration = Duration::from_secs(30);

fn event(seq: u64, padding: usize) -> String {
    format!(
        r#"{{"aep":"0.1","id":"e{seq}","type":"tool.requested","time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a","session":"s","seq":{seq},"data":{{"tool":{{"name":"Bash"}},"pad":"{}"}}}}"#,
        "x".repeat(padding)
    )
}

/// Starts `aep ARGS` with piped standard input and output, and a thread
/// that sends each line it writes.
fn live(args: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut child = common::aep()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the aep binary runs");
    let stdout = child.stdout.take().expect("stdout is piped");
    let (send, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if send.send(line).is_err() {
                break;
            }
        }
    });
    (child, lines)
}

#[test]
fn a_decided_line_leaves_while_the_input_stays_open() {
    let commands: [&[&str]; 4] = [
        &["filter", "{}", "-"],
        &["emit", "--ceiling", "metadata", "-"],
        &["convert", "--to", "otlp", "-"],
        &["convert", "--to", "cloudevents", "-"],
    ];
    for args in commands {
        let (mut child, lines) = live(args);
        let mut stdin = child.stdin.take().expect("stdin is piped");
        for seq in 1..=2 {
            writeln!(stdin, "{}", event(seq, 10)).expect("aep reads");
            stdin.flush().expect("aep reads");
            // The input is still open: the line must come out now.
            let line = lines
                .recv_timeout(PATIENCE)
                .unwrap_or_else(|_| panic!("aep {args:?}: line {seq} held back"));
            assert!(line.contains(&format!("e{seq}")), "aep {args:?}: {line}");
        }
        drop(stdin);
        let status = child.wait().expect("aep ends");
        assert!(status.success(), "aep {args:?}: {status}");
    }
}

#[test]
fn concurrent_appenders_never_tear_a_line() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let shared = dir.path().join("shared.jsonl");
    // Lines of a few KiB, so that many batches end near a line's middle.
    let input: String = (1..=LINES)
        .map(|seq| event(seq, 3000 + (seq % 97) as usize) + "\n")
        .collect();
    let input_path = common::write(dir.path(), "in.jsonl", input.as_bytes());
    let commands: [&[&str]; 4] = [
        &["emit", "--ceiling", "full"],
        &["filter", "{}"],
        &["convert", "--to", "cloudevents"],
        &["emit", "--ceiling", "redacted"],
    ];
    let children: Vec<Child> = commands
        .iter()
        .map(|args| {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&shared)
                .expect("the shared file opens");
            common::aep()
                .args(*args)
                .arg(&input_path)
                .stdout(Stdio::from(file))
                .stderr(Stdio::null())
                .spawn()
                .expect("the aep binary runs")
        })
        .collect();
    for mut child in children {
        assert!(child.wait().expect("aep ends").success());
    }
    let written = std::fs::read_to_string(&shared).expect("the shared file reads");
    let mut count = 0;
    for line in written.lines() {
        count += 1;
        let value: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("a torn line ({e}): {}…", &line[..line.len().min(80)]));
        assert!(value.is_object());
    }
    assert_eq!(count, 4 * LINES as usize);
}

/// `aep ... | head` stops quietly when `head` has what it wants.
#[test]
fn a_closed_output_stops_every_writer_quietly() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let input: String = (1..=LINES).map(|seq| event(seq, 200) + "\n").collect();
    let input_path = common::write(dir.path(), "in.jsonl", input.as_bytes());
    let commands: [&[&str]; 3] = [
        &["emit", "--ceiling", "full"],
        &["filter", "{}"],
        &["convert", "--to", "otlp"],
    ];
    for args in commands {
        let mut child = common::aep()
            .args(args)
            .arg(&input_path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the aep binary runs");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        let mut first = String::new();
        stdout.read_line(&mut first).expect("a first line");
        drop(stdout);
        let output = child.wait_with_output().expect("aep ends");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.is_empty(), "aep {args:?}: {stderr}");
        assert!(
            output.status.code().is_some_and(|c| c < 2),
            "aep {args:?}: {stderr}"
        );
    }
}
