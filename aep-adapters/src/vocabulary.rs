//! The vocabularies, their surfaces, and the mapper that runs one.

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use aep::emit::Emitter;

use crate::build::Cx;
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::posture::Posture;

/// A source vocabulary of AEP-0002 Annex A, named as its conformance
/// fixture file is (`claude-code`, `codex`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vocabulary {
    /// Claude Code hooks, and its AskUserQuestion and MCP-elicitation forms.
    ClaudeCode,
    /// Codex hooks.
    Codex,
    /// Gemini CLI hooks.
    GeminiCli,
    /// Qwen Code hooks.
    QwenCode,
    /// VS Code agent hooks.
    Vscode,
    /// Kimi Code CLI hooks, and the Kimi web channel.
    KimiCode,
    /// OpenCode plugin moments, SSE channel and todo diffs.
    Opencode,
    /// Kilo Code plugin moments, SSE channel and todo diffs.
    Kilocode,
    /// Cline subprocess hooks.
    Cline,
    /// Hermes Agent shell hooks.
    Hermes,
    /// Antigravity hooks.
    Antigravity,
    /// ACP (the Agent Client Protocol) moments.
    Acp,
    /// AG-UI stream events.
    Agui,
    /// OpenHands agent-server events and execution-status transitions.
    Openhands,
    /// The Codex OpenTelemetry log channel.
    CodexOtel,
    /// The VS Code agent OpenTelemetry log channel.
    VscodeOtel,
    /// pi extension-bus events.
    Pi,
}

impl Vocabulary {
    /// Every vocabulary.
    pub const ALL: [Vocabulary; 17] = [
        Vocabulary::ClaudeCode,
        Vocabulary::Codex,
        Vocabulary::GeminiCli,
        Vocabulary::QwenCode,
        Vocabulary::Vscode,
        Vocabulary::KimiCode,
        Vocabulary::Opencode,
        Vocabulary::Kilocode,
        Vocabulary::Cline,
        Vocabulary::Hermes,
        Vocabulary::Antigravity,
        Vocabulary::Acp,
        Vocabulary::Agui,
        Vocabulary::Openhands,
        Vocabulary::CodexOtel,
        Vocabulary::VscodeOtel,
        Vocabulary::Pi,
    ];

    /// The vocabulary's name (its fixture file's stem).
    pub fn name(self) -> &'static str {
        match self {
            Vocabulary::ClaudeCode => "claude-code",
            Vocabulary::Codex => "codex",
            Vocabulary::GeminiCli => "gemini-cli",
            Vocabulary::QwenCode => "qwen-code",
            Vocabulary::Vscode => "vscode",
            Vocabulary::KimiCode => "kimi-code",
            Vocabulary::Opencode => "opencode",
            Vocabulary::Kilocode => "kilocode",
            Vocabulary::Cline => "cline",
            Vocabulary::Hermes => "hermes",
            Vocabulary::Antigravity => "antigravity",
            Vocabulary::Acp => "acp",
            Vocabulary::Agui => "agui",
            Vocabulary::Openhands => "openhands",
            Vocabulary::CodexOtel => "codex-otel",
            Vocabulary::VscodeOtel => "vscode-otel",
            Vocabulary::Pi => "pi",
        }
    }

    /// The agent name its events speak for: the vendor token of its
    /// `x.{vendor}.*` types.
    pub fn agent(self) -> &'static str {
        match self {
            Vocabulary::CodexOtel => "codex",
            Vocabulary::VscodeOtel => "vscode",
            other => other.name(),
        }
    }

    /// The surfaces besides the default one, and whether the default one
    /// (no `--surface`) exists.
    pub fn surfaces(self) -> (&'static [Surface], bool) {
        match self {
            Vocabulary::ClaudeCode => (&[Surface::AskUserQuestion, Surface::Elicitation], true),
            Vocabulary::Opencode | Vocabulary::Kilocode => (&[Surface::Todos, Surface::Sse], true),
            Vocabulary::KimiCode => (&[Surface::Ws], true),
            Vocabulary::Openhands => (&[Surface::Status], true),
            _ => (&[], true),
        }
    }
}

impl fmt::Display for Vocabulary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Vocabulary {
    type Err = String;

    fn from_str(s: &str) -> Result<Vocabulary, String> {
        Vocabulary::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Vocabulary::ALL.iter().map(|v| v.name()).collect();
                format!(
                    "unknown vocabulary `{s}` (expected one of {})",
                    names.join(", ")
                )
            })
    }
}

/// A surface of a vocabulary other than its default one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Surface {
    /// Claude Code's AskUserQuestion tool input (`{"questions": ...}`).
    AskUserQuestion,
    /// An MCP `elicitation/create` request (`{message, requestedSchema}`).
    Elicitation,
    /// Two todo snapshots (`{prev, next}`), diffed into transitions.
    Todos,
    /// A bare bus event as the SSE channel delivers it.
    Sse,
    /// A Kimi web-channel WebSocket frame.
    Ws,
    /// An OpenHands execution-status transition (`{prev, next}`).
    Status,
}

impl Surface {
    /// Every surface.
    pub const ALL: [Surface; 6] = [
        Surface::AskUserQuestion,
        Surface::Elicitation,
        Surface::Todos,
        Surface::Sse,
        Surface::Ws,
        Surface::Status,
    ];

    /// The surface's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Surface::AskUserQuestion => "ask_user_question",
            Surface::Elicitation => "elicitation",
            Surface::Todos => "todos",
            Surface::Sse => "sse",
            Surface::Ws => "ws",
            Surface::Status => "status",
        }
    }
}

impl fmt::Display for Surface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Surface {
    type Err = String;

    fn from_str(s: &str) -> Result<Surface, String> {
        Surface::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| format!("unknown surface `{s}`"))
    }
}

