//! `aep`: the Agent Event Protocol (AEP) command line.
//!
//! `main` only parses the arguments and hands them to the subcommand's
//! module under `cmd/`; each returns a [`cmd::Status`], which `main` turns
//! into the process exit code.
//!
//! The crate's modules:
//!
//! - `cmd/`: one module per subcommand, and [`cmd::Status`].
//! - `common/`: what several subcommands share whatever they read:
//!   inputs, output and diagnostics, terminal escaping, progress, event
//!   lines, protocol order, file names for sessions.
//! - `live/`: what the subcommands that talk to a relay share: the relay's
//!   address and token, the runtime, reaching a relay, sending a command,
//!   what waits on a person.

mod cmd;
mod common;
mod live;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

const LONG_ABOUT: &str = "\
Tools for Agent Event Protocol (AEP) streams: JSONL files with one AEP event
per line, as adapters capture them and relays forward them.

The file commands read the FILEs they are given (`-` is standard input) line
by line, with a bound on the length of one line (--max-line-bytes). The live
commands (relay, demo, post, tail, sink, timeline, sessions, pending,
respond, cancel, replay, doctor, mcp) talk to a relay: --relay URL
(AEP_RELAY, default http://127.0.0.1:8787) and --token (AEP_TOKEN).";

const AFTER_HELP: &str = "\
Exit status: 0 when the input is clean, 1 when it has errors, 2 for usage
errors and inputs that cannot be read; respond and cancel add 3 (the command
was nacked) and 4 (no ack in time). Each subcommand's help has the details.

Examples:
  aep validate capture.jsonl          check a capture against every rule
  aep project capture.jsonl           print the per-session state as JSON
  aep filter '{\"type\": \"tool.*\"}' -   pass on the events that match a filter
  aep tail --type 'attention.*'       follow a relay's events
  aep pending                         list the requests waiting on a person
  aep sink --out captures             capture a relay durably
  aep help validate                   the options of one subcommand";

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "aep",
    version,
    about = "Validate and inspect Agent Event Protocol (AEP) JSONL streams, and work with relays",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP,
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    Validate(cmd::validate::Args),
    Project(cmd::project::Args),
    Convert(cmd::convert::Args),
    Respond(cmd::respond::Args),
    Sessions(cmd::sessions::Args),
    Pending(cmd::pending::Args),
    Redact(cmd::redact::Args),
    Emit(cmd::emit::Args),
    Filter(cmd::filter::Args),
    Adapter(cmd::adapter::Args),
    Hook(cmd::hook::Args),
    Relay(cmd::relay::Args),
    Demo(cmd::demo::Args),
    Post(cmd::post::Args),
    Tail(cmd::tail::Args),
    Timeline(cmd::timeline::Args),
    Sink(cmd::sink::Args),
    Cancel(cmd::cancel::Args),
    Replay(cmd::replay::Args),
    Doctor(cmd::doctor::Args),
    #[cfg(feature = "mcp")]
    Mcp(cmd::mcp::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let status = match &cli.command {
        Command::Validate(args) => cmd::validate::run(args),
        Command::Project(args) => cmd::project::run(args),
        Command::Convert(args) => cmd::convert::run(args),
        Command::Respond(args) => cmd::respond::run(args),
        Command::Sessions(args) => cmd::sessions::run(args),
        Command::Pending(args) => cmd::pending::run(args),
        Command::Redact(args) => cmd::redact::run(args),
        Command::Emit(args) => cmd::emit::run(args),
        Command::Filter(args) => cmd::filter::run(args),
        Command::Adapter(args) => cmd::adapter::run(args),
        Command::Hook(args) => cmd::hook::run(args),
        Command::Relay(args) => cmd::relay::run(args),
        Command::Demo(args) => cmd::demo::run(args),
        Command::Post(args) => cmd::post::run(args),
        Command::Tail(args) => cmd::tail::run(args),
        Command::Timeline(args) => cmd::timeline::run(args),
        Command::Sink(args) => cmd::sink::run(args),
        Command::Cancel(args) => cmd::cancel::run(args),
        Command::Replay(args) => cmd::replay::run(args),
        Command::Doctor(args) => cmd::doctor::run(args),
        #[cfg(feature = "mcp")]
        Command::Mcp(args) => cmd::mcp::run(args),
    };
    ExitCode::from(status.code())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
