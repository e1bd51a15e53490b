//! One hook call recorded: the payload mapped (AEP-0002 Annex A), each
//! event stamped with the session's identity and next position, and the
//! lines appended to the session's log in one write, all under the
//! session's lock, so concurrent hook processes never share or reorder a
//! `seq`.

use std::io::Write;
use std::path::{Path, PathBuf};

use aep::control::{rfc3339, Ids, Stamp};
use aep::{Category, Event};
use aep_adapters::{MappedEvent, Mapper};
use aep_client::session::{now_ms, source_uri, Attrs, SessionEmitter};
use serde_json::Value;

use super::agent::Agent;
use super::state::{Held, SessionState, LOCK_WAIT};
use crate::common::error::{Context, Error, Result};
use crate::common::names;
use aep_adapters::runtime::pending as attention;

/// Where the hook keeps its files: `$AEP_HOME`, else `~/.aep`.
#[derive(Debug, Clone)]
pub struct Home(pub PathBuf);

impl Home {
    /// The home the environment names.
    pub fn from_env() -> Result<Home> {
        if let Some(home) = std::env::var_os("AEP_HOME").filter(|h| !h.is_empty()) {
            return Ok(Home(PathBuf::from(home)));
        }
        match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            Some(home) => Ok(Home(PathBuf::from(home).join(".aep"))),
            None => Err("neither AEP_HOME nor HOME is set".into()),
        }
    }

    /// The agent's session logs.
    pub fn logs(&self, agent: Agent) -> PathBuf {
        self.0.join("logs").join(agent.name())
    }

    /// The agent's session states.
    pub fn state(&self, agent: Agent) -> PathBuf {
        self.0.join("state").join(agent.name())
    }
}

/// The size past which a diagnostic log (`hook.log`, `adapter.log`) is
/// moved aside to `<name>.1` (replacing the one before) when it is next
/// opened: two files at most, each about this big.
pub const LOG_CAP: u64 = 8 << 20;

/// Opens a diagnostic log for appending, moving it aside first when it
/// has reached `cap` bytes.
pub fn open_capped(path: &Path, cap: u64) -> std::io::Result<std::fs::File> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() >= cap) {
        let mut aside = path.as_os_str().to_owned();
        aside.push(".1");
        std::fs::rename(path, aside)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}

/// How a recorded `attention.requested` can be answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requests {
    /// In the vendor's own dialog only: `respond_via: ["oob"]`.
    OutOfBand,
    /// Also by a `control.attention.respond`, for a request the caller
    /// holds open over a relay connection (the mapping's `["control"]`).
    Control,
}

/// What recording one call did.
#[derive(Debug)]
pub struct Recorded {
    /// The events, in `seq` order.
    pub events: Vec<Event>,
    /// The same events as lines.
    pub lines: Vec<String>,
    /// The log they were appended to.
    pub log: PathBuf,
    /// The byte offset in the log where the lines start.
    pub at: u64,
    /// Why the session started a new epoch, when it did.
    pub fresh: Option<String>,
    /// The session id.
    pub session: String,
    /// The ids of the requests the call opened.
    pub opened: Vec<String>,
    /// The ids of the requests the call closed (dismissed).
    pub closed: Vec<String>,
}

/// Where [`Files::commit`] put the lines.
#[derive(Debug)]
pub struct Committed {
    /// The session's log.
    pub log: PathBuf,
    /// The byte offset in the log where the lines start (the log's
    /// length when none were written).
    pub at: u64,
    /// Why the session started a new epoch, when it did.
    pub fresh: Option<String>,
}

/// A session's files, held under its lock: the state, and the log the
/// lines go to on [`commit`](Files::commit).
#[derive(Debug)]
pub struct Files {
    held: Held,
    log: PathBuf,
    ids: Ids,
    /// The session's `source`.
    pub source: String,
    /// The session id.
    pub session: String,
}

/// Why a session's files could not be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenError {
    /// Another process held the session's lock past the wait.
    Busy(String),
    /// Anything else.
    Failed(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Busy(why) | OpenError::Failed(why) => f.write_str(why),
        }
    }
}

impl From<OpenError> for Error {
    fn from(e: OpenError) -> Error {
        Error::msg(e)
    }
}

impl Files {
    /// Takes the lock of `agent`'s `session`, waiting at most
    /// [`LOCK_WAIT`] for another process of the session, and reads its
    /// state.
    pub fn open(home: &Home, agent: Agent, host: &str, session: &str) -> Result<Files> {
        Ok(Files::open_within(home, agent, host, session, LOCK_WAIT)?)
    }

    /// [`Files::open`], waiting at most `wait` for the lock (zero: one
    /// try).
    pub fn open_within(
        home: &Home,
        agent: Agent,
        host: &str,
        session: &str,
        wait: std::time::Duration,
    ) -> Result<Files, OpenError> {
        let source = source_uri(host, agent.name(), Some(session));
        let name = names::encode(&source, session);
        let log = home.logs(agent).join(format!("{name}.jsonl"));
        let held = Held::acquire(&home.state(agent), &name, wait).map_err(|e| {
            let why = format!("cannot take the session's state: {e}");
            match e.kind() {
                std::io::ErrorKind::TimedOut => OpenError::Busy(why),
                _ => OpenError::Failed(why),
            }
        })?;
        Ok(Files {
            held,
            log,
            ids: Ids::new(),
            source,
            session: session.to_owned(),
        })
    }

