//! Reading fixture files, every error naming the file (and line).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The fixtures directory and what the categories share.
#[derive(Debug)]
pub struct Fixtures {
    dir: PathBuf,
    golden: Result<Vec<Line>, String>,
}

/// One line of a JSONL file: its 1-based number, its text and its value.
#[derive(Debug, Clone)]
pub struct Line {
    /// The line number.
    pub number: usize,
    /// The line as written, without its line ending.
    pub text: String,
    /// The line as JSON.
    pub value: Value,
}

impl Line {
    /// The member `type` of the line's object, for case names.
    pub fn type_name(&self) -> &str {
        self.value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("?")
    }
}

/// Where the golden events are, relative to the fixtures directory.
pub const GOLDEN: &str = "golden/golden.jsonl";

impl Fixtures {
    /// The fixtures in `dir`, reading the golden events (which several
    /// categories pin against) once.
    pub fn new(dir: &Path) -> Fixtures {
        let golden = read_jsonl(&dir.join(GOLDEN));
        Fixtures {
            dir: dir.to_owned(),
            golden,
        }
    }

    /// The path of `relative` in the fixtures.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.join(relative)
    }

    /// Whether the fixtures have a directory `name`.
    pub fn has_dir(&self, name: &str) -> bool {
        self.dir.join(name).is_dir()
    }

    /// `relative` read as one JSON value.
    pub fn json(&self, relative: &str) -> Result<Value, String> {
        read_json(&self.path(relative))
    }

    /// `relative` read as text.
    pub fn text(&self, relative: &str) -> Result<String, String> {
        read_text(&self.path(relative))
    }

    /// `relative` read as JSONL.
    pub fn jsonl(&self, relative: &str) -> Result<Vec<Line>, String> {
        read_jsonl(&self.path(relative))
    }

    /// The golden events, in file order.
    pub fn golden(&self) -> Result<&[Line], String> {
        self.golden.as_deref().map_err(Clone::clone)
    }

    /// The golden event a pin file's key names (its 0-based index).
    pub fn golden_at(&self, key: &str) -> Result<&Line, String> {
        let golden = self.golden()?;
        let index: usize = key
            .parse()
            .map_err(|_| format!("pin key `{key}` is not a golden event index"))?;
        golden.get(index).ok_or_else(|| {
            format!(
                "pin `{key}` names golden event {index}, but there are {}",
                golden.len()
            )
        })
    }
}

/// A file's text.
pub fn read_text(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// A file holding one JSON value.
pub fn read_json(path: &Path) -> Result<Value, String> {
    let text = read_text(path)?;
    serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))
}

/// A JSONL file, blank lines skipped.
pub fn read_jsonl(path: &Path) -> Result<Vec<Line>, String> {
    let text = read_text(path)?;
    let mut lines = Vec::new();
    for (i, text) in text.lines().enumerate() {
        if text.trim().is_empty() {
            continue;
        }
        let number = i + 1;
        let value = serde_json::from_str(text)
            .map_err(|e| format!("{}:{number}: not JSON: {e}", path.display()))?;
        lines.push(Line {
            number,
            text: text.to_owned(),
            value,
        });
    }
    Ok(lines)
}

/// The members of a pin file keyed by golden event index, in index
/// order.
pub fn by_golden_index(pins: &serde_json::Map<String, Value>) -> Vec<(&str, &Value)> {
    let mut pins: Vec<(&str, &Value)> = pins.iter().map(|(k, v)| (k.as_str(), v)).collect();
    pins.sort_by_key(|(key, _)| (key.parse::<usize>().unwrap_or(usize::MAX), *key));
    pins
}

/// Member `key` of a fixture object, or an error naming it.
pub fn member<'a>(value: &'a Value, key: &str) -> Result<&'a Value, String> {
    value
        .get(key)
        .ok_or_else(|| format!("malformed case: no member `{key}`"))
}

/// Member `key` of a fixture object as a string.
pub fn string<'a>(value: &'a Value, key: &str) -> Result<&'a str, String> {
    member(value, key)?
        .as_str()
        .ok_or_else(|| format!("malformed case: `{key}` is not a string"))
}

/// Member `key` of a fixture object as an array.
pub fn array<'a>(value: &'a Value, key: &str) -> Result<&'a [Value], String> {
    member(value, key)?
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| format!("malformed fixture: `{key}` is not an array"))
}

/// A case's `name`, or its position when it has none.
pub fn case_name(case: &Value, index: usize) -> String {
    case.get("name")
        .and_then(Value::as_str)
        .map_or_else(|| format!("case {index}"), str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_file_and_line() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let file = dir.path().join("x.jsonl");
        std::fs::write(&file, "{\"a\":1}\n\n{oops}\n").expect("write");
        let error = read_jsonl(&file).unwrap_err();
        assert!(
            error.starts_with(&format!("{}:3: not JSON", file.display())),
            "{error}"
        );
        let missing = read_json(&dir.path().join("nope.json")).unwrap_err();
        assert!(missing.starts_with("cannot read "), "{missing}");
    }

    #[test]
    fn blank_lines_are_skipped_and_numbers_kept() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let file = dir.path().join("x.jsonl");
        std::fs::write(&file, "\n{\"type\":\"a.b\"}\r\n").expect("write");
        let lines = read_jsonl(&file).expect("reads");
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].number, 2);
        assert_eq!(lines[0].text, "{\"type\":\"a.b\"}");
        assert_eq!(lines[0].type_name(), "a.b");
    }
}