/// A surface a vocabulary does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownSurface {
    /// The vocabulary.
    pub vocabulary: Vocabulary,
    /// The surface asked for (`None`: the default one).
    pub surface: Option<Surface>,
}

impl fmt::Display for UnknownSurface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (surfaces, default) = self.vocabulary.surfaces();
        let mut names: Vec<&str> = surfaces.iter().map(|s| s.name()).collect();
        if default {
            names.insert(0, "(none)");
        }
        match self.surface {
            Some(surface) => write!(f, "{} has no surface `{surface}`", self.vocabulary)?,
            None => write!(f, "{} needs a surface", self.vocabulary)?,
        }
        write!(f, " (its surfaces: {})", names.join(", "))
    }
}

impl std::error::Error for UnknownSurface {}

/// The emitter with the default redaction pipeline, compiled once.
fn default_emitter() -> Emitter {
    static EMITTER: std::sync::OnceLock<Emitter> = std::sync::OnceLock::new();
    EMITTER.get_or_init(Emitter::default).clone()
}

/// One vocabulary's surface at a posture: JSON inputs in, events out.
#[derive(Debug, Clone)]
pub struct Mapper {
    vocabulary: Vocabulary,
    surface: Option<Surface>,
    posture: Posture,
    emitter: Emitter,
}

impl Mapper {
    /// The mapper for `surface` of `vocabulary` (`None`: its default
    /// surface) at `posture`, redacting with the default pipeline.
    pub fn new(
        vocabulary: Vocabulary,
        surface: Option<Surface>,
        posture: Posture,
    ) -> Result<Mapper, UnknownSurface> {
        let (surfaces, default) = vocabulary.surfaces();
        let known = match surface {
            None => default,
            Some(s) => surfaces.contains(&s),
        };
        if !known {
            return Err(UnknownSurface {
                vocabulary,
                surface,
            });
        }
        Ok(Mapper {
            vocabulary,
            surface,
            posture,
            emitter: default_emitter(),
        })
    }

    /// The same mapper with another emitter (another redaction pipeline).
    pub fn with_emitter(mut self, emitter: Emitter) -> Mapper {
        self.emitter = emitter;
        self
    }

    /// The vocabulary.
    pub fn vocabulary(&self) -> Vocabulary {
        self.vocabulary
    }

    /// The surface (`None`: the default one).
    pub fn surface(&self) -> Option<Surface> {
        self.surface
    }

    /// The posture.
    pub fn posture(&self) -> &Posture {
        &self.posture
    }

    /// Maps one input, given as JSON text: the events it means, in
    /// emission order (none where the mapping deliberately emits nothing).
    pub fn map(&self, text: &str) -> Result<Vec<MappedEvent>, MapError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| MapError::new(format!("the input is not JSON: {e}")))?;
        let cx = Cx {
            agent: self.vocabulary.agent(),
            posture: &self.posture,
            emitter: &self.emitter,
        };
        self.dispatch(text, &value, &cx)
    }

    fn dispatch(
        &self,
        text: &str,
        value: &Value,
        cx: &Cx<'_>,
    ) -> Result<Vec<MappedEvent>, MapError> {
        use crate::*;
        match (self.vocabulary, self.surface) {
            (Vocabulary::ClaudeCode, Some(Surface::AskUserQuestion)) => {
                claude_code::ask_user_question(value, cx).map(|e| vec![e])
            }
            (Vocabulary::ClaudeCode, Some(Surface::Elicitation)) => {
                claude_code::elicitation(text, cx).map(|e| vec![e])
            }
            (Vocabulary::ClaudeCode, None) => claude_code::map(text, value, cx),
            (Vocabulary::Codex, None) => codex::map(value, cx),
            (Vocabulary::GeminiCli, None) => gemini_cli::map(value, cx),
            (Vocabulary::QwenCode, None) => qwen_code::map(value, cx),
            (Vocabulary::Vscode, None) => vscode::map(value, cx),
            (Vocabulary::KimiCode, None) => kimi_code::map(value, cx),
            (Vocabulary::Opencode, None) => opencode::map(value, cx, opencode::Fork::Opencode),
            (Vocabulary::Kilocode, None) => opencode::map(value, cx, opencode::Fork::Kilocode),
            (Vocabulary::Opencode, Some(Surface::Sse)) => {
                opencode::sse(value, cx, opencode::Fork::Opencode)
            }
            (Vocabulary::Kilocode, Some(Surface::Sse)) => {
                opencode::sse(value, cx, opencode::Fork::Kilocode)
            }
            (Vocabulary::Opencode | Vocabulary::Kilocode, Some(Surface::Todos)) => {
                opencode::todos(value, cx)
            }
            (Vocabulary::KimiCode, Some(Surface::Ws)) => kimi_code::web::map(value, cx),
            (Vocabulary::Cline, None) => cline::map(value, cx),
            (Vocabulary::Hermes, None) => hermes::map(value, cx),
            (Vocabulary::Antigravity, None) => antigravity::map(value, cx),
            (Vocabulary::Pi, None) => pi::map(value, cx),
            (Vocabulary::Acp, None) => acp::map(value, cx),
            (Vocabulary::Agui, None) => agui::map(value, cx),
            (Vocabulary::Openhands, None) => openhands::map(value, cx),
            (Vocabulary::Openhands, Some(Surface::Status)) => openhands::status(value, cx),
            (Vocabulary::CodexOtel, None) => otel::codex(value, cx),
            (Vocabulary::VscodeOtel, None) => otel::vscode(value, cx),
            // `Mapper::new` lets no other pair through.
            (vocabulary, surface) => Err(MapError::new(format!(
                "internal: {}",
                UnknownSurface {
                    vocabulary,
                    surface
                }
            ))),
        }
    }
}
