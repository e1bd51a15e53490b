//! The README's section on the command line stays true: every `$ aep ...`
//! command in its `console` blocks is run from the workspace root and must
//! print exactly what follows it (standard output, then standard error),
//! and its rule table must be the one `aep::stream::Rule` describes. The
//! same holds for the `console` blocks of `docs/cli-live.md`.

mod common;

use std::process::Stdio;

use aep::stream::Rule;

fn readme() -> String {
    let path = common::crate_dir().join("../README.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `(command line, expected output)` for each `$ aep` line of a
/// `console` block.
fn commands(readme: &str) -> Vec<(String, String)> {
    let mut commands = Vec::new();
    let mut in_block = false;
    let mut current: Option<(String, String)> = None;
    for line in readme.lines() {
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
fn every_command_in_the_readme_prints_what_the_readme_shows() {
    let readme = readme();
    let commands = commands(&readme);
    assert!(commands.len() >= 4, "found only {commands:?}");
    check(&commands, "README");
}

#[test]
fn every_command_in_the_live_commands_page_prints_what_it_shows() {
    let path = common::crate_dir().join("../docs/cli-live.md");
    let page = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let commands = commands(&page);
    assert!(commands.len() >= 3, "found only {commands:?}");
    check(&commands, "docs/cli-live.md");
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

/// The rule table as the README shows it.
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
fn the_readme_lists_every_rule_as_the_validator_describes_it() {
    let table = rule_table();
    assert!(Rule::ALL.len() >= 17);
    assert!(
        readme().contains(&table),
        "the README's rule table should read:\n\n{table}"
    );
}
