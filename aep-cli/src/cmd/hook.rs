//! `aep hook AGENT`: what an agent's hook configuration runs. It reads
//! the hook's JSON on standard input, maps it (AEP-0002 Annex A), stamps
//! the events with the session's identity and next position, appends
//! them to the session's log and sends them to a relay when one is
//! configured. It fails open: whatever goes wrong, it exits 0 with
//! nothing on standard output (the vendor's own default decision), and
//! says what went wrong on standard error and in the agent's `hook.log`.
//!
//! `--install` and `--uninstall` edit the vendor's hook configuration.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Duration;

use aep_adapters::{Mapper, Posture};

use super::Status;
use crate::common::error::{Context, Error, Result};
use crate::diag;

mod agent;
#[cfg(unix)]
mod client;
#[cfg(unix)]
pub mod daemon;
mod record;
mod settings;
mod state;
mod wire;

pub use agent::Agent;
use record::Home;

const LONG_ABOUT: &str = "\
Run by an agent's hooks: reads one hook payload (JSON) on standard input,
maps it to AEP events (AEP-0002 Annex A), stamps them with the session's
source, id, epoch and next seq, and appends them to the session's log in
one write. With AEP_RELAY set, the call goes through the adapter daemon
(`aep adapter serve`, started on demand), which sends the events on its one
relay connection and holds a PermissionRequest open until a person answers
it over control, AEP_ATTENTION_TIMEOUT_MS (default 55000) passes, or the
tool goes ahead; the hook then prints the vendor's decision.

Files live under AEP_HOME (default ~/.aep):
  logs/AGENT/<name>.jsonl   the session's events (name: the session id made
                            safe, and a hash of source and session)
  logs/AGENT/hook.log       what went wrong, one line per problem (past
                            8 MiB it moves to hook.log.1)
  state/AGENT/<name>.json   the session's epoch, next seq and open run
Hook processes of one session may run at once; each takes its positions
under the session's lock, so seq strictly increases and no event is lost.
A missing or corrupt state starts a new epoch.

The hook fails open: with no relay, an unreachable or slow relay, a daemon
that cannot start (the hook then records the call itself and posts it,
waiting at most 2 s, and for 60 s after the failure hooks do not start it
again: AEP_HOME/run/adapter.failed), a relay URL that does not read (said
once; the call is recorded, not sent), a bad state file or a payload it cannot map, it still
exits 0 with nothing on standard output, so the agent goes on with its own
default. What was recorded stays in the log; `aep post` sends a log to a
relay later (the relay drops ids it already holds).

Capture (AEP-0003 §9.1): metadata for every type and redacted for
attention.*, unless AEP_CAPTURE says otherwise: comma-separated items, a
bare level (none, metadata, redacted, full) setting every type and
dropping the default override, or CATEGORY=LEVEL overriding one category.

--install merges one command hook per hook event into the vendor's
configuration (Claude Code: .claude/settings.json, or ~/.claude/settings.json
with --user; Codex: .codex/hooks.json or ~/.codex/hooks.json, with
`codex_hooks = true` under [features] in its config.toml), its timeout
above AEP_ATTENTION_TIMEOUT_MS (default 55000). It is idempotent, replaces
an older entry of ours, and leaves every other byte of the file as it was
(order, indentation, other members, events and hooks). --uninstall removes
our entries only, giving back the file as it was before --install.";

const AFTER_HELP: &str = "\
Exit status: 0 for every hook call; for --install and --uninstall, 0 when
done and 2 for a configuration file that cannot be read, parsed or written.

Examples:
  aep hook claude-code --install
  aep hook codex --install --user
  echo '{\"hook_event_name\":\"Stop\",\"session_id\":\"s1\"}' | aep hook codex";

/// The arguments of `aep hook`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Record an agent's hook calls as AEP events (and install the hooks)",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    /// The agent whose hook is calling.
    #[arg(value_enum, value_name = "AGENT")]
    pub agent: Agent,

    /// Merge the hooks into the agent's hook configuration.
    #[arg(long, conflicts_with = "uninstall")]
    pub install: bool,

    /// Remove our hooks from the agent's hook configuration.
    #[arg(long)]
    pub uninstall: bool,

    /// With --install or --uninstall: the user's configuration (under
    /// ~) rather than the project's.
    #[arg(long, conflicts_with = "settings")]
    pub user: bool,

    /// With --install or --uninstall: this configuration file.
    #[arg(long, value_name = "PATH")]
    pub settings: Option<PathBuf>,

    /// The relay to post to (none: the log only).
    #[arg(long, env = "AEP_RELAY", value_name = "URL")]
    pub relay: Option<String>,

    /// The relay's bearer token.
    #[arg(long, env = "AEP_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<String>,
}

