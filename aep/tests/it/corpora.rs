//! The stream and projection corpora under `tests/fixtures/`: hand-written
//! JSONL streams with the findings (or the projected state) each must give,
//! derived by hand from the protocol's rules.
//!
//! - `stream/NAME.jsonl` with `stream/NAME.expected`: one finding per line,
//!   `LINE LEVEL RULE`, in the order the validator reports them; `#` starts
//!   a comment, and `# max-line-bytes N` sets the line limit.
//! - `projection/NAME.jsonl` with `projection/NAME.json`: the batch
//!   projection of the stream's events.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use aep::projection::project;
use aep::reader::EventReader;
use aep::stream::{validate_reader, Options, Rule};

fn fixtures(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir);
    let mut paths: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no corpus in {}", dir.display());
    paths
}

/// The expected findings and options of a stream corpus.
fn expected(path: &Path) -> (Vec<String>, Options) {
    let text = fs::read_to_string(path.with_extension("expected"))
        .unwrap_or_else(|e| panic!("{}: {e}", path.with_extension("expected").display()));
    let mut options = Options::default();
    let mut findings = Vec::new();
    for line in text.lines() {
        if let Some(limit) = line.strip_prefix("# max-line-bytes ") {
            options.max_line_bytes = limit.trim().parse().expect("a number");
        }
        let content = line.split('#').next().unwrap().trim();
        if !content.is_empty() {
            findings.push(content.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    (findings, options)
}

#[test]
fn every_stream_corpus_gives_its_findings() {
    let mut covered = BTreeSet::new();
    let mut failures = Vec::new();
    for path in fixtures("stream") {
        let (want, options) = expected(&path);
        let input = fs::read(&path).unwrap();
        let mut got = Vec::new();
        let mut messages = Vec::new();
        let summary = validate_reader(
            input.as_slice(),
            options,
            |f| {
                got.push(format!("{} {} {}", f.line, f.level, f.rule));
                messages.push(format!(
                    "{}: {}[{}]: {}",
                    f.line, f.level, f.rule, f.message
                ));
                covered.insert(f.rule);
            },
            |_| {},
        )
        .unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("legal") {
            assert_eq!(summary.errors, 0, "{name} must have no errors");
        }
        if got != want {
            failures.push(format!(
                "{name}:\n  want {want:?}\n  got  {got:?}\n  {}",
                messages.join("\n  ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let missing: Vec<_> = Rule::ALL.iter().filter(|r| !covered.contains(r)).collect();
    assert!(missing.is_empty(), "no corpus breaks {missing:?}");
}

#[test]
fn every_projection_corpus_gives_its_state() {
    for path in fixtures("projection") {
        let input = fs::read(&path).unwrap();
        let events: Vec<_> = EventReader::new(input.as_slice())
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let snapshot = project(&events);
        let got = serde_json::to_value(&snapshot).unwrap();
        // The shape reads back into the same snapshot.
        assert_eq!(
            serde_json::from_value::<aep::projection::Snapshot>(got.clone()).unwrap(),
            snapshot
        );
        let want: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(path.with_extension("json")).unwrap())
                .unwrap();
        assert_eq!(
            got,
            want,
            "{}:\n{}",
            path.display(),
            serde_json::to_string_pretty(&got).unwrap()
        );
    }
}

/// The validator's stream rules are the projection's: folding each stream
/// corpus incrementally gives the same violations, in the same order, as
/// the validator's findings of those rules.
#[test]
fn the_validator_and_the_incremental_projection_agree() {
    const SHARED: [&str; 6] = [
        "id-collision",
        "seq-regression",
        "epoch-regression",
        "run-terminal-exclusivity",
        "session-terminal-exclusivity",
        "ended-with-pending-attention",
    ];
    for path in fixtures("stream") {
        let (_, options) = expected(&path);
        let input = fs::read(&path).unwrap();
        let mut projection = aep::projection::Projection::new();
        for event in
            EventReader::with_max_line_bytes(input.as_slice(), options.max_line_bytes).flatten()
        {
            projection.apply(&event);
        }
        let folded: Vec<&str> = projection
            .snapshot()
            .violations
            .iter()
            .map(|v| v.rule())
            .collect();
        let mut validated = Vec::new();
        validate_reader(
            input.as_slice(),
            options,
            |f| {
                if SHARED.contains(&f.rule.name()) {
                    validated.push(f.rule.name());
                }
            },
            |_| {},
        )
        .unwrap();
        assert_eq!(folded, validated, "{}", path.display());
    }
}