    /// The session's state.
    pub fn state(&mut self) -> &mut SessionState {
        &mut self.held.state
    }

    /// The next position of the session, taken.
    pub fn stamp(&mut self) -> Stamp {
        let now = now_ms();
        let state = &mut self.held.state;
        let seq = state.next_seq;
        state.next_seq += 1;
        Stamp::new(self.ids.next(now), rfc3339(now), seq, state.epoch)
    }

    /// Saves the state, then appends `lines` to the log in one write, and
    /// lets go of the lock. The counter moves before the lines land: a
    /// crash between the two leaves a gap in `seq`, never a position used
    /// twice.
    pub fn commit(mut self, lines: &[String]) -> Result<Committed> {
        self.held
            .save()
            .context("cannot save the session's state")?;
        let at = if lines.is_empty() {
            std::fs::metadata(&self.log).map_or(0, |m| m.len())
        } else {
            append(&self.log, lines)
                .with_context(|| format!("cannot append to {}", self.log.display()))?
        };
        Ok(Committed {
            log: self.log,
            at,
            fresh: self.held.fresh.take(),
        })
    }
}

/// Records one hook call of `agent`: `text` is the payload as read, and
/// `call` the id the hook gave the call. A call whose id the session
/// already holds was recorded (by the daemon, or by its hook when it gave
/// up on the daemon) and records nothing again.
pub fn record(
    agent: Agent,
    mapper: &Mapper,
    home: &Home,
    host: &str,
    text: &str,
    call: Option<&str>,
    requests: Requests,
) -> Result<Recorded> {
    let session = session_of(text)?;
    let files = Files::open(home, agent, host, &session)?;
    record_in(files, agent, mapper, host, text, call, requests)
}

