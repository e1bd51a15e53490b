//! `aep relay`: the AEP-0003 collector/relay with AEP-0004 command
//! routing, in the foreground until SIGTERM or SIGINT.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use aep_relay::{Config, NatsServer, Relay, TlsFiles, Token};

use super::Status;
use crate::common::error::{Context, Error, Result};
use crate::diag;

const LONG_ABOUT: &str = "\
Runs an AEP collector/relay (AEP-0003): agents post events to /events (HTTP)
or send them over /socket (WebSocket); people and tools watch over /stream
(Server-Sent Events) or /socket, with attr-match filters, capture ceilings
and resume; commands (answer a request, cancel a run) flow over /socket to
the one agent that owns the session (AEP-0004).

Without a token the relay is watch-only: events flow, commands are refused
`unauthorized`, and it binds only loopback addresses unless --insecure is
given. With a token, every surface but /healthz requires it
(`Authorization: Bearer T`, or `?access_token=T` for browsers). Prefer
AEP_TOKEN or --token-file to --token: command lines are visible to other
users. Off-host, use --tls-cert/--tls-key or a TLS-terminating proxy.

The browser UI is served at / (static files, no auth needed for them; off
with --no-ui): a fleet view, an inbox of requests and a session timeline,
live over /stream, answering over /socket with the token.
--print-ui-url prints its address with the token in the URL fragment, to
standard output only.

Every limit is a flag with an environment twin. Clients holding the token
can make the relay hold at most about
  max-buffered-bytes + 3 x max-inflight-bytes + 2 x max-queued-bytes
    + max-command-bytes + max-state-bytes + max-connections x 192 KiB
(960 MiB with the defaults; a node on NATS adds 144 MiB; the start-up
line gives the figure for the limits in force). SIGTERM or SIGINT drains:
no new connections, `: shutting-down` to SSE streams, a `closing` frame and
close 1001 to WebSockets, exit 0 within 5 s.";

const AFTER_HELP: &str = "\
Exit status: 0 after a shutdown, 2 for usage errors and addresses or files
that cannot be used.

Examples:
  aep relay                                   loopback, watch-only
  AEP_TOKEN=$(cat token) aep relay            commands routed
  aep relay --listen 0.0.0.0:8787 --token-file token --tls-cert c.pem --tls-key k.pem
  aep relay --buffer 64 --log-format json     small replay buffers, JSON logs
  AEP_TOKEN=T aep relay --print-ui-url        open the printed address in a browser";

