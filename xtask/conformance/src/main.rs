//! `aep-conformance [--aep BIN] FIXTURES`: runs the published AEP
//! conformance fixtures against this project. `cargo xtask conformance
//! FIXTURES` builds it and the `aep` binary and runs it.
//!
//! Exit status: 0 when every implemented case passed, 1 when any failed,
//! 2 for a usage error or a fixtures directory that cannot be read.

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
usage: aep-conformance [--aep BIN] FIXTURES

  FIXTURES     a checkout of the published conformance `fixtures/` directory
  --aep BIN    the `aep` binary to test (default: the one next to this binary)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let (aep, fixtures) = match parse(&args) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("error: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match aep_conformance::run(&fixtures, &aep) {
        Ok(report) => {
            print!("{}", report.render());
            if report.failed() == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

/// The `aep` binary and the fixtures directory.
fn parse(args: &[String]) -> Result<(PathBuf, PathBuf), String> {
    let mut aep = None;
    let mut fixtures = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--aep" => {
                let path = args.next().ok_or("`--aep` needs the path of the binary")?;
                aep = Some(PathBuf::from(path));
            }
            other if other.starts_with('-') => return Err(format!("unknown option `{other}`")),
            other if fixtures.is_none() => fixtures = Some(PathBuf::from(other)),
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    let fixtures = fixtures.ok_or("no fixtures directory given")?;
    let aep = match aep {
        Some(aep) => aep,
        None => sibling_aep()?,
    };
    if !aep.is_file() {
        return Err(format!("no `aep` binary at {}", aep.display()));
    }
    Ok((aep, fixtures))
}

/// The `aep` binary built into the same directory as this one.
fn sibling_aep() -> Result<PathBuf, String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let aep = me.with_file_name(format!("aep{}", std::env::consts::EXE_SUFFIX));
    if aep.is_file() {
        Ok(aep)
    } else {
        Err(format!(
            "no `aep` binary at {}: build it (`cargo build -p aep-cli`), pass --aep, or run \
             `cargo xtask conformance FIXTURES`",
            aep.display()
        ))
    }
}
