//! `aep adapter serve`: the one process per agent machine that owns the
//! live side of the hooks. It takes the hook calls `aep hook` hands it
//! over a local socket, records them exactly as a hook process would
//! (the same session files under the same locks, so a hook that falls
//! back to recording itself interleaves safely), sends the events on one
//! WebSocket to the relay that declares `control.accepts` (so a session's
//! commands have exactly one owner connection, AEP-0004 §4.5), and holds
//! a hook that asks a person open until they answer it with a
//! `control.attention.respond`, the request times out, or the session
//! shows it was settled without them. Three hooks ask: a
//! `PermissionRequest` (allow or deny), Claude Code's `PermissionRequest`
//! for AskUserQuestion (a form, answered as the tool's `answers`) and its
//! MCP `Elicitation` (a form, answered as the result's content). An
//! answer that breaks the request is refused `invalid` and the hook
//! keeps waiting.
//!
//! It idles out when no hook has called for `--idle` and nothing is held.
//!
//! Sending never makes it wait: the session log is the record, and a line
//! the relay connection cannot take at once (the link is down, or its
//! queue is full) marks the session as behind; when the link comes back
//! the missed lines are sent again from the log, within a bound. A request
//! recorded while the link is up is held even when its line had to wait
//! for room, since it reaches the relay with the session's catching up;
//! when its session's lines are given up (past the bounds, they stay in
//! the log only), its hold ends at once, dismissed, and the hook goes back
//! to the vendor's dialog.
//! Right after the daemon starts, a call that could be held waits (at
//! most [`STARTUP_GRACE`], without holding up other calls) for the
//! relay's `hello` before it is recorded as answerable out of band only;
//! the later calls of its session wait behind it, so a session's calls
//! are recorded in the order they came. The loop never waits on a session's
//! lock either: a call, a command or a hold's ending whose session another
//! process has locked waits its turn the same way (see [`Parked`]).
//!
//! What is held, and how each hold ends, is
//! [`aep_adapters::runtime::Holds`]: this file keeps the sockets, the
//! session files and the clock.

use std::collections::HashMap;
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use aep::control::{Identity, Outgoing, Received, Target};
use aep::frame::{Frame, Role};
use aep::{Capture, NackReason, Payload, Severity};
use aep_adapters::runtime::{Answering, Asking, Holds, Settled};
use aep_adapters::{Mapper, Posture};
use aep_client::session::{Attrs, SessionEmitter};
use aep_client::socket::{hello, Inbound, Socket, SocketConfig, TrySendError};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::agent::Agent;
use super::record::{self, private_dir, Committed, Files, Home, OpenError, Requests};
use super::state::LOCK_WAIT;
use super::wire::{self, Reply, Request};
use crate::cmd::Status;
use crate::common::error::{Context, Error, Result};
use crate::diag;

/// The commands the daemon's connection declares.
const ACCEPTS: [&str; 2] = ["control.attention.respond", "control.cancel"];
/// The most hook calls handed over and not yet taken by the loop (those
/// it parks are bounded by [`MAX_PARKED`]).
const CALL_QUEUE: usize = 256;
/// The most hooks held open at once; past it a request is not held.
const MAX_HOLDS: usize = 64;
/// The longest a request is held, whatever a hook asks.
const MAX_HOLD: Duration = Duration::from_secs(24 * 60 * 60);
/// The most sessions kept live; past it the longest unused is dropped.
const MAX_SESSIONS: usize = 1024;
/// How often holds and idleness are checked.
const TICK: Duration = Duration::from_millis(100);
/// How long after the start a call that could be held waits for the
/// relay's `hello` before it is recorded as answerable out of band only.
const STARTUP_GRACE: Duration = Duration::from_secs(2);
/// The lines the relay connection queues (the socket's default); the
/// environment variable `AEP_ADAPTER_QUEUE` (read by the daemon only, for
/// tests) sets another.
const QUEUE: usize = 4096;
/// The most lines sent again from the session logs per reconnect.
const RESEND_LINES: usize = 2048;
/// The most bytes sent again from the session logs per reconnect.
const RESEND_BYTES: u64 = 8 << 20;
/// The most work items waiting (for the hello, or for a session's lock);
/// past it a hook call is refused at once and its hook records it.
const MAX_PARKED: usize = 256;
/// How long a command or a hold's ending waits for its session's lock
/// (a hook call waits [`LOCK_WAIT`], then its hook records it).
const SETTLE_WAIT: Duration = Duration::from_secs(60);

/// Runs `aep adapter serve`.
pub fn serve(args: &crate::cmd::adapter::ServeArgs) -> Status {
    let filter = tracing_subscriber::EnvFilter::try_from_env("AEP_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
    let home = match Home::from_env() {
        Ok(home) => home,
        Err(e) => {
            diag!("aep adapter serve: error: {e}");
            return Status::Failure;
        }
    };
    let run = wire::run_dir(&home);
    if let Err(e) = private_dir(&run) {
        diag!(
            "aep adapter serve: error: cannot create {}: {e}",
            run.display()
        );
        return Status::Failure;
    }
    // One daemon per home: the lock is held for the process's life.
    let lock = match std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(run.join("adapter.lock"))
    {
        Ok(lock) => lock,
        Err(e) => {
            diag!("aep adapter serve: error: cannot open the lock: {e}");
            return Status::Failure;
        }
    };
    if lock.try_lock().is_err() {
        diag!(
            "aep adapter serve: another daemon serves {}",
            home.0.display()
        );
        return Status::Clean;
    }
    let relay = match args.relay.as_deref().filter(|r| !r.trim().is_empty()) {
        Some(relay) => match crate::live::check_url(relay) {
            Ok(relay) => Some(relay),
            Err(e) => {
                diag!("aep adapter serve: error: {e}");
                return Status::Failure;
            }
        },
        None => None,
    };
    let posture = std::env::var("AEP_CAPTURE")
        .ok()
        .and_then(|spec| Posture::parse_spec(&spec).ok())
        .unwrap_or_default();
    let pid = wire::pid_path(&home);
    if let Err(e) = std::fs::write(&pid, format!("{}\n", std::process::id())) {
        diag!(
            "aep adapter serve: warning: cannot write {}: {e}",
            pid.display()
        );
    }
    let socket = wire::socket_path(&home);
    let status = listen(&socket).map_or(Status::Failure, |listener| {
        let _ = std::fs::remove_file(wire::failed_path(&home));
        let Some(runtime) = crate::live::runtime("adapter serve") else {
            return Status::Failure;
        };
        runtime.block_on(async {
            let listener = match UnixListener::from_std(listener) {
                Ok(listener) => listener,
                Err(e) => {
                    diag!(
                        "aep adapter serve: error: cannot listen on {}: {e}",
                        socket.display()
                    );
                    return Status::Failure;
                }
            };
            let token = crate::live::token(args.token.as_deref());
            let serves = wire::Serves {
                relay: relay.clone(),
                token: token.clone(),
                capture: std::env::var("AEP_CAPTURE").ok(),
            }
            .digest();
            let mut daemon = Daemon::new(home.clone(), posture, relay.map(|r| connect(r, token)));
            daemon.serves = serves;
            daemon.run(listener, args.idle).await;
            Status::Clean
        })
    });
    let _ = std::fs::remove_file(&socket);
    let _ = std::fs::remove_file(&pid);
    drop(lock);
    status
}

/// Binds the daemon's socket, replacing a stale one, and makes it mode
/// 0600 whatever the umask before anything is accepted. It is bound in
/// the run directory, which is 0700, so nobody else can reach it in
/// between; the process's umask is left alone (other threads may be
/// creating files). `None` (said on standard error) when it cannot.
fn listen(socket: &std::path::Path) -> Option<std::os::unix::net::UnixListener> {
    let _ = std::fs::remove_file(socket);
    std::os::unix::net::UnixListener::bind(socket)
        .and_then(|listener| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
            listener.set_nonblocking(true)?;
            Ok(listener)
        })
        .map_err(|e| {
            diag!(
                "aep adapter serve: error: cannot listen on {}: {e}; AEP_HOME must be a short \
                 enough path the user owns",
                socket.display()
            );
        })
        .ok()
}

