//! Shared helpers for the integration tests: fixture paths and a runner
//! that reports every failing case, not just the first.

use std::fmt::Display;
use std::path::PathBuf;

/// The workspace root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf()
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

/// The events of `valid.jsonl`, one line each.
pub fn valid_lines() -> Vec<String> {
    read_fixture("valid.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
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

/// A scratch copy of the project's registry, to mutate one file at a time.
pub struct ScratchRegistry {
    dir: tempfile::TempDir,
}

impl ScratchRegistry {
    /// Copies `schemas/` into a new temporary directory.
    pub fn new() -> ScratchRegistry {
        ScratchRegistry::copy_of(&root().join("schemas"))
    }

    /// Copies the registry in `dir` into a new temporary directory.
    pub fn copy_of(dir: &std::path::Path) -> ScratchRegistry {
        let scratch = tempfile::tempdir().expect("temporary directory");
        copy_dir(dir, scratch.path());
        ScratchRegistry { dir: scratch }
    }

    /// The registry directory.
    pub fn path(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Edits one JSON file of the registry in place.
    pub fn edit(&self, file: &str, change: impl FnOnce(&mut serde_json::Value)) -> &Self {
        let path = self.dir.path().join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        let mut value: serde_json::Value =
            serde_json::from_str(&text).expect("registry file is JSON");
        change(&mut value);
        self.write(
            file,
            serde_json::to_string_pretty(&value)
                .expect("JSON serialises")
                .as_bytes(),
        )
    }

    /// Replaces (or adds) one file with raw bytes.
    pub fn write(&self, file: &str, bytes: &[u8]) -> &Self {
        std::fs::write(self.dir.path().join(file), bytes).unwrap_or_else(|e| panic!("{file}: {e}"));
        self
    }

    /// Removes one file.
    pub fn remove(&self, file: &str) -> &Self {
        std::fs::remove_file(self.dir.path().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        self
    }
}

impl Default for ScratchRegistry {
    fn default() -> Self {
        ScratchRegistry::new()
    }
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("create directory");
    for entry in std::fs::read_dir(from).expect("read directory") {
        let entry = entry.expect("directory entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy file");
        }
    }
}

/// xorshift64*: a small deterministic generator for fixed-seed property
/// tests; the same seed gives the same cases on every machine.
pub struct Rng(pub u64);

impl Rng {
    /// The next pseudo-random number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Mutates a line the way a broken writer or transport might: flipped
/// bits, stray JSON tokens, truncation, dropped and repeated runs.
pub fn mutate_bytes(rng: &mut Rng, bytes: &mut Vec<u8>) {
    const TOKENS: &[&[u8]] = &[
        b"null",
        b"{",
        b"}",
        b"[",
        b"]",
        b"\"",
        b",",
        b":",
        b"\\u0000",
        b"\\ud800",
        b"1e400",
        b"-0",
        b"18446744073709551616",
        b"{\"data\":{}}",
        b"\"type\":\"x\"",
        b"\xff",
        b"\xe2\x82",
    ];
    for _ in 0..=rng.below(3) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(5) {
            0 if !bytes.is_empty() => {
                let i = at.min(bytes.len() - 1);
                bytes[i] ^= 1 << rng.below(8);
            }
            1 => {
                let token = TOKENS[rng.below(TOKENS.len())];
                bytes.splice(at..at, token.iter().copied());
            }
            2 => bytes.truncate(at),
            3 if at < bytes.len() => {
                let end = (at + rng.below(16)).min(bytes.len());
                bytes.drain(at..end);
            }
            _ => {
                let end = (at + rng.below(32)).min(bytes.len());
                let copy: Vec<u8> = bytes[at..end].to_vec();
                let to = rng.below(bytes.len() + 1);
                bytes.splice(to..to, copy);
            }
        }
    }
}
