//! The state projection: a fold of events into per-session state, plus the
//! protocol violations the fold surfaces.
//!
//! The rules and the JSON shape are those of the published AEP SDKs'
//! projection, so a snapshot serializes to the same JSON they produce:
//!
//! - **Dedupe** on `(source, id)` (AEP-0001 §7 rule 4). A repeat that is the
//!   same event, compared as canonical JSON (member order and number
//!   spelling do not matter), is dropped silently; a repeat naming a
//!   different event is an `id-collision` and is dropped, the first stays.
//! - **Scope.** Command events (`control.attention.respond`,
//!   `control.cancel|pause|resume`, vendor `x.*.control.*`) and `agent.*`
//!   events are deduplicated but fold no state; an event without `session`
//!   folds none either. Sessions are keyed `(source, session)`
//!   (AEP-0001 §5.2): one session string from two emitters is two sessions.
//! - **Runs** (AEP-0002 §2 convention 5). `run.started` records a run
//!   (the first wins); `run.finished|failed|cancelled` sets its status and
//!   end, and a terminal for a run never seen starting still records it
//!   (`started: null`). A second terminal for a closed run is
//!   `run-terminal-exclusivity`; the first status stays.
//! - **Pending attention** (AEP-0002 §7). `attention.requested` adds
//!   `{id, kind, since}`; `attention.resolved` or `attention.timeout` whose
//!   `subject` names it removes it; `attention.answered` does not.
//! - **Session lifecycle.** The first `session.started` sets `started`.
//!   `session.ended` with requests pending is `ended-with-pending-attention`
//!   (with the count); a second `session.ended` is
//!   `session-terminal-exclusivity`, and the first end stays.
//! - **Position** (AEP-0001 §7). Each event with `seq` moves the position to
//!   `(epoch ?? 0, seq)`; an epoch lower than the last is `epoch-regression`,
//!   a seq not above the last within one epoch is `seq-regression`.
//!
//! Where Rust and the SDKs' JavaScript could differ, the SDKs' behaviour is
//! kept: sessions and batch groups sort by UTF-16 code units (JavaScript's
//! string order), numbers compare by value in the canonical form (`1` and
//! `1.0` are one number). Two deliberate differences: integers beyond 2⁵³
//! compare exactly (JavaScript would round them), and the dedupe memory is
//! a 64-bit fingerprint of the canonical form rather than its text, which
//! takes a different event for a redelivery with probability about 2⁻⁶⁴.
//!
//! [`read`] reads a line the way the fold does: by the attributes it
//! reads, so a line the envelope refuses for another reason still folds.
//!
//! [`Projection`] folds in arrival order; [`project`] first repairs the
//! order of a complete capture (see there). Sessions and runs are state the
//! projection keeps; events are not kept, only a fingerprint per seen
//! `(source, id)` (a 16-byte key and an 8-byte fingerprint, 29 to 58 bytes
//! per id with the hash table's overhead).
//!
//! ```
//! use aep::projection::project;
//! use aep::Event;
//!
//! let events: Vec<Event> = [
//!     r#"{"aep":"0.1","id":"e1","type":"run.started","time":"2026-12-01T10:00:00Z","source":"urn:a","agent":"a","session":"s","run":"r","seq":1}"#,
//!     r#"{"aep":"0.1","id":"e2","type":"run.finished","time":"2026-12-01T10:00:05Z","source":"urn:a","agent":"a","session":"s","run":"r","seq":2}"#,
//! ]
//! .iter()
//! .map(|line| serde_json::from_str(line).unwrap())
//! .collect();
//! let state = project(&events);
//! assert_eq!(
//!     serde_json::to_value(&state).unwrap(),
//!     serde_json::json!({
//!         "sessions": [{
//!             "source": "urn:a", "session": "s", "agent": "a",
//!             "started": null, "ended": null,
//!             "position": {"epoch": 0, "seq": 2},
//!             "runs": [{"run": "r", "status": "finished",
//!                       "started": "2026-12-01T10:00:00Z", "ended": "2026-12-01T10:00:05Z"}],
//!             "pending": []
//!         }],
//!         "violations": []
//!     })
//! );
//! ```

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use aep_types::{Event, RegisteredType, Scope};

