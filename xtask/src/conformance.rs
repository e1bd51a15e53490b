//! `cargo xtask conformance FIXTURES`: builds the `aep` binary and the
//! conformance runner (crate `aep-conformance`, in `xtask/conformance/`),
//! then runs the runner on FIXTURES with that binary and exits with its
//! status.
//!
//! The runner is a crate of its own, built on demand, because it runs the
//! project's crates: were it linked into the xtask, the xtask would
//! depend on `aep-types`, and `cargo xtask codegen` could not regenerate
//! `aep-types` while its generated code does not compile.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use crate::project_root;

/// The fixtures directory of `cargo xtask conformance ARGS`, or what is
/// wrong with the arguments.
pub fn parse(args: &[String]) -> Result<PathBuf, String> {
    match args {
        [] => Err("`conformance` needs the path of a conformance `fixtures/` directory".into()),
        [path] if path.starts_with('-') => Err(format!("unknown argument `{path}`")),
        [path] => Ok(PathBuf::from(path)),
        [_, extra, ..] => Err(format!("unexpected argument `{extra}`")),
    }
}

/// Builds the `aep` binary and the runner and runs the runner on
/// `fixtures`. Exit status: the runner's (0 all passed, 1 failures, 2 an
/// unreadable fixtures directory), or 2 when the directory is missing and
/// 1 when a build fails.
pub fn run(fixtures: &Path) -> ExitCode {
    if !fixtures.is_dir() {
        eprintln!("error: {} is not a directory", fixtures.display());
        return ExitCode::from(2);
    }
    let built = build("aep-cli", "aep")
        .and_then(|aep| Ok((aep, build("aep-conformance", "aep-conformance")?)));
    let (aep, runner) = match built {
        Ok(paths) => paths,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::FAILURE;
        }
    };
    let status = Command::new(&runner)
        .arg("--aep")
        .arg(&aep)
        .arg(fixtures)
        .status();
    match status.map(|s| s.code()) {
        Ok(Some(code)) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Ok(None) => {
            eprintln!("error: the conformance runner was killed by a signal");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: cannot run {}: {e}", runner.display());
            ExitCode::FAILURE
        }
    }
}

/// Builds `package` (debug) and gives the path of its binary `bin`.
fn build(package: &str, bin: &str) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(&cargo)
        .args([
            "build",
            "--quiet",
            "--package",
            package,
            "--bin",
            bin,
            "--message-format=json-render-diagnostics",
        ])
        .current_dir(project_root())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!("`cargo build --package {package}` failed"));
    }
    executable(&String::from_utf8_lossy(&output.stdout), bin)
        .ok_or_else(|| format!("`cargo build --package {package}` named no `{bin}` binary"))
}

/// The path of binary `bin` in cargo's JSON messages.
fn executable(messages: &str, bin: &str) -> Option<PathBuf> {
    messages.lines().find_map(|line| {
        let message: serde_json::Value = serde_json::from_str(line).ok()?;
        let is_bin = message["reason"] == "compiler-artifact"
            && message["target"]["name"] == bin
            && message["target"]["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|k| k == "bin"));
        if !is_bin {
            return None;
        }
        message["executable"].as_str().map(PathBuf::from)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(parse(&args(&["fx"])), Ok(PathBuf::from("fx")));
        assert!(parse(&args(&[])).is_err());
        assert!(parse(&args(&["--frobnicate"])).is_err());
        assert!(parse(&args(&["a", "b"])).is_err());
    }

    #[test]
    fn the_binary_is_found_in_cargo_messages() {
        let messages = r#"{"reason":"compiler-artifact","target":{"name":"aep","kind":["lib"]},"executable":null}
{"reason":"build-finished","success":true}
{"reason":"compiler-artifact","target":{"name":"aep","kind":["bin"]},"executable":"/t/debug/aep"}"#;
        assert_eq!(
            executable(messages, "aep"),
            Some(PathBuf::from("/t/debug/aep"))
        );
        assert_eq!(executable(messages, "other"), None);
    }
}