/// Whether the peer of `stream` runs as this daemon's user; anyone else
/// is refused (the run directory keeps them out, and this holds even if
/// its mode was changed).
fn own_user(stream: &UnixStream) -> Result<()> {
    let peer = stream
        .peer_cred()
        .context("cannot read a connection's credentials")?;
    // SAFETY: geteuid takes no arguments and cannot fail.
    let own = unsafe { libc::geteuid() };
    if peer.uid() == own {
        Ok(())
    } else {
        Err(Error::msg(format!(
            "a connection from uid {} refused: only uid {own} may call this daemon",
            peer.uid()
        )))
    }
}

/// The relay connection: an emitter that declares the commands it takes.
fn connect(relay: String, token: Option<String>) -> Socket {
    let instance = format!("{}/{}", crate::live::hostname(), std::process::id());
    let capabilities = json!({"control": {
        "accepts": ACCEPTS,
        "ack_window_ms": aep::control::DEFAULT_ACK_WINDOW_MS,
    }});
    let hello = hello(Role::Emitter, "aep-adapter", &instance, capabilities);
    let mut config = SocketConfig::new(relay, token, hello);
    config.outbox = queue_size();
    Socket::connect(config)
}

/// The relay connection's queue: `AEP_ADAPTER_QUEUE` when it is a
/// positive number, else [`QUEUE`].
fn queue_size() -> usize {
    std::env::var("AEP_ADAPTER_QUEUE")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(QUEUE)
}

/// The bounds of one reconnect's catching up: lines and bytes, the lines
/// never more than half the queue (so new lines still find room).
fn resend_bounds() -> (usize, u64) {
    (RESEND_LINES.min((queue_size() / 2).max(1)), RESEND_BYTES)
}

/// A hook call handed over by a connection.
struct Call {
    request: Request,
    recorded: oneshot::Sender<Result<(), String>>,
    decision: oneshot::Sender<String>,
}

/// A session the daemon has recorded for.
struct Live {
    agent: Agent,
    target: Target,
    used: Instant,
}

/// Work waiting its turn in a session: for the relay's first `hello`,
/// for the session's lock (another process holds it), or behind earlier
/// work of the session, so the session's log keeps the order things came
/// in. The loop never waits on a lock: it tries, and parks what finds the
/// lock taken.
struct Parked {
    session: String,
    since: Instant,
    work: Work,
}

enum Work {
    /// A hook call.
    Call(Call),
    /// A command the relay routed to the session.
    Command(String),
    /// How a hold ended, to record (its hook is already woken).
    Ending(Settled<()>),
}

/// How handling a hook call went.
#[derive(PartialEq, Eq)]
enum Handled {
    Done,
    Parked,
    /// Given up after waiting for the session's lock.
    GaveUp,
}

/// Where a session's lines stopped reaching the relay: its log, and the
/// offset of the first line not sent. Every later line of the session is
/// in the log after it.
struct Behind {
    log: PathBuf,
    from: u64,
}

/// The daemon's state, owned by its one loop.
struct Daemon {
    home: Home,
    host: String,
    mappers: HashMap<&'static str, (Agent, Mapper)>,
    ceiling: Capture,
    relay: Option<Socket>,
    linked: bool,
    sessions: HashMap<String, Live>,
    /// The hooks held open, each woken with its decision.
    holds: Holds<oneshot::Sender<String>>,
    attention_timeout: Duration,
    /// Sessions whose lines the relay has not all been given.
    behind: HashMap<String, Behind>,
    /// Calls waiting, in the order they came: for the first `hello` (a
    /// call that could be held), for their session's lock, or behind an
    /// earlier waiting call of their session.
    parked: Vec<Parked>,
    /// When the daemon started.
    started: Instant,
    /// What is left of this reconnect's catching up: lines, bytes.
    budget: (usize, u64),
    /// The relay, token and posture it serves ([`wire::Serves::digest`]).
    serves: String,
    /// A hook asked for another relay, token or capture: exit once
    /// nothing is held, so the next hook starts a daemon for its own.
    retiring: bool,
}

impl Daemon {
    fn new(home: Home, posture: Posture, relay: Option<Socket>) -> Daemon {
        let mut mappers = HashMap::new();
        for agent in [Agent::ClaudeCode, Agent::Codex] {
            if let Ok(mapper) = Mapper::new(agent.vocabulary(), None, posture.clone()) {
                mappers.insert(agent.name(), (agent, mapper));
            }
        }
        Daemon {
            home,
            host: crate::live::hostname(),
            mappers,
            ceiling: posture.ceiling_for("attention.answered"),
            relay,
            linked: false,
            sessions: HashMap::new(),
            holds: Holds::new(MAX_HOLDS),
            attention_timeout: super::attention_timeout(),
            behind: HashMap::new(),
            parked: Vec::new(),
            started: Instant::now(),
            budget: resend_bounds(),
            serves: String::new(),
            retiring: false,
        }
    }