use crate::fingerprint::{self, KeyMap, Seen, SeenSet};

mod lenient;
pub use lenient::{read, Foldable, Unreadable};

/// An incremental fold of events into per-session state: [`apply`]
/// one event at a time in arrival order, [`snapshot`] at any time.
///
/// [`apply`]: Projection::apply
/// [`snapshot`]: Projection::snapshot
#[derive(Debug, Default)]
pub struct Projection {
    seen: SeenSet,
    sessions: KeyMap<Session>,
    violations: Vec<Violation>,
    /// The position the last event with `seq` moved its session from.
    previous_position: Option<Position>,
}

/// One session's mutable state.
#[derive(Debug)]
struct Session {
    source: String,
    session: String,
    agent: String,
    started: Option<String>,
    ended: Option<String>,
    position: Option<Position>,
    /// Runs in fold order, and where each run is in that list.
    runs: Vec<Run>,
    run_index: HashMap<String, usize>,
    /// Pending requests in fold order.
    pending: Vec<PendingAttention>,
    /// Their ids: a request or a resolution looks the list up only when
    /// it holds the id, so many requests fold in linear time.
    pending_ids: HashSet<String>,
}

/// What [`Projection::fold`] did with an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Folded {
    /// A new event; it was folded.
    New,
    /// A redelivery of an event already folded; dropped.
    Duplicate,
    /// A different event under a `(source, id)` already seen; dropped and
    /// recorded as `id-collision`.
    Collision,
}

impl Projection {
    /// An empty projection.
    pub fn new() -> Self {
        Projection::default()
    }

    /// Folds one event, in arrival order. Ordering faults surface as
    /// violations; see the [module documentation](self) for every rule.
    pub fn apply(&mut self, event: &Event) {
        self.fold(event);
    }

    /// [`apply`](Projection::apply), saying whether the event was new.
    pub(crate) fn fold(&mut self, event: &Event) -> Folded {
        self.fold_fingerprinted(event, fingerprint::canonical_event(event))
    }

