//! What a run found: per category, its cases and what failed in each.

use std::fmt::Write as _;

/// One fixture case and what went wrong with it (nothing when it passed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// The case's name, as the fixture names it.
    pub name: String,
    /// What differed, one line each; empty when the case passed.
    pub failures: Vec<String>,
}

impl Case {
    /// A case that passed.
    pub fn pass(name: impl Into<String>) -> Case {
        Case {
            name: name.into(),
            failures: Vec::new(),
        }
    }

    /// A case that failed for one reason.
    pub fn fail(name: impl Into<String>, why: impl Into<String>) -> Case {
        Case {
            name: name.into(),
            failures: vec![why.into()],
        }
    }

    /// A case that failed for each of `failures`, or passed when there is
    /// none.
    pub fn with(name: impl Into<String>, failures: Vec<String>) -> Case {
        Case {
            name: name.into(),
            failures,
        }
    }

    /// Whether the case passed.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// The outcome of one category.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Category {
    /// The category's directory name (`golden`, `otlp`, ...).
    pub name: String,
    /// Its cases, in fixture order.
    pub cases: Vec<Case>,
    /// Pins present in the fixtures that the project does not implement
    /// yet, by where they are (a file, an entry), with their count. They
    /// are neither passed nor failed.
    pub not_implemented: Vec<(String, usize)>,
    /// A problem that kept the category from running at all (a fixture
    /// file missing or malformed); a failure.
    pub error: Option<String>,
    /// The category's directory is not in the fixtures: nothing ran.
    pub absent: bool,
}

impl Category {
    /// An empty outcome for category `name`.
    pub fn new(name: &str) -> Category {
        Category {
            name: name.to_owned(),
            ..Category::default()
        }
    }

    /// The outcome of a category that could not run.
    pub fn broken(name: &str, error: String) -> Category {
        Category {
            error: Some(error),
            ..Category::new(name)
        }
    }

    /// How many cases passed.
    pub fn passed(&self) -> usize {
        self.cases.iter().filter(|c| c.passed()).count()
    }

    /// How many things failed: failing cases, and the error if any.
    pub fn failed(&self) -> usize {
        self.cases.len() - self.passed() + usize::from(self.error.is_some())
    }

    /// How many pins are not implemented.
    pub fn not_implemented_count(&self) -> usize {
        self.not_implemented.iter().map(|(_, n)| n).sum()
    }
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    /// The categories, in the runner's order.
    pub categories: Vec<Category>,
    /// Directories of the fixtures that are no category the runner knows.
    pub unknown: Vec<String>,
}

impl Report {
    /// How many things failed in all categories.
    pub fn failed(&self) -> usize {
        self.categories.iter().map(Category::failed).sum()
    }

    /// The report as text: one line per category (`name passed/total`),
    /// each failing case under its category with what differed, and a
    /// verdict.
    pub fn render(&self) -> String {
        let width = self
            .categories
            .iter()
            .map(|c| c.name.len())
            .chain(self.unknown.iter().map(String::len))
            .max()
            .unwrap_or(0);
        let mut out = String::new();
        for category in &self.categories {
            let name = &category.name;
            if category.absent {
                let _ = writeln!(out, "{name:width$}  absent (no `{name}` directory)");
                continue;
            }
            let _ = write!(
                out,
                "{name:width$}  {}/{}",
                category.passed(),
                category.cases.len()
            );
            let pending = category.not_implemented_count();
            if pending > 0 {
                let _ = write!(out, " ({pending} not implemented)");
            }
            out.push('\n');
            if let Some(error) = &category.error {
                let _ = writeln!(out, "  ERROR {error}");
            }
            for case in category.cases.iter().filter(|c| !c.passed()) {
                let _ = writeln!(out, "  FAIL {}", case.name);
                for failure in &case.failures {
                    let _ = writeln!(out, "       {failure}");
                }
            }
            if pending > 0 {
                let list: Vec<String> = category
                    .not_implemented
                    .iter()
                    .map(|(place, n)| format!("{place} {n}"))
                    .collect();
                let _ = writeln!(out, "  not implemented: {}", list.join(", "));
            }
        }
        for name in &self.unknown {
            let _ = writeln!(
                out,
                "{name:width$}  not implemented (no runner for this category)"
            );
        }
        match self.failed() {
            0 => out.push_str("\nOK: every implemented case passed\n"),
            n => {
                let _ = writeln!(out, "\nFAILED: {n} failure(s)");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_lists_counts_failures_and_the_verdict() {
        let mut otlp = Category::new("otlp");
        otlp.cases = vec![
            Case::pass("otlp[3]"),
            Case::with("otlp[15]", vec!["/body: not expected, got {}".into()]),
        ];
        let mut mappings = Category::new("mappings");
        mappings.cases = vec![Case::pass("a")];
        mappings.not_implemented = vec![("codex.json".into(), 11), ("pi.json".into(), 2)];
        let broken = Category::broken("golden", "cannot read x".into());
        let absent = Category {
            absent: true,
            ..Category::new("ocsf")
        };
        let report = Report {
            categories: vec![otlp, mappings, broken, absent],
            unknown: vec!["future".into()],
        };
        assert_eq!(report.failed(), 2);
        assert_eq!(
            report.render(),
            "\
otlp      1/2
  FAIL otlp[15]
       /body: not expected, got {}
mappings  1/1 (13 not implemented)
  not implemented: codex.json 11, pi.json 2
golden    0/0
  ERROR cannot read x
ocsf      absent (no `ocsf` directory)
future    not implemented (no runner for this category)

FAILED: 2 failure(s)
"
        );
    }

    #[test]
    fn a_clean_run_says_ok() {
        let mut golden = Category::new("golden");
        golden.cases = vec![Case::pass("golden[0]")];
        let report = Report {
            categories: vec![golden],
            unknown: Vec::new(),
        };
        assert_eq!(report.failed(), 0);
        assert!(report
            .render()
            .ends_with("\nOK: every implemented case passed\n"));
    }
}