    async fn run(mut self, listener: UnixListener, idle: Duration) {
        let (calls_tx, mut calls) = mpsc::channel::<Call>(CALL_QUEUE);
        let mut last_call = Instant::now();
        let mut tick = tokio::time::interval(TICK);
        let mut stop = std::pin::pin!(crate::live::stop_signal());
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    if let Ok((stream, _)) = accepted {
                        match own_user(&stream) {
                            Ok(()) => {
                                tokio::spawn(connection(stream, calls_tx.clone()));
                            }
                            Err(why) => tracing::warn!("{why}"),
                        }
                    }
                }
                Some(call) = calls.recv() => {
                    last_call = Instant::now();
                    self.call(call);
                }
                Some(inbound) = recv(&mut self.relay) => self.inbound(inbound),
                _ = tick.tick() => {
                    self.expire();
                    // Calls still waiting for the hello or a lock park
                    // themselves again.
                    self.unpark();
                    if self.holds.is_empty()
                        && self.parked.is_empty()
                        && (self.retiring || last_call.elapsed() >= idle)
                    {
                        break;
                    }
                }
                _ = &mut stop => break,
            }
        }
        // Whatever is still held goes back to the vendor's own dialog, and
        // its request is closed (no one can answer it over control now),
        // waiting for the session's lock as long as a hook would; a parked
        // call is handed back to its hook, which records it.
        let now = self.now_ms();
        let mut endings = Vec::new();
        for settled in self.holds.drain(now) {
            let (settled, waiter) = unwaited(settled);
            let _ = waiter.send(String::new());
            endings.push(settled);
        }
        for parked in std::mem::take(&mut self.parked) {
            match parked.work {
                Work::Call(call) => {
                    let _ = call.recorded.send(Err(
                        "the daemon is stopping; the hook records the call".to_owned(),
                    ));
                }
                Work::Ending(settled) => endings.push(settled),
                Work::Command(_) => {}
            }
        }
        for settled in endings {
            if let Err(e) = self.settle(&settled, LOCK_WAIT) {
                tracing::warn!(session = %settled.session, "cannot close a held request: {e}");
            }
        }
        let relay = self.relay.take();
        self.linked = false;
        if let Some(relay) = relay {
            relay.close(Duration::from_secs(2)).await;
        }
    }

    /// Takes up the parked work, in order: what still cannot go parks
    /// again. When a session's first call gives up on the lock, the calls
    /// behind it are handed back to their hooks too, so none of them is
    /// recorded before it.
    fn unpark(&mut self) {
        let mut gave_up: Vec<String> = Vec::new();
        for parked in std::mem::take(&mut self.parked) {
            let Parked {
                session,
                since,
                work,
            } = parked;
            match work {
                Work::Call(call) if gave_up.contains(&session) => {
                    let _ = call.recorded.send(Err(
                        "an earlier call of the session could not take its lock; the hook \
                         records this one"
                            .to_owned(),
                    ));
                }
                Work::Call(call) => {
                    if self.call_since(call, since) == Handled::GaveUp {
                        gave_up.push(session);
                    }
                }
                Work::Command(line) => self.command_since(&line, since),
                Work::Ending(settled) => self.record_ending(settled, since),
            }
        }
    }

    /// Parks `work` of `session`, waiting since `since`; past
    /// [`MAX_PARKED`] the work is handed back.
    fn park(&mut self, session: String, since: Instant, work: Work) -> Option<Work> {
        if self.parked.len() >= MAX_PARKED {
            return Some(work);
        }
        self.parked.push(Parked {
            session,
            since,
            work,
        });
        None
    }

    /// Whether work of `session` is waiting (later work waits behind it).
    fn waiting(&self, session: &str) -> bool {
        self.parked.iter().any(|p| p.session == session)
    }

    /// Records one hook call, and holds it when it asks for permission
    /// and a person can answer over the relay. A call that could be held
    /// while the relay has not said `hello` yet, right after the start,
    /// is parked until it does (or [`STARTUP_GRACE`] passes), and so is
    /// every later call of its session until then. A call whose session's
    /// lock another process holds is parked too, for at most
    /// [`LOCK_WAIT`].
    fn call(&mut self, call: Call) {
        self.call_since(call, Instant::now());
    }

    /// [`Daemon::call`] for a call waiting since `since`.
    fn call_since(&mut self, call: Call, since: Instant) -> Handled {
        let Some((agent, mapper)) = self.mappers.get(call.request.agent.as_str()) else {
            let _ = call
                .recorded
                .send(Err(format!("unknown agent `{}`", call.request.agent)));
            return Handled::Done;
        };
        let agent = *agent;
        if call
            .request
            .serves
            .as_ref()
            .is_some_and(|s| *s != self.serves)
        {
            self.retiring = true;
            tracing::warn!(
                "a hook was given another relay, token or capture; retiring once nothing is held"
            );
            let _ = call.recorded.send(Err(
                "the running daemon serves another relay, token or capture; it stops once \
                 nothing is held, and the next hook starts one for these"
                    .to_owned(),
            ));
            return Handled::Done;
        }
        let text = &call.request.payload;
        let asking = Asking::of(agent.runtime(), text).filter(|_| self.holds.has_room());
        let session = match record::session_of(text) {
            Ok(session) => session,
            Err(e) => {
                let _ = call.recorded.send(Err(e.to_string()));
                return Handled::Done;
            }
        };
        let awaits_hello = asking.is_some()
            && !self.linked
            && self.relay.is_some()
            && self.started.elapsed() < STARTUP_GRACE;
        if awaits_hello || self.waiting(&session) {
            return self.park_call(session, since, call);
        }
        let files =
            match Files::open_within(&self.home, agent, &self.host, &session, Duration::ZERO) {
                Ok(files) => files,
                Err(OpenError::Busy(_)) if since.elapsed() < LOCK_WAIT => {
                    return self.park_call(session, since, call);
                }
                Err(OpenError::Busy(_)) => {
                    let why = format!(
                        "the session's lock was held by another process for {:?}",
                        since.elapsed()
                    );
                    let _ = call.recorded.send(Err(why));
                    return Handled::GaveUp;
                }
                Err(e) => {
                    let _ = call.recorded.send(Err(e.to_string()));
                    return Handled::Done;
                }
            };
        let asking = asking.filter(|_| self.linked);
        let requests = if asking.is_some() {
            Requests::Control
        } else {
            Requests::OutOfBand
        };
        let recorded = record::record_in(
            files,
            agent,
            mapper,
            &self.host,
            text,
            call.request.call.as_deref(),
            requests,
        );
        let recorded = match recorded {
            Ok(recorded) => recorded,
            Err(e) => {
                let _ = call.recorded.send(Err(e.to_string()));
                return Handled::Done;
            }
        };
        let _ = call.recorded.send(Ok(()));
        if let Some(why) = recorded.fresh.as_deref().filter(|w| *w != "no state yet") {
            tracing::warn!(session = %recorded.session, "{why}: a new epoch starts");
        }
        let live = self.live(agent, &recorded.session);
        for event in &recorded.events {
            live.target.observe(event);
        }
        for id in &recorded.closed {
            live.target.settle_request(id);
        }
        for id in &recorded.closed {
            if let Some(waiter) = self.holds.release(id) {
                let _ = waiter.send(String::new());
            }
        }
        // Lines the link cannot take now are sent from the log later: a
        // request among them is held all the same, unless they are in the
        // log only (nobody could answer it).
        let queued = self.send(
            &recorded.session,
            &recorded.log,
            recorded.at,
            &recorded.lines,
        );
        let reaches = queued || self.behind.contains_key(&recorded.session);
        let held = match (asking, recorded.opened.first()) {
            (Some(asking), Some(id)) if reaches => {
                let timeout = call
                    .request
                    .timeout_ms
                    .map_or(self.attention_timeout, Duration::from_millis)
                    .min(MAX_HOLD);
                let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
                // The person's time counts from when the call came.
                let now = self.ms_at(since);
                let session = &recorded.session;
                let waiter = call.decision;
                self.holds.hold(
                    id,
                    session,
                    agent.runtime(),
                    asking,
                    now,
                    timeout_ms,
                    waiter,
                )
            }
            _ => Err(call.decision),
        };
        if let Err(waiter) = held {
            let _ = waiter.send(String::new());
        }
        Handled::Done
    }

    /// Parks a hook call; past [`MAX_PARKED`] it is handed back to its
    /// hook, which records it.
    fn park_call(&mut self, session: String, since: Instant, call: Call) -> Handled {
        match self.park(session, since, Work::Call(call)) {
            None => Handled::Parked,
            Some(Work::Call(call)) => {
                let _ = call.recorded.send(Err(format!(
                    "{MAX_PARKED} calls are waiting already; the hook records this one"
                )));
                Handled::Done
            }
            Some(_) => Handled::Done,
        }
    }

    /// Milliseconds since the daemon started: the holds' clock.
    fn now_ms(&self) -> u64 {
        self.ms_at(Instant::now())
    }

    /// `at` on the holds' clock.
    fn ms_at(&self, at: Instant) -> u64 {
        let since = at.saturating_duration_since(self.started);
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    }

    /// The live session, made when new (the longest unused dropped past
    /// the bound).
    fn live(&mut self, agent: Agent, session: &str) -> &mut Live {
        if !self.sessions.contains_key(session) && self.sessions.len() >= MAX_SESSIONS {
            // A session a hook is held in stays: its answer must find it.
            let holds = &self.holds;
            let oldest = self
                .sessions
                .iter()
                .filter(|(id, _)| !holds.holds_session(id))
                .min_by_key(|(_, live)| live.used)
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                self.sessions.remove(&oldest);
            }
        }
        let (host, ceiling) = (self.host.clone(), self.ceiling);
        let live = self.sessions.entry(session.to_owned()).or_insert_with(|| {
            let source = aep_client::session::source_uri(&host, agent.name(), Some(session));
            let target = Target::new(Identity::new(source, agent.name()), ACCEPTS)
                .expect("the accepted commands are command types")
                .with_ceiling(ceiling);
            Live {
                agent,
                target,
                used: Instant::now(),
            }
        });
        live.used = Instant::now();
        live
    }

    /// Gives the relay a session's `lines`, which its `log` holds from
    /// offset `at` on, without ever waiting. `true` when they are all
    /// queued; otherwise the session is (or already was) behind, and its
    /// lines are sent again from the log when the link allows.
    fn send(&mut self, session: &str, log: &Path, at: u64, lines: &[String]) -> bool {
        let Some(relay) = &self.relay else {
            return false;
        };
        if self.behind.contains_key(session) {
            return false;
        }
        if !self.linked {
            self.fall_behind(session, log, at);
            return false;
        }
        let mut from = at;
        for line in lines {
            match relay.try_send(line.clone(), Severity::Notice) {
                Ok(()) => from += line.len() as u64 + 1,
                Err(e) => {
                    tracing::warn!(
                        %session,
                        "the relay is behind ({e}): the session's lines stay in {} and are sent when there is room",
                        log.display()
                    );
                    if self.behind.is_empty() {
                        self.budget = resend_bounds();
                    }
                    self.fall_behind(session, log, from);
                    return false;
                }
            }
        }
        true
    }

    /// Notes that `session`'s lines from offset `from` of its `log` on are
    /// still to be sent; past [`MAX_SESSIONS`] sessions behind, they are in
    /// the log only, and the daemon's log says so.
    fn fall_behind(&mut self, session: &str, log: &Path, from: u64) {
        if self.behind.len() >= MAX_SESSIONS {
            tracing::warn!(
                %session,
                "{MAX_SESSIONS} sessions are behind already: the lines of {} from byte {from} on are in the log only",
                log.display()
            );
            return;
        }
        let behind = Behind {
            log: log.to_owned(),
            from,
        };
        self.behind.insert(session.to_owned(), behind);
    }

    /// Gives the relay lines that are in no log (a command's outcome sent
    /// again); when the link cannot take them at once they are let go (the
    /// commander sends its command again).
    fn send_unlogged(&self, lines: &[String]) {
        let Some(relay) = self.relay.as_ref().filter(|_| self.linked) else {
            return;
        };
        for line in lines {
            if let Err(e) = relay.try_send(line.clone(), Severity::Notice) {
                tracing::debug!("an outcome sent again was let go: {e}");
                return;
            }
        }
    }

    /// Sends the sessions' missed lines again from their logs, as far as
    /// the queue has room and the budget of this reconnect lasts; past the
    /// budget the rest stays in the logs only, and the daemon's log says
    /// so.
    fn catch_up(&mut self) {
        if !self.linked || self.behind.is_empty() {
            return;
        }
        if self.relay.is_none() {
            self.behind.clear();
            return;
        }
        let sessions: Vec<String> = self.behind.keys().cloned().collect();
        for session in sessions {
            let (Some(relay), Some(behind)) = (&self.relay, self.behind.get_mut(&session)) else {
                continue;
            };
            match resend(relay, behind, &mut self.budget) {
                Ok(Resent::Done) => {
                    self.behind.remove(&session);
                }
                Ok(Resent::Full) => return,
                Ok(Resent::Spent) => break,
                Err(e) => {
                    tracing::warn!(
                        %session,
                        "cannot send the missed lines again from {}: {e}; they stay in the log only",
                        behind.log.display()
                    );
                    self.behind.remove(&session);
                    self.give_up_holds(Some(&session));
                }
            }
        }
        if self.budget.0 == 0 || self.budget.1 == 0 || !self.behind.is_empty() {
            let (lines, bytes) = resend_bounds();
            let given_up: Vec<(String, Behind)> = self.behind.drain().collect();
            for (session, behind) in given_up {
                tracing::warn!(
                    %session,
                    "past the bound of {lines} lines and {bytes} bytes sent again per reconnect: the lines of {} from byte {} on are in the log only",
                    behind.log.display(),
                    behind.from
                );
                self.give_up_holds(Some(&session));
            }
        }
    }

    /// Ends the holds of `session` (of every session: `None`) whose
    /// requests can no longer be answered over the relay (their lines are
    /// in the log only, or the relay refused the daemon): each hook goes
    /// back to the vendor's dialog, and its request is closed dismissed.
    fn give_up_holds(&mut self, session: Option<&str>) {
        let now = self.now_ms();
        let ended = match session {
            Some(session) => self.holds.end_session(session, now),
            None => self.holds.drain(now),
        };
        for settled in ended {
            let (settled, waiter) = unwaited(settled);
            self.record_ending(settled, Instant::now());
            let _ = waiter.send(String::new());
        }
    }

    /// What the relay connection handed over.
    fn inbound(&mut self, inbound: Inbound) {
        match inbound {
            Inbound::Connected(_) => {
                self.linked = true;
                tracing::info!("connected to the relay");
                self.budget = resend_bounds();
                self.catch_up();
                self.unpark();
            }
            Inbound::Disconnected(why) => {
                self.linked = false;
                tracing::warn!("the relay connection dropped: {why}");
            }
            Inbound::Failed(why) => {
                self.linked = false;
                self.relay = None;
                self.behind.clear();
                tracing::error!("the relay refused this connection for good: {why}");
                self.give_up_holds(None);
                self.unpark();
            }
            Inbound::Event(line) => self.command(&line),
            Inbound::Frame(Frame::Error(error)) => {
                tracing::warn!(%error, "the relay refused something the daemon sent");
            }
            Inbound::Frame(_) => {}
        }
    }

    /// A command the relay routed here: the session's target gates and
    /// dedupes it, and a new one is decided.
    fn command(&mut self, line: &str) {
        self.command_since(line, Instant::now());
    }

    /// [`Daemon::command`] for a command waiting since `since`: parked
    /// while its session's lock is taken or earlier work of the session
    /// waits, for at most [`SETTLE_WAIT`].
    fn command_since(&mut self, line: &str, since: Instant) {
        let session = serde_json::from_str::<Value>(line)
            .ok()
            .and_then(|v| v.get("session").and_then(Value::as_str).map(str::to_owned));
        let Some(session) = session else { return };
        let Some(agent) = self.sessions.get(&session).map(|l| l.agent) else {
            tracing::debug!(%session, "a command for a session this daemon does not hold");
            return;
        };
        let opened = match self.waiting(&session) {
            true => Err(OpenError::Busy(
                "earlier work of the session waits".to_owned(),
            )),
            false => Files::open_within(&self.home, agent, &self.host, &session, Duration::ZERO),
        };
        let mut files = match opened {
            Ok(files) => files,
            Err(OpenError::Busy(_)) if since.elapsed() < SETTLE_WAIT => {
                let work = Work::Command(line.to_owned());
                if self.park(session.clone(), since, work).is_some() {
                    tracing::warn!(%session, "a command was let go: {MAX_PARKED} items wait already (its sender sends it again)");
                }
                return;
            }
            Err(e) => {
                tracing::warn!(%session, "cannot answer a command: {e}");
                return;
            }
        };
        let live = self.live(agent, &session);
        let received = live.target.receive_line(line, &mut |_: &str| files.stamp());
        let mut lines = Vec::new();
        let mut logged = Vec::new();
        let mut decided = None;
        match received {
            Ok(Received::Nack(out)) => {
                logged.push(out.into_line());
            }
            Ok(Received::Resend(out)) => lines.push(out.into_line()),
            Ok(Received::InProgress) | Err(_) => {}
            Ok(Received::Decide(command)) => {
                let request = command.event().subject.clone().unwrap_or_default();
                let now = self.now_ms();
                let live = self.sessions.get_mut(&session).expect("made above");
                let stamp = &mut |_: &str| files.stamp();
                let target = &mut live.target;
                let outcome = match command.payload() {
                    Payload::ControlCancel(_) => target
                        .reject(
                            command.key(),
                            NackReason::Refused,
                            Some("the agent's run is its own: a hook cannot stop it"),
                            stamp,
                        )
                        .map(|out| vec![out]),
                    Payload::ControlAttentionRespond(respond) => {
                        let answering = self.holds.answer(
                            &session,
                            &request,
                            &respond.answer,
                            self.ceiling,
                            now,
                        );
                        match answering {
                            Answering::Applies(applied) => {
                                let answered = answer(target, &command, &applied.answer, stamp);
                                if answered.is_ok() {
                                    decided = Some((request, applied.stdout));
                                }
                                answered
                            }
                            Answering::Breaks(why) => target
                                .reject(command.key(), NackReason::Invalid, Some(&why), stamp)
                                .map(|out| vec![out]),
                            Answering::NotHeld => target
                                .reject(
                                    command.key(),
                                    NackReason::Invalid,
                                    Some("the request is not pending here"),
                                    stamp,
                                )
                                .map(|out| vec![out]),
                        }
                    }
                    _ => target
                        .reject(command.key(), NackReason::Unsupported, None, stamp)
                        .map(|out| vec![out]),
                };
                match outcome {
                    Ok(out) => logged.extend(out.into_iter().map(Outgoing::into_line)),
                    Err(e) => tracing::warn!(%session, "cannot answer a command: {e}"),
                }
            }
        }
        if let Some((id, _)) = &decided {
            files.state().pending.retain(|p| &p.id != id);
        }
        self.send_unlogged(&lines);
        match files.commit(&logged) {
            Ok(Committed { log, at, .. }) => {
                self.send(&session, &log, at, &logged);
            }
            Err(e) => tracing::warn!(%session, "{e}"),
        }
        if let Some((id, stdout)) = decided {
            if let Some(waiter) = self.holds.release(&id) {
                let _ = waiter.send(stdout);
            }
        }
    }

    /// Times out the holds past their deadline (`attention.timeout`, the
    /// decision back to the vendor's dialog), and settles those whose hook
    /// is gone (`attention.resolved`, dismissed: nobody can answer them).
    fn expire(&mut self) {
        let now = self.now_ms();
        for settled in self.holds.tick(now, oneshot::Sender::is_closed) {
            // Recorded before the hook is woken, unless the session's lock
            // is taken: then the hook goes on and the ending waits.
            let (settled, waiter) = unwaited(settled);
            self.record_ending(settled, Instant::now());
            let _ = waiter.send(String::new());
        }
        self.catch_up();
    }

    /// Records how a hold ended, or parks it while the session's lock is
    /// taken (or earlier work of the session waits), for at most
    /// [`SETTLE_WAIT`].
    fn record_ending(&mut self, settled: Settled<()>, since: Instant) {
        let result = match self.waiting(&settled.session) {
            true => Err(OpenError::Busy(
                "earlier work of the session waits".to_owned(),
            )),
            false => self.settle(&settled, Duration::ZERO),
        };
        match result {
            Ok(()) => {}
            Err(OpenError::Busy(_)) if since.elapsed() < SETTLE_WAIT => {
                let session = settled.session.clone();
                if let Some(Work::Ending(settled)) =
                    self.park(session, since, Work::Ending(settled))
                {
                    tracing::warn!(session = %settled.session, "cannot record how request {} ended: {MAX_PARKED} items wait already", settled.id);
                }
            }
            Err(e) => {
                tracing::warn!(session = %settled.session, "cannot record how request {} ended: {e}", settled.id);
            }
        }
    }

    /// Records how a held request ended without an answer, waiting at
    /// most `wait` for the session's lock: taken off the session's pending
    /// list, the event at the session's next position committed to its
    /// log, observed by its target, and given to the relay. A request
    /// something else closed meanwhile records nothing.
    fn settle(&mut self, settled: &Settled<()>, wait: Duration) -> Result<(), OpenError> {
        let (id, session) = (settled.id.as_str(), settled.session.as_str());
        let agent = Agent::of(settled.agent);
        let type_ = settled.ending.event_type();
        let failed = |e: String| OpenError::Failed(e);
        let mut files = Files::open_within(&self.home, agent, &self.host, session, wait)?;
        let state = files.state();
        if !state.pending.iter().any(|p| p.id == id) {
            files.commit(&[]).map_err(|e| failed(e.to_string()))?;
            return Ok(());
        }
        state.pending.retain(|p| p.id != id);
        let (run, epoch, next_seq) = (state.run.clone(), state.epoch, state.next_seq);
        let mut emitter =
            SessionEmitter::new(&files.source, agent.name(), session, epoch).starting_at(next_seq);
        let event = emitter
            .raw(
                type_,
                Some(aep::Data::from_object(&settled.ending.data())),
                Attrs {
                    run,
                    subject: Some(id.to_owned()),
                    capture: Some(Capture::Metadata),
                    ..Attrs::default()
                },
            )
            .map_err(|e| failed(format!("the {type_} event did not validate: {e}")))?;
        files.state().next_seq = emitter.next_seq();
        if let Some(live) = self.sessions.get_mut(session) {
            live.target.observe(&event);
            live.target.settle_request(id);
        }
        let line = serde_json::to_string(&event).map_err(|e| failed(e.to_string()))?;
        let lines = [line];
        let Committed { log, at, .. } = files.commit(&lines).map_err(|e| failed(e.to_string()))?;
        self.send(session, &log, at, &lines);
        Ok(())
    }
}

