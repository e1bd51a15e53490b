//! The command line: exit codes and what it prints.

use std::path::Path;
use std::process::{Command, Output};

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .expect("xtask runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create directory");
    for entry in std::fs::read_dir(from).expect("read directory") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

#[test]
fn a_refused_registry_is_one_line_and_exit_code_1() {
    let scratch = tempfile::tempdir().expect("temporary directory");
    let schemas = scratch.path().join("schemas");
    copy_dir(&xtask::project_root().join("schemas"), &schemas);
    let file = schemas.join("types/agent.idle.schema.json");
    let broken = std::fs::read_to_string(&file).expect("read").replacen(
        "\"type\": \"object\"",
        "\"type\": \"objekt\"",
        1,
    );
    std::fs::write(&file, broken).expect("write");
    let out = scratch.path().join("out");

    let result = xtask(&[
        "codegen",
        "--schemas",
        schemas.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(result.status.code(), Some(1));
    assert_eq!(
        text(&result.stderr),
        "error: types/agent.idle.schema.json#: a payload schema must be `\"type\": \"object\"` with `properties`\n"
    );
    assert!(!out.exists(), "nothing written");
}

#[test]
fn check_reports_drift_with_a_diff_and_the_fix() {
    let scratch = tempfile::tempdir().expect("temporary directory");
    let out = scratch.path().join("generated");
    let schemas = xtask::project_root().join("schemas");
    let schemas = schemas.to_str().unwrap();
    let written = xtask(&[
        "codegen",
        "--schemas",
        schemas,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(written.status.success(), "{}", text(&written.stderr));

    let clean = xtask(&[
        "codegen",
        "--check",
        "--schemas",
        schemas,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(clean.status.success(), "{}", text(&clean.stderr));

    let file = out.join("agent_idle.rs");
    let edited = std::fs::read_to_string(&file)
        .expect("read")
        .replace("pub struct AgentIdle", "pub struct AgentIdl");
    std::fs::write(&file, edited).expect("write");
    let drift = xtask(&[
        "codegen",
        "--check",
        "--schemas",
        schemas,
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = text(&drift.stderr);
    assert_eq!(drift.status.code(), Some(1));
    assert!(
        stderr.contains("agent_idle.rs: differs from what types/agent.idle.schema.json generates"),
        "{stderr}"
    );
    assert!(
        stderr.contains("-pub struct AgentIdl {\n+pub struct AgentIdle {"),
        "{stderr}"
    );
    assert!(
        stderr.contains("run `cargo xtask codegen` to regenerate it"),
        "{stderr}"
    );
}

#[test]
fn bad_arguments_are_a_usage_error() {
    for args in [
        &[][..],
        &["codegen", "--frobnicate"],
        &["codegen", "--out"],
        &["lint"],
    ] {
        let result = xtask(args);
        assert_eq!(result.status.code(), Some(2), "{args:?}");
        assert!(
            text(&result.stderr).contains("usage: cargo xtask codegen"),
            "{args:?}"
        );
    }
}