/// The arguments of `aep relay`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Run an AEP relay: HTTP ingest, SSE and WebSocket fan-out, command routing",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    /// The address to listen on.
    #[arg(
        long,
        env = "AEP_LISTEN",
        default_value = "127.0.0.1:8787",
        value_name = "ADDR"
    )]
    pub listen: SocketAddr,

    /// The bearer token clients must present (enables command routing).
    #[arg(
        long,
        env = "AEP_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN",
        conflicts_with = "token_file"
    )]
    pub token: Option<String>,

    /// Read the token from this file (its first line).
    #[arg(long, env = "AEP_TOKEN_FILE", value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// Allow a non-loopback address without a token.
    #[arg(long)]
    pub insecure: bool,

    /// Events kept per session for replay; the oldest position is evicted.
    #[arg(long, env = "AEP_BUFFER", default_value_t = 10_000, value_name = "N")]
    pub buffer: usize,

    /// Bytes of events kept per session for replay; past it the oldest
    /// are evicted (a resume from before them is told
    /// `replay-exhausted`). A larger event is delivered live only.
    #[arg(long, env = "AEP_MAX_BUFFER_BYTES", default_value_t = 32 << 20, value_name = "BYTES")]
    pub max_buffer_bytes: usize,

    /// Bytes of events kept for replay over all sessions; past it the
    /// least recently written sessions are evicted.
    #[arg(long, env = "AEP_MAX_BUFFERED_BYTES", default_value_t = 256 << 20, value_name = "BYTES")]
    pub max_buffered_bytes: usize,

    /// Bytes of POST bodies read and ingested at once, over all
    /// connections; a POST past it is answered 503 busy (retry shortly).
    #[arg(long, env = "AEP_MAX_INFLIGHT_BYTES", default_value_t = 64 << 20, value_name = "BYTES")]
    pub max_inflight_bytes: usize,

    /// Sessions held at once; the least recently written is evicted.
    #[arg(
        long,
        env = "AEP_MAX_SESSIONS",
        default_value_t = 500,
        value_name = "N"
    )]
    pub max_sessions: usize,

    /// Largest POST /events body, in bytes.
    #[arg(long, env = "AEP_MAX_BODY", default_value_t = 16 << 20, value_name = "BYTES")]
    pub max_body: usize,

    /// Most events in one NDJSON batch.
    #[arg(
        long,
        env = "AEP_MAX_BATCH",
        default_value_t = 10_000,
        value_name = "N"
    )]
    pub max_batch: usize,

    /// Most resume positions in one `from` [default: --max-sessions].
    #[arg(long, env = "AEP_MAX_FROM", value_name = "N")]
    pub max_from: Option<usize>,

    /// Largest WebSocket message, in bytes.
    #[arg(long, env = "AEP_MAX_FRAME", default_value_t = 4 << 20, value_name = "BYTES")]
    pub max_frame: usize,

    /// Queued events toward one consumer past which `debug` and `info`
    /// events toward it are dropped (and counted).
    #[arg(
        long,
        env = "AEP_QUEUE_SOFT",
        default_value_t = 1_024,
        value_name = "N"
    )]
    pub queue_soft: usize,

    /// Queued events toward one consumer at which it is disconnected
    /// (it resumes from its last position).
    #[arg(
        long,
        env = "AEP_QUEUE_HARD",
        default_value_t = 4_096,
        value_name = "N"
    )]
    pub queue_hard: usize,

    /// Bytes queued toward one consumer at which it is disconnected
    /// (it resumes from its last position): what a consumer that stopped
    /// reading keeps alive.
    #[arg(long, env = "AEP_QUEUE_BYTES", default_value_t = 32 << 20, value_name = "BYTES")]
    pub queue_bytes: usize,

    /// Bytes of events queued toward all consumers together, each counted
    /// once; a delivery past it disconnects the consumer it is for, as at
    /// --queue-bytes (one that keeps up, past twice it).
    #[arg(
        long,
        env = "AEP_MAX_QUEUED_BYTES",
        default_value_t = 128 << 20,
        value_name = "BYTES"
    )]
    pub max_queued_bytes: usize,

    /// Bytes of commands waiting in all connections' command queues
    /// together; a command past it is refused busy.
    #[arg(
        long,
        env = "AEP_MAX_COMMAND_BYTES",
        default_value_t = 32 << 20,
        value_name = "BYTES"
    )]
    pub max_command_bytes: usize,

    /// Bytes of what WebSocket connections keep about themselves (hellos,
    /// subscriptions, remembered positions) together; past it a hello is
    /// refused busy and a subscribe limit-exceeded.
    #[arg(
        long,
        env = "AEP_MAX_STATE_BYTES",
        default_value_t = 32 << 20,
        value_name = "BYTES"
    )]
    pub max_state_bytes: usize,

    /// Subscriptions one WebSocket connection may hold.
    #[arg(
        long,
        env = "AEP_MAX_SUBSCRIPTIONS",
        default_value_t = 64,
        value_name = "N"
    )]
    pub max_subscriptions: usize,

    /// Connections served at once; more are closed on accept.
    #[arg(
        long,
        env = "AEP_MAX_CONNECTIONS",
        default_value_t = 1_024,
        value_name = "N"
    )]
    pub max_connections: usize,

    /// Seconds between `: ping` comments and `ping` frames.
    #[arg(long, env = "AEP_PING_SECS", default_value_t = 15, value_name = "SECS")]
    pub ping_secs: u64,

    /// Seconds a new connection may take to send its request head (the
    /// token included) before it is closed, freeing its slot.
    #[arg(
        long,
        env = "AEP_HEAD_TIMEOUT_SECS",
        default_value_t = 10,
        value_name = "SECS"
    )]
    pub head_timeout_secs: u64,

    /// Seconds a WebSocket message may take to arrive whole once it has
    /// begun, waiting for room under --max-inflight-bytes included.
    #[arg(
        long,
        env = "AEP_MESSAGE_TIMEOUT_SECS",
        default_value_t = 30,
        value_name = "SECS"
    )]
    pub message_timeout_secs: u64,

    /// The TLS certificate chain (PEM); serve HTTPS and WSS.
    #[arg(long, env = "AEP_TLS_CERT", requires = "tls_key", value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,

    /// The TLS private key (PEM).
    #[arg(long, env = "AEP_TLS_KEY", requires = "tls_cert", value_name = "FILE")]
    pub tls_key: Option<PathBuf>,

    /// Be a node of a cluster: share history and fan-out with the other
    /// relays on this NATS server's JetStream (`nats://host:4222`; every
    /// node takes the same --buffer). Needs aep built with the `nats`
    /// feature.
    #[arg(long, env = "AEP_NATS", value_name = "URL")]
    pub nats: Option<String>,

    /// A NATS credentials file (`.creds`) for --nats.
    #[arg(long, env = "AEP_NATS_CREDS", requires = "nats", value_name = "FILE")]
    pub nats_creds: Option<PathBuf>,

    /// Do not serve the browser UI at `/`.
    #[arg(long, env = "AEP_NO_UI", conflicts_with = "print_ui_url")]
    pub no_ui: bool,

    /// Print the UI's address with the token in its fragment
    /// (`http://127.0.0.1:8787/#token=...`) to standard output, for the
    /// person at this terminal; it is never logged.
    #[arg(long)]
    pub print_ui_url: bool,

    /// How log lines on standard error are written.
    #[arg(long, env = "AEP_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// The log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Runs `aep relay`.
