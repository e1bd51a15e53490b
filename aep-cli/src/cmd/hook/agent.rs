//! The agents `aep hook` runs for, as the command line names them; what
//! their hooks mean lives with their mappings
//! ([`aep_adapters::runtime::HookAgent`]).

use std::path::{Path, PathBuf};

use aep_adapters::runtime::{HookAgent, Turn};
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

impl Agent {
    /// The runtime's agent.
    pub fn runtime(self) -> HookAgent {
        match self {
            Agent::ClaudeCode => HookAgent::ClaudeCode,
            Agent::Codex => HookAgent::Codex,
        }
    }

    /// The command line's name for the runtime's agent.
    pub fn of(agent: HookAgent) -> Agent {
        match agent {
            HookAgent::ClaudeCode => Agent::ClaudeCode,
            HookAgent::Codex => Agent::Codex,
        }
    }

    /// Its source vocabulary.
    pub fn vocabulary(self) -> Vocabulary {
        self.runtime().vocabulary()
    }

    /// Its name: the `agent` of its events and its directories' name.
    pub fn name(self) -> &'static str {
        self.runtime().name()
    }

    /// The hooks `--install` registers.
    pub fn hooks(self) -> &'static [&'static str] {
        self.runtime().hooks()
    }

    /// Its hook configuration file: the project's, or under `home` for
    /// the user's.
    pub fn settings(self, user_home: Option<&Path>) -> PathBuf {
        let (dir, file) = self.runtime().settings_file();
        match user_home {
            Some(home) => home.join(dir).join(file),
            None => Path::new(dir).join(file),
        }
    }

    /// The run of a `hook` call, given the session's open run (updated);
    /// a prompt that names no turn opens a run with a new ULID.
    pub fn run_for(self, hook: &str, payload: &Value, open: &mut Option<String>) -> Turn {
        self.runtime().run_for(hook, payload, open, || {
            aep::control::Ids::new().next(aep_client::session::now_ms())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_prompt_naming_no_turn_opens_a_new_ulid_run() {
        let mut open = None;
        let turn = Agent::ClaudeCode.run_for("UserPromptSubmit", &json!({}), &mut open);
        let run = turn.run.expect("a run");
        assert_eq!(run.len(), 26, "a ULID: {run}");
        assert_eq!(open.as_deref(), Some(run.as_str()));
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
        for agent in [Agent::ClaudeCode, Agent::Codex] {
            assert_eq!(Agent::of(agent.runtime()), agent);
        }
    }
}
