//! `aep relay` start-up limits and shutdown: absurd limits are refused
//! with the flag and its range (exit 2, never a panic), and SIGTERM stops
//! a relay whose standard error is a closed pipe.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn relay(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_aep"))
        .arg("relay")
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .env_remove("AEP_TOKEN")
        .stdin(Stdio::null())
        .output()
        .expect("the aep binary runs")
}

/// The first line `from` gives, read on a thread of its own, so that the
/// test waits for it with a bound.
fn first_line(from: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(from).read_line(&mut line);
        let _ = tx.send(line);
    });
    rx
}

#[test]
fn absurd_limits_are_refused_naming_the_flag_and_range() {
    for (args, flag) in [
        (
            &["--max-batch", "4611686018427387904"][..],
            "--max-batch 4611686018427387904",
        ),
        (
            &["--max-buffer-bytes", "1099511627776"][..],
            "--max-buffer-bytes",
        ),
        (&["--max-buffered-bytes", "10"][..], "--max-buffered-bytes"),
        (&["--buffer", "0"][..], "--buffer 0"),
        (
            &["--queue-soft", "10", "--queue-hard", "5"][..],
            "--queue-soft",
        ),
        (&["--head-timeout-secs", "0"][..], "--head-timeout-secs"),
        (
            &["--message-timeout-secs", "0"][..],
            "--message-timeout-secs",
        ),
    ] {
        let out = relay(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
        assert!(
            stderr.contains("range") || stderr.contains("below"),
            "{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn the_byte_bounds_have_environment_twins() {
    let out = Command::new(env!("CARGO_BIN_EXE_aep"))
        .args(["relay", "--listen", "127.0.0.1:0"])
        .env("AEP_MAX_BUFFER_BYTES", "99999999999999")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-buffer-bytes"));
}

#[test]
fn sigterm_stops_a_relay_whose_stderr_is_closed() {
    let mut relay = Command::new(env!("CARGO_BIN_EXE_aep"))
        .args(["relay", "--listen", "127.0.0.1:0", "--print-ui-url"])
        .env_remove("AEP_TOKEN")
        .env_remove("AEP_NO_UI")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the aep binary runs");
    // Close our end of its standard error: every log line now fails.
    drop(relay.stderr.take());
    let printed = first_line(relay.stdout.take().unwrap()).recv_timeout(Duration::from_secs(20));
    let _ = Command::new("kill")
        .args(["-TERM", &relay.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = relay.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if status.is_none() {
        let _ = relay.kill();
        let _ = relay.wait();
    }
    let printed = printed.expect("the relay started with its stderr closed");
    assert!(printed.starts_with("http://127.0.0.1:"), "{printed}");
    let status = status.expect("SIGTERM stopped the relay");
    assert!(status.success(), "{status}");
}

#[test]
fn log_lines_into_a_pipe_carry_no_colour() {
    let mut relay = Command::new(env!("CARGO_BIN_EXE_aep"))
        .args(["relay", "--listen", "127.0.0.1:0"])
        .env_remove("AEP_TOKEN")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the aep binary runs");
    let line = first_line(relay.stderr.take().unwrap()).recv_timeout(Duration::from_secs(20));
    let _ = relay.kill();
    let _ = relay.wait();
    let line = line.expect("the relay logged its start");
    assert!(line.contains("listening on"), "{line:?}");
    assert!(
        !line.contains('\x1b'),
        "an escape sequence in a pipe: {line:?}"
    );
}