/// The session a hook payload names.
pub fn session_of(text: &str) -> Result<String> {
    let payload: Value = serde_json::from_str(text).context("the hook's input is not JSON")?;
    payload
        .get("session_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .context("the hook's input names no `session_id` (a non-empty string)")
}

/// [`record`] in the session's `files`, taken by the caller (at its own
/// wait for the lock).
pub fn record_in(
    mut files: Files,
    agent: Agent,
    mapper: &Mapper,
    host: &str,
    text: &str,
    call: Option<&str>,
    requests: Requests,
) -> Result<Recorded> {
    let payload: Value = serde_json::from_str(text).context("the hook's input is not JSON")?;
    let session = files.session.clone();
    let session = session.as_str();
    let hook = payload
        .get("hook_event_name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mapped = mapper.map(text).map_err(|e| Error::msg(e.message()))?;

    if let Some(call) = call {
        if !files.state().first_record_of(call) {
            let session = files.session.clone();
            let Committed { log, at, fresh } = files.commit(&[])?;
            return Ok(Recorded {
                events: Vec::new(),
                lines: Vec::new(),
                log,
                at,
                fresh,
                session,
                opened: Vec::new(),
                closed: Vec::new(),
            });
        }
    }
    let state = files.state();
    let turn = agent.run_for(hook, &payload, &mut state.run);
    let opened_key = attention::opens(hook, &payload);
    let opening = mapped
        .iter()
        .filter(|e| e.type_ == "attention.requested")
        .count();
    let closing = attention::close(
        &mut state.pending,
        &attention::closes(hook, &payload),
        opening,
        now_ms(),
        mapper.posture().ceiling_for("attention.answered"),
    );
    let closed: Vec<String> = closing.iter().filter_map(|e| e.subject.clone()).collect();
    // Closing events first, each in the run it belongs to.
    let mut planned: Vec<(MappedEvent, Option<String>)> = Vec::new();
    if let Some(stale) = turn.interrupted {
        planned.push((interrupted(), Some(stale)));
    }
    planned.extend(closing.into_iter().map(|e| (e, turn.run.clone())));
    planned.extend(mapped.into_iter().map(|e| (e, turn.run.clone())));

    let (epoch, next_seq) = (state.epoch, state.next_seq);
    let mut emitter =
        SessionEmitter::new(&files.source, agent.name(), session, epoch).starting_at(next_seq);
    let agent_source = source_uri(host, agent.name(), None);
    let mut ids = Ids::new();
    let mut events = Vec::with_capacity(planned.len());
    let mut opened = Vec::new();
    for (mut event, run) in planned {
        let request = event.type_ == "attention.requested";
        let fields = event
            .data
            .get("fields")
            .and_then(|f| serde_json::from_value(f.clone()).ok());
        if requests == Requests::OutOfBand {
            attention::out_of_band(&mut event);
        }
        let event = if event.agent_scoped() {
            agent_event(&mut ids, &agent_source, agent, event)
        } else {
            session_event(&mut emitter, run.as_deref(), event)
        }
        .context("an event did not validate")?;
        if request {
            files.state().pending.push(attention::Pending {
                id: event.id.clone(),
                at_ms: now_ms(),
                key: opened_key
                    .clone()
                    .unwrap_or_else(|| format!("event:{}", event.id)),
                fields,
            });
            opened.push(event.id.clone());
        }
        events.push(event);
    }
    files.state().next_seq = emitter.next_seq();
    let lines = events
        .iter()
        .map(serde_json::to_string)
        .collect::<Result<Vec<_>, _>>()?;
    let session = files.session.clone();
    let Committed { log, at, fresh } = files.commit(&lines)?;
    Ok(Recorded {
        events,
        lines,
        log,
        at,
        fresh,
        session,
        opened,
        closed,
    })
}

/// `run.cancelled` by the user, for a turn a new prompt found still open
/// (the turn was interrupted: its vendor sends no end for it).
fn interrupted() -> MappedEvent {
    let mut data = aep::Object::new();
    data.insert("by".into(), Value::from("user"));
    MappedEvent {
        type_: "run.cancelled".into(),
        data,
        subject: None,
        step: None,
        capture: aep::Capture::Metadata,
    }
}

/// A session-scoped event at the session's next position; `session.*`
/// events stand outside runs.
fn session_event(
    emitter: &mut SessionEmitter,
    run: Option<&str>,
    event: MappedEvent,
) -> Result<Event, aep::Violations> {
    let in_run = Category::of(&event.type_) != Some(Category::Session);
    let attrs = Attrs {
        run: run.filter(|_| in_run).map(str::to_owned),
        subject: event.subject,
        step: event.step,
        capture: Some(event.capture),
        ..Attrs::default()
    };
    emitter.raw(
        &event.type_,
        Some(aep::Data::from_object(&event.data)),
        attrs,
    )
}

/// An agent-scoped event (`agent.*`): no session, no position.
fn agent_event(
    ids: &mut Ids,
    source: &str,
    agent: Agent,
    event: MappedEvent,
) -> Result<Event, aep::Violations> {
    let now = now_ms();
    let mut built = Event::new(
        ids.next(now),
        event.type_,
        rfc3339(now),
        source,
        agent.name(),
    );
    built.data = Some(aep::Data::from_object(&event.data));
    built.subject = event.subject;
    built.capture = Some(event.capture);
    built.validate()?;
    Ok(built)
}

/// Appends `lines` to `path` in one write (the file opened for append,
/// its directory created private to the user); the offset they start at
/// (the caller holds the session's lock, so no other writer moves it).
fn append(path: &Path, lines: &[String]) -> std::io::Result<u64> {
    if let Some(dir) = path.parent() {
        private_dir(dir)?;
    }
    let mut bytes = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for line in lines {
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let at = file.metadata()?.len();
    file.write_all(&bytes)?;
    Ok(at)
}

/// Creates `dir` and its parents, readable by the user only where this
/// creates them (the logs hold prompts and question labels).
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aep_adapters::Posture;

    #[test]
    fn a_call_recorded_by_the_daemon_and_its_hook_is_written_once() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home(dir.path().to_path_buf());
        let agent = Agent::ClaudeCode;
        let mapper = Mapper::new(agent.vocabulary(), None, Posture::default()).unwrap();
        let prompt = r#"{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt":"hi"}"#;
        let tool = r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}"#;
        let record = |text: &str, call: &str| {
            record(
                agent,
                &mapper,
                &home,
                "host",
                text,
                Some(call),
                Requests::OutOfBand,
            )
            .unwrap()
        };
        let first = record(prompt, "c1");
        assert!(!first.lines.is_empty());
        // The same call again (the hook gave up on a slow daemon): nothing.
        let again = record(prompt, "c1");
        assert!(again.events.is_empty() && again.lines.is_empty());
        // Another call of the same shape is another call.
        let next = record(tool, "c2");
        assert!(!next.lines.is_empty());
        let log = std::fs::read_to_string(&first.log).unwrap();
        let written: Vec<&str> = log.lines().collect();
        let expected: Vec<&str> = first
            .lines
            .iter()
            .chain(&next.lines)
            .map(String::as_str)
            .collect();
        assert_eq!(written, expected);
    }

    #[test]
    fn a_full_diagnostic_log_is_moved_aside_once_it_is_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("hook.log");
        let write = |text: &str| open_capped(&log, 8).unwrap().write_all(text.as_bytes());
        write("12345").unwrap();
        write("678").unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "12345678");
        write("abc").unwrap();
        write("def").unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "abcdef");
        let aside = dir.path().join("hook.log.1");
        assert_eq!(std::fs::read_to_string(&aside).unwrap(), "12345678");
        write("gh").unwrap();
        write("!").unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "!");
        assert_eq!(std::fs::read_to_string(&aside).unwrap(), "abcdefgh");
    }
}