pub fn run(args: &Args) -> Status {
    init_logging(args.log_format);
    let token = match read_token(args) {
        Ok(token) => token,
        Err(message) => {
            diag!("aep relay: error: {message}");
            return Status::Failure;
        }
    };
    if token.is_none() && !args.listen.ip().is_loopback() && !args.insecure {
        diag!(
            "aep relay: error: refusing to listen on {} without a token (anyone could read every event); set AEP_TOKEN or --token-file, or pass --insecure",
            args.listen
        );
        return Status::Failure;
    }
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
        }),
        _ => None,
    };
    let secure = tls.is_some();
    let ui = UiUrl {
        on: !args.no_ui,
        print: args.print_ui_url,
        token: token.as_ref().map(|t| t.expose().to_owned()),
    };
    if let Err(message) = check_ranges(args) {
        diag!("aep relay: error: {message}");
        return Status::Failure;
    }
    let ping = Duration::from_secs(args.ping_secs);
    let mut config = Config::default()
        .token(token)
        .buffer(args.buffer)
        .max_buffer_bytes(args.max_buffer_bytes)
        .max_buffered_bytes(args.max_buffered_bytes)
        .max_inflight_bytes(args.max_inflight_bytes)
        .head_timeout(Duration::from_secs(args.head_timeout_secs))
        .message_timeout(Duration::from_secs(args.message_timeout_secs))
        .max_sessions(args.max_sessions)
        .max_body(args.max_body)
        .max_batch(args.max_batch)
        .max_frame(args.max_frame)
        .queue(args.queue_soft, args.queue_hard)
        .queue_bytes(args.queue_bytes)
        .max_queued_bytes(args.max_queued_bytes)
        .max_command_bytes(args.max_command_bytes)
        .max_state_bytes(args.max_state_bytes)
        .max_subscriptions(args.max_subscriptions)
        .max_connections(args.max_connections)
        .ping(ping, ping * 6)
        .tls(tls)
        .nats(args.nats.clone().map(|url| NatsServer {
            url,
            creds: args.nats_creds.clone(),
        }))
        .ui(ui.on);
    if let Some(n) = args.max_from {
        config = config.max_from(n);
    }
    if let Err(message) = config.validate() {
        diag!("aep relay: error: {message}");
        return Status::Failure;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            diag!("aep relay: error: cannot start the runtime: {e}");
            return Status::Failure;
        }
    };
    runtime.block_on(serve(args.listen, config, secure, ui))
}

/// Where the browser UI is, and whether to print its address with the
/// token for the person at the terminal.
struct UiUrl {
    on: bool,
    print: bool,
    token: Option<String>,
}

/// The address a browser on this machine opens: an unspecified listen
/// address (`0.0.0.0`, `::`) is reached through loopback.
fn open_address(scheme: &str, address: SocketAddr) -> String {
    let mut address = address;
    if address.ip().is_unspecified() {
        let loopback: std::net::IpAddr = if address.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        };
        address.set_ip(loopback);
    }
    format!("{scheme}://{address}/")
}

/// `text` percent-encoded for a URL fragment parameter: everything but
/// the unreserved characters.
fn fragment_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

