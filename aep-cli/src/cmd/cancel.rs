//! `aep cancel`: ask the agent that owns a session to cancel a run or the
//! whole session (`control.cancel`, AEP-0004 §5), through a relay, and
//! wait for its ack.

use aep::control::{Address, Identity, Sender};
use aep::control_cancel::Scope;
use aep::{Capture, ControlCancel, Payload};

use super::Status;
use crate::common::error::{Context, Error, Result};
use crate::common::redaction::PipelineArgs;
use crate::common::sender::{TextCapture, DEFAULT_AGENT, DEFAULT_SOURCE};
use crate::diag;
use crate::live::send::AckArgs;
use crate::live::RelayArgs;

const LONG_ABOUT: &str = "\
Sends a control.cancel command (AEP-0004 §5) to the agent that owns SESSION,
through the relay's WebSocket: with --run, the run (scope `run`); without,
the whole session (scope `session`). The command carries no seq, a fresh
ULID id, and the sender's source and agent.

The command line subscribes to the session's acks before the command leaves,
sends it again with the same id when no ack comes within --ack-window
(--retries times; a target deduplicates on the id), and ends with the agent's
control.accepted or control.rejected, the relay's refusal on its behalf
(no-route, unsupported, unauthorized...), or a timeout, called only after
one more look at the relay's history.

--reason is free text: it goes through the redaction pipeline and the
command says capture `redacted` (--capture full sends it as typed).";

const AFTER_HELP: &str = "\
Exit status:
  0  the agent accepted the cancel (the run.cancelled follows as an event)
  2  a usage error, a relay that cannot be reached
  3  rejected by the agent, or refused by the relay on its behalf (the
     reason on standard error)
  4  no ack within the window after the last attempt

Examples:
  aep cancel s_8f2c --run r_12
  aep cancel s_8f2c --reason 'wrong branch' --ack-window 3000 --retries 1";

/// The arguments of `aep cancel`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Cancel an agent's run or session through a relay and wait for the ack",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    /// The session to cancel (or whose run to cancel).
    #[arg(value_name = "SESSION")]
    pub session: String,

    /// Cancel this run only.
    #[arg(long, value_name = "R")]
    pub run: Option<String>,

    /// Why, in words (redacted unless --capture full).
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,

    /// The capture level of the reason.
    #[arg(long, value_enum, value_name = "LEVEL", default_value_t = TextCapture::Redacted)]
    pub capture: TextCapture,

    /// The sender's `source` URI.
    #[arg(long, value_name = "URI", default_value = DEFAULT_SOURCE)]
    pub source: String,

    /// The sender's `agent` name.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_AGENT)]
    pub agent: String,

    #[command(flatten)]
    pub relay: RelayArgs,

    #[command(flatten)]
    pub acks: AckArgs,

    #[command(flatten)]
    pub pipeline: PipelineArgs,
}

/// Runs `aep cancel`; returns the process exit code.
pub fn run(args: &Args) -> Status {
    let fail = |why: Error| {
        diag!("aep cancel: error: {why}");
        Status::Failure
    };
    let relay = match args.relay.url() {
        Ok(relay) => relay,
        Err(e) => return fail(e),
    };
    let command = match build(args) {
        Ok(command) => command,
        Err(e) => return fail(e),
    };
    let Some(runtime) = crate::live::runtime("cancel") else {
        return Status::Failure;
    };
    let id = command.id.clone();
    let sent = runtime.block_on(crate::live::send::send(
        &relay,
        args.relay.token(),
        command,
        &args.acks,
    ));
    sent.report("cancel", &id)
}

/// The command, its reason through the pipeline unless `--capture full`.
fn build(args: &Args) -> Result<aep::Event> {
    let mut cancel = ControlCancel::new(if args.run.is_some() {
        Scope::Run
    } else {
        Scope::Session
    });
    cancel.reason = args.reason.clone();
    let mut to = Address::session(args.session.clone());
    if let Some(run) = &args.run {
        to = to.run(run.clone());
    }
    let now = aep_client::session::now_ms();
    let mut sender = Sender::new(Identity::new(args.source.clone(), args.agent.clone()));
    let mut event = sender
        .command(&to, &Payload::ControlCancel(cancel), now)
        .context("the command cannot be built")?
        .event()
        .clone();
    if args.reason.is_some() {
        // The text as typed is `full`; the pipeline makes it `redacted`.
        event.capture = Some(Capture::Full);
        if args.capture == TextCapture::Redacted {
            event = aep::emit::Emitter::with_redactor(args.pipeline.redactor())
                .emit(&event, Capture::Redacted)
                .context("the reason cannot be redacted")?;
        }
    }
    event
        .validate()
        .context("the command would break the protocol")?;
    Ok(event)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn command(argv: &[&str]) -> aep::Event {
        let cli =
            Cli::try_parse_from(std::iter::once("cancel").chain(argv.iter().copied())).unwrap();
        build(&cli.args).unwrap()
    }

    #[test]
    fn a_reason_is_redacted_and_says_so() {
        let e = command(&[
            "s1",
            "--run",
            "r1",
            "--reason",
            "token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB at /home/ana/x",
        ]);
        assert_eq!(e.type_, "control.cancel");
        assert_eq!(
            (e.session.as_deref(), e.run.as_deref(), e.seq),
            (Some("s1"), Some("r1"), None)
        );
        assert_eq!(e.capture, Some(Capture::Redacted));
        let data = e.data.as_ref().unwrap().get();
        assert!(
            !data.contains("ghp_") && !data.contains("/home/ana"),
            "{data}"
        );
        assert!(data.contains("\"scope\":\"run\""), "{data}");
        let full = command(&["s1", "--reason", "as typed /home/ana", "--capture", "full"]);
        assert_eq!(full.capture, Some(Capture::Full));
        assert!(full.data.unwrap().get().contains("/home/ana"));
        let bare = command(&["s1"]);
        assert_eq!(bare.capture, Some(Capture::Metadata));
        assert!(bare.data.unwrap().get().contains("\"scope\":\"session\""));
    }
}
