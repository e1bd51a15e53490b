//! Running the built `aep` binary.
#![allow(dead_code)]

pub mod live;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What one run of `aep` gave.
#[derive(Debug)]
pub struct Run {
    /// The exit code (a signal death is a test failure).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// The `aep` binary.
pub fn aep() -> Command {
    Command::new(env!("CARGO_BIN_EXE_aep"))
}

/// Runs `aep ARGS` with `stdin` (empty when `None`) in the crate directory.
pub fn run(args: &[&str], stdin: Option<&[u8]>) -> Run {
    let mut command = aep();
    command.args(args);
    run_command(command, stdin)
}

/// Runs a prepared `aep` command (arguments, environment) as [`run`] does.
pub fn run_command(mut command: Command, stdin: Option<&[u8]>) -> Run {
    let args: Vec<_> = command.get_args().map(|a| a.to_owned()).collect();
    let mut child = command
        .current_dir(crate_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the aep binary runs");
    let mut input = child.stdin.take().expect("stdin is piped");
    let bytes = stdin.unwrap_or_default().to_vec();
    let writer = std::thread::spawn(move || {
        // The command may stop reading early; that is not a failure here.
        let _ = input.write_all(&bytes);
    });
    let output = child.wait_with_output().expect("aep finishes");
    writer.join().expect("the writer thread ends");
    let run = Run {
        code: output
            .status
            .code()
            .unwrap_or_else(|| panic!("aep {args:?} died by a signal: {:?}", output.status)),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    };
    assert_no_panic(&run);
    run
}

/// Fails when standard error shows a panic.
pub fn assert_no_panic(run: &Run) {
    for sign in [
        "panicked",
        "RUST_BACKTRACE",
        "stack overflow",
        "memory allocation",
    ] {
        assert!(
            !run.stderr.contains(sign),
            "stderr shows `{sign}`:\n{}",
            run.stderr
        );
    }
}

/// The `aep-cli` directory.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fixture's path relative to the crate directory, as the runs name it.
pub fn fixture(name: &str) -> String {
    format!("tests/fixtures/{name}")
}

/// The checked-in example capture, relative to the crate directory.
pub const EXAMPLE: &str = "../examples/session.jsonl";

/// The bytes of a file relative to the crate directory.
pub fn read(path: &str) -> Vec<u8> {
    std::fs::read(crate_dir().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Writes `bytes` to `name` in `dir` and returns its path as a string.
pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("the temporary file is written");
    path.to_str().expect("a UTF-8 temporary path").to_owned()
}

/// The finding lines of a text run, without the summary (which is on
/// standard error).
pub fn findings(run: &Run) -> Vec<&str> {
    run.stdout.lines().collect()
}

/// The `FILE:LINE: severity[rule]` prefixes of a text run's findings.
pub fn heads(run: &Run) -> Vec<String> {
    run.stdout
        .lines()
        .map(|l| match l.find("]: ") {
            Some(at) => l[..=at].to_owned(),
            None => l.to_owned(),
        })
        .collect()
}
