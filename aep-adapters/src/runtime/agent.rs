//! The agents whose hooks a runtime serves, and what each vendor's hooks
//! say about identity: which hooks exist, where their configuration
//! lives, and which payload member names the turn (the AEP run).

use serde_json::Value;

use crate::Vocabulary;

/// An agent whose command hooks a runtime serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookAgent {
    /// Claude Code (`.claude/settings.json`).
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

impl HookAgent {
    /// Every agent a runtime serves.
    pub const ALL: [HookAgent; 2] = [HookAgent::ClaudeCode, HookAgent::Codex];

    /// Its source vocabulary.
    pub fn vocabulary(self) -> Vocabulary {
        match self {
            HookAgent::ClaudeCode => Vocabulary::ClaudeCode,
            HookAgent::Codex => Vocabulary::Codex,
        }
    }

    /// Its name: the `agent` of its events.
    pub fn name(self) -> &'static str {
        self.vocabulary().agent()
    }

    /// The agent named `name` ([`HookAgent::name`]).
    pub fn from_name(name: &str) -> Option<HookAgent> {
        HookAgent::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The hooks a runtime registers, in the vendor's own order.
    pub fn hooks(self) -> &'static [&'static str] {
        match self {
            HookAgent::ClaudeCode => CLAUDE_CODE_HOOKS,
            HookAgent::Codex => CODEX_HOOKS,
        }
    }

    /// Its hook configuration file, relative to a project's directory (or
    /// to the user's home for the user's own): a directory and a file.
    pub fn settings_file(self) -> (&'static str, &'static str) {
        match self {
            HookAgent::ClaudeCode => (".claude", "settings.json"),
            HookAgent::Codex => (".codex", "hooks.json"),
        }
    }

    /// The member of a payload that names its turn, where the vendor sends
    /// one: Codex's `turn_id`, Claude Code's `prompt_id`.
    pub fn turn_member(self) -> &'static str {
        match self {
            HookAgent::ClaudeCode => "prompt_id",
            HookAgent::Codex => "turn_id",
        }
    }

    /// The run of a `hook` call, given the session's open run (updated):
    /// the payload's turn id when it names one, else the run a prompt
    /// opened (`new_run()` when the prompt names none). A turn's end
    /// (`Stop`, `StopFailure`) and the session's end close the open run; a
    /// prompt that finds another run still open reports it interrupted.
    pub fn run_for(
        self,
        hook: &str,
        payload: &Value,
        open: &mut Option<String>,
        new_run: impl FnOnce() -> String,
    ) -> Turn {
        let named = payload
            .get(self.turn_member())
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        let mut interrupted = None;
        let run = match hook {
            "UserPromptSubmit" => {
                let run = named.unwrap_or_else(new_run);
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

    fn fresh() -> String {
        "r-new".to_owned()
    }

    #[test]
    fn a_prompt_opens_the_run_its_turn_end_closes() {
        let mut open = None;
        let agent = HookAgent::ClaudeCode;
        let turn = agent.run_for("UserPromptSubmit", &json!({}), &mut open, fresh);
        assert_eq!(turn.run.as_deref(), Some("r-new"));
        assert!(turn.interrupted.is_none());
        assert_eq!(open, turn.run);
        let tool = agent.run_for("PreToolUse", &json!({}), &mut open, fresh);
        assert_eq!(tool.run, turn.run);
        let stop = agent.run_for("Stop", &json!({}), &mut open, fresh);
        assert_eq!(stop.run, turn.run);
        assert_eq!(open, None);
        let after = agent.run_for("Notification", &json!({}), &mut open, fresh);
        assert_eq!(after.run, None);
    }

    #[test]
    fn a_prompt_over_an_open_run_reports_it_interrupted() {
        let mut open = None;
        let agent = HookAgent::Codex;
        agent.run_for(
            "UserPromptSubmit",
            &json!({"turn_id": "t1"}),
            &mut open,
            fresh,
        );
        let again = agent.run_for(
            "UserPromptSubmit",
            &json!({"turn_id": "t1"}),
            &mut open,
            fresh,
        );
        assert_eq!(
            again.interrupted, None,
            "the same turn again is no interruption"
        );
        let next = agent.run_for(
            "UserPromptSubmit",
            &json!({"turn_id": "t2"}),
            &mut open,
            fresh,
        );
        assert_eq!(next.interrupted.as_deref(), Some("t1"));
        assert_eq!(next.run.as_deref(), Some("t2"));
    }

    #[test]
    fn the_vendors_turn_member_names_the_run() {
        let mut open = Some("opened".to_owned());
        let claude = HookAgent::ClaudeCode.run_for(
            "PreToolUse",
            &json!({"prompt_id": "p9", "turn_id": "no"}),
            &mut open,
            fresh,
        );
        assert_eq!(claude.run.as_deref(), Some("p9"));
        let codex = HookAgent::Codex.run_for(
            "PreToolUse",
            &json!({"prompt_id": "no", "turn_id": "t9"}),
            &mut open,
            fresh,
        );
        assert_eq!(codex.run.as_deref(), Some("t9"));
    }

    #[test]
    fn agents_are_found_by_name_and_list_their_hooks() {
        for agent in HookAgent::ALL {
            assert_eq!(HookAgent::from_name(agent.name()), Some(agent));
            assert!(agent.hooks().contains(&"PermissionRequest"));
        }
        assert_eq!(HookAgent::from_name("gemini-cli"), None);
        assert_eq!(HookAgent::Codex.hooks().len(), 10);
    }
}
