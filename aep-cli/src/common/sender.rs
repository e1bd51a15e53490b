//! The sender's side of the events `aep respond` and `aep cancel` write:
//! who they say sent them by default, and the capture level of the free
//! text a person types (`--text`, `--reason`).

/// The default `--source` of a command: the sender's URI.
pub const DEFAULT_SOURCE: &str = "urn:aep:aep-cli";
/// The default `--agent` of a command: the sender's name.
pub const DEFAULT_AGENT: &str = "aep-cli";

/// The `--capture` levels: the two that carry free text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TextCapture {
    /// Through the redaction pipeline.
    Redacted,
    /// As typed.
    Full,
}