    /// [`fold`](Projection::fold) with the event's canonical fingerprint
    /// already computed (it reads no state, so it can be computed apart).
    pub(crate) fn fold_fingerprinted(
        &mut self,
        event: &Event,
        canonical: fingerprint::Canonical,
    ) -> Folded {
        let key = fingerprint::key(&event.source, &event.id);
        match self.seen.check(key, canonical) {
            Seen::New => {}
            Seen::Repeat => return Folded::Duplicate,
            Seen::Collision => {
                self.violations.push(Violation::IdCollision {
                    source: event.source.clone(),
                    id: event.id.clone(),
                });
                return Folded::Collision;
            }
        }
        if is_command(&event.type_) || event.type_.starts_with("agent.") {
            return Folded::New;
        }
        let Some(session_id) = &event.session else {
            return Folded::New;
        };
        let source = &event.source;
        let s = self
            .sessions
            .entry(fingerprint::key(source, session_id))
            .or_insert_with(|| Session {
                source: source.clone(),
                session: session_id.clone(),
                agent: event.agent.clone(),
                started: None,
                ended: None,
                position: None,
                runs: Vec::new(),
                run_index: HashMap::new(),
                pending: Vec::new(),
                pending_ids: HashSet::new(),
            });
        let violations = &mut self.violations;
        let here = || (source.clone(), session_id.clone());

        // Runs: the first start wins; a terminal closes an open run, records
        // a run never seen starting, and is a violation on a closed run.
        if let Some(run) = &event.run {
            if event.type_ == "run.started" && !s.run_index.contains_key(run) {
                s.add_run(Run {
                    run: run.clone(),
                    status: RunStatus::Running,
                    started: Some(event.time.clone()),
                    ended: None,
                });
            }
            if let Some(terminal) = RunStatus::terminal(&event.type_) {
                match s.run_index.get(run) {
                    None => s.add_run(Run {
                        run: run.clone(),
                        status: terminal,
                        started: None,
                        ended: Some(event.time.clone()),
                    }),
                    Some(&i) if s.runs[i].status != RunStatus::Running => {
                        let (source, session) = here();
                        violations.push(Violation::RunTerminalExclusivity {
                            source,
                            session,
                            run: run.clone(),
                        });
                    }
                    Some(&i) => {
                        s.runs[i].status = terminal;
                        s.runs[i].ended = Some(event.time.clone());
                    }
                }
            }
        }

        // Pending attention: only the emitter's resolution or timeout clears.
        match event.type_.as_str() {
            "attention.requested" => {
                let entry = PendingAttention {
                    id: event.id.clone(),
                    kind: request_kind(event),
                    since: event.time.clone(),
                };
                if s.pending_ids.insert(event.id.clone()) {
                    s.pending.push(entry);
                } else if let Some(slot) = s.pending.iter_mut().find(|p| p.id == event.id) {
                    *slot = entry;
                }
            }
            "attention.resolved" | "attention.timeout" => {
                if let Some(subject) = &event.subject {
                    if s.pending_ids.remove(subject) {
                        s.pending.retain(|p| &p.id != subject);
                    }
                }
            }
            _ => {}
        }

        // Session lifecycle.
        match event.type_.as_str() {
            "session.started" if s.started.is_none() => s.started = Some(event.time.clone()),
            "session.ended" => {
                if !s.pending.is_empty() {
                    let (source, session) = here();
                    violations.push(Violation::EndedWithPendingAttention {
                        source,
                        session,
                        pending: s.pending.len() as u64,
                    });
                }
                if s.ended.is_some() {
                    let (source, session) = here();
                    violations.push(Violation::SessionTerminalExclusivity { source, session });
                } else {
                    s.ended = Some(event.time.clone());
                }
            }
            _ => {}
        }

        // Position: the last `(epoch ?? 0, seq)`, whatever its order.
        if let Some(seq) = event.seq {
            let epoch = event.epoch.unwrap_or(0);
            self.previous_position = s.position;
            if let Some(last) = s.position {
                let (source, session) = here();
                let id = event.id.clone();
                if epoch < last.epoch {
                    violations.push(Violation::EpochRegression {
                        source,
                        session,
                        id,
                    });
                } else if epoch == last.epoch && seq <= last.seq {
                    violations.push(Violation::SeqRegression {
                        source,
                        session,
                        id,
                    });
                }
            }
            s.position = Some(Position { epoch, seq });
        }
        Folded::New
    }

    /// Takes the violations recorded so far, leaving none.
    pub(crate) fn take_violations(&mut self) -> std::vec::Drain<'_, Violation> {
        self.violations.drain(..)
    }

    /// The ids of the attention requests pending in a session, in fold
    /// order.
    pub(crate) fn pending_ids(&self, source: &str, session: &str) -> Vec<&str> {
        self.sessions
            .get(&fingerprint::key(source, session))
            .map(|s| s.pending.iter().map(|p| p.id.as_str()).collect())
            .unwrap_or_default()
    }

    /// The session's position before the last event with `seq` moved it:
    /// what an `epoch-regression` or `seq-regression` went back from.
    pub(crate) fn previous_position(&self) -> Option<Position> {
        self.previous_position
    }

    /// The projected state so far: sessions sorted by `(source, session)`,
    /// runs, pending requests and violations in fold order. The snapshot is
    /// a copy; later [`apply`](Projection::apply) calls do not change it.
    pub fn snapshot(&self) -> Snapshot {
        let mut sorted: Vec<&Session> = self.sessions.values().collect();
        sorted.sort_by(|a, b| {
            utf16_cmp(&a.source, &b.source).then_with(|| utf16_cmp(&a.session, &b.session))
        });
        let sessions = sorted
            .into_iter()
            .map(|s| SessionState {
                source: s.source.clone(),
                session: s.session.clone(),
                agent: s.agent.clone(),
                started: s.started.clone(),
                ended: s.ended.clone(),
                position: s.position,
                runs: s.runs.clone(),
                pending: s.pending.clone(),
            })
            .collect();
        Snapshot {
            sessions,
            violations: self.violations.clone(),
        }
    }
}

