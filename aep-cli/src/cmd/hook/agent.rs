//! The agents `aep hook` runs for, and what each vendor's hooks say about
//! identity: which hooks exist, where their configuration lives, and
//! which payload member names the turn (the AEP run).

use std::path::{Path, PathBuf};

use aep_adapters::Vocabulary;
use serde_json::Value;

/// An agent whose hooks `aep hook` serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code (`.claude/settings.json`).
    #[value(name = "claude-code")]
    ClaudeCode,
    /// Codex (`.codex/hooks.json`, with `codex_hooks` on in `config.toml`).
    Codex,
}

/// Claude Code's hooks (the vendor's hooks reference), each mapped by
/// Annex A.1 or deliberately silent.
const CLAUDE_CODE_HOOKS: &[&str] = &[
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "Stop",
    "StopFailure",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "PermissionDenied",
    "Notification",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "TaskCreated",
    "TaskCompleted",
    "TeammateIdle",
    "Elicitation",
    "ElicitationResult",
];

/// Codex's ten command hooks (Annex A.2).
const CODEX_HOOKS: &[&str] = &[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PreCompact",
    "PostCompact",
    "SubagentStart",
    "SubagentStop",
    "Stop",
];

impl Agent {
    /// Its source vocabulary.
    pub fn vocabulary(self) -> Vocabulary {
        match self {
            Agent::ClaudeCode => Vocabulary::ClaudeCode,
            Agent::Codex => Vocabulary::Codex,
        }
    }

    /// Its name: the `agent` of its events and its directories' name.
    pub fn name(self) -> &'static str {
        self.vocabulary().agent()
    }

    /// The hooks `--install` registers.
    pub fn hooks(self) -> &'static [&'static str] {
        match self {
            Agent::ClaudeCode => CLAUDE_CODE_HOOKS,
            Agent::Codex => CODEX_HOOKS,
        }
    }

    /// Its hook configuration file: the project's, or under `home` for
    /// the user's.
    pub fn settings(self, user_home: Option<&Path>) -> PathBuf {
        let (dir, file) = match self {
            Agent::ClaudeCode => (".claude", "settings.json"),
            Agent::Codex => (".codex", "hooks.json"),
        };
        match user_home {
            Some(home) => home.join(dir).join(file),
            None => Path::new(dir).join(file),
        }
    }

    /// The member of a payload that names its turn, where the vendor sends
    /// one: Codex's `turn_id`, Claude Code's `prompt_id`.
    fn turn_member(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "prompt_id",
            Agent::Codex => "turn_id",
        }
    }

    /// The run of a `hook` call, given the session's open run (updated):
    /// the payload's turn id when it names one, else the run a prompt
    /// opened (a new ULID when the prompt names none). A turn's end
    /// (`Stop`, `StopFailure`) and the session's end close the open run; a
    /// prompt that finds another run still open reports it interrupted.
    pub fn run_for(self, hook: &str, payload: &Value, open: &mut Option<String>) -> Turn {
        let named = payload
            .get(self.turn_member())
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        let mut interrupted = None;
        let run = match hook {
            "UserPromptSubmit" => {
                let run = named.unwrap_or_else(|| {
                    aep::control::Ids::new().next(aep_client::session::now_ms())
                });
                interrupted = open.replace(run.clone()).filter(|stale| *stale != run);
                Some(run)
            }
            _ => named.or_else(|| open.clone()),
        };
        if matches!(hook, "Stop" | "StopFailure" | "SessionEnd") {
            *open = None;
        }
        Turn { run, interrupted }
    }
}

/// The run of one hook call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// The run its events belong to.
    pub run: Option<String>,
    /// A run left open by an interrupted turn, to close first.
    pub interrupted: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_prompt_opens_the_run_its_turn_end_closes() {
        let mut open = None;
        let agent = Agent::ClaudeCode;
        let turn = agent.run_for("UserPromptSubmit", &json!({}), &mut open);
        let run = turn.run;
        assert!(run.is_some() && turn.interrupted.is_none());
        assert_eq!(open, run);
        let tool = agent.run_for("PreToolUse", &json!({}), &mut open);
        assert_eq!(tool.run, run);
        let stop = agent.run_for("Stop", &json!({}), &mut open);
        assert_eq!(stop.run, run);
        assert_eq!(open, None);
        assert_eq!(
            agent.run_for("Notification", &json!({}), &mut open).run,
            None
        );
    }

    #[test]
    fn a_prompt_over_an_open_run_reports_it_interrupted() {
        let mut open = None;
        let agent = Agent::Codex;
        agent.run_for("UserPromptSubmit", &json!({"turn_id": "t1"}), &mut open);
        let again = agent.run_for("UserPromptSubmit", &json!({"turn_id": "t1"}), &mut open);
        assert_eq!(
            again.interrupted, None,
            "the same turn again is no interruption"
        );
        let next = agent.run_for("UserPromptSubmit", &json!({"turn_id": "t2"}), &mut open);
        assert_eq!(next.interrupted.as_deref(), Some("t1"));
        assert_eq!(next.run.as_deref(), Some("t2"));
    }

    #[test]
    fn a_named_turn_is_the_run() {
        let mut open = Some("stale".to_owned());
        let run = Agent::Codex.run_for("PreToolUse", &json!({"turn_id": "t7"}), &mut open);
        assert_eq!(run.run.as_deref(), Some("t7"));
        let prompt =
            Agent::ClaudeCode.run_for("UserPromptSubmit", &json!({"prompt_id": "p1"}), &mut open);
        assert_eq!(prompt.run.as_deref(), Some("p1"));
        assert_eq!(prompt.interrupted.as_deref(), Some("stale"));
        assert_eq!(open.as_deref(), Some("p1"));
    }

    #[test]
    fn the_settings_files_are_the_vendors() {
        assert_eq!(
            Agent::ClaudeCode.settings(None),
            Path::new(".claude/settings.json")
        );
        assert_eq!(
            Agent::Codex.settings(Some(Path::new("/h"))),
            Path::new("/h/.codex/hooks.json")
        );
    }
}
