//! `aep mcp`: an MCP server (Model Context Protocol) on standard input
//! and output, or over streamable HTTP (`--http`), so an agent that speaks
//! MCP can ask a person a structured question through a relay. One AEP
//! session per MCP connection (per MCP session over HTTP); its tools are
//! `ask_human` and `notify`.

mod http;
mod link;
mod server;

use std::net::SocketAddr;
use std::path::PathBuf;

use aep_relay::Token;

use crate::cmd::Status;
use crate::common::error::{Context, Error, Result};
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
error; standard output carries only MCP messages.

With --http ADDR it serves MCP's streamable HTTP transport at
http://ADDR/mcp instead (standard input is not read): each MCP session is
a server of its own, with its own AEP session (<--session>-<ULID>, mcp-
by default) that ends when the MCP session does (the client's DELETE, or
65 idle minutes) and on SIGTERM or SIGINT, when every session ends before the
exit. The address it listens on is printed on standard error at start.
With a token (--http-token, AEP_MCP_TOKEN or --http-token-file; not the
relay's AEP_TOKEN) every request must carry `Authorization: Bearer T`
(else 401). Without one it listens only on loopback addresses unless
--insecure is given; on loopback it takes only loopback Host headers.
At most --max-sessions MCP sessions are open at once (the next one is
refused 503); a request body is at most 4 MiB (else 413). It keeps
sessions, so a client must start with `initialize` (protocol revisions
before 2026-07-28).";

const AFTER_HELP: &str = "\
Exit status: 0 when the MCP connection ends or after SIGTERM or SIGINT; 2
when it does not start (standard input is not an MCP client: no
`initialize` first), when the relay's address is not one, for --http
addresses that cannot be used, and for usage errors.

An MCP client configuration (standard input and output):
  {\"command\": \"aep\", \"args\": [\"mcp\"],
   \"env\": {\"AEP_RELAY\": \"http://127.0.0.1:8787\", \"AEP_TOKEN\": \"…\"}}

Over HTTP:
  AEP_MCP_TOKEN=$(cat mcp-token) aep mcp --http 127.0.0.1:8788
  {\"type\": \"http\", \"url\": \"http://127.0.0.1:8788/mcp\",
   \"headers\": {\"Authorization\": \"Bearer …\"}}";

/// The arguments of `aep mcp`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Serve MCP on stdio or HTTP: tools for an agent to ask a person through a relay",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    #[command(flatten)]
    pub relay: RelayArgs,

    /// The session id [default: mcp-<ULID>]; with --http, the prefix of
    /// each session's id (<ID>-<ULID>).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,

    /// The agent name [default: the MCP client's name, else "mcp"].
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,

    /// Serve MCP over streamable HTTP on this address (at /mcp) instead of
    /// standard input and output.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,

    /// The bearer token MCP clients must present over --http [env:
    /// AEP_MCP_TOKEN] (prefer the environment or --http-token-file).
    // The environment is read here rather than by clap (as `--token`):
    // it is ignored without --http.
    #[arg(
        long,
        value_name = "TOKEN",
        conflicts_with = "http_token_file",
        requires = "http"
    )]
    pub http_token: Option<String>,

    /// Read the --http token from this file (its first line) [env:
    /// AEP_MCP_TOKEN_FILE].
    #[arg(long, value_name = "FILE", requires = "http")]
    pub http_token_file: Option<PathBuf>,

    /// Allow a non-loopback --http address without a token.
    #[arg(long, requires = "http")]
    pub insecure: bool,

    /// MCP sessions open at once over --http; the next is refused (503).
    #[arg(
        long,
        default_value_t = 64,
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub max_sessions: u32,

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
    if let Some(listen) = args.http {
        return serve_http(args, relay, listen, runtime);
    }
    let session = args
        .session
        .clone()
        .unwrap_or_else(|| format!("mcp-{}", session_suffix()));
    let settings = link::Settings {
        relay,
        token: args.relay.token(),
        session,
        agent: args.agent.clone(),
        elicit: args.elicit,
        shared: None,
    };
    let status = runtime.block_on(server::serve(settings));
    // A read of standard input cannot be cancelled: do not wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    status
}

/// A new session's unique part: a ULID, lower case.
fn session_suffix() -> String {
    aep::control::Ids::new()
        .next(aep_client::session::now_ms())
        .to_lowercase()
}

/// `aep mcp --http`.
fn serve_http(
    args: &Args,
    relay: String,
    listen: SocketAddr,
    runtime: tokio::runtime::Runtime,
) -> Status {
    let token = match http_token(args) {
        Ok(token) => token,
        Err(message) => {
            diag!("aep mcp: error: {message}");
            return Status::Failure;
        }
    };
    if token.is_none() && !listen.ip().is_loopback() && !args.insecure {
        diag!(
            "aep mcp: error: refusing to listen on {listen} without a token (anyone could \
             ask through it as this agent); set AEP_MCP_TOKEN or --http-token-file, or pass \
             --insecure"
        );
        return Status::Failure;
    }
    let options = http::Options {
        listen,
        token,
        max_sessions: args.max_sessions as usize,
        relay,
        relay_token: args.relay.token(),
        prefix: args.session.clone().unwrap_or_else(|| "mcp".to_owned()),
        agent: args.agent.clone(),
        elicit: args.elicit,
    };
    let status = runtime.block_on(http::serve(options));
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    status
}

/// The --http token: --http-token, --http-token-file, AEP_MCP_TOKEN or
/// AEP_MCP_TOKEN_FILE (a blank variable counting as unset).
fn http_token(args: &Args) -> Result<Option<Token>> {
    if let Some(token) = &args.http_token {
        return Token::new(token.trim())
            .map(Some)
            .context("the --http-token is empty");
    }
    if let Some(path) = &args.http_token_file {
        return token_file(path).map(Some);
    }
    let variable = |name: &str| crate::live::token(std::env::var(name).ok().as_deref());
    match (variable("AEP_MCP_TOKEN"), variable("AEP_MCP_TOKEN_FILE")) {
        (Some(_), Some(_)) => Err(Error::msg(
            "set AEP_MCP_TOKEN or AEP_MCP_TOKEN_FILE, not both",
        )),
        (Some(token), None) => Ok(Token::new(token)),
        (None, Some(path)) => token_file(std::path::Path::new(&path)).map(Some),
        (None, None) => Ok(None),
    }
}

/// The token in a file: its first line.
fn token_file(path: &std::path::Path) -> Result<Token> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the token file {}", path.display()))?;
    let line = text.lines().next().unwrap_or_default().trim();
    Token::new(line).with_context(|| format!("the token file {} is empty", path.display()))
}