/// The largest hook payload read; a larger one is reported and dropped.
const MAX_PAYLOAD: u64 = 16 << 20;
/// How long one post to the relay may take.
const POST_WAIT: Duration = Duration::from_secs(2);
/// How long a person has to answer a held request, by default.
const ATTENTION_TIMEOUT_MS: u64 = 55_000;

/// Runs `aep hook`.
pub fn run(args: &Args) -> Status {
    if args.install || args.uninstall {
        return configure(args);
    }
    if let Err(problem) = hook(args) {
        report(args.agent, &problem.to_string());
    }
    Status::Clean
}

/// One hook call, fail-open: an `Err` is reported, never returned.
fn hook(args: &Args) -> Result<()> {
    let agent = args.agent;
    let mut text = String::new();
    std::io::stdin()
        .take(MAX_PAYLOAD + 1)
        .read_to_string(&mut text)
        .context("cannot read the hook's input")?;
    if text.len() as u64 > MAX_PAYLOAD {
        return Err(Error::msg(format!(
            "the hook's input is over {MAX_PAYLOAD} bytes; not recorded"
        )));
    }
    let posture = match std::env::var("AEP_CAPTURE") {
        Ok(spec) => Posture::parse_spec(&spec).unwrap_or_else(|e| {
            report(agent, &format!("AEP_CAPTURE: {e}; using the default"));
            Posture::default()
        }),
        Err(_) => Posture::default(),
    };
    let home = Home::from_env()?;
    let relay = relay_url(agent, args.relay.as_deref());
    // One id per call: the daemon and this process (should it give up on
    // the daemon) record it once between them.
    let call = ulid::Ulid::from_datetime(std::time::SystemTime::now()).to_string();
    #[cfg(unix)]
    if relay.is_some() {
        let attention = attention_timeout();
        let serves = wire::Serves {
            relay: relay.clone(),
            token: crate::live::token(args.token.as_deref()),
            capture: std::env::var("AEP_CAPTURE").ok(),
        };
        let request = wire::Request {
            agent: agent.name().to_owned(),
            payload: text.clone(),
            timeout_ms: Some(u64::try_from(attention.as_millis()).unwrap_or(u64::MAX)),
            call: Some(call.clone()),
            serves: Some(serves.digest()),
        };
        match client::call(&home, &serves, &request, attention) {
            client::Outcome::Done(stdout) => {
                if !stdout.is_empty() {
                    let mut out = std::io::stdout().lock();
                    out.write_all(stdout.as_bytes())
                        .and_then(|()| out.write_all(b"\n"))
                        .and_then(|()| out.flush())
                        .context("cannot write the decision")?;
                }
                return Ok(());
            }
            client::Outcome::NoDecision(why) => {
                return Err(Error::msg(format!(
                    "no decision from the daemon ({why}); the agent decides"
                )))
            }
            // Recording here too is safe: the call's id makes whichever
            // write comes second a no-op.
            client::Outcome::Failed(why) => {
                report(
                    agent,
                    &format!("the daemon could not record the call ({why}); recording it here"),
                );
            }
            client::Outcome::Unreachable(why) => {
                report(agent, &format!("{why}; recording the call here"));
            }
        }
    }
    let mapper = Mapper::new(agent.vocabulary(), None, posture).map_err(Error::msg)?;
    let host = crate::live::hostname();
    let recorded = record::record(
        agent,
        &mapper,
        &home,
        &host,
        &text,
        Some(&call),
        record::Requests::OutOfBand,
    )?;
    if let Some(why) = &recorded.fresh {
        if why != "no state yet" {
            report(agent, &format!("{why}: a new epoch starts"));
        }
    }
    if let Some(relay) = relay {
        if !recorded.lines.is_empty() {
            post(&relay, crate::live::token(args.token.as_deref()), &recorded)?;
        }
    }
    Ok(())
}

/// The relay URL to use (`AEP_RELAY` or `--relay`), checked before any
/// daemon is started for it: one that does not read (no scheme, no host)
/// is said once, and the call is recorded here and not sent, as with no
/// relay.
fn relay_url(agent: Agent, given: Option<&str>) -> Option<String> {
    let given = given.filter(|r| !r.trim().is_empty())?;
    match crate::live::check_url(given) {
        Ok(url) => Some(url),
        Err(e) => {
            // The check's words say the URL without what may be secret.
            report(
                agent,
                &format!(
                    "AEP_RELAY (or --relay): {e}; or unset it to record only. The call is \
                     recorded here and not sent"
                ),
            );
            None
        }
    }
}

