//! The generator's module structure, as its documentation states it:
//! `emit` sees only the IR, never `load`, and the modules inside `emit`
//! depend on each other in one direction (see `src/emit/mod.rs`).
//!
//! The checks read the source text. They look at `use super::…` lines and
//! at calls written `super::module::function(…)`; paths inside `quote!`
//! (which name generated modules, such as `super::registry::Capture`) are
//! types, not calls, and are not mistaken for dependencies.

use std::fs;
use std::path::{Path, PathBuf};

/// The `emit` submodules by layer: a module may use modules of a lower
/// layer only. `mod.rs` is the entry point above them all.
const EMIT_LAYERS: &[(&str, u8)] = &[
    ("envelope", 4),
    ("borrowed", 4),
    ("registry", 4),
    ("payload", 4),
    ("items", 3),
    ("rules", 2),
    ("context", 1),
    ("docs", 1),
    ("tokens", 0),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    files
}

/// What a file of `emit` takes from its parent: `(line number, name)`,
/// where the name is a sibling module or, if it is none, an item of
/// `mod.rs`. A file's unit tests (from `#[cfg(test)]` on) use their own
/// module, which is no dependency between modules.
fn sibling_uses(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line == "#[cfg(test)]" {
            break;
        }
        if let Some(rest) = line.strip_prefix("use super::") {
            if rest.starts_with('{') {
                // `use super::{a, b::c};`: the first segment of each path
                // (a module, or an item of `mod.rs` itself).
                let inner = rest.trim_start_matches('{');
                let inner = inner.split('}').next().unwrap_or("");
                for part in inner.split(',') {
                    let part = part.trim();
                    if !part.is_empty() {
                        out.push((i + 1, part.split("::").next().unwrap_or(part).to_owned()));
                    }
                }
            } else {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.push((i + 1, name));
            }
            continue;
        }
        // Calls such as `super::envelope::describe_rule(rule)`.
        let mut rest = line;
        while let Some(at) = rest.find("super::") {
            rest = &rest[at + "super::".len()..];
            let mut segments = rest.splitn(3, "::");
            let (Some(module), Some(tail)) = (segments.next(), segments.next()) else {
                continue;
            };
            let function: String = tail
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let is_call = function.starts_with(|c: char| c.is_ascii_lowercase())
                && tail[function.len()..].starts_with('(');
            if is_call && EMIT_LAYERS.iter().any(|(m, _)| *m == module) {
                out.push((i + 1, module.to_owned()));
            }
        }
    }
    out
}

fn layer(module: &str) -> Option<u8> {
    EMIT_LAYERS
        .iter()
        .find(|(m, _)| *m == module)
        .map(|(_, layer)| *layer)
}

#[test]
fn emit_modules_depend_one_way() {
    let dir = src().join("emit");
    let mut wrong = Vec::new();
    let mut seen = Vec::new();
    for file in rust_files(&dir) {
        let name = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if name == "mod" {
            continue;
        }
        seen.push(name.to_owned());
        let Some(own) = layer(name) else {
            wrong.push(format!(
                "emit/{name}.rs has no layer in EMIT_LAYERS (add it, and to the diagram in emit/mod.rs)"
            ));
            continue;
        };
        for (line, used) in sibling_uses(&read(&file)) {
            let ok = layer(&used).is_some_and(|l| l < own);
            if !ok {
                wrong.push(format!(
                    "emit/{name}.rs:{line} uses `{used}`, which is not a module of a lower layer"
                ));
            }
        }
    }
    for (module, _) in EMIT_LAYERS {
        assert!(
            seen.iter().any(|s| s == module),
            "EMIT_LAYERS names emit/{module}.rs, which does not exist"
        );
    }
    assert!(
        wrong.is_empty(),
        "emit modules must only use modules of a lower layer:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn emit_sees_only_the_ir() {
    let mut files = rust_files(&src().join("emit"));
    files.push(src().join("ir.rs"));
    let mut wrong = Vec::new();
    for file in files {
        for (i, line) in read(&file).lines().enumerate() {
            if line.contains("crate::load") || line.contains("crate::lower") {
                wrong.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "emit and the IR must not depend on the earlier stages:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn sibling_uses_reads_imports_and_calls() {
    let text = "\
use super::items::{self, CatchAll};
use super::{docs, ident};
use super::rules;
let a = super::envelope::describe_rule(rule);
let t = quote!(super::registry::Capture::#variant);
let d = quote!(super::runtime::decode(text));
";
    let found: Vec<String> = sibling_uses(text).into_iter().map(|(_, m)| m).collect();
    assert_eq!(found, ["items", "docs", "ident", "rules", "envelope"]);
}
