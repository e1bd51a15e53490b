//! `aep respond`: answer a pending attention request, at the terminal or
//! from flags, and print the answer as one event.
//!
//! The command reads a capture, picks the `attention.requested` to answer
//! (by `--id`, else the last one the state projection still holds
//! pending), takes the answer ([`prompt`] asks a person; [`answer`] reads
//! `--values`, `--option` or `--text`), checks it with the emitter's rule
//! (`aep::form::validate_values` for forms), and writes one
//! `control.attention.respond` command (AEP-0004 §2, §6) or, with
//! `--emit answered`, the emitter's `attention.answered` echo ([`event`]).

mod answer;
mod event;
mod pick;
mod prompt;
mod relay;

use std::io::IsTerminal;
use std::path::PathBuf;

use aep::attention_requested::RespondVia;
use aep::{AttentionRequested, Event};

use super::Status;
use crate::common::input::{self, LineLimit};
use crate::common::output::Stdout;
use crate::common::redaction::PipelineArgs;
use crate::common::sender::TextCapture;
use crate::diag;
use crate::live::send::AckArgs;
use crate::live::waiting::Via;
use event::{Emit, FreeText, Sender};

const LONG_ABOUT: &str = "\
Answers a pending attention request of an AEP capture and prints the answer
as one AEP event (one JSON line) on standard output, ready for whatever
transport carries commands to the agent.

The request is the `attention.requested` with --request (or --id), or else
the one request the state projection of the capture still holds pending (not
yet resolved or timed out), or the one the answer given fits (the only one
offering the --option, the only form for --values). Otherwise, when several
are pending and none is named, the command does not guess: at a terminal it
asks which one, otherwise it lists them (session, id, kind) and exits 2;
`aep pending` shows them too, each with the line that answers it.

