//! `--install` and `--uninstall`: the vendor's hook configuration edited
//! in place. Claude Code's settings and Codex's `hooks.json` share one
//! shape:
//!
//! ```json
//! {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
//!     {"type": "command", "command": "...", "timeout": 65}]}]}}
//! ```
//!
//! Only what is ours changes: a hook whose command runs `aep hook AGENT`.
//! Every other member, event and hook keeps its place and its bytes (the
//! members are kept as raw JSON in their order), so a settings file with
//! other hooks, permissions or comments-free formatting of its own comes
//! back as it was but for our entries.

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// An object's members in their order, each value as its raw text.
#[derive(Debug, Default)]
struct Members(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Members, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, Box<RawValue>>()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(MembersVisitor)
    }
}

impl Serialize for Members {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl Members {
    fn get(&self, key: &str) -> Option<&RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| &**v)
    }

    /// Sets `key` (in its place when present, last otherwise), or removes
    /// it for `None`.
    fn set(&mut self, key: &str, value: Option<Box<RawValue>>) {
        let place = self.0.iter().position(|(k, _)| k == key);
        match (place, value) {
            (Some(i), Some(value)) => self.0[i].1 = value,
            (Some(i), None) => {
                self.0.remove(i);
            }
            (None, Some(value)) => self.0.push((key.to_owned(), value)),
            (None, None) => {}
        }
    }
}

/// What to install: the command and its timeout, for these hooks.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    /// The command line the vendor runs.
    pub command: String,
    /// The vendor's timeout for it, in seconds.
    pub timeout_s: u64,
    /// The hook names.
    pub hooks: &'a [&'a str],
    /// The agent name in `aep hook AGENT`.
    pub agent: &'a str,
}

/// The settings text with our hooks installed (any older entry of ours
/// replaced), or `None` when it already says exactly that.
pub fn install(text: &str, entry: &Entry<'_>) -> Result<Option<String>, String> {
    edit(text, entry.agent, Some(entry))
}

/// The settings text with our hooks removed, or `None` when it holds none.
pub fn uninstall(text: &str, agent: &str) -> Result<Option<String>, String> {
    edit(text, agent, None)
}

fn edit(text: &str, agent: &str, entry: Option<&Entry<'_>>) -> Result<Option<String>, String> {
    let blank = text.trim().is_empty();
    let mut root: Members = if blank {
        Members::default()
    } else {
        serde_json::from_str(text).map_err(|e| format!("not a JSON object: {e}"))?
    };
    let mut hooks: Members = match root.get("hooks") {
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|e| format!("`hooks` is not an object of hook events: {e}"))?,
        None => Members::default(),
    };
    let mut names: Vec<&str> = hooks.0.iter().map(|(k, _)| k.as_str()).collect();
    for name in entry.map_or(&[][..], |e| e.hooks) {
        if !names.contains(name) {
            names.push(name);
        }
    }
    let names: Vec<String> = names.into_iter().map(str::to_owned).collect();
    let mut changed = false;
    for name in &names {
        let old: Vec<Value> = match hooks.get(name) {
            Some(raw) => serde_json::from_str(raw.get())
                .map_err(|e| format!("`hooks.{name}` is not an array of matcher groups: {e}"))?,
            None => Vec::new(),
        };
        let mut groups = without_ours(&old, agent);
        if let Some(entry) = entry.filter(|e| e.hooks.contains(&name.as_str())) {
            groups.push(json!({"hooks": [{
                "type": "command",
                "command": entry.command,
                "timeout": entry.timeout_s,
            }]}));
        }
        if groups == old {
            continue;
        }
        changed = true;
        let value = if groups.is_empty() {
            None
        } else {
            Some(to_raw(&groups)?)
        };
        hooks.set(name, value);
    }
    if !changed {
        return Ok(None);
    }
    let hooks = if hooks.0.is_empty() {
        None
    } else {
        Some(to_raw(&hooks)?)
    };
    root.set("hooks", hooks);
    let mut out = serde_json::to_string_pretty(&root).map_err(|e| e.to_string())?;
    out.push('\n');
    Ok(Some(out))
}

fn to_raw<T: Serialize>(value: &T) -> Result<Box<RawValue>, String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    RawValue::from_string(text).map_err(|e| e.to_string())
}

/// The matcher groups with our hooks taken out, a group left empty by
/// that dropped; groups and hooks not ours are kept as they are.
fn without_ours(groups: &[Value], agent: &str) -> Vec<Value> {
    let mut kept = Vec::with_capacity(groups.len());
    for group in groups {
        let Some(list) = group.get("hooks").and_then(Value::as_array) else {
            kept.push(group.clone());
            continue;
        };
        let others: Vec<Value> = list
            .iter()
            .filter(|hook| !is_ours(hook, agent))
            .cloned()
            .collect();
        if others.len() == list.len() {
            kept.push(group.clone());
        } else if !others.is_empty() {
            let mut group = group.clone();
            group["hooks"] = Value::Array(others);
            kept.push(group);
        }
    }
    kept
}

/// Whether a hook runs `aep hook AGENT` (by any path to `aep`).
fn is_ours(hook: &Value, agent: &str) -> bool {
    let Some(command) = hook.get("command").and_then(Value::as_str) else {
        return false;
    };
    let Some(program) = command.trim().strip_suffix(&format!(" hook {agent}")) else {
        return false;
    };
    let program = program.trim().trim_matches('\'').trim_matches('"');
    program == "aep" || program.ends_with("/aep")
}

