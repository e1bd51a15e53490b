//! The tail's state file: the last position of each session seen, per
//! relay URL, as `{"version": 1, "relays": {URL: [{session, epoch, seq}]}}`.
//! A missing file is an empty state; a file that does not read is
//! reported and replaced on the next save.

use std::path::{Path, PathBuf};

use aep_client::consume::Position;
use serde_json::{json, Map, Value};

use crate::diag;

/// `~/.aep/tail-state.json`, when there is a home directory.
pub fn default_path() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(|home| PathBuf::from(home).join(".aep").join("tail-state.json"))
}

/// The whole file as JSON, or an empty state.
fn read(path: &Path) -> Map<String, Value> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Map::new(),
        Err(e) => {
            diag!(
                "aep tail: warning: cannot read the state file {}: {e}; starting without it",
                path.display()
            );
            return Map::new();
        }
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) if map.get("version") == Some(&json!(1)) => map,
        _ => {
            diag!(
                "aep tail: warning: the state file {} is not a tail state; starting without it (it is replaced on exit)",
                path.display()
            );
            Map::new()
        }
    }
}

/// The positions kept for `relay`.
pub fn load(path: &Path, relay: &str) -> Vec<Position> {
    read(path)
        .get("relays")
        .and_then(|relays| relays.get(relay))
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Position::from_json).collect())
        .unwrap_or_default()
}

/// Writes `positions` for `relay`, keeping the other relays' (atomically;
/// a failure is reported, not fatal).
pub fn save(path: &Path, relay: &str, positions: &[Position]) {
    let mut state = read(path);
    state.insert("version".into(), json!(1));
    let relays = state
        .entry("relays")
        .or_insert_with(|| Value::Object(Map::new()));
    if !relays.is_object() {
        *relays = Value::Object(Map::new());
    }
    if let Some(relays) = relays.as_object_mut() {
        relays.insert(
            relay.to_owned(),
            Value::Array(positions.iter().map(Position::to_json).collect()),
        );
    }
    let result = (|| {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut bytes = serde_json::to_vec_pretty(&Value::Object(state))?;
        bytes.push(b'\n');
        crate::live::replace_file(path, &bytes)
    })();
    if let Err(e) = result {
        diag!(
            "aep tail: warning: cannot write the state file {}: {e}",
            path.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_round_trip_per_relay_and_junk_reads_as_empty() {
        let dir = std::env::temp_dir().join(format!("aep-tail-state-{}", std::process::id()));
        let path = dir.join("nested").join("state.json");
        assert!(load(&path, "http://a").is_empty());
        save(&path, "http://a", &[Position::new("s1", 1, 5)]);
        save(&path, "http://b", &[Position::new("s2", 0, 9)]);
        assert_eq!(load(&path, "http://a"), [Position::new("s1", 1, 5)]);
        assert_eq!(load(&path, "http://b"), [Position::new("s2", 0, 9)]);
        std::fs::write(&path, "{not json").unwrap();
        assert!(load(&path, "http://a").is_empty());
        save(&path, "http://a", &[]);
        assert!(load(&path, "http://a").is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