/// A hold's ending apart from its waiter (woken at once; the ending may
/// have to wait for the session's lock).
fn unwaited<W>(settled: Settled<W>) -> (Settled<()>, W) {
    let ending = Settled {
        id: settled.id,
        session: settled.session,
        agent: settled.agent,
        ending: settled.ending,
        waiter: (),
    };
    (ending, settled.waiter)
}

/// How one session's catching up ended.
enum Resent {
    /// Every line of the log is sent.
    Done,
    /// The queue is full; the rest waits for room.
    Full,
    /// This reconnect's budget is spent.
    Spent,
}

/// Queues the lines of `behind`'s log from its offset on, moving the
/// offset past each one queued and taking it off `budget` (lines, bytes).
fn resend(
    relay: &Socket,
    behind: &mut Behind,
    budget: &mut (usize, u64),
) -> std::io::Result<Resent> {
    let mut file = std::fs::File::open(&behind.log)?;
    file.seek(SeekFrom::Start(behind.from))?;
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    loop {
        if budget.0 == 0 || budget.1 == 0 {
            return Ok(Resent::Spent);
        }
        line.clear();
        let read = reader
            .by_ref()
            .take(budget.1.saturating_add(1))
            .read_until(b'\n', &mut line)?;
        // The end, or a line still being written by another process.
        if read == 0 || line.last() != Some(&b'\n') {
            return Ok(if read as u64 > budget.1 {
                Resent::Spent
            } else {
                Resent::Done
            });
        }
        let text = String::from_utf8_lossy(&line[..read - 1]).into_owned();
        match relay.try_send(text, Severity::Notice) {
            Ok(()) => {}
            Err(TrySendError::Full | TrySendError::Closed) => return Ok(Resent::Full),
        }
        behind.from += read as u64;
        budget.0 -= 1;
        budget.1 = budget.1.saturating_sub(read as u64);
    }
}