async fn serve(listen: SocketAddr, config: Config, secure: bool, ui: UiUrl) -> Status {
    let summary = config.summary();
    let relay = match Relay::new(config) {
        Ok(relay) => relay,
        Err(e) => {
            diag!("aep relay: error: {e}");
            return Status::Failure;
        }
    };
    let listener = match tokio::net::TcpListener::bind(listen).await {
        Ok(listener) => listener,
        Err(e) => {
            diag!("aep relay: error: cannot listen on {listen}: {e}");
            return Status::Failure;
        }
    };
    let stop = signals();
    let address = listener.local_addr().unwrap_or(listen);
    let scheme = if secure { "https" } else { "http" };
    tracing::info!("aep relay listening on {scheme}://{address} ({summary})");
    if ui.on {
        let page = open_address(scheme, address);
        let how = if ui.token.is_some() {
            "; it asks for the token (or use --print-ui-url)"
        } else {
            ", watch-only"
        };
        tracing::info!("browser UI at {page}{how}");
        if ui.print {
            // For the person at the terminal: standard output, never a log.
            match &ui.token {
                Some(token) => println!("{page}#token={}", fragment_encode(token)),
                None => println!("{page}"),
            }
        }
    }
    if !secure && !address.ip().is_loopback() {
        tracing::warn!("serving plain HTTP on a non-loopback address: off-host bindings need TLS (AEP-0003 §8.1); use --tls-cert/--tls-key or a TLS proxy");
    }
    let shutdown = relay.shutdown_handle();
    tokio::spawn(async move {
        stop.await;
        // The drain first: logging is best-effort (standard error may be
        // a closed pipe) and must never stand in its way.
        shutdown.shutdown();
        tracing::info!("shutting down: draining connections");
    });
    match relay.serve(listener).await {
        Ok(drained) => {
            if drained.clean {
                tracing::info!("stopped");
            } else {
                tracing::warn!("stopped; connections that did not drain in time were dropped");
            }
            Status::Clean
        }
        Err(e) => {
            diag!("aep relay: error: {e}");
            Status::Failure
        }
    }
}

/// SIGTERM or SIGINT, registered now (so a signal that comes before the
/// returned future is first polled still drains), awaited later.
fn signals() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let term = signal(SignalKind::terminate()).ok();
        let int = signal(SignalKind::interrupt()).ok();
        async move {
            match (term, int) {
                (Some(mut term), Some(mut int)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = int.recv() => {}
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// The limits the relay's own check cannot see (a zero it would raise to
/// its least value, the timers): refused with the flag and its range.
fn check_ranges(args: &Args) -> Result<()> {
    let counts = [
        ("--buffer", args.buffer),
        ("--max-sessions", args.max_sessions),
        ("--max-batch", args.max_batch),
        ("--max-from", args.max_from.unwrap_or(1)),
        ("--queue-soft", args.queue_soft),
        ("--max-subscriptions", args.max_subscriptions),
        ("--max-connections", args.max_connections),
    ];
    for (flag, value) in counts {
        if value == 0 {
            return Err(Error::msg(format_args!(
                "{flag} 0 is out of range: use at least 1"
            )));
        }
    }
    if args.queue_soft >= args.queue_hard {
        return Err(Error::msg(format_args!(
            "--queue-soft {} must be below --queue-hard {}",
            args.queue_soft, args.queue_hard
        )));
    }
    for (flag, value) in [
        ("--ping-secs", args.ping_secs),
        ("--head-timeout-secs", args.head_timeout_secs),
        ("--message-timeout-secs", args.message_timeout_secs),
    ] {
        if !(1..=3600).contains(&value) {
            return Err(Error::msg(format_args!(
                "{flag} {value} is out of range: use 1 to 3600"
            )));
        }
    }
    Ok(())
}

fn read_token(args: &Args) -> Result<Option<Token>> {
    if let Some(path) = &args.token_file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the token file {}", path.display()))?;
        let line = text.lines().next().unwrap_or_default().trim();
        return Token::new(line)
            .map(Some)
            .with_context(|| format!("the token file {} is empty", path.display()));
    }
    match &args.token {
        Some(token) => Token::new(token.trim())
            .map(Some)
            .context("the token is empty"),
        None => Ok(None),
    }
}

/// Whether log lines on standard error may carry colour.
fn colour_on_stderr() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn init_logging(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("AEP_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // A failed write (standard error a closed pipe) is dropped: the
        // default reports it with `eprintln!`, which panics on the same
        // closed pipe and would take down the task that logged.
        .log_internal_errors(false)
        // Colour only for a person at a terminal: never into a file or a
        // pipe, and never with `NO_COLOR` set (no-color.org).
        .with_ansi(colour_on_stderr())
        .with_target(false);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ui_address_is_one_a_browser_here_can_open() {
        let any: SocketAddr = "0.0.0.0:8787".parse().unwrap();
        assert_eq!(open_address("http", any), "http://127.0.0.1:8787/");
        let any6: SocketAddr = "[::]:9000".parse().unwrap();
        assert_eq!(open_address("https", any6), "https://[::1]:9000/");
        let set: SocketAddr = "192.0.2.7:80".parse().unwrap();
        assert_eq!(open_address("http", set), "http://192.0.2.7:80/");
    }

    #[test]
    fn a_token_is_percent_encoded_in_the_fragment() {
        assert_eq!(fragment_encode("abc-DEF_1.~"), "abc-DEF_1.~");
        assert_eq!(fragment_encode("a b&c=d#e/%"), "a%20b%26c%3Dd%23e%2F%25");
        assert_eq!(fragment_encode("é"), "%C3%A9");
    }
}
