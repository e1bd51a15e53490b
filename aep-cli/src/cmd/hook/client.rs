//! The hook's side of the daemon: connect to it (starting it when it is
//! not running), hand it the call, print its decision. Every wait is
//! bounded; when the daemon cannot be reached or started, the caller
//! records the call itself.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::agent::Agent;
use super::record::{private_dir, Home};
use super::wire::{self, Reply, Request};

/// How long a started daemon may take to listen.
const START_WAIT: Duration = Duration::from_secs(3);
/// How much longer than a person's time the hook waits for a decision.
const DECISION_SLACK: Duration = Duration::from_secs(5);
/// How long the daemon may take to record a call.
const RECORD_WAIT: Duration = Duration::from_secs(10);

/// What the daemon did with a call.
#[derive(Debug)]
pub enum Outcome {
    /// Recorded; the hook's standard output (empty: no decision).
    Done(String),
    /// Recorded, and no decision came within the bound.
    NoDecision(String),
    /// The daemon refused the call; why (recording it again would fail
    /// the same way).
    Failed(String),
    /// The daemon could not be reached or did not record the call; why.
    Unreachable(String),
}

/// Hands one call to the daemon, which holds it at most `attention` for
/// a person's answer; the hook waits a little longer for the decision.
pub fn call(home: &Home, agent: Agent, payload: &str, attention: Duration) -> Outcome {
    let stream = match connect_or_start(home) {
        Ok(stream) => stream,
        Err(why) => return Outcome::Unreachable(why),
    };
    match exchange(stream, agent, payload, attention) {
        Ok(outcome) => outcome,
        Err(why) => Outcome::Unreachable(why),
    }
}

fn exchange(
    mut stream: UnixStream,
    agent: Agent,
    payload: &str,
    attention: Duration,
) -> Result<Outcome, String> {
    let request = Request {
        agent: agent.name().to_owned(),
        payload: payload.to_owned(),
        timeout_ms: Some(u64::try_from(attention.as_millis()).unwrap_or(u64::MAX)),
    };
    let decision_wait = attention + DECISION_SLACK;
    let mut line = serde_json::to_vec(&request).map_err(|e| e.to_string())?;
    line.push(b'\n');
    stream
        .set_write_timeout(Some(RECORD_WAIT))
        .and_then(|()| stream.write_all(&line))
        .map_err(|e| format!("cannot hand the call to the daemon: {e}"))?;
    let mut reader = BufReader::new(stream);
    match read_reply(&mut reader, RECORD_WAIT) {
        Ok(Reply::Recorded) => {}
        Ok(Reply::Failed { error }) => return Ok(Outcome::Failed(error)),
        Ok(Reply::Done { .. }) => return Err("the daemon answered out of turn".into()),
        Err(why) => return Err(format!("the daemon did not record the call: {why}")),
    }
    match read_reply(&mut reader, decision_wait) {
        Ok(Reply::Done { stdout }) => Ok(Outcome::Done(stdout)),
        Ok(other) => Ok(Outcome::NoDecision(format!("unexpected reply {other:?}"))),
        Err(why) => Ok(Outcome::NoDecision(why)),
    }
}

fn read_reply(reader: &mut BufReader<UnixStream>, wait: Duration) -> Result<Reply, String> {
    reader
        .get_ref()
        .set_read_timeout(Some(wait.max(Duration::from_millis(1))))
        .map_err(|e| e.to_string())?;
    let mut line = String::new();
    let read = reader
        .by_ref()
        .take(wire::MAX_LINE as u64)
        .read_line(&mut line)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                format!("no answer within {wait:?}")
            }
            _ => e.to_string(),
        })?;
    if read == 0 {
        return Err("the daemon closed the connection".into());
    }
    serde_json::from_str(&line).map_err(|e| format!("a reply that does not read: {e}"))
}

/// Connects to the daemon, starting it first when nobody listens.
fn connect_or_start(home: &Home) -> Result<UnixStream, String> {
    let socket = wire::socket_path(home);
    if let Ok(stream) = UnixStream::connect(&socket) {
        return Ok(stream);
    }
    start(home)?;
    let deadline = Instant::now() + START_WAIT;
    loop {
        match UnixStream::connect(&socket) {
            Ok(stream) => return Ok(stream),
            Err(e) if Instant::now() >= deadline => {
                return Err(format!(
                    "the daemon did not listen on {} within {START_WAIT:?}: {e}",
                    socket.display()
                ))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Starts `aep adapter serve` in its own process group (so the vendor's
/// end of the hook does not end it), its standard error appended to
/// `logs/adapter.log`.
fn start(home: &Home) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let program = std::env::current_exe().map_err(|e| format!("cannot find aep: {e}"))?;
    let logs = home.0.join("logs");
    private_dir(&logs).map_err(|e| format!("cannot create {}: {e}", logs.display()))?;
    let log = open_log(&logs.join("adapter.log"))?;
    Command::new(program)
        .args(["adapter", "serve"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .process_group(0)
        .spawn()
        .map(drop)
        .map_err(|e| format!("cannot start the daemon: {e}"))
}

fn open_log(path: &Path) -> Result<std::fs::File, String> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))
}
