//! What several subcommands share, relay or no relay: the command line's
//! plumbing rather than any one job. Nothing here talks to a relay (that
//! is [`crate::live`]).
//!
//! - [`input`]: the JSONL inputs named on the command line (`-` for
//!   standard input) and the bound on one line;
//! - [`output`]: standard output gathered by whole lines, a closed pipe
//!   told apart, and diagnostics on standard error (`diag!`);
//! - [`terminal`]: every control character in event text escaped before it
//!   reaches a terminal;
//! - [`progress`]: progress on standard error for long reads (`validate`);
//! - [`render`]: one readable line per event (`tail`, `timeline`);
//! - [`order`]: a session's events in protocol order (`timeline`,
//!   `replay`);
//! - [`names`]: file names for sessions, safe from the producer's strings
//!   (`sink`, `hook`);
//! - [`redaction`]: the redaction pipeline's settings (`redact`, `emit`,
//!   `adapter map`, `respond`, `cancel`);
//! - [`sender`]: the default identity of the events `respond` and `cancel`
//!   send, and the capture level of the free text in them.

pub mod error;
pub mod input;
pub mod names;
pub mod order;
pub mod output;
pub mod progress;
pub mod redaction;
pub mod render;
pub mod sender;
pub mod terminal;
