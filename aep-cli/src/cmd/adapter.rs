//! `aep adapter map`: vendor payloads in, the AEP events their
//! source-vocabulary mapping (AEP-0002 Annex A) gives out, one line each.

use std::io::Write;

use aep::emit::Emitter;
use aep::reader::{too_long_message, Line, LineReader};
use aep::Capture;
use aep_adapters::{MappedEvent, Mapper, Mode, Posture, Surface, Vocabulary};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::Status;
use crate::common::error::{Error, Result};
use crate::common::input::{self, InputError, OneInputArgs};
use crate::common::output::{Stdout, WriteError};
use crate::common::redaction::PipelineArgs;
use crate::diag;

const LONG_ABOUT: &str = "\
Reads one vendor payload per line (a hook's stdin JSON, a bus event, a
stream frame, a flattened telemetry record) and writes, for each input in
order, exactly one line: the mapped event {\"type\",\"data\",\"subject\"?,\"step\"?},
an array of events where one input means several, `null` where the mapping
deliberately emits nothing, or {\"error\": \"...\"} for an input it cannot
map. Blank lines are skipped. The rest of the envelope (ids, time, session,
run, sequence) is runtime state and is not written.

Without --ceiling the vocabulary's default posture applies: metadata, with
attention.* at redacted. --ceiling sets one ceiling for every type.";

const AFTER_HELP: &str = "\
Vocabularies and their surfaces:
  claude-code  (hooks), --surface ask_user_question | elicitation
  opencode, kilocode  (plugin moments), --surface todos | sse
  kimi-code    (hooks), --surface ws
  openhands    (events), --surface status
  codex, gemini-cli, qwen-code, vscode, cline, hermes, antigravity, acp,
  agui, pi, codex-otel, vscode-otel

--mode applies to the channels a hook adapter may also observe (sse, ws,
codex-otel, vscode-otel); --deltas to the stream vocabularies (acp, agui,
openhands, pi).

Exit status: 0 at the end of the input (inputs that cannot be mapped are
answered with an error line), 2 for usage errors and inputs that cannot be
read.

Examples:
  echo '{\"hook_event_name\":\"Stop\",\"session_id\":\"s1\"}' | aep adapter map codex
  aep adapter map opencode --surface sse --mode primary < bus.jsonl";

/// The arguments of `aep adapter`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Map vendor payloads to AEP events (AEP-0002 Annex A), and serve the hooks' live side"
)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands of `aep adapter`.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    Map(MapArgs),
    #[cfg(unix)]
    Serve(ServeArgs),
}

#[cfg(unix)]
/// The arguments of `aep adapter serve`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Own the live side of `aep hook`: one relay connection, held permission requests",
    long_about = "Started on demand by `aep hook` when AEP_RELAY is set; runs until no \
hook has called for --idle and no request is held. One per AEP_HOME (a second \
exits at once). Its socket is AEP_HOME/run/adapter.sock (mode 0600; only the \
user's own processes are served), its pid is in AEP_HOME/run/adapter.pid while it \
runs; what it says goes to AEP_HOME/logs/adapter.log when `aep hook` started it."
)]
pub struct ServeArgs {
    /// The relay to connect to (none: record only, hold nothing).
    #[arg(long, env = "AEP_RELAY", value_name = "URL")]
    pub relay: Option<String>,

    /// The relay's bearer token.
    #[arg(long, env = "AEP_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<String>,

    /// Exit after this long with no hook call and nothing held.
    #[arg(long, env = "AEP_ADAPTER_IDLE", value_name = "DURATION", default_value = "10m", value_parser = humantime::parse_duration)]
    pub idle: std::time::Duration,
}

