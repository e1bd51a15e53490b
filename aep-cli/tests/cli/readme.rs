//! The README and the reference pages under `docs/` stay true: every
//! `$ aep ...` command in their `console` blocks is run from the workspace
//! root and must print exactly what follows it (standard output, then
//! standard error), and the rule table of `docs/cli.md` must be the one
//! `aep::stream::Rule` describes.

use crate::common;

use std::path::PathBuf;
use std::process::Stdio;

use aep::stream::Rule;

fn read(path: &PathBuf) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The README and every page under `docs/`, by their path from the root.
fn pages() -> Vec<(String, String)> {
    let root = common::crate_dir().join("..");
    let mut pages = vec![("README.md".to_owned(), read(&root.join("README.md")))];
    let docs = root.join("docs");
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&docs)
        .unwrap_or_else(|e| panic!("{}: {e}", docs.display()))
        .map(|entry| entry.expect("a docs entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    entries.sort();
    for path in entries {
        let name = format!("docs/{}", path.file_name().unwrap().to_string_lossy());
        pages.push((name, read(&path)));
    }
    pages
}

/// `(command line, expected output)` for each `$ aep` line of a
/// `console` block.
fn commands(page: &str) -> Vec<(String, String)> {
    let mut commands = Vec::new();
    let mut in_block = false;
    let mut current: Option<(String, String)> = None;
    for line in page.lines() {
        if !in_block {
            in_block = line == "```console";
            continue;
        }
        if line == "```" {
            in_block = false;
            commands.extend(current.take());
        } else if let Some(command) = line.strip_prefix("$ ") {
            commands.extend(current.take());
            current = Some((command.to_owned(), String::new()));
        } else if let Some((_, output)) = &mut current {
            output.push_str(line);
            output.push('\n');
        }
    }
    commands
}

#[test]
fn every_command_in_the_readme_and_the_docs_prints_what_they_show() {
    let pages = pages();
    let mut checked = 0;
    for (name, page) in &pages {
        let commands = commands(page);
        checked += commands.len();
        check(&commands, name);
    }
    // The README's tour, the file commands' page and the live commands'
    // page have examples; a parser that found none would check nothing.
    for name in ["README.md", "docs/cli.md", "docs/cli-live.md"] {
        let (_, page) = pages.iter().find(|(n, _)| n == name).expect(name);
        assert!(
            !commands(page).is_empty(),
            "no `$ aep` example found in {name}"
        );
    }
    assert!(checked >= 10, "only {checked} examples found");
}

/// Runs each command from the workspace root and compares its output.
fn check(commands: &[(String, String)], page: &str) {
    let root = common::crate_dir().join("..");
    let mut wrong = Vec::new();
    for (command, expected) in commands {
        let args: Vec<&str> = command.split_whitespace().collect();
        assert_eq!(args[0], "aep", "{command}");
        let output = common::aep()
            .args(&args[1..])
            .current_dir(&root)
            .stdin(Stdio::null())
            .output()
            .expect("aep runs");
        let actual =
            String::from_utf8(output.stdout).unwrap() + &String::from_utf8(output.stderr).unwrap();
        if &actual != expected {
            wrong.push(format!(
                "$ {command}\n--- {page}\n{expected}--- actual\n{actual}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The rule table as `docs/cli.md` shows it.
fn rule_table() -> String {
    let mut table = String::from("| rule | severity | what it reports |\n|---|---|---|\n");
    for rule in Rule::ALL {
        table.push_str(&format!(
            "| `{}` | {} | {} |\n",
            rule.name(),
            rule.severity().name(),
            rule.description()
        ));
    }
    table
}

#[test]
fn the_file_commands_page_lists_every_rule_as_the_validator_describes_it() {
    let table = rule_table();
    assert!(Rule::ALL.len() >= 17);
    let page = read(&common::crate_dir().join("../docs/cli.md"));
    assert!(
        page.contains(&table),
        "the rule table of docs/cli.md should read:\n\n{table}"
    );
}

/// The lines of the README's "Try it" block, as printed.
fn try_it_block() -> Vec<String> {
    let readme = read(&common::crate_dir().join("../README.md"));
    let section = readme
        .split("\n## Try it\n")
        .nth(1)
        .expect("the README has a `## Try it` section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("the Try it section has an sh block");
    block.lines().map(str::to_owned).collect()
}

/// A child killed (and waited for) when the test ends, whichever way.
struct Background(std::process::Child);

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The README's "Try it" block, run line by line as printed, with the
/// `aep` this build made first on `PATH` (in place of `cargo install`),
/// a fresh home, and the relay on a free port (`AEP_LISTEN`, `AEP_RELAY`,
/// which the block leaves to their defaults). A person reads between the
/// lines: before `aep pending` and `aep respond` the test waits until the
/// demo has asked; the line that runs until Ctrl-C is interrupted once it
/// has shown an event.
#[test]
fn the_try_it_block_runs_as_printed() {
    use common::live::{run_bounded, stop, until, Lines};

    let lines = try_it_block();
    assert!(
        lines.len() >= 5,
        "a try-it block of a few lines: {lines:#?}"
    );
    let home = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let relay = format!("http://127.0.0.1:{port}");
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_aep"))
        .parent()
        .unwrap()
        .to_owned();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut env: Vec<(String, String)> = vec![
        ("PATH".into(), path),
        ("HOME".into(), home.path().display().to_string()),
        (
            "AEP_HOME".into(),
            home.path().join("aep").display().to_string(),
        ),
        ("AEP_LISTEN".into(), format!("127.0.0.1:{port}")),
        ("AEP_RELAY".into(), relay.clone()),
    ];
    let shell = |line: &str, env: &[(String, String)]| {
        let mut command = std::process::Command::new("sh");
        command.arg("-c").arg(line).current_dir(home.path());
        for (name, _) in std::env::vars() {
            if name.starts_with("AEP_") {
                command.env_remove(name);
            }
        }
        command.envs(env.iter().map(|(k, v)| (k, v)));
        command
    };
    let asked = |env: &[(String, String)]| {
        let run = run_bounded(shell("aep pending --json", env), None);
        run.code == 0 && run.stdout.contains("\"permission\"")
    };
    let mut background = Vec::new();
    for printed in &lines {
        let line = printed.split(" #").next().unwrap().trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with("cargo install") {
            assert_eq!(line, "cargo install --path aep-cli", "{printed}");
            continue;
        }
        if let Some(assignment) = line.strip_prefix("export ") {
            let (name, _) = assignment.split_once('=').expect("export NAME=...");
            let run = run_bounded(shell(&format!("{line}; printf %s \"${name}\""), &env), None);
            assert_eq!(run.code, 0, "{printed}: {}", run.stderr);
            assert!(!run.stdout.trim().is_empty(), "{printed}: an empty {name}");
            env.push((name.to_owned(), run.stdout.trim().to_owned()));
            continue;
        }
        if let Some(command) = line.strip_suffix('&') {
            let mut child = shell(&format!("exec {command}"), &env);
            child
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null());
            let mut child = Background(child.spawn().expect("sh runs"));
            if command.trim_start().starts_with("aep relay") {
                // It prints the page's address, its token in the fragment.
                let first = Lines::of(&mut child.0).take(1).remove(0);
                assert!(
                    first.starts_with(&format!("{relay}/#token=")),
                    "{printed}: {first}"
                );
            }
            background.push(child);
            continue;
        }
        if line.starts_with("aep pending") || line.starts_with("aep respond") {
            until("the demo asks a person", || asked(&env));
        }
        if printed.contains("Ctrl-C") {
            let mut child = shell(&format!("exec {line}"), &env);
            child
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let mut child = Background(child.spawn().expect("sh runs"));
            let shown = Lines::of(&mut child.0).take(1).remove(0);
            assert!(shown.contains("try-it"), "{printed}: {shown}");
            assert_eq!(stop(&mut child.0, "INT"), Some(0), "{printed}");
            continue;
        }
        let run = run_bounded(shell(line, &env), None);
        assert_eq!(run.code, 0, "{printed}: {}{}", run.stdout, run.stderr);
        if line.starts_with("aep pending") {
            assert!(
                run.stdout.contains("aep respond"),
                "{printed}: {}",
                run.stdout
            );
        }
        if line.starts_with("aep respond") {
            assert!(run.stderr.contains("accepted"), "{printed}: {}", run.stderr);
        }
    }
    drop(background);
}
