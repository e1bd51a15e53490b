//! `cargo xtask bench`: times a warm `cargo xtask codegen --check`, then
//! runs the benchmark binary built in release (the xtask itself is a debug
//! build, so it only orchestrates).

use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use crate::project_root;

/// Runs the benchmark with `args` passed through.
pub fn run(args: &[String]) -> ExitCode {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let check = || {
        Command::new(&cargo)
            .args([
                "run",
                "--quiet",
                "--package",
                "xtask",
                "--",
                "codegen",
                "--check",
            ])
            .current_dir(project_root())
            .stdout(Stdio::null())
            .status()
    };
    // The first run builds; the timed ones are warm.
    let mut times: Vec<Duration> = Vec::new();
    for i in 0..6 {
        let start = Instant::now();
        match check() {
            Ok(status) if status.success() => {}
            Ok(_) => {
                eprintln!("error: `cargo xtask codegen --check` failed; fix the drift before benchmarking");
                return ExitCode::FAILURE;
            }
            Err(e) => {
                eprintln!("error: cannot run cargo: {e}");
                return ExitCode::FAILURE;
            }
        }
        if i > 0 {
            times.push(start.elapsed());
        }
    }
    times.sort();
    let check_ms = times[times.len() / 2].as_secs_f64() * 1e3;

    let status = Command::new(&cargo)
        .args([
            "run",
            "--release",
            "--quiet",
            "--package",
            "aep-bench",
            // The package has two binaries (the benchmark and
            // `relay-load`): name the one to run.
            "--bin",
            "aep-bench",
            "--",
        ])
        .args(args)
        .args(["--check-ms", &format!("{check_ms:.1}")])
        .current_dir(project_root())
        .status();
    match status {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: cannot run cargo: {e}");
            ExitCode::FAILURE
        }
    }
}
