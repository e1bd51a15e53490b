//! Shared helpers for the integration tests: fixture paths and a runner
//! that reports every failing case, not just the first.

use std::fmt::Display;
use std::path::PathBuf;

/// The workspace root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ sits in the workspace").to_path_buf()
}

/// A fixture file's path.
pub fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures").join(name)
}

/// Reads a fixture file as text.
pub fn read_fixture(name: &str) -> String {
    let path = fixture(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Collects case failures and fails the test once, listing all of them.
#[derive(Default)]
pub struct Report {
    cases: usize,
    failures: Vec<String>,
}

impl Report {
    /// Records one case's outcome.
    pub fn case<E: Display>(&mut self, name: impl Display, outcome: Result<(), E>) {
        self.cases += 1;
        if let Err(e) = outcome {
            self.failures.push(format!("{name}: {e}"));
        }
    }

    /// Panics with every failure, or returns the number of cases run.
    pub fn finish(self, corpus: &str) -> usize {
        assert!(self.cases > 0, "{corpus}: no cases ran");
        if !self.failures.is_empty() {
            panic!(
                "{corpus}: {} of {} cases failed:\n{}",
                self.failures.len(),
                self.cases,
                self.failures.join("\n")
            );
        }
        self.cases
    }
}