/// A command line running `program` (a path) with `args`: the path quoted
/// for a POSIX shell when it holds anything but plain path characters.
pub fn command_line(program: &str, args: &str) -> String {
    let plain = !program.is_empty()
        && program
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+".contains(&b));
    if plain {
        format!("{program} {args}")
    } else {
        format!("'{}' {args}", program.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOOKS: &[&str] = &["PreToolUse", "Stop"];

    fn entry(command: &str) -> Entry<'static> {
        Entry {
            command: command.to_owned(),
            timeout_s: 65,
            hooks: HOOKS,
            agent: "claude-code",
        }
    }

    const OTHERS: &str = r#"{
  "permissions": {"allow": ["Bash(ls:*)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
    ],
    "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]
  },
  "model": "opus"
}"#;

    #[test]
    fn install_adds_ours_and_keeps_every_other_member_in_its_place() {
        let out = install(OTHERS, &entry("/usr/bin/aep hook claude-code"))
            .unwrap()
            .unwrap();
        let value: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(value["permissions"]["allow"][0], "Bash(ls:*)");
        assert_eq!(value["model"], "opus");
        let pre = value["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 2);
        assert_eq!(pre[0]["hooks"][0]["command"], "./guard.sh");
        assert_eq!(
            pre[1]["hooks"][0]["command"],
            "/usr/bin/aep hook claude-code"
        );
        assert_eq!(pre[1]["hooks"][0]["timeout"], 65);
        assert_eq!(value["hooks"]["Stop"].as_array().unwrap().len(), 1);
        assert_eq!(
            value["hooks"]["Notification"][0]["hooks"][0]["command"],
            "notify-send hi"
        );
        // Member order is the file's, ours last.
        let order: Vec<usize> = ["\"permissions\"", "\"hooks\"", "\"model\""]
            .iter()
            .map(|k| out.find(k).unwrap())
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{out}");
        let events: Vec<usize> = ["\"PreToolUse\"", "\"Notification\"", "\"Stop\""]
            .iter()
            .map(|k| out.find(k).unwrap())
            .collect();
        assert!(events.windows(2).all(|w| w[0] < w[1]), "{out}");
    }

    #[test]
    fn install_is_idempotent_and_replaces_an_older_entry_of_ours() {
        let once = install(OTHERS, &entry("aep hook claude-code"))
            .unwrap()
            .unwrap();
        assert_eq!(
            install(&once, &entry("aep hook claude-code")).unwrap(),
            None
        );
        let moved = install(&once, &entry("'/opt/my tools/aep' hook claude-code"))
            .unwrap()
            .unwrap();
        let value: Value = serde_json::from_str(&moved).unwrap();
        let pre = value["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 2, "{moved}");
        assert_eq!(
            pre[1]["hooks"][0]["command"],
            "'/opt/my tools/aep' hook claude-code"
        );
    }

    #[test]
    fn uninstall_takes_ours_out_and_only_ours() {
        let installed = install(OTHERS, &entry("aep hook claude-code"))
            .unwrap()
            .unwrap();
        let out = uninstall(&installed, "claude-code").unwrap().unwrap();
        let back: Value = serde_json::from_str(&out).unwrap();
        let original: Value = serde_json::from_str(OTHERS).unwrap();
        assert_eq!(back, original);
        assert_eq!(uninstall(&out, "claude-code").unwrap(), None);
        // Another agent's entry is not ours to remove.
        assert_eq!(uninstall(&installed, "codex").unwrap(), None);
    }

    #[test]
    fn a_hook_sharing_a_group_with_ours_stays() {
        let text = r#"{"hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": "aep hook claude-code"},
            {"type": "command", "command": "say done"}]}]}}"#;
        let out = uninstall(text, "claude-code").unwrap().unwrap();
        let value: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            value["hooks"]["Stop"][0]["hooks"],
            json!([{"type": "command", "command": "say done"}])
        );
    }

    #[test]
    fn an_empty_file_gets_our_hooks_and_loses_them_cleanly() {
        let out = install("", &entry("aep hook claude-code"))
            .unwrap()
            .unwrap();
        let value: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(value["hooks"]["Stop"][0]["hooks"][0]["type"], "command");
        assert_eq!(
            uninstall(&out, "claude-code").unwrap().unwrap().trim(),
            "{}"
        );
    }

    #[test]
    fn a_file_of_another_shape_is_refused_not_rewritten() {
        for text in ["[1]", "{\"hooks\": []}", "{\"hooks\": {\"Stop\": {}}}", "{"] {
            assert!(
                install(text, &entry("aep hook claude-code")).is_err(),
                "{text}"
            );
        }
    }

    #[test]
    fn only_aep_hook_agent_commands_are_ours() {
        let ours = |c: &str| is_ours(&json!({"command": c}), "claude-code");
        assert!(ours("aep hook claude-code"));
        assert!(ours("/home/u/.cargo/bin/aep hook claude-code"));
        assert!(ours("'/opt/my tools/aep' hook claude-code"));
        assert!(!ours("notaep hook claude-code"));
        assert!(!ours("aep hook codex"));
        assert!(!ours("aep hook claude-code --verbose"));
        assert_eq!(
            command_line("/opt/my tools/aep", "hook codex"),
            "'/opt/my tools/aep' hook codex"
        );
        assert_eq!(
            command_line("/usr/bin/aep", "hook codex"),
            "/usr/bin/aep hook codex"
        );
    }
}