impl Session {
    fn add_run(&mut self, run: Run) {
        self.run_index.insert(run.run.clone(), self.runs.len());
        self.runs.push(run);
    }
}

/// The batch projection of a complete capture: the fold of [`Projection`]
/// with arrival order repaired first. Events are grouped by
/// `(source, session)` (an event without `session` in the group of the
/// empty session name), each group is stable-sorted by
/// `(epoch ?? 0, seq ?? 0)` (ties keep arrival order), and groups are folded
/// in key order, so the violations come in a deterministic order and only
/// faults that survive the sort (duplicated positions) are
/// `seq-regression`s.
///
/// The events are borrowed, not copied; the grouping holds one reference
/// per event.
pub fn project<'a>(events: impl IntoIterator<Item = &'a Event>) -> Snapshot {
    // The key is `source` NUL `session`, compared as UTF-16 code units, the
    // order the published SDKs use; NUL sorts first, so it orders as the
    // pair would.
    let mut groups: BTreeMap<GroupKey, Vec<&Event>> = BTreeMap::new();
    for event in events {
        let key = format!(
            "{}\u{0}{}",
            event.source,
            event.session.as_deref().unwrap_or("")
        );
        groups.entry(GroupKey(key)).or_default().push(event);
    }
    let mut projection = Projection::new();
    for mut group in groups.into_values() {
        group.sort_by_key(|e| (e.epoch.unwrap_or(0), e.seq.unwrap_or(0)));
        for event in group {
            projection.apply(event);
        }
    }
    projection.snapshot()
}

/// A group key ordered by UTF-16 code units.
#[derive(PartialEq, Eq)]
struct GroupKey(String);

impl Ord for GroupKey {
    fn cmp(&self, other: &Self) -> Ordering {
        utf16_cmp(&self.0, &other.0)
    }
}

impl PartialOrd for GroupKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Compares strings by UTF-16 code units, as JavaScript's `<` does. It
/// differs from Rust's (code point) order only between a character above
/// U+FFFF and one in U+E000..=U+FFFF.
pub(crate) fn utf16_cmp(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Whether `event_type` is a command (AEP-0004 §2): a command names its
/// target's session under the sender's source, so it folds no state.
/// The registered ones are those of scope `command` in the registry; a
/// vendor command is `x.<vendor>.control.<verb>` (AEP-0004 §5).
pub(crate) fn is_command(event_type: &str) -> bool {
    match event_type.parse::<RegisteredType>() {
        Ok(registered) => registered.scope() == Scope::Command,
        Err(_) => event_type
            .strip_prefix("x.")
            .and_then(|rest| rest.split_once('.'))
            .is_some_and(|(vendor, rest)| {
                !vendor.is_empty()
                    && vendor.bytes().all(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'
                    })
                    && rest.strip_prefix("control.").is_some_and(|tail| {
                        // JavaScript's `.+`: one or more, no line terminator.
                        !tail.is_empty() && !tail.contains(['\n', '\r', '\u{2028}', '\u{2029}'])
                    })
            }),
    }
}

/// `data.kind` of a request, when it is a string.
fn request_kind(event: &Event) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Kind {
        kind: Option<serde_json::Value>,
    }
    let data = event.data.as_ref()?;
    match serde_json::from_str::<Kind>(data.get()).ok()?.kind? {
        serde_json::Value::String(kind) => Some(kind),
        _ => None,
    }
}

/// The projected state, serializing to the SDKs' JSON shape
/// `{"sessions": [...], "violations": [...]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// One entry per `(source, session)`, sorted by that pair.
    pub sessions: Vec<SessionState>,
    /// The violations, in fold order.
    pub violations: Vec<Violation>,
}

