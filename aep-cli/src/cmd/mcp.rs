//! `aep mcp`: an MCP server (Model Context Protocol) on standard input
//! and output, so an agent that speaks MCP can ask a person a structured
//! question through a relay. One AEP session per MCP connection; its
//! tools are `ask_human` and `notify`.

mod link;
mod server;

use crate::cmd::Status;
use crate::diag;
use crate::live::RelayArgs;

const LONG_ABOUT: &str = "\
An MCP server (Model Context Protocol) over standard input and output, for
an MCP client (a coding agent, an IDE) to start as a subprocess. It opens
one AEP session on the relay per MCP connection (session.started, with the
MCP client's name as the agent), and offers two tools:

  ask_human  asks a person a question (free text, a choice among options,
             or an AEP-0006 form) as an attention.requested they answer
             through the relay (its page, `aep respond`), waits for the
             answer (timeout_s, default 300, at most 3600) and returns it;
             an answer that breaks the form or names no option is rejected
             and the wait goes on; no answer in time: attention.timeout and
             a tool error. A call with a progress token gets a progress
             notification at once, then every 20 seconds while it waits.
  notify     tells the person something (a progress.status) without
             waiting.

With --elicit, and a client that declared elicitation, ask_human also asks
through MCP elicitation (elicitation/create): the first valid answer, there
or through the relay, wins; the other is cancelled or rejected.

The session takes control.cancel (scope session): the waiting requests
are dismissed, their calls and every later one return an error saying the
person cancelled, and the session ends (session.ended, killed).

A relay that cannot be reached, or refuses the token, makes the tools
return an error that says so; a connection lost while ask_human waits
dismisses its request and makes it return an error (ask again once the
connection is back: it reconnects by itself). The session ends (session.ended) when
standard input closes, or on SIGTERM or SIGINT. Diagnostics go to standard
error; standard output carries only MCP messages.";

const AFTER_HELP: &str = "\
Exit status: 0 when the MCP connection ends; 2 when it does not start
(standard input is not an MCP client: no `initialize` first), when the
relay's address is not one, and for usage errors.

An MCP client configuration:
  {\"command\": \"aep\", \"args\": [\"mcp\"],
   \"env\": {\"AEP_RELAY\": \"http://127.0.0.1:8787\", \"AEP_TOKEN\": \"…\"}}";

/// The arguments of `aep mcp`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Serve MCP on stdio: tools for an agent to ask a person through a relay",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    #[command(flatten)]
    pub relay: RelayArgs,

    /// The session id [default: mcp-<ULID>].
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,

    /// The agent name [default: the MCP client's name, else "mcp"].
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,

    /// Also ask through MCP elicitation, when the MCP client declares it:
    /// the first valid answer, there or through the relay, wins.
    #[arg(long)]
    pub elicit: bool,
}

/// Runs `aep mcp`.
pub fn run(args: &Args) -> Status {
    let relay = match args.relay.url() {
        Ok(relay) => relay,
        Err(message) => {
            diag!("aep mcp: error: {message}");
            return Status::Failure;
        }
    };
    let Some(runtime) = crate::live::runtime("mcp") else {
        return Status::Failure;
    };
    let session = args.session.clone().unwrap_or_else(|| {
        format!(
            "mcp-{}",
            aep::control::Ids::new()
                .next(aep_client::session::now_ms())
                .to_lowercase()
        )
    });
    let settings = link::Settings {
        relay,
        token: args.relay.token(),
        session,
        agent: args.agent.clone(),
        elicit: args.elicit,
    };
    let status = runtime.block_on(server::serve(settings));
    // A read of standard input cannot be cancelled: do not wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    status
}