/// Accepts a respond and records what it applied: the ack, then
/// `attention.answered` and `attention.resolved`.
fn answer(
    target: &mut Target,
    command: &aep::control::Command,
    applied: &aep::Answer,
    stamp: &mut impl aep::control::Stamper,
) -> Result<Vec<Outgoing>, aep::control::TargetError> {
    let ack = target.accept(command.key(), stamp)?;
    let [answered, resolved] = target.answered(command, applied, stamp)?;
    Ok(vec![ack, answered, resolved])
}

/// The next thing from the relay, or never when there is none.
async fn recv(relay: &mut Option<Socket>) -> Option<Inbound> {
    match relay {
        Some(socket) => socket.recv().await,
        None => std::future::pending().await,
    }
}

/// One hook's connection: its request in, the two replies out.
async fn connection(stream: UnixStream, calls: mpsc::Sender<Call>) {
    let (read, mut write) = stream.into_split();
    let mut reader = tokio::io::AsyncReadExt::take(BufReader::new(read), wire::MAX_LINE as u64);
    let mut line = String::new();
    let read = tokio::time::timeout(Duration::from_secs(10), reader.read_line(&mut line)).await;
    let request = match read {
        Ok(Ok(n)) if n > 0 => serde_json::from_str::<Request>(&line),
        _ => return,
    };
    let reply = |reply: Reply| {
        let mut line = serde_json::to_string(&reply).unwrap_or_default();
        line.push('\n');
        line
    };
    let request = match request {
        Ok(request) => request,
        Err(e) => {
            let failed = reply(Reply::Failed {
                error: format!("a request that does not read: {e}"),
            });
            let _ = write.write_all(failed.as_bytes()).await;
            return;
        }
    };
    let (recorded_tx, recorded) = oneshot::channel();
    let (decision_tx, decision) = oneshot::channel();
    let call = Call {
        request,
        recorded: recorded_tx,
        decision: decision_tx,
    };
    if calls.send(call).await.is_err() {
        return;
    }
    let first = match recorded.await {
        Ok(Ok(())) => Reply::Recorded,
        Ok(Err(error)) => Reply::Failed { error },
        Err(_) => return,
    };
    let failed = matches!(first, Reply::Failed { .. });
    if write.write_all(reply(first).as_bytes()).await.is_err() || failed {
        return;
    }
    // The hook going away closes this end, which frees the hold.
    let mut probe = [0u8; 1];
    let mut rest = reader.into_inner();
    tokio::select! {
        stdout = decision => {
            let stdout = stdout.unwrap_or_default();
            let _ = write.write_all(reply(Reply::Done { stdout }).as_bytes()).await;
        }
        _ = tokio::io::AsyncReadExt::read(&mut rest, &mut probe) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_connection_from_this_user_is_taken() {
        let (ours, _theirs) = UnixStream::pair().unwrap();
        assert!(own_user(&ours).is_ok());
    }

    #[test]
    fn the_socket_is_the_users_alone_whatever_the_umask() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("adapter.sock");
        std::fs::write(&socket, "stale").unwrap();
        let listener = listen(&socket).expect("binds");
        let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        drop(listener);
        let long = dir.path().join("x".repeat(200));
        assert!(listen(&long).is_none(), "a path past the socket limit");
    }

    /// A socket to nowhere: it never connects, so what is queued stays.
    fn nowhere(outbox: usize) -> Socket {
        let hello = hello(Role::Emitter, "test", "t/1", json!({}));
        let mut config = SocketConfig::new("http://127.0.0.1:9", None, hello);
        config.outbox = outbox;
        Socket::connect(config)
    }

    #[tokio::test]
    async fn resend_goes_on_from_the_offset_within_the_budget_and_the_queue() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("s.jsonl");
        let lines = ["{\"n\":0}", "{\"n\":1}", "{\"n\":2}", "{\"n\":3}"];
        std::fs::write(&log, lines.map(|l| format!("{l}\n")).concat()).unwrap();
        let relay = nowhere(2);
        let mut behind = Behind {
            log: log.clone(),
            from: 8,
        };
        // One line of budget: the second line goes, then the budget is spent.
        let mut budget = (1, 1 << 20);
        assert!(matches!(
            resend(&relay, &mut behind, &mut budget).unwrap(),
            Resent::Spent
        ));
        assert_eq!((behind.from, budget.0), (16, 0));
        // The queue (two lines) takes one more, then is full.
        let mut budget = (10, 1 << 20);
        assert!(matches!(
            resend(&relay, &mut behind, &mut budget).unwrap(),
            Resent::Full
        ));
        assert_eq!(behind.from, 24);
        // With room, the rest goes and the log is done.
        let relay = nowhere(8);
        assert!(matches!(
            resend(&relay, &mut behind, &mut budget).unwrap(),
            Resent::Done
        ));
        assert_eq!(behind.from, 32);
        // A line past the bytes left spends the budget and is not sent.
        behind.from = 0;
        let mut budget = (10, 4);
        assert!(matches!(
            resend(&relay, &mut behind, &mut budget).unwrap(),
            Resent::Spent
        ));
        assert_eq!(behind.from, 0);
    }

    /// A daemon over a temporary home whose relay is a socket to nowhere
    /// queueing `outbox` lines.
    fn daemon(home: &Path, outbox: usize) -> Daemon {
        Daemon::new(
            Home(home.to_owned()),
            Posture::default(),
            Some(nowhere(outbox)),
        )
    }

    /// Hands `daemon` a Claude Code hook call; its two answers.
    fn call(
        daemon: &mut Daemon,
        payload: &str,
    ) -> (
        oneshot::Receiver<Result<(), String>>,
        oneshot::Receiver<String>,
    ) {
        let (recorded_tx, recorded) = oneshot::channel();
        let (decision_tx, decision) = oneshot::channel();
        daemon.call(Call {
            request: Request {
                agent: Agent::ClaudeCode.name().to_owned(),
                payload: payload.to_owned(),
                timeout_ms: Some(60_000),
                call: None,
                serves: None,
            },
            recorded: recorded_tx,
            decision: decision_tx,
        });
        (recorded, decision)
    }

    /// The types in `session`'s log, in order.
    fn logged_types(home: &Path, session: &str) -> Vec<String> {
        let dir = home.join("logs").join(Agent::ClaudeCode.name());
        let mut types = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "jsonl") {
                for line in std::fs::read_to_string(path).unwrap().lines() {
                    let event: Value = serde_json::from_str(line).unwrap();
                    if event["session"] == session {
                        types.push(event["type"].as_str().unwrap().to_owned());
                    }
                }
            }
        }
        types
    }

    /// Records a prompt and a tool call of `s`, which fill a one-line
    /// queue: the session falls behind.
    async fn fall_behind(daemon: &mut Daemon) {
        for payload in [PROMPT, TOOL] {
            let (recorded, _) = call(daemon, payload);
            assert_eq!(recorded.await.unwrap(), Ok(()));
        }
    }

    const PROMPT: &str = r#"{"hook_event_name":"UserPromptSubmit","session_id":"s","prompt":"go"}"#;
    const ASK: &str = r#"{"hook_event_name":"PermissionRequest","session_id":"s",
        "tool_name":"Bash","tool_input":{"command":"rm -rf build"}}"#;
    const TOOL: &str = r#"{"hook_event_name":"PreToolUse","session_id":"s",
        "tool_name":"Read","tool_input":{"file_path":"a"}}"#;

    #[tokio::test]
    async fn a_request_whose_line_waits_for_room_is_held_all_the_same() {
        let home = tempfile::tempdir().unwrap();
        let mut daemon = daemon(home.path(), 1);
        daemon.linked = true;
        fall_behind(&mut daemon).await;
        assert!(daemon.behind.contains_key("s"));
        let (recorded, mut decision) = call(&mut daemon, ASK);
        assert_eq!(recorded.await.unwrap(), Ok(()));
        assert_eq!(daemon.holds.len(), 1, "the request is held");
        assert!(decision.try_recv().is_err(), "no decision yet");
        let logged = std::fs::read_to_string(
            std::fs::read_dir(home.path().join("logs/claude-code"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .unwrap(),
        )
        .unwrap();
        assert!(
            logged.contains(r#""respond_via":["control"]"#),
            "recorded answerable over control: {logged}"
        );
    }

    #[tokio::test]
    async fn calls_behind_a_parked_call_of_their_session_keep_their_order() {
        let home = tempfile::tempdir().unwrap();
        let mut daemon = daemon(home.path(), 64);
        // Just started, no hello yet: the permission is parked...
        let (mut asked, _ask_decision) = call(&mut daemon, ASK);
        assert!(asked.try_recv().is_err(), "parked");
        // ...and so is the tool call after it in the same session.
        let (mut tool, _) = call(&mut daemon, TOOL);
        assert!(tool.try_recv().is_err(), "parked behind the permission");
        // Another session's call is not held up.
        let other = TOOL.replace(r#""s""#, r#""t""#);
        let (other, _) = call(&mut daemon, &other);
        assert_eq!(other.await.unwrap(), Ok(()));
        daemon.linked = true;
        daemon.unpark();
        assert_eq!(asked.await.unwrap(), Ok(()));
        assert_eq!(tool.await.unwrap(), Ok(()));
        let types: Vec<String> = logged_types(home.path(), "s")
            .into_iter()
            .filter(|t| t == "attention.requested" || t == "tool.requested")
            .collect();
        assert_eq!(
            types,
            ["attention.requested", "tool.requested"],
            "s's calls in the order they came"
        );
    }

    #[tokio::test]
    async fn a_session_with_a_held_hook_is_never_the_one_evicted() {
        let home = tempfile::tempdir().unwrap();
        let mut daemon = daemon(home.path(), 64);
        for n in 0..MAX_SESSIONS {
            daemon.live(Agent::ClaudeCode, &format!("s{n}"));
        }
        // s0 is the longest unused, but a hook is held in it.
        let (waiter, _decision) = oneshot::channel();
        let asking = Asking::of(Agent::ClaudeCode.runtime(), ASK).unwrap();
        let now = daemon.now_ms();
        daemon
            .holds
            .hold(
                "r",
                "s0",
                Agent::ClaudeCode.runtime(),
                asking,
                now,
                60_000,
                waiter,
            )
            .unwrap();
        daemon.live(Agent::ClaudeCode, "new");
        assert_eq!(daemon.sessions.len(), MAX_SESSIONS);
        assert!(daemon.sessions.contains_key("s0"), "the held session stays");
        assert!(!daemon.sessions.contains_key("s1"), "the next oldest went");
    }

    /// [`call`], for a call waiting since `since`.
    fn call_waiting_since(
        daemon: &mut Daemon,
        payload: &str,
        since: Instant,
    ) -> oneshot::Receiver<Result<(), String>> {
        let (recorded_tx, recorded) = oneshot::channel();
        let (decision_tx, _) = oneshot::channel();
        let request = Request {
            agent: Agent::ClaudeCode.name().to_owned(),
            payload: payload.to_owned(),
            timeout_ms: None,
            call: None,
            serves: None,
        };
        let call = Call {
            request,
            recorded: recorded_tx,
            decision: decision_tx,
        };
        daemon.call_since(call, since);
        recorded
    }

    #[tokio::test]
    async fn a_session_locked_by_another_process_waits_without_stalling_the_others() {
        let home = tempfile::tempdir().unwrap();
        let mut daemon = daemon(home.path(), 64);
        daemon.linked = true;
        // Another process (a hook recording by itself) holds s's lock.
        let host = daemon.host.clone();
        let held = Files::open(&daemon.home, Agent::ClaudeCode, &host, "s").unwrap();
        let mut s_call = call_waiting_since(&mut daemon, TOOL, Instant::now());
        assert!(s_call.try_recv().is_err(), "s waits for its lock");
        let t_call = TOOL.replace(r#""s""#, r#""t""#);
        let t_call = call_waiting_since(&mut daemon, &t_call, Instant::now());
        assert_eq!(t_call.await.unwrap(), Ok(()), "t is not held up");
        // Still locked: the next tick parks it again.
        daemon.unpark();
        assert!(s_call.try_recv().is_err());
        drop(held);
        daemon.unpark();
        assert_eq!(s_call.await.unwrap(), Ok(()));
        assert_eq!(
            logged_types(home.path(), "s").last().unwrap(),
            "tool.requested"
        );
        // A lock held past the usual wait fails the call (its hook then
        // records it by itself).
        let held = Files::open(&daemon.home, Agent::ClaudeCode, &host, "s").unwrap();
        let long_ago = Instant::now() - LOCK_WAIT;
        let late = call_waiting_since(&mut daemon, TOOL, long_ago);
        let failed = late.await.unwrap().unwrap_err();
        assert!(failed.contains("lock"), "{failed}");
        drop(held);
    }

    #[tokio::test]
    async fn past_the_bound_of_sessions_behind_the_lines_stay_in_the_log_only() {
        let home = tempfile::tempdir().unwrap();
        let mut daemon = daemon(home.path(), 64);
        let log = home.path().join("a.jsonl");
        for n in 0..MAX_SESSIONS {
            daemon.send(&format!("s{n}"), &log, 0, &["{}".to_owned()]);
        }
        assert_eq!(daemon.behind.len(), MAX_SESSIONS);
        assert!(!daemon.send("one-more", &log, 0, &["{}".to_owned()]));
        assert_eq!(daemon.behind.len(), MAX_SESSIONS);
        assert!(!daemon.behind.contains_key("one-more"));
    }

    /// How many requests `session`'s state holds pending.
    fn pending_in(daemon: &Daemon, session: &str) -> usize {
        let mut files =
            Files::open(&daemon.home, Agent::ClaudeCode, &daemon.host, session).unwrap();
        files.state().pending.len()
    }

    #[tokio::test]
    async fn a_timeout_whose_session_is_locked_is_recorded_once_the_lock_is_free() {
        let home = tempfile::tempdir().unwrap();
        let mut daemon = daemon(home.path(), 64);
        daemon.linked = true;
        let (recorded, mut decision) = call(&mut daemon, ASK);
        assert_eq!(recorded.await.unwrap(), Ok(()));
        assert_eq!(daemon.holds.len(), 1);
        // A hook process recording by itself holds s's lock meanwhile.
        let host = daemon.host.clone();
        let held = Files::open(&daemon.home, Agent::ClaudeCode, &host, "s").unwrap();
        for settled in daemon.holds.tick(u64::MAX, |_| false) {
            let (settled, waiter) = unwaited(settled);
            let _ = waiter.send(String::new());
            daemon.record_ending(settled, Instant::now());
        }
        assert_eq!(
            decision.try_recv().unwrap(),
            "",
            "the hook is woken at once"
        );
        assert_eq!(daemon.parked.len(), 1, "the ending waits for the lock");
        // A later call of the session waits behind it.
        let mut later = call_waiting_since(&mut daemon, TOOL, Instant::now());
        assert!(later.try_recv().is_err());
        drop(held);
        daemon.unpark();
        assert_eq!(later.await.unwrap(), Ok(()));
        let types: Vec<String> = logged_types(home.path(), "s")
            .into_iter()
            .filter(|t| t.starts_with("attention.") || t == "tool.requested")
            .collect();
        assert_eq!(
            types,
            ["attention.requested", "attention.timeout", "tool.requested"]
        );
        assert_eq!(pending_in(&daemon, "s"), 0);
    }

    #[tokio::test]
    async fn a_request_whose_line_is_in_the_log_only_is_not_held() {
        let home = tempfile::tempdir().unwrap();
        let mut daemon = daemon(home.path(), 1);
        daemon.linked = true;
        let log = home.path().join("a.jsonl");
        for n in 0..MAX_SESSIONS {
            daemon.fall_behind(&format!("x{n}"), &log, 0);
        }
        // Another session fills the one-line queue.
        let (r, _) = call(&mut daemon, &PROMPT.replace(r#""s""#, r#""t""#));
        assert_eq!(r.await.unwrap(), Ok(()));
        let (recorded, decision) = call(&mut daemon, ASK);
        assert_eq!(recorded.await.unwrap(), Ok(()));
        assert!(!daemon.behind.contains_key("s"), "in the log only");
        assert!(daemon.holds.is_empty(), "nobody could answer it");
        assert_eq!(decision.await.unwrap(), "", "back to the vendor's dialog");
    }

    #[tokio::test]
    async fn holds_whose_lines_are_given_up_go_back_to_the_vendor() {
        let home = tempfile::tempdir().unwrap();
        let mut daemon = daemon(home.path(), 1);
        daemon.linked = true;
        fall_behind(&mut daemon).await;
        let (recorded, decision) = call(&mut daemon, ASK);
        assert_eq!(recorded.await.unwrap(), Ok(()));
        assert_eq!(
            daemon.holds.len(),
            1,
            "behind: held, its line is re-sent later"
        );
        // This reconnect's budget is spent: the lines stay in the log only.
        daemon.budget = (0, 0);
        daemon.catch_up();
        assert!(daemon.holds.is_empty());
        assert_eq!(decision.await.unwrap(), "");
        let types = logged_types(home.path(), "s");
        assert_eq!(types.last().map(String::as_str), Some("attention.resolved"));
        assert_eq!(pending_in(&daemon, "s"), 0);
    }

    #[tokio::test]
    async fn when_a_sessions_first_call_gives_up_the_calls_behind_it_do_too() {
        let home = tempfile::tempdir().unwrap();
        let mut daemon = daemon(home.path(), 64);
        daemon.linked = true;
        let host = daemon.host.clone();
        let held = Files::open(&daemon.home, Agent::ClaudeCode, &host, "s").unwrap();
        let long_ago = Instant::now() - LOCK_WAIT + Duration::from_millis(100);
        let first = call_waiting_since(&mut daemon, PROMPT, long_ago);
        let second = call_waiting_since(&mut daemon, TOOL, Instant::now());
        assert_eq!(daemon.parked.len(), 2);
        std::thread::sleep(Duration::from_millis(150));
        daemon.unpark();
        let first = first.await.unwrap().unwrap_err();
        assert!(first.contains("held by another process"), "{first}");
        assert!(!first.contains("0ns"), "the real wait is said: {first}");
        let second = second.await.unwrap().unwrap_err();
        assert!(second.contains("earlier call"), "{second}");
        assert!(daemon.parked.is_empty());
        drop(held);
    }

    #[tokio::test]
    async fn past_the_bound_of_parked_work_a_call_goes_back_to_its_hook() {
        let home = tempfile::tempdir().unwrap();
        let mut daemon = daemon(home.path(), 64);
        daemon.linked = true;
        let host = daemon.host.clone();
        let held = Files::open(&daemon.home, Agent::ClaudeCode, &host, "s").unwrap();
        let mut waiting = Vec::new();
        for _ in 0..MAX_PARKED {
            waiting.push(call_waiting_since(&mut daemon, TOOL, Instant::now()));
        }
        assert_eq!(daemon.parked.len(), MAX_PARKED);
        let over = call_waiting_since(&mut daemon, TOOL, Instant::now());
        let over = over.await.unwrap().unwrap_err();
        assert!(over.contains("waiting already"), "{over}");
        assert_eq!(daemon.parked.len(), MAX_PARKED);
        drop(held);
    }

    #[tokio::test]
    async fn an_answer_whose_session_is_locked_waits_for_the_lock_and_applies() {
        let home = tempfile::tempdir().unwrap();
        let mut daemon = daemon(home.path(), 64);
        daemon.linked = true;
        let (recorded, decision) = call(&mut daemon, ASK);
        assert_eq!(recorded.await.unwrap(), Ok(()));
        let dir = home.path().join("logs").join(Agent::ClaudeCode.name());
        let log = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .unwrap();
        let request = std::fs::read_to_string(log)
            .unwrap()
            .lines()
            .map(|l| aep::Event::from_json(l).unwrap())
            .find(|e| e.type_ == "attention.requested")
            .unwrap();
        let mut sender = aep::control::Sender::new(Identity::new("urn:aep:test:person", "person"));
        let mut answer = aep::Answer::new();
        answer.option = Some("allow".to_owned());
        let respond = sender
            .respond(&request, answer, aep_client::session::now_ms())
            .unwrap()
            .into_line();
        let host = daemon.host.clone();
        let held = Files::open(&daemon.home, Agent::ClaudeCode, &host, "s").unwrap();
        daemon.command(&respond);
        assert_eq!(daemon.parked.len(), 1, "the answer waits for the lock");
        assert_eq!(daemon.holds.len(), 1);
        drop(held);
        daemon.unpark();
        let decided = decision.await.unwrap();
        assert!(decided.contains(r#""behavior":"allow""#), "{decided}");
        let types = logged_types(home.path(), "s");
        assert!(
            types.ends_with(&[
                "control.accepted".to_owned(),
                "attention.answered".to_owned(),
                "attention.resolved".to_owned()
            ]),
            "{types:?}"
        );
    }
}