Interactively (no answer flag, standard input and standard error terminals)
the request is shown and answered field by field: a text input for a
`string` field, a number input (within `min`/`max`) for `number`, yes/no for
`boolean`, a choice list for `select` (several choices with `multi`), and an
\"Other…\" entry for free text where the field has `other: true`. Required
fields say so and cannot be skipped; optional ones are skipped with an empty
answer (or the \"Skip\" entry). Requests of other kinds are answered from
their `options`, or with free text when they have none. Every answer is
checked with the emitter's rule before it is written; an answer it refuses
is shown next to its field and asked again. Ctrl-C or Esc cancels: nothing
is written, the exit status is 130. The prompts are drawn without colours
when NO_COLOR is set.

Non-interactively, --values (a form's `answer.values` as a JSON object),
--option (an option id) or --text (free text) answer without prompting,
under the same checks.

The event written is a `control.attention.respond` command (AEP-0004): a
fresh ULID `id`, `time` now (RFC 3339, UTC), `subject` and `cause` the
request's id, `session` the request's session, no `seq`, `source` and
`agent` naming the sender. With --emit answered it is the emitter's
`attention.answered` echo instead (`via: \"control\"`), for adapters that
answer locally: it carries the request's `run`, and the next `seq` (and
`epoch`) of the request's session.

An answer that carries free text (a string field, an \"Other\" text,
--text) is written at `capture: \"redacted\"`, and its text goes through the
redaction pipeline first (see `aep redact`; --home, --secret, --secret-env
and --no-pii set it up as for `aep emit`): `redacted` says the pipeline ran.
To send the text as typed, say --capture full: the event then says `full`.
An answer without free text is `metadata`.

With no FILE the requests are those the relay holds (--relay URL, else
AEP_RELAY, else http://127.0.0.1:8787, as for the other live commands) (its live=0 history, of --session or of every session it holds,
folded by the state projection), and the answer is sent to the agent over
the relay's WebSocket instead of printed: subscribed to the session's acks
first, sent again with the same id when no ack comes within --ack-window
(--retries times), and settled by the agent's control.accepted or
control.rejected, or the relay's refusal on its behalf. Before a timeout is
called, the relay's history is read once more for the ack. With a FILE the
answer is printed; `-` reads the capture from standard input.";

const AFTER_HELP: &str = "\
Exit status:
  0    the answer was written (with a relay: accepted by the agent)
  1    nothing to answer (no pending request, an unknown --request), or an
       answer the request refuses (the field and the rule are named);
       nothing is written
  2    a usage error (--values that is not a JSON object or names a member
       twice included; several requests pending and none named off a
       terminal), an input that cannot be read, or an event that
       would break the protocol (a bug: its violations are printed, it is
       not written)
  3    (with a relay) rejected by the agent, or refused by the relay on its
       behalf; the reason is on standard error
  4    (with a relay) no ack within the window after the last attempt
  130  cancelled at a prompt; nothing is written

Examples:
  aep respond capture.jsonl                      answer the pending request
  aep respond --request 01JDX... capture.jsonl > answer.jsonl
  aep respond --values '{\"db\":\"pg\",\"port\":5432}' capture.jsonl
  aep respond --option allow --agent ops-console capture.jsonl
  aep respond --text 'use the staging cluster' capture.jsonl
  aep respond --emit answered --option deny capture.jsonl
  aep respond --session s_8f2c --request 01JDX... --option allow
  AEP_RELAY=http://127.0.0.1:8787 aep respond --session s_8f2c --request 01JDX...";

/// The arguments of `aep respond`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Answer a pending attention request: print the answer as an AEP event, or send it through a relay",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
#[command(group = clap::ArgGroup::new("reply").args(["values", "option", "text"]))]
pub struct Args {
    /// The id of the `attention.requested` to answer (default: the one
    /// still pending; with several, asked at a terminal, else refused).
    #[arg(long, visible_alias = "request", value_name = "ID")]
    pub id: Option<String>,

    /// The sender's `source` URI (default: urn:aep:aep-cli; with --emit
    /// answered, the request's source).
    #[arg(long, value_name = "URI")]
    pub source: Option<String>,

    /// The sender's `agent` name (default: aep-cli; with --emit answered,
    /// the request's agent).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,

    /// The event to write: the `control.attention.respond` command, or the
    /// emitter's `attention.answered`.
    #[arg(long, value_enum, default_value_t = Emit::Respond)]
    pub emit: Emit,

    /// Answer a form with its `answer.values`: a JSON object from field id
    /// to value.
    #[arg(long, value_name = "JSON")]
    pub values: Option<String>,

    /// Answer with the id of one of the request's options.
    #[arg(long, value_name = "ID")]
    pub option: Option<String>,

    /// Answer with free text.
    #[arg(long, value_name = "TEXT")]
    pub text: Option<String>,

    /// The capture level of an answer that carries free text: `redacted`
    /// passes the text through the redaction pipeline, `full` sends it as
    /// typed.
    #[arg(long, value_enum, value_name = "LEVEL", default_value_t = TextCapture::Redacted)]
    pub capture: TextCapture,

    #[command(flatten)]
    pub pipeline: PipelineArgs,

    /// Answer through this relay when no FILE is given (default:
    /// AEP_RELAY, else http://127.0.0.1:8787): read its pending requests,
    /// send the answer, wait for the ack.
    #[arg(long, value_name = "URL", conflicts_with = "file")]
    pub relay: Option<String>,

    /// The relay's bearer token.
    #[arg(long, env = "AEP_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<String>,

    /// With a relay: read only this session's requests.
    #[arg(long, value_name = "S")]
    pub session: Option<String>,

    #[command(flatten)]
    pub acks: AckArgs,

    #[command(flatten)]
    pub limit: LineLimit,

    /// The JSONL file to read; `-` reads standard input. Without one the
    /// requests are the relay's.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
}

/// The request being answered and what the capture says about its session.
pub struct Request {
    /// The `attention.requested` event.
    pub event: Event,
    /// Its payload.
    pub payload: AttentionRequested,
    /// The last `(epoch, seq)` of the request's session in the capture.
    pub position: Option<(u64, u64)>,
}

/// Why the command stops before writing.
enum Stop {
    /// Exit 1: nothing to answer, or an answer the request refuses.
    Refused(String),
    /// Exit 2: a usage error or an unreadable input.
    Failure(String),
    /// Exit 2: the event built breaks the protocol.
    Bug(String),
    /// Exit 130: cancelled at a prompt.
    Cancelled,
}

/// Where the requests come from and the answer goes.
enum Mode {
    /// A capture; the answer is printed.
    File(PathBuf),
    /// A relay; the answer is sent.
    Relay(String),
}

/// Runs `aep respond`; returns the process exit code.
pub fn run(args: &Args) -> Status {
    match respond(args) {
        Ok(code) => code,
        Err(Stop::Refused(message)) => {
            diag!("aep respond: {message}");
            Status::Findings
        }
        Err(Stop::Failure(message)) => {
            diag!("aep respond: error: {message}");
            Status::Failure
        }
        Err(Stop::Bug(message)) => {
            diag!("aep respond: internal error, nothing written: {message}");
            Status::Failure
        }
        Err(Stop::Cancelled) => {
            diag!("aep respond: cancelled, nothing written");
            Status::Cancelled
        }
    }
}

fn respond(args: &Args) -> Result<Status, Stop> {
    let mode = mode(args)?;
    let reply = answer::Reply::from_args(args);
    // Decide before reading: with no answer flag, prompting needs a person.
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if reply.is_none() && !interactive {
        return Err(Stop::Failure(
            "standard input is not a terminal: answer with --values, --option or --text".into(),
        ));
    }
    let token = crate::live::token(args.token.as_deref());
    let (name, events, runtime) = match &mode {
        Mode::Relay(relay) => {
            let runtime = crate::live::runtime("respond")
                .ok_or_else(|| Stop::Failure("cannot start the runtime".into()))?;
            let events = runtime
                .block_on(async {
                    match args.session.as_deref() {
                        Some(session) => relay::history(relay, token.clone(), session).await,
                        None => {
                            crate::live::waiting::history(relay, token.clone(), "respond").await
                        }
                    }
                })
                .map_err(|e| Stop::Failure(e.to_string()))?;
            (relay.clone(), events, Some(runtime))
        }
        Mode::File(path) => {
            let name = input::display_name(path);
            let events = pick::read(args, path, &name)?;
            (name, events, None)
        }
    };
    let target = match &mode {
        Mode::Relay(relay) => Via::Relay(relay.clone()),
        Mode::File(path) => Via::File(path.display().to_string()),
    };
    let fits = pick::Fits {
        option: args.option.as_deref(),
        values: args.values.is_some(),
    };
    let request = pick::choose(
        &events,
        args.id.as_deref(),
        fits,
        &name,
        &target,
        interactive,
    )?;
    let via = request.payload.respond_via.as_deref();
    if args.emit == Emit::Respond && via.is_some_and(|via| !via.contains(&RespondVia::Control)) {
        diag!(
            "aep respond: warning: the request `{}` takes answers only out of band (respond_via), \
             so the emitter may refuse the command",
            request.event.id
        );
    }
    let answer = match reply {
        Some(reply) => reply
            .check(&request, &target)
            .map_err(|refusal| match refusal {
                answer::Refusal::Usage(message) => Stop::Failure(message),
                answer::Refusal::Rule(message) => Stop::Refused(message),
            })?,
        None => match prompt::ask(&request.payload) {
            Ok(answer) => answer,
            Err(prompt::Error::Cancelled) => return Err(Stop::Cancelled),
            Err(prompt::Error::Terminal(message)) => return Err(Stop::Failure(message)),
            Err(prompt::Error::Unanswerable(message)) => return Err(Stop::Refused(message)),
        },
    };
    let sender = Sender {
        source: args.source.clone(),
        agent: args.agent.clone(),
    };
    let emitter;
    let text = match args.capture {
        TextCapture::Full => FreeText::Full,
        TextCapture::Redacted => {
            emitter = aep::emit::Emitter::with_redactor(args.pipeline.redactor());
            FreeText::Redacted(&emitter)
        }
    };
    let event = event::build(&request, &answer, args.emit, &sender, text)
        .map_err(|e| Stop::Bug(e.to_string()))?;
    if let (Mode::Relay(relay), Some(runtime)) = (&mode, &runtime) {
        let id = event.id.clone();
        let sent = runtime.block_on(crate::live::send::send(relay, token, event, &args.acks));
        return Ok(sent.report("respond", &id));
    }
    let line = serde_json::to_vec(&event).map_err(|e| Stop::Bug(e.to_string()))?;
    let mut out = Stdout::new();
    // The answer was not delivered when standard output went away.
    out.line(&line, b"\n")
        .and_then(|()| out.flush())
        .map_err(|e| Stop::Failure(e.to_string()))?;
    Ok(Status::Clean)
}

/// The FILE (`-` for standard input), else the relay: the flag, else
/// AEP_RELAY, else the default every live command uses.
fn mode(args: &Args) -> Result<Mode, Stop> {
    if let Some(file) = &args.file {
        return Ok(Mode::File(file.clone()));
    }
    let relay = args
        .relay
        .clone()
        .or_else(|| {
            std::env::var("AEP_RELAY")
                .ok()
                .filter(|r| !r.trim().is_empty())
        })
        .unwrap_or_else(|| crate::live::waiting::DEFAULT_RELAY.to_owned());
    if args.emit == Emit::Answered {
        return Err(Stop::Failure(
            "--emit answered writes the emitter's own echo; it is not sent through a relay (give a FILE, or `-` for standard input)".into(),
        ));
    }
    crate::live::check_url(&relay)
        .map(Mode::Relay)
        .map_err(|e| Stop::Failure(e.to_string()))
}
