//! `aep demo`: an agent to try a relay with. It emits a realistic
//! session over the WebSocket, asks a person for a permission and a form,
//! and acts as a conformant control target (AEP-0004) through
//! `aep::control`.

mod agent;
mod script;

use std::time::Duration;

use aep_client::history::history;

use super::Status;
use crate::common::error::{Context, Error, Result};
use crate::diag;

const LONG_ABOUT: &str = "\
Connects to a relay over the WebSocket as an emitter that accepts
control.attention.respond and control.cancel, and emits a realistic session:
session and run start, tool calls, progress, heartbeats, a permission
request and a `kind: \"form\"` request using every field type.

It answers commands as a control target (AEP-0004): a respond settles its
request (attention.answered then attention.resolved, cause-linked to the
command); a form answer that breaks the form is rejected `invalid` and the
request stays open; a cancel ends the run (run.cancelled) and a new run
starts; anything else is rejected `unsupported`. A retried command gets its
recorded ack again, byte for byte.

It runs until SIGTERM or SIGINT, then dismisses what is pending, ends its run
and the session, and exits 0. A session that was not ended (the demo was
killed) continues under a new epoch with --session; an ended one cannot,
and neither can one that a live connection is still writing (the relay's
roster names it: two writers would break the session's positions).
Events are emitted at capture `redacted`, through the redaction pipeline.";

const AFTER_HELP: &str = "\
Exit status: 0 after a clean stop, 2 for usage errors, a relay that refuses
the connection, a session that has ended, or one another connection writes.

Examples:
  aep relay --token T &  aep demo --token T
  aep demo --session demo-1 --run r1 --pace 250
  aep respond --relay http://127.0.0.1:8787 --token T   (answer its requests)";

/// The arguments of `aep demo`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Run a demo agent against a relay: a session, requests to answer, a control target",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    /// The relay's base URL.
    #[arg(
        long,
        env = "AEP_RELAY",
        default_value = "http://127.0.0.1:8787",
        value_name = "URL"
    )]
    pub relay: String,

    /// The relay's bearer token (commands reach the demo only with one).
    #[arg(long, env = "AEP_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<String>,

    /// The session id [default: demo-<ULID>]; an existing, unended session
    /// continues under a new epoch.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,

    /// The first run's id [default: run-1].
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,

    /// The agent name.
    #[arg(long, default_value = "aep-demo", value_name = "NAME")]
    pub agent: String,

    /// Milliseconds between the demo's steps.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    pub pace: u64,
}

/// Runs `aep demo`.
pub fn run(args: &Args) -> Status {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            diag!("aep demo: error: cannot start the runtime: {e}");
            return Status::Failure;
        }
    };
    runtime.block_on(start(args))
}

/// `--relay` checked as every other command checks it: a URL with
/// credentials or a query is refused without saying them, and the demo's
/// messages may then say the URL.
fn relay(args: &Args) -> Result<String> {
    crate::live::check_url(&args.relay)
}

async fn start(args: &Args) -> Status {
    let relay = match relay(args) {
        Ok(relay) => relay,
        Err(e) => {
            diag!("aep demo: error: {e}");
            return Status::Failure;
        }
    };
    let stop = shutdown_signal();
    let session = args.session.clone().unwrap_or_else(|| {
        format!(
            "demo-{}",
            aep::control::Ids::new()
                .next(aep_client::session::now_ms())
                .to_lowercase()
        )
    });
    let (epoch, fresh) = match &args.session {
        None => (0, true),
        Some(_) => match resume_point(args, &relay, &session).await {
            Ok(point) => point,
            Err(message) => {
                diag!("aep demo: error: {message}");
                return Status::Failure;
            }
        },
    };
    if args.session.is_some() {
        if let Some(owner) = live_owner(args, &relay, &session).await {
            diag!(
                "aep demo: error: session {session:?} is being written by a live connection \
                 ({owner}); two writers would break its positions. Stop that one, or choose \
                 another --session"
            );
            return Status::Failure;
        }
    }
    let settings = agent::Settings {
        relay,
        token: args.token.clone(),
        agent: args.agent.clone(),
        session,
        epoch,
        fresh,
        run: args.run.clone().unwrap_or_else(|| "run-1".to_owned()),
        pace: Duration::from_millis(args.pace.max(10)),
    };
    match agent::Demo::new(settings) {
        Ok(demo) => demo.run(stop).await,
        Err(message) => {
            diag!("aep demo: error: {message}");
            Status::Failure
        }
    }
}

