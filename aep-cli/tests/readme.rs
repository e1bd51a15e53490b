//! The README and the reference pages under `docs/` stay true: every
//! `$ aep ...` command in their `console` blocks is run from the workspace
//! root and must print exactly what follows it (standard output, then
//! standard error), and the rule table of `docs/cli.md` must be the one
//! `aep::stream::Rule` describes.

mod common;

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