/// Posts the recorded lines once, within [`POST_WAIT`].
fn post(relay: &str, token: Option<String>, recorded: &record::Recorded) -> Result<()> {
    use aep_client::http::{BatchAnswer, BatchPoster};
    let relay = crate::live::check_url(relay)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let poster = BatchPoster::new(&relay, token, POST_WAIT).map_err(Error::from_source)?;
    let answer = runtime.block_on(async {
        tokio::time::timeout(POST_WAIT, poster.post(&recorded.lines))
            .await
            .unwrap_or_else(|_| BatchAnswer::Retry(format!("no answer within {POST_WAIT:?}")))
    });
    match answer {
        BatchAnswer::Accepted => Ok(()),
        other => Err(Error::msg(format!(
            "the relay did not take {} event(s) ({other:?}); they are in {}",
            recorded.lines.len(),
            recorded.log.display()
        ))),
    }
}

/// Says a problem on standard error and in the agent's `hook.log`.
fn report(agent: Agent, problem: &str) {
    diag!("aep hook {}: {problem}", agent.name());
    let Ok(home) = Home::from_env() else { return };
    let dir = home.logs(agent);
    if record::private_dir(&dir).is_err() {
        return;
    }
    let line = format!(
        "{} {problem}\n",
        aep::control::rfc3339(aep_client::session::now_ms())
    );
    if let Ok(mut file) = record::open_capped(&dir.join("hook.log"), record::LOG_CAP) {
        let _ = file.write_all(line.as_bytes());
    }
}

/// `--install` or `--uninstall`.
fn configure(args: &Args) -> Status {
    let agent = args.agent;
    let path = match (&args.settings, args.user) {
        (Some(path), _) => path.clone(),
        (None, true) => match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            Some(home) => agent.settings(Some(std::path::Path::new(&home))),
            None => {
                diag!("aep hook: error: --user needs HOME");
                return Status::Failure;
            }
        },
        (None, false) => agent.settings(None),
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && args.install => String::new(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!("{}: no hooks of ours to remove", path.display());
            return Status::Clean;
        }
        Err(e) => {
            diag!("aep hook: error: cannot read {}: {e}", path.display());
            return Status::Failure;
        }
    };
    let edited = if args.install {
        let entry = settings::Entry {
            command: settings::command_line(&program(), &format!("hook {}", agent.name())),
            timeout_s: hook_timeout_s(),
            hooks: agent.hooks(),
            agent: agent.name(),
        };
        settings::install(&text, &entry)
    } else {
        settings::uninstall(&text, agent.name())
    };
    let edited = match edited {
        Ok(edited) => edited,
        Err(e) => {
            diag!("aep hook: error: {}: {e}; left as it was", path.display());
            return Status::Failure;
        }
    };
    let Some(edited) = edited else {
        let state = if args.install {
            "already installed"
        } else {
            "no hooks of ours to remove"
        };
        println!("{}: {state}", path.display());
        return Status::Clean;
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Err(e) = std::fs::create_dir_all(dir) {
            diag!("aep hook: error: cannot create {}: {e}", dir.display());
            return Status::Failure;
        }
    }
    if let Err(e) = crate::live::replace_file(&path, edited.as_bytes()) {
        diag!("aep hook: error: cannot write {}: {e}", path.display());
        return Status::Failure;
    }
    if args.install {
        println!(
            "{}: {} hooks run `aep hook {}`",
            path.display(),
            agent.hooks().len(),
            agent.name()
        );
        if agent == Agent::Codex {
            println!(
                "Codex runs hooks with `codex_hooks = true` under [features] in its config.toml."
            );
        }
    } else {
        println!("{}: our hooks removed", path.display());
    }
    Status::Clean
}

/// This program's path, for the installed command (`aep` when unknown).
fn program() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.to_str().map(str::to_owned))
        .unwrap_or_else(|| "aep".to_owned())
}

/// The vendor's timeout for our hook: past the attention timeout, so the
/// vendor never kills a hook that holds a request open first.
fn hook_timeout_s() -> u64 {
    (attention_timeout().as_millis() as u64).div_ceil(1000) + 10
}

/// How long a held request waits for a person: `AEP_ATTENTION_TIMEOUT_MS`
/// (default 55 000).
fn attention_timeout() -> Duration {
    let ms = std::env::var("AEP_ATTENTION_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(ATTENTION_TIMEOUT_MS);
    Duration::from_millis(ms)
}
