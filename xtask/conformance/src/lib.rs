//! The runner of the published AEP conformance corpus (the `fixtures/`
//! directory of the protocol's conformance suite) against this project:
//! each fixture category goes through the project's own crates, or the
//! `aep` binary where the category is about what a command does.
//!
//! | category | what runs it |
//! |---|---|
//! | `golden` | `Event::from_json` + `Event::validate` per event, `aep validate` on the file |
//! | `invalid` | `aep validate -` per case (one event, or a stream) |
//! | `downlevel` | `Event::down_level` |
//! | `capture-gating` | `form::gate_values` |
//! | `mappings` | `aep adapter map VOCABULARY`, one run per vocabulary and argument list ([`categories::mappings`]) |
//! | `hook-runtime` | the Claude Code and Codex pins of `mappings/` through `aep hook` with a relay and the adapter daemon ([`categories::hooks`]) |
//! | `attr-match` | `filter::Filter` for matching, `aep filter` for refusing invalid filters |
//! | `ce-roundtrip` | `aep convert --to cloudevents` / `--from cloudevents` |
//! | `otlp` | `aep convert --to otlp` |
//! | `ocsf` | `aep convert --to ocsf`, and the record against the OCSF class subset |
//! | `redaction` | `aep redact` / `aep redact --json` |
//!
//! The runner reads only the directory it is given; `cargo xtask
//! conformance PATH` builds it and the `aep` binary and runs it.
#![deny(missing_docs)]

pub mod aep;
pub mod categories;
pub mod fixtures;
pub mod json;
pub mod report;

use std::path::Path;

use crate::aep::Aep;
use crate::fixtures::Fixtures;
use crate::report::{Category, Report};

/// What a category runner is given.
#[derive(Debug)]
pub struct Context {
    /// The fixtures.
    pub fixtures: Fixtures,
    /// The `aep` binary under test.
    pub aep: Aep,
}

/// Runs every category the project implements over the fixtures in `dir`
/// with the `aep` binary at `aep`. An error (the directory cannot be read,
/// or holds no category at all) means nothing ran.
pub fn run(dir: &Path, aep: &Path) -> Result<Report, String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read the fixtures directory {}: {e}", dir.display()))?;
    let mut present = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().is_dir() && !name.starts_with('.') {
            present.push(name);
        }
    }
    if !categories::ALL
        .iter()
        .any(|(name, _)| present.iter().any(|p| p == name))
    {
        return Err(format!(
            "{} holds no fixture category (expected directories such as `golden`, `otlp`)",
            dir.display()
        ));
    }
    let context = Context {
        fixtures: Fixtures::new(dir),
        aep: Aep::new(aep),
    };
    let mut report = Report::default();
    for (name, run) in categories::ALL {
        let category = if present.iter().any(|p| p == categories::directory(name)) {
            run(&context)
        } else {
            Category {
                absent: true,
                ..Category::new(name)
            }
        };
        report.categories.push(category);
    }
    present.sort();
    report.unknown = present
        .into_iter()
        .filter(|p| !categories::ALL.iter().any(|(name, _)| name == p))
        .collect();
    Ok(report)
}