/// One session's projected state; unseen values are `None` (JSON `null`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionState {
    /// The emitter's `source`.
    pub source: String,
    /// The `session` attribute.
    pub session: String,
    /// `agent` of the first event folded into the session.
    pub agent: String,
    /// `time` of the first `session.started`.
    pub started: Option<String>,
    /// `time` of the first `session.ended`.
    pub ended: Option<String>,
    /// The last folded `(epoch ?? 0, seq)`.
    pub position: Option<Position>,
    /// Runs, in fold order.
    pub runs: Vec<Run>,
    /// Unresolved attention requests, in fold order.
    pub pending: Vec<PendingAttention>,
}

/// A position in a session's stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Position {
    /// The epoch (an absent `epoch` is 0).
    pub epoch: u64,
    /// The sequence number within the epoch.
    pub seq: u64,
}

/// One run of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// The `run` attribute.
    pub run: String,
    /// `running` until the first terminal event.
    pub status: RunStatus,
    /// `time` of `run.started`; `None` when the run was only seen closing.
    pub started: Option<String>,
    /// `time` of the first terminal event.
    pub ended: Option<String>,
}

/// The status of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Started, no terminal yet.
    Running,
    /// Closed by `run.finished`.
    Finished,
    /// Closed by `run.failed`.
    Failed,
    /// Closed by `run.cancelled`.
    Cancelled,
}

impl RunStatus {
    /// The status a run terminal event sets.
    fn terminal(event_type: &str) -> Option<RunStatus> {
        match event_type {
            "run.finished" => Some(RunStatus::Finished),
            "run.failed" => Some(RunStatus::Failed),
            "run.cancelled" => Some(RunStatus::Cancelled),
            _ => None,
        }
    }
}

/// An unresolved `attention.requested`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingAttention {
    /// The request's `id`, which its resolution names as `subject`.
    pub id: String,
    /// The request's `data.kind`, when it is a string.
    pub kind: Option<String>,
    /// `time` of the request.
    pub since: String,
}

/// A protocol violation the fold surfaced. Each carries exactly the keys
/// that scope it; as JSON, `rule` names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "kebab-case")]
pub enum Violation {
    /// One `(source, id)` named two different events (AEP-0001 §7); the
    /// first stays folded.
    IdCollision {
        /// The emitter.
        source: String,
        /// The reused id.
        id: String,
    },
    /// A second terminal for one run (AEP-0002 §2 convention 5); the first
    /// status stays.
    RunTerminalExclusivity {
        /// The emitter.
        source: String,
        /// The session.
        session: String,
        /// The run.
        run: String,
    },
    /// A second `session.ended` (AEP-0002 §2 convention 5); the first stays.
    SessionTerminalExclusivity {
        /// The emitter.
        source: String,
        /// The session.
        session: String,
    },
    /// `session.ended` while attention requests were pending (AEP-0002 §7).
    EndedWithPendingAttention {
        /// The emitter.
        source: String,
        /// The session.
        session: String,
        /// How many were pending.
        pending: u64,
    },
    /// `epoch` went back within a session (AEP-0001 §7).
    EpochRegression {
        /// The emitter.
        source: String,
        /// The session.
        session: String,
        /// The event whose epoch went back.
        id: String,
    },
    /// `seq` did not advance within an epoch (AEP-0001 §7).
    SeqRegression {
        /// The emitter.
        source: String,
        /// The session.
        session: String,
        /// The event whose seq did not advance.
        id: String,
    },
}

impl Violation {
    /// The rule's name, as the JSON `rule` member spells it.
    pub fn rule(&self) -> &'static str {
        match self {
            Violation::IdCollision { .. } => "id-collision",
            Violation::RunTerminalExclusivity { .. } => "run-terminal-exclusivity",
            Violation::SessionTerminalExclusivity { .. } => "session-terminal-exclusivity",
            Violation::EndedWithPendingAttention { .. } => "ended-with-pending-attention",
            Violation::EpochRegression { .. } => "epoch-regression",
            Violation::SeqRegression { .. } => "seq-regression",
        }
    }
}

#[cfg(test)]
mod tests;