/// The epoch to continue `session` under, and whether it is new: the
/// relay's history says whether the session ended (then it cannot go on)
/// and which epochs it used.
async fn resume_point(args: &Args, relay: &str, session: &str) -> Result<(u64, bool)> {
    let held = history(relay, args.token.as_deref(), session, 64 << 20)
        .await
        .with_context(|| format!("cannot read the history of {session:?} from {relay}"))?;
    let mut last_epoch = None;
    for line in &held.events {
        let Ok(event) = aep::EventRef::from_json(line) else {
            continue;
        };
        if event.type_() == "session.ended" {
            return Err(Error::msg(format_args!(
                "session {session:?} has ended; a session ends once (AEP-0002 terminal exclusivity): start a new one"
            )));
        }
        if event.seq().is_some() {
            last_epoch = last_epoch.max(Some(event.epoch_or_default()));
        }
    }
    Ok(match last_epoch {
        Some(epoch) => (epoch + 1, false),
        None => (0, true),
    })
}

/// Who holds `session` on the relay (from its `roster`: the claimant's
/// agent and instance), when a live connection still does after a short
/// while (a writer that was just killed may not be gone yet). `None` too
/// when the relay cannot say (no roster, no connection): the demo then
/// goes on.
async fn live_owner(args: &Args, relay: &str, session: &str) -> Option<String> {
    use aep_client::control::{ControlClient, ControlConfig};
    let identity = aep::control::Identity::new("urn:aep:demo:owner-check", "aep-demo");
    let config = ControlConfig::new(relay, args.token.clone(), identity);
    let client = ControlClient::connect_with(config).await.ok()?;
    let mut owner = None;
    for attempt in 0..10 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        owner = match client.roster().await {
            Ok(roster) => owner_in(roster, session),
            Err(_) => None,
        };
        if owner.is_none() {
            break;
        }
    }
    client.close();
    owner
}

/// The claimant of `session` in a roster, described.
fn owner_in(roster: Vec<aep::frame::RosterEntry>, session: &str) -> Option<String> {
    let entry = roster.into_iter().find(|entry| entry.session == session)?;
    let said = |member: &Option<serde_json::Value>| {
        member
            .as_ref()
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    Some(match (said(&entry.agent), said(&entry.instance)) {
        (Some(agent), Some(instance)) => format!("agent {agent}, instance {instance}"),
        (Some(agent), None) => format!("agent {agent}"),
        _ => "an emitter".to_owned(),
    })
}

/// SIGTERM or SIGINT, registered now (not on first poll), so a signal
/// that arrives while the demo is still connecting ends it cleanly too.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(relay: &str) -> Args {
        Args {
            relay: relay.to_owned(),
            token: None,
            session: None,
            run: None,
            agent: "aep-demo".to_owned(),
            pace: 1000,
        }
    }

    #[test]
    fn a_relay_url_with_secrets_is_refused_without_saying_them() {
        // The demo says its relay in every message ("connected to …"):
        // it checks it as every other command does.
        for url in [
            "http://user:s3cret@127.0.0.1:8787",
            "http://127.0.0.1:8787/?token=s3cret",
            "http://127.0.0.1:8787/#token=s3cret",
        ] {
            let error = format!("{:#}", relay(&args(url)).unwrap_err());
            assert!(!error.contains("s3cret"), "{url}: {error}");
        }
        assert_eq!(
            relay(&args("http://127.0.0.1:8787/")).unwrap(),
            "http://127.0.0.1:8787"
        );
    }
}