/// The arguments of `aep adapter map`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Map one vendor payload per line to AEP events",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct MapArgs {
    /// The vocabulary (a fixture file's stem: codex, opencode, ...).
    #[arg(value_name = "VENDOR", value_parser = parse_vocabulary)]
    pub vendor: Vocabulary,

    /// The vocabulary's surface, where it has several.
    #[arg(long, value_name = "S", value_parser = parse_surface)]
    pub surface: Option<Surface>,

    /// The channel mode: companion (the default) or primary.
    #[arg(long, value_name = "MODE", value_parser = parse_mode, default_value = "companion")]
    pub mode: Mode,

    /// One capture ceiling for every type: none, metadata, redacted or full.
    #[arg(long, value_name = "LEVEL")]
    pub ceiling: Option<Capture>,

    /// Emit stream deltas (token chunks, partial results).
    #[arg(long)]
    pub deltas: bool,

    #[command(flatten)]
    pub pipeline: PipelineArgs,

    #[command(flatten)]
    pub input: OneInputArgs,
}

fn parse_vocabulary(s: &str) -> Result<Vocabulary> {
    s.parse().map_err(Error::msg)
}

fn parse_surface(s: &str) -> Result<Surface> {
    s.parse().map_err(Error::msg)
}

fn parse_mode(s: &str) -> Result<Mode> {
    s.parse().map_err(Error::msg)
}

/// Runs `aep adapter`.
pub fn run(args: &Args) -> Status {
    match &args.command {
        Command::Map(args) => map(args),
        #[cfg(unix)]
        Command::Serve(args) => super::hook::daemon::serve(args),
    }
}

fn map(args: &MapArgs) -> Status {
    let mut posture = match args.ceiling {
        Some(ceiling) => Posture::uniform(ceiling),
        None => Posture::default(),
    };
    posture.deltas = args.deltas;
    posture.mode = args.mode;
    let mapper = match Mapper::new(args.vendor, args.surface, posture) {
        Ok(mapper) => mapper.with_emitter(Emitter::with_redactor(args.pipeline.redactor())),
        Err(e) => {
            diag!("aep adapter map: error: {e}");
            return Status::Failure;
        }
    };
    let input = match input::open(&args.input.file) {
        Ok(input) => input,
        Err(e) => {
            diag!("aep adapter map: error: {e}");
            return Status::Failure;
        }
    };
    let always_array = matches!(args.surface, Some(Surface::Todos | Surface::Status));
    let limit = args.input.limit.max_line_bytes;
    let name = input.name;
    let mut lines = LineReader::new(input.reader, limit);
    let mut out = Stdout::new();
    loop {
        let (_, line) = match lines.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) => {
                diag!("aep adapter map: error: {}", InputError::read(&name, &e));
                return Status::Failure;
            }
        };
        let answer = match line {
            Line::Text(text) if text.iter().all(u8::is_ascii_whitespace) => continue,
            Line::Text(text) => match std::str::from_utf8(text) {
                Ok(text) => match mapper.map(text) {
                    Ok(events) => Answer::Events(events, always_array),
                    Err(e) => Answer::Error(e.message().to_owned()),
                },
                Err(e) => Answer::Error(format!("the input is not UTF-8: {e}")),
            },
            Line::TooLong { bytes } => Answer::Error(too_long_message(bytes, limit)),
        };
        let written = serde_json::to_writer(out.writer(), &answer)
            .map_err(std::io::Error::from)
            .and_then(|()| out.writer().write_all(b"\n"))
            .map_err(WriteError::from)
            .and_then(|()| out.flush());
        match written {
            Ok(()) => {}
            Err(WriteError::Closed) => return Status::Clean,
            Err(e) => {
                diag!("aep adapter map: error: {e}");
                return Status::Failure;
            }
        }
    }
    Status::Clean
}

/// The line for one input: its events (`null` for none, the event for
/// one, an array for several, always an array where the surface answers
/// with one), or why it could not be mapped.
enum Answer {
    Events(Vec<MappedEvent>, bool),
    Error(String),
}

impl Serialize for Answer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Answer::Events(events, always_array) => match events.as_slice() {
                _ if *always_array => events.serialize(serializer),
                [] => serializer.serialize_unit(),
                [one] => one.serialize(serializer),
                many => many.serialize(serializer),
            },
            Answer::Error(message) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("error", message)?;
                map.end()
            }
        }
    }
}
