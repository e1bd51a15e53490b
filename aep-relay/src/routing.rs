//! Command routing (AEP-0004 §4) and the roster (AEP-0003 §4.1).
//!
//! Routing denies, never diverts (AEP-0001 §12, AEP-0004 §8):
//!
//! - **Who claims.** A WebSocket connection of role `emitter` or `both`
//!   claims a session with a positioned event of that session, tied to the
//!   event's `source`; an event the buffer already held (re-sent) claims
//!   only a session no connection holds live. A `consumer` connection
//!   never claims, and a command claims nothing.
//! - **Grace.** When its connection leaves, a claim is held for a grace
//!   (`Config::claim_grace`): meanwhile a command to the session is
//!   refused `no-route`, and only a connection emitting an event of the
//!   session under the same `source` takes the claim over.
//! - **One target.** A command goes to exactly one live claimant, byte for
//!   byte. None is `no-route`; several live claimants, or claims (live or
//!   in grace) under different sources, are `ambiguous`; a claimant whose
//!   declared `control.accepts` lacks the type is `unsupported` on its
//!   behalf; a full command queue (entries or bytes) is `busy`.
//! - **Whose ack.** An ack (`control.accepted`, `control.rejected`) speaks
//!   for the command's target, the session's owner: it is believed from the
//!   owner's connection, from one taking the claim over under the same
//!   `source` (an agent back after its connection dropped), and on a
//!   session nobody owns; from any other connection, or over `POST` while
//!   the session has an owner, it is refused.
//! - **Bounds.** Claims follow the buffer: a session the buffer evicts
//!   loses its claims, so a connection holds at most `max_sessions`
//!   claims; a session holds at most [`MAX_CLAIMANTS`] claims (past it the
//!   session is `ambiguous` until evicted or its claimants leave). Each
//!   connection's declarations are serialized once at `hello`, shared by
//!   its roster entries, and a roster reply stops at a byte budget and
//!   says how many entries it left out.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aep::frame::ErrorCode;
use bytes::Bytes;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::budget::{Budget, Charge, WARN_INTERVAL};
use crate::directory::{members_of, Directory, Held, HeldClaim};

/// Claims one session may hold at once (live or in grace); past it the
/// session is `ambiguous` until its claims are gone.
pub(crate) const MAX_CLAIMANTS: usize = 16;
/// Bytes of commands waiting for one target connection (besides the
/// entry bound of its queue); a command is always taken into an empty
/// queue, however large.
pub(crate) const COMMAND_BYTES: usize = 16 << 20;

/// A command in its owner's queue: its exact frame text, and its bytes
/// charged to `--max-command-bytes` until the connection takes it (or
/// goes away with it).
pub(crate) type Command = (Bytes, Charge);

/// A connection's role from its `hello`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Emitter,
    Consumer,
    Both,
}

impl From<aep::frame::Role> for Role {
    fn from(role: aep::frame::Role) -> Role {
        match role {
            aep::frame::Role::Emitter => Role::Emitter,
            aep::frame::Role::Consumer => Role::Consumer,
            aep::frame::Role::Both => Role::Both,
        }
    }
}

impl Role {
    pub fn emits(self) -> bool {
        self != Role::Consumer
    }

    pub fn watches(self) -> bool {
        self != Role::Emitter
    }
}

/// Whether a `consumer` connection may send an event of this type: a
/// command (AEP-0004 §2) or the foreign-emitter `attention.routed`
/// (AEP-0001 §5.2). Everything else is an emitter's to send.
pub(crate) fn consumer_may_send(event_type: &str) -> bool {
    crate::ingest::is_command(event_type) || event_type == "attention.routed"
}

/// Whether `event_type` is an acknowledgement of a command (AEP-0004 §3).
pub(crate) fn is_ack(event_type: &str) -> bool {
    matches!(event_type, "control.accepted" | "control.rejected")
}

/// What a connection declared in its `hello`, kept as text: its
/// declarations once, as the roster members they make (their compact
/// JSON), and the command types its `control.accepts` names. What it
/// holds ([`Declared::held_bytes`]) is about the hello's text, never
/// many times it as parsed JSON (`Value`s) would be.
#[derive(Debug, Clone)]
pub(crate) struct Declared {
    pub role: Role,
    /// The declared `control.accepts` strings, one after another.
    accepts: Box<str>,
    /// Where each of them ends in `accepts` (2 bytes each, less than the
    /// 3 of the shortest in JSON, `"",`).
    ends: Box<[u16]>,
    /// The roster members after `session`, serialized once: `,"agent":…`
    /// and so on, each present only when declared; shared by every
    /// roster entry.
    members: Arc<str>,
}

impl Declared {
    /// What a `hello` of `role` declared in its `identity` (`agent`,
    /// `instance`) and `capabilities` (`control`, `emits`).
    pub fn new(
        role: Role,
        identity: &Map<String, Value>,
        capabilities: &Map<String, Value>,
    ) -> Declared {
        // In the order of `DECLARATIONS`.
        let members = members_of([
            identity.get("agent"),
            identity.get("instance"),
            capabilities.get("control"),
            capabilities.get("emits"),
        ]);
        // Absent or malformed: nothing; strings only.
        let mut accepts = String::new();
        let mut ends = Vec::new();
        let listed = capabilities
            .get("control")
            .and_then(|c| c.get("accepts"))
            .and_then(Value::as_array);
        for t in listed.into_iter().flatten().filter_map(Value::as_str) {
            // Within a hello of at most `MAX_HELLO_BYTES` (64 KiB, quotes
            // and all) they always fit.
            let Ok(end) = u16::try_from(accepts.len() + t.len()) else {
                break;
            };
            accepts.push_str(t);
            ends.push(end);
        }
        Declared {
            role,
            accepts: accepts.into_boxed_str(),
            ends: ends.into_boxed_slice(),
            members,
        }
    }

    /// Whether the declared `control.accepts` names `command_type`.
    fn accepts(&self, command_type: &str) -> bool {
        let mut start = 0;
        self.ends.iter().any(|&end| {
            let end = end as usize;
            let named = self.accepts.get(start..end) == Some(command_type);
            start = end;
            named
        })
    }

    /// What the connection declared: its `agent`, `instance`, `control`
    /// and `emits`, each when declared (read back from its members).
    fn declarations(&self) -> Map<String, Value> {
        let members = self.members.strip_prefix(',').unwrap_or(&self.members);
        serde_json::from_str(&format!("{{{members}}}")).unwrap_or_default()
    }

    /// The bytes this holds: itself, its texts and their allocations'
    /// bookkeeping (the `Arc`'s counts, its text padded to them).
    pub fn held_bytes(&self) -> usize {
        std::mem::size_of::<Declared>()
            + self.accepts.len()
            + std::mem::size_of_val(&*self.ends)
            + 3 * std::mem::size_of::<usize>()
            + self.members.len()
    }
}

struct Conn {
    declared: Declared,
    claims: HashSet<Arc<str>>,
    commands: mpsc::Sender<Command>,
    /// The commands handed to the queue, oldest first; one the
    /// connection has written (its copy dropped) is no longer counted.
    queued: VecDeque<Bytes>,
}

impl Conn {
    /// Bytes of commands still waiting in this connection's queue.
    fn queued_bytes(&mut self) -> usize {
        while self.queued.front_mut().is_some_and(|b| b.is_unique()) {
            self.queued.pop_front();
        }
        self.queued.iter().map(Bytes::len).sum()
    }
}

/// Who holds a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holder {
    /// This live connection.
    Live(u64),
    /// Nobody since its connection left; held until this instant.
    Away(Instant),
}

struct Claim {
    source: Arc<str>,
    holder: Holder,
}

#[derive(Default)]
struct Claims {
    list: Vec<Claim>,
    /// More claimants came than [`MAX_CLAIMANTS`]: ambiguous until the
    /// recorded claims are all gone.
    crowded: bool,
}

impl Claims {
    fn expire(&mut self, now: Instant) {
        self.list
            .retain(|c| !matches!(c.holder, Holder::Away(until) if until <= now));
    }
}

/// How the event that claims a session reached the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claiming {
    /// A new event: it claims.
    Fresh,
    /// One the buffer already held (the same `source` and `id`): it claims
    /// only a session no connection holds live.
    Resent,
}

/// The refusal codes of AEP-0004 §4.2 (and `busy` when the owner's
/// command queue is full).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    Unauthorized,
    NoRoute,
    /// The owner left; its claim is held for its return (`no-route`).
    Away(Duration),
    Ambiguous(usize),
    Unsupported,
    Busy,
    /// The owner's queue holds this many bytes, the limit.
    BusyBytes(usize),
    /// All command queues together hold this many bytes,
    /// `--max-command-bytes`.
    BusyRelay(usize),
    /// The owner's node of the cluster is gone (`no-route`).
    #[cfg_attr(not(feature = "nats"), allow(dead_code))]
    NodeGone,
    /// The owner's node of the cluster did not answer in time
    /// (`no-route`): the command may have reached the owner.
    #[cfg_attr(not(feature = "nats"), allow(dead_code))]
    NodeSilent(Duration),
    /// The owner's node of the cluster refused it, so.
    #[cfg_attr(not(feature = "nats"), allow(dead_code))]
    ByNode(ErrorCode, String),
}

impl Refused {
    pub fn code(&self) -> ErrorCode {
        match self {
            Refused::Unauthorized => ErrorCode::Unauthorized,
            Refused::NoRoute | Refused::Away(_) => ErrorCode::NoRoute,
            Refused::Ambiguous(_) => ErrorCode::Ambiguous,
            Refused::Unsupported => ErrorCode::Unsupported,
            Refused::Busy | Refused::BusyBytes(_) | Refused::BusyRelay(_) => ErrorCode::Busy,
            Refused::NodeGone | Refused::NodeSilent(_) => ErrorCode::NoRoute,
            Refused::ByNode(code, _) => code.clone(),
        }
    }

    pub fn detail(&self, session: &str, command_type: &str) -> String {
        match self {
            Refused::Unauthorized => "control requires an authenticated binding (AEP-0004 §4.1); this relay runs without a token".into(),
            Refused::NoRoute => format!("no connected emitter owns session {session:?}"),
            Refused::Away(left) => format!("the owner of session {session:?} disconnected; its claim is held for its return for {} ms more, and no one else receives its commands meanwhile", left.as_millis()),
            Refused::Ambiguous(n) => format!("{n} claims on session {session:?} (live or held after their owner left, or under different sources); a command goes to at most one (AEP-0004 §4.5)"),
            Refused::Unsupported => format!("the session's owner does not declare {command_type} in control.accepts"),
            Refused::Busy => "the session's owner is not reading its commands (its queue is full)".into(),
            Refused::BusyBytes(n) => format!("the session's owner is not reading its commands ({n} bytes queued, the limit)"),
            Refused::BusyRelay(n) => format!("the relay's command queues are full ({n} bytes queued toward emitters that are not reading their commands, the limit)"),
            Refused::NodeGone => format!("the owner of session {session:?} is connected to another node of the cluster, which does not answer"),
            Refused::NodeSilent(wait) => format!("the owner of session {session:?} is connected to another node of the cluster, which did not answer within {} s: the command may have reached it (its target acknowledges a command sent again with the same id once)", wait.as_secs()),
            Refused::ByNode(_, detail) => detail.clone(),
        }
    }
}

/// Connections and their claims.
pub(crate) struct Routes {
    grace: Duration,
    /// Bytes of commands in all queues (`--max-command-bytes`).
    budget: Arc<Budget>,
    conns: HashMap<u64, Conn>,
    owners: HashMap<Arc<str>, Claims>,
    /// The claims the other nodes of a cluster hold (empty on a relay of
    /// one node).
    pub remote: Directory,
    /// On a node of a cluster, the sessions whose claims changed since
    /// the node last published them (at most every session it holds or
    /// held claims on since).
    changed: Option<HashSet<Arc<str>>>,
}

/// Where a routed command went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Routed {
    /// To a connection of this node.
    Here,
    /// To this other node of the cluster, which delivers it.
    Node(Arc<str>),
}

/// The one live claimant of a session.
enum Target {
    Here(u64),
    Node(Arc<str>),
}

/// A roster snapshot: `(session, serialized members)` per live claim,
/// and how many claims were left out to stay under the byte budget.
pub(crate) struct Roster {
    pub entries: Vec<(Arc<str>, Arc<str>)>,
    pub omitted: usize,
}

impl Roster {
    /// The `roster` reply frame answering `id`.
    pub fn frame(&self, id: &Value) -> String {
        let mut text = String::from("{\"type\":\"roster\",\"id\":");
        text.push_str(&id.to_string());
        text.push_str(",\"entries\":[");
        for (n, (session, members)) in self.entries.iter().enumerate() {
            if n > 0 {
                text.push(',');
            }
            text.push_str("{\"session\":");
            text.push_str(&Value::String(session.to_string()).to_string());
            text.push_str(members);
            text.push('}');
        }
        text.push(']');
        if self.omitted > 0 {
            text.push_str(&format!(",\"truncated\":true,\"omitted\":{}", self.omitted));
        }
        text.push('}');
        text
    }
}

impl Routes {
    /// Routes whose departed owners' claims are held for `grace`.
    pub fn new(grace: Duration) -> Routes {
        Routes {
            grace,
            budget: Arc::default(),
            conns: HashMap::new(),
            owners: HashMap::new(),
            remote: Directory::default(),
            changed: None,
        }
    }

    /// Records which sessions' claims change, for [`Routes::take_changed`]
    /// (a node of a cluster publishes them).
    #[cfg_attr(not(feature = "nats"), allow(dead_code))]
    pub fn track_changes(&mut self) {
        self.changed.get_or_insert_with(HashSet::new);
    }

    fn changed(&mut self, session: &Arc<str>) {
        if let Some(changed) = &mut self.changed {
            changed.insert(session.clone());
        }
    }

    /// The sessions whose claims changed since the last call.
    #[cfg_attr(not(feature = "nats"), allow(dead_code))]
    pub fn take_changed(&mut self) -> Vec<Arc<str>> {
        self.changed
            .as_mut()
            .map(|changed| changed.drain().collect())
            .unwrap_or_default()
    }

    /// Every session this node holds claims on.
    #[cfg_attr(not(feature = "nats"), allow(dead_code))]
    pub fn claimed(&self) -> Vec<Arc<str>> {
        self.owners.keys().cloned().collect()
    }

    /// What this node holds of `session`'s claims at `now`, for the other
    /// nodes; `None` when it holds none.
    #[cfg_attr(not(feature = "nats"), allow(dead_code))]
    pub fn held(&mut self, session: &str, now: Instant) -> Option<Held> {
        let claims = self.owners.get_mut(session)?;
        claims.expire(now);
        if claims.list.is_empty() {
            self.owners.remove(session);
            return None;
        }
        let held = claims
            .list
            .iter()
            .map(|claim| match claim.holder {
                Holder::Live(conn) => HeldClaim {
                    source: claim.source.to_string(),
                    live: Some(
                        self.conns
                            .get(&conn)
                            .map_or_else(Map::new, |c| c.declared.declarations()),
                    ),
                    away_ms: 0,
                },
                Holder::Away(until) => HeldClaim {
                    source: claim.source.to_string(),
                    live: None,
                    // At least 1: 0 would read as live-less and held for
                    // no time at all.
                    away_ms: (until.saturating_duration_since(now).as_millis() as u64).max(1),
                },
            })
            .collect();
        Some(Held {
            session: session.to_owned(),
            claims: held,
            crowded: claims.crowded,
        })
    }

    /// These routes, with the bytes of commands in all queues charged to
    /// `budget`.
    pub fn with_budget(mut self, budget: Arc<Budget>) -> Routes {
        self.budget = budget;
        self
    }

    pub fn connect(&mut self, conn: u64, declared: Declared, commands: mpsc::Sender<Command>) {
        self.conns.insert(
            conn,
            Conn {
                declared,
                claims: HashSet::new(),
                commands,
                queued: VecDeque::new(),
            },
        );
    }

    /// Forgets `conn`; its claims are held for the grace from `now`.
    pub fn disconnect(&mut self, conn: u64, now: Instant) {
        let Some(gone) = self.conns.remove(&conn) else {
            return;
        };
        let until = now + self.grace;
        for session in gone.claims {
            self.changed(&session);
            if let Some(claims) = self.owners.get_mut(&session) {
                for claim in &mut claims.list {
                    if claim.holder == Holder::Live(conn) {
                        claim.holder = Holder::Away(until);
                    }
                }
                claims.expire(now);
                if claims.list.is_empty() {
                    self.owners.remove(&session);
                }
            }
        }
    }

    /// Records that the buffer accepted `conn`'s positioned event of
    /// `session` under `source`.
    pub fn claim(
        &mut self,
        conn: u64,
        session: &Arc<str>,
        source: &str,
        claiming: Claiming,
        now: Instant,
    ) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        if !c.declared.role.emits() || c.claims.contains(session) {
            return;
        }
        let claims = self.owners.entry(session.clone()).or_default();
        claims.expire(now);
        if claims.list.is_empty() {
            // Every recorded claim is gone: a crowd that came before counts
            // no more.
            claims.crowded = false;
        }
        let held_live = claims
            .list
            .iter()
            .any(|c| matches!(c.holder, Holder::Live(_)));
        if claiming == Claiming::Resent && held_live {
            return;
        }
        let away = claims
            .list
            .iter_mut()
            .find(|c| matches!(c.holder, Holder::Away(_)) && &*c.source == source);
        if let Some(away) = away {
            away.holder = Holder::Live(conn);
        } else if claims.list.len() >= MAX_CLAIMANTS {
            claims.crowded = true;
            return;
        } else {
            claims.list.push(Claim {
                source: Arc::from(source),
                holder: Holder::Live(conn),
            });
        }
        c.claims.insert(session.clone());
        self.changed(session);
    }

    /// Drops every claim on `session` (the buffer evicted it).
    pub fn forget_session(&mut self, session: &str) {
        let Some((session, claims)) = self.owners.remove_entry(session) else {
            return;
        };
        self.changed(&session);
        for claim in claims.list {
            if let Holder::Live(conn) = claim.holder {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.claims.remove(&session);
                }
            }
        }
    }

    /// Sends `command` (its exact frame text) to the one owner of
    /// `session` in the cluster: delivered here when a connection of this
    /// node owns it, else named (a claim in [`Routes::remote`] on one
    /// other node, which delivers it); or says why not. `here_only` (a
    /// command another node routed here) is weighed the same, over this
    /// node's claims and the directory's, but never named onward: an
    /// owner elsewhere is `no-route`.
    pub fn route(
        &mut self,
        session: &str,
        command_type: &str,
        command: Bytes,
        now: Instant,
        here_only: bool,
    ) -> Result<Routed, Refused> {
        // A forwarded command is weighed over the whole cluster too: the
        // node that sent it may not have seen every claim yet.
        let (remote, remote_crowded) = self.remote.claims(session, now);
        let local = match self.owners.get_mut(session) {
            Some(claims) => {
                claims.expire(now);
                if claims.list.is_empty() {
                    self.owners.remove(session);
                    None
                } else {
                    Some(&*claims)
                }
            }
            None => None,
        };
        let local_claims = local.map_or(&[][..], |c| &c.list[..]);
        let n = local_claims.len() + remote.len();
        if n == 0 {
            return Err(Refused::NoRoute);
        }
        let mut sources = local_claims
            .iter()
            .map(|c| &c.source)
            .chain(remote.iter().map(|r| &r.source));
        let first = sources.next().cloned().unwrap_or_default();
        let mixed = sources.any(|s| *s != first);
        let crowded = remote_crowded || local.is_some_and(|c| c.crowded);
        let mut live = local_claims
            .iter()
            .filter_map(|c| match c.holder {
                Holder::Live(conn) => Some(Target::Here(conn)),
                Holder::Away(_) => None,
            })
            .chain(
                remote
                    .iter()
                    .filter(|r| r.away_until.is_none())
                    .map(|r| Target::Node(r.node.clone())),
            );
        let one = live.next();
        if crowded || mixed || live.next().is_some() {
            return Err(Refused::Ambiguous(n));
        }
        let conn = match one {
            Some(Target::Here(conn)) => conn,
            // Never routed onward: the sender's node saw the owner here.
            Some(Target::Node(_)) if here_only => return Err(Refused::NoRoute),
            Some(Target::Node(node)) => return Ok(Routed::Node(node)),
            None => {
                let until = local_claims
                    .iter()
                    .filter_map(|c| match c.holder {
                        Holder::Away(until) => Some(until),
                        Holder::Live(_) => None,
                    })
                    .chain(remote.iter().filter_map(|r| r.away_until))
                    .max()
                    .unwrap_or(now);
                return Err(Refused::Away(until.saturating_duration_since(now)));
            }
        };
        self.deliver(conn, command_type, command)?;
        Ok(Routed::Here)
    }

    /// Hands `command` to the queue of connection `conn`, its target.
    fn deliver(&mut self, conn: u64, command_type: &str, command: Bytes) -> Result<(), Refused> {
        let owner = self.conns.get_mut(&conn).ok_or(Refused::NoRoute)?;
        if !owner.declared.accepts(command_type) {
            return Err(Refused::Unsupported);
        }
        let queued = owner.queued_bytes();
        if queued > 0 && queued + command.len() > COMMAND_BYTES {
            return Err(Refused::BusyBytes(queued));
        }
        let Some((charge, _)) = self.budget.charge(command.len()) else {
            let held = self.budget.held();
            if let Some(suppressed) = self.budget.warn() {
                tracing::warn!(
                    held,
                    suppressed,
                    "command refused busy: the command queues of all connections hold --max-command-bytes {} (raise it, or find the emitters that stopped reading); further ones in the next {}s are counted, not logged",
                    self.budget.max(),
                    WARN_INTERVAL.as_secs()
                );
            }
            return Err(Refused::BusyRelay(held));
        };
        owner.queued.push_back(command.clone());
        if let Err(e) = owner.commands.try_send((command, charge)) {
            owner.queued.pop_back();
            return Err(match e {
                mpsc::error::TrySendError::Full(_) => Refused::Busy,
                mpsc::error::TrySendError::Closed(_) => Refused::NoRoute,
            });
        }
        Ok(())
    }

    /// Whether `session` has an owner: a live claim, or one held for its
    /// owner's return. Acks of its commands then come from that owner's
    /// connection only, never from a `POST`.
    pub fn owned(&mut self, session: &str, now: Instant) -> bool {
        self.owners.get_mut(session).is_some_and(|claims| {
            claims.expire(now);
            !claims.list.is_empty()
        }) || !self.remote.claims(session, now).0.is_empty()
    }

    /// Whether `conn` may acknowledge a command to `session` with an event
    /// under `source` (AEP-0004 §8: an ack speaks for the command's
    /// target, the session's one owner): yes when every claim on the
    /// session is under `source` and none is held live by another
    /// connection (this connection owns it, or takes it over with this
    /// very event as the owner back after a drop), and on a session
    /// nobody owns. A connection that only made the session ambiguous
    /// (a claim under another source, a crowd) is no owner. Says why not.
    pub fn check_ack(
        &mut self,
        conn: u64,
        session: Option<&str>,
        source: &str,
        now: Instant,
    ) -> Result<(), String> {
        let Some(session) = session else {
            return Err("an acknowledgement names the session of its command (AEP-0004 §3)".into());
        };
        let (remote, remote_crowded) = self.remote.claims(session, now);
        // A claim on another node is another connection's: live, it owns
        // the session; held, it is this source's only when it says so.
        let mut crowded = remote_crowded;
        let mut other_live = remote.iter().any(|r| r.away_until.is_none());
        let mut foreign = remote.iter().any(|r| &*r.source != source);
        if let Some(claims) = self.owners.get_mut(session) {
            claims.expire(now);
            crowded |= claims.crowded && !claims.list.is_empty();
            other_live |= claims
                .list
                .iter()
                .any(|c| matches!(c.holder, Holder::Live(live) if live != conn));
            foreign |= claims.list.iter().any(|c| &*c.source != source);
        }
        if crowded || other_live || foreign {
            return Err(format!("session {session:?} has no single owner under {source:?} on this connection; only its owner acknowledges the commands it was sent (AEP-0004 §8)"));
        }
        Ok(())
    }

    /// The roster: one entry per live (connection, claimed session), in
    /// connection then session order, then the live claims other nodes
    /// of the cluster hold ([`Routes::remote`]), stopping before `budget`
    /// bytes.
    pub fn roster(&self, budget: usize, now: Instant) -> Roster {
        let mut entries = Vec::new();
        let mut omitted = 0;
        let mut used = 0;
        let mut conns: Vec<_> = self.conns.iter().collect();
        conns.sort_by_key(|(id, _)| **id);
        for (_, conn) in conns {
            if omitted > 0 {
                omitted += conn.claims.len();
                continue;
            }
            let mut claims: Vec<_> = conn.claims.iter().collect();
            claims.sort();
            for (n, session) in claims.iter().enumerate() {
                // `{"session":"…"…},` with room for escapes in the name.
                let size = 16 + json_len(session) + conn.declared.members.len();
                if used + size > budget {
                    omitted += claims.len() - n;
                    break;
                }
                used += size;
                entries.push(((*session).clone(), conn.declared.members.clone()));
            }
        }
        for (session, members) in self.remote.roster(now) {
            let size = 16 + json_len(&session) + members.len();
            if omitted > 0 || used + size > budget {
                omitted += 1;
                continue;
            }
            used += size;
            entries.push((session, members));
        }
        Roster { entries, omitted }
    }

    /// Claims held by `conn` (for tests of the bounds).
    #[cfg(test)]
    fn claims_of(&self, conn: u64) -> usize {
        self.conns[&conn].claims.len()
    }
}

/// The length of `text` as a JSON string's contents, escapes included.
fn json_len(text: &str) -> usize {
    text.bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const GRACE: Duration = Duration::from_secs(5);
    const SRC: &str = "urn:owner";

    fn declared(role: Role, accepts: &[&str]) -> Declared {
        let identity = json!({"agent": "agent-x"});
        let capabilities = json!({"control": {"accepts": accepts, "ack_window_ms": 10000}});
        Declared::new(
            role,
            identity.as_object().unwrap(),
            capabilities.as_object().unwrap(),
        )
    }

    fn routes() -> Routes {
        Routes::new(GRACE)
    }

    #[test]
    fn declarations_kept_as_text_read_back_as_sent() {
        let identity = json!({"agent": null, "instance": {"b": [1.5, -0.0, 1e300, "\u{e9}\n\"\u{1}", 18446744073709551615u64], "a": {}}, "card": "x"});
        let capabilities = json!({"control": {"accepts": ["control.cancel", 7, "", "control.cancel"]}, "emits": [[[[0]]]], "other": 1});
        let (identity, capabilities) = (
            identity.as_object().unwrap(),
            capabilities.as_object().unwrap(),
        );
        let declared = Declared::new(Role::Both, identity, capabilities);
        let sent: Map<String, Value> = [
            ("agent", &identity["agent"]),
            ("instance", &identity["instance"]),
            ("control", &capabilities["control"]),
            ("emits", &capabilities["emits"]),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value.clone()))
        .collect();
        assert_eq!(declared.declarations(), sent);
        assert_eq!(declared.members, crate::directory::members_text(&sent));
        assert!(declared.accepts("control.cancel") && declared.accepts(""));
        assert!(!declared.accepts("control.cance") && !declared.accepts("7"));
        let none = Declared::new(Role::Both, &Map::new(), &Map::new());
        assert_eq!(none.declarations(), Map::new());
        assert!(!none.accepts("control.cancel"));
    }

    fn roster_values(routes: &Routes) -> Vec<Value> {
        let frame: Value =
            serde_json::from_str(&routes.roster(usize::MAX, Instant::now()).frame(&json!("r")))
                .unwrap();
        frame["entries"].as_array().unwrap().clone()
    }

    #[test]
    fn one_owner_gets_the_command_bytes() {
        let now = Instant::now();
        let mut routes = routes();
        let (tx, mut rx) = mpsc::channel(4);
        routes.connect(1, declared(Role::Emitter, &["control.cancel"]), tx);
        routes.claim(1, &Arc::from("s"), SRC, Claiming::Fresh, now);
        let cmd = Bytes::from_static(b"{\"type\":\"control.cancel\"}");
        routes
            .route("s", "control.cancel", cmd.clone(), now, false)
            .unwrap();
        assert_eq!(rx.try_recv().unwrap().0, cmd);
        assert_eq!(
            routes.route("s", "control.pause", cmd.clone(), now, false),
            Err(Refused::Unsupported)
        );
        assert_eq!(
            routes.route("t", "control.cancel", cmd, now, false),
            Err(Refused::NoRoute)
        );
    }

    #[test]
    fn two_claimants_are_ambiguous_and_consumers_never_claim() {
        let now = Instant::now();
        let mut routes = routes();
        for id in 1..=2 {
            let (tx, _) = mpsc::channel(4);
            routes.connect(id, declared(Role::Both, &["control.cancel"]), tx);
            routes.claim(id, &Arc::from("s"), SRC, Claiming::Fresh, now);
        }
        let (tx, _) = mpsc::channel(4);
        routes.connect(3, declared(Role::Consumer, &["control.cancel"]), tx);
        routes.claim(3, &Arc::from("c"), SRC, Claiming::Fresh, now);
        let cmd = Bytes::from_static(b"{}");
        assert_eq!(
            routes.route("s", "control.cancel", cmd.clone(), now, false),
            Err(Refused::Ambiguous(2))
        );
        assert_eq!(
            routes.route("c", "control.cancel", cmd.clone(), now, false),
            Err(Refused::NoRoute)
        );
        routes.disconnect(2, now);
        // The remaining owner's channel is closed (its receiver dropped).
        assert_eq!(
            routes.route("s", "control.cancel", cmd, now, false),
            Err(Refused::NoRoute)
        );
        assert_eq!(roster_values(&routes).len(), 1);
    }

    #[test]
    fn a_departed_owner_is_held_for_the_grace_and_never_diverted() {
        let t0 = Instant::now();
        let mut routes = routes();
        let s: Arc<str> = Arc::from("s");
        let (tx, _rx1) = mpsc::channel(4);
        routes.connect(1, declared(Role::Emitter, &["control.cancel"]), tx);
        routes.claim(1, &s, SRC, Claiming::Fresh, t0);
        routes.disconnect(1, t0);
        // An impostor under another source: ambiguous, not a new owner.
        let (tx, mut rx2) = mpsc::channel(4);
        routes.connect(2, declared(Role::Emitter, &["control.cancel"]), tx);
        routes.claim(
            2,
            &s,
            "urn:impostor",
            Claiming::Fresh,
            t0 + Duration::from_secs(1),
        );
        let cmd = Bytes::from_static(b"{}");
        let at = t0 + Duration::from_secs(2);
        assert_eq!(
            routes.route("s", "control.cancel", cmd.clone(), at, false),
            Err(Refused::Ambiguous(2))
        );
        assert!(rx2.try_recv().is_err());
        // Without the impostor, the held claim refuses `no-route`.
        routes.disconnect(2, at);
        routes.forget_session("s");
        routes.connect(
            3,
            declared(Role::Emitter, &["control.cancel"]),
            mpsc::channel(4).0,
        );
        routes.claim(3, &s, SRC, Claiming::Fresh, at);
        routes.disconnect(3, at);
        let refused = routes.route(
            "s",
            "control.cancel",
            cmd.clone(),
            at + Duration::from_secs(1),
            false,
        );
        assert_eq!(refused, Err(Refused::Away(Duration::from_secs(4))));
        assert_eq!(refused.unwrap_err().code(), ErrorCode::NoRoute);
        // The owner's source on a new connection takes the claim over.
        let (tx, mut rx4) = mpsc::channel(4);
        routes.connect(4, declared(Role::Emitter, &["control.cancel"]), tx);
        routes.claim(4, &s, SRC, Claiming::Fresh, at + Duration::from_secs(2));
        routes
            .route(
                "s",
                "control.cancel",
                cmd.clone(),
                at + Duration::from_secs(2),
                false,
            )
            .unwrap();
        assert_eq!(rx4.try_recv().unwrap().0, cmd);
        assert_eq!(routes.claims_of(4), 1);
    }

    #[test]
    fn a_held_claim_expires_after_the_grace() {
        let t0 = Instant::now();
        let mut routes = routes();
        let s: Arc<str> = Arc::from("s");
        routes.connect(
            1,
            declared(Role::Emitter, &["control.cancel"]),
            mpsc::channel(4).0,
        );
        routes.claim(1, &s, SRC, Claiming::Fresh, t0);
        routes.disconnect(1, t0);
        let (tx, mut rx) = mpsc::channel(4);
        routes.connect(2, declared(Role::Emitter, &["control.cancel"]), tx);
        routes.claim(2, &s, "urn:other", Claiming::Fresh, t0 + GRACE);
        let cmd = Bytes::from_static(b"{}");
        routes
            .route("s", "control.cancel", cmd.clone(), t0 + GRACE, false)
            .unwrap();
        assert_eq!(rx.try_recv().unwrap().0, cmd);
        assert!(routes.owners["s"].list.len() == 1);
    }

    #[test]
    fn only_the_owner_acknowledges_and_a_returning_owner_does_too() {
        let now = Instant::now();
        let mut routes = routes();
        routes.connect(1, declared(Role::Emitter, &[]), mpsc::channel(1).0);
        routes.claim(1, &Arc::from("s"), SRC, Claiming::Fresh, now);
        routes.connect(2, declared(Role::Both, &[]), mpsc::channel(1).0);
        assert_eq!(routes.check_ack(1, Some("s"), SRC, now), Ok(()));
        // Another connection, under the owner's source or another: no.
        assert!(routes.check_ack(2, Some("s"), SRC, now).is_err());
        assert!(routes.check_ack(2, Some("s"), "urn:other", now).is_err());
        assert!(routes.check_ack(1, None, SRC, now).is_err());
        // A session nobody owns: the ack claims it as it is ingested.
        assert_eq!(routes.check_ack(2, Some("free"), "urn:x", now), Ok(()));
        assert!(routes.owned("s", now) && !routes.owned("free", now));

        // The owner's connection drops before it acks; the agent comes
        // back on another and acks from there, under its source only.
        routes.disconnect(1, now);
        routes.connect(3, declared(Role::Emitter, &[]), mpsc::channel(1).0);
        assert_eq!(routes.check_ack(3, Some("s"), SRC, now), Ok(()));
        assert!(routes.check_ack(3, Some("s"), "urn:other", now).is_err());
        assert!(routes.owned("s", now), "held for the grace");
        assert!(!routes.owned("s", now + GRACE), "gone after it");
    }

    #[test]
    fn a_resent_event_claims_only_a_session_nobody_holds_live() {
        let now = Instant::now();
        let mut routes = routes();
        let s: Arc<str> = Arc::from("s");
        for id in 1..=3 {
            routes.connect(id, declared(Role::Emitter, &[]), mpsc::channel(1).0);
        }
        routes.claim(1, &s, SRC, Claiming::Fresh, now);
        routes.claim(2, &s, SRC, Claiming::Resent, now);
        assert_eq!(routes.claims_of(2), 0, "the owner is live");
        routes.disconnect(1, now);
        routes.claim(3, &s, SRC, Claiming::Resent, now);
        assert_eq!(routes.claims_of(3), 1, "held for its return: taken over");
        routes.claim(2, &Arc::from("free"), SRC, Claiming::Resent, now);
        assert_eq!(routes.claims_of(2), 1, "nobody owned it");
    }

    #[test]
    fn a_co_claimant_under_another_source_is_no_owner() {
        let now = Instant::now();
        let mut routes = routes();
        let s: Arc<str> = Arc::from("s");
        routes.connect(1, declared(Role::Emitter, &[]), mpsc::channel(1).0);
        routes.connect(2, declared(Role::Emitter, &[]), mpsc::channel(1).0);
        routes.claim(1, &s, SRC, Claiming::Fresh, now);
        // The attacker claims too, under its own source: the session is
        // ambiguous, and neither side speaks for it alone.
        routes.claim(2, &s, "urn:evil", Claiming::Fresh, now);
        assert!(routes.check_ack(2, Some("s"), "urn:evil", now).is_err());
        assert!(routes.check_ack(2, Some("s"), SRC, now).is_err());
        assert!(routes.check_ack(1, Some("s"), SRC, now).is_err());
    }

    #[test]
    fn a_crowd_that_left_no_longer_makes_the_session_ambiguous() {
        let now = Instant::now();
        let mut routes = routes();
        let s: Arc<str> = Arc::from("crowd");
        for id in 1..=MAX_CLAIMANTS as u64 + 1 {
            routes.connect(id, declared(Role::Emitter, &[]), mpsc::channel(1).0);
            routes.claim(id, &s, &format!("urn:{id}"), Claiming::Fresh, now);
            routes.disconnect(id, now);
        }
        assert!(routes.owners["crowd"].crowded);
        let later = now + GRACE;
        let (tx, _rx) = mpsc::channel(4);
        routes.connect(100, declared(Role::Emitter, &["control.cancel"]), tx);
        routes.claim(100, &s, SRC, Claiming::Fresh, later);
        assert_eq!(
            routes.route("crowd", "control.cancel", Bytes::new(), later, false),
            Ok(Routed::Here)
        );
    }

    #[test]
    fn evicted_sessions_lose_their_claims_and_claimants_per_session_are_capped() {
        let now = Instant::now();
        let mut routes = routes();
        routes.connect(
            1,
            declared(Role::Emitter, &["control.cancel"]),
            mpsc::channel(4).0,
        );
        for n in 0..100 {
            routes.claim(1, &Arc::from(format!("s{n}")), SRC, Claiming::Fresh, now);
            if n >= 10 {
                routes.forget_session(&format!("s{}", n - 10));
            }
        }
        assert_eq!(routes.claims_of(1), 10);
        assert_eq!(routes.owners.len(), 10);
        let s: Arc<str> = Arc::from("crowd");
        for id in 10..10 + MAX_CLAIMANTS as u64 + 1 {
            routes.connect(
                id,
                declared(Role::Emitter, &["control.cancel"]),
                mpsc::channel(4).0,
            );
            routes.claim(id, &s, &format!("urn:{id}"), Claiming::Fresh, now);
        }
        assert_eq!(routes.owners["crowd"].list.len(), MAX_CLAIMANTS);
        for id in 10..10 + MAX_CLAIMANTS as u64 {
            routes.disconnect(id, now);
        }
        // The one left over was never recorded: still refused, not routed.
        let refused = routes.route("crowd", "control.cancel", Bytes::new(), now, false);
        assert_eq!(refused, Err(Refused::Ambiguous(MAX_CLAIMANTS)));
    }

    #[test]
    fn roster_relays_declarations_verbatim_within_a_budget() {
        let now = Instant::now();
        let mut routes = routes();
        let (tx, _rx) = mpsc::channel(4);
        routes.connect(
            1,
            declared(Role::Emitter, &["control.attention.respond"]),
            tx,
        );
        routes.claim(1, &Arc::from("s1"), SRC, Claiming::Fresh, now);
        routes.claim(1, &Arc::from("s0"), SRC, Claiming::Fresh, now);
        assert_eq!(
            roster_values(&routes),
            [
                json!({"session": "s0", "agent": "agent-x", "control": {"accepts": ["control.attention.respond"], "ack_window_ms": 10000}}),
                json!({"session": "s1", "agent": "agent-x", "control": {"accepts": ["control.attention.respond"], "ack_window_ms": 10000}}),
            ]
        );
        let small = routes.roster(150, Instant::now());
        assert_eq!((small.entries.len(), small.omitted), (1, 1));
        let frame: Value = serde_json::from_str(&small.frame(&json!(7))).unwrap();
        assert_eq!(frame["truncated"], true);
        assert_eq!(frame["omitted"], 1);
        assert_eq!(json_len("a\"\n\u{1}"), 1 + 2 + 2 + 6);
    }

    #[test]
    fn a_full_owner_queue_is_busy_in_entries_and_in_bytes() {
        let now = Instant::now();
        let mut routes = routes();
        let (tx, _rx) = mpsc::channel(1);
        routes.connect(1, declared(Role::Emitter, &["control.cancel"]), tx);
        routes.claim(1, &Arc::from("s"), SRC, Claiming::Fresh, now);
        routes
            .route("s", "control.cancel", Bytes::new(), now, false)
            .unwrap();
        assert_eq!(
            routes.route("s", "control.cancel", Bytes::new(), now, false),
            Err(Refused::Busy)
        );
        let (tx, mut rx) = mpsc::channel(16);
        routes.connect(2, declared(Role::Emitter, &["control.cancel"]), tx);
        routes.claim(2, &Arc::from("t"), SRC, Claiming::Fresh, now);
        let big = || Bytes::from(vec![b' '; COMMAND_BYTES / 2]);
        routes
            .route("t", "control.cancel", big(), now, false)
            .unwrap();
        routes
            .route("t", "control.cancel", big(), now, false)
            .unwrap();
        assert_eq!(
            routes.route("t", "control.cancel", Bytes::from_static(b"{}"), now, false),
            Err(Refused::BusyBytes(COMMAND_BYTES))
        );
        // Once the connection has written one, its bytes no longer count.
        drop(rx.try_recv().unwrap());
        routes
            .route("t", "control.cancel", Bytes::from_static(b"{}"), now, false)
            .unwrap();
    }

    #[test]
    fn past_the_relay_wide_command_bytes_a_command_is_busy_and_bytes_come_back() {
        let now = Instant::now();
        let budget = Budget::new(100);
        let mut routes = routes().with_budget(budget.clone());
        let mut receivers = Vec::new();
        for (id, session) in [(1, "s"), (2, "t")] {
            let (tx, rx) = mpsc::channel(16);
            receivers.push(rx);
            routes.connect(id, declared(Role::Emitter, &["control.cancel"]), tx);
            routes.claim(id, &Arc::from(session), SRC, Claiming::Fresh, now);
        }
        let cmd = |n| Bytes::from(vec![b' '; n]);
        routes
            .route("s", "control.cancel", cmd(60), now, false)
            .unwrap();
        routes
            .route("t", "control.cancel", cmd(40), now, false)
            .unwrap();
        assert_eq!(budget.held(), 100);
        // Far below the connection's own bounds, past the relay's.
        let refused = routes.route("t", "control.cancel", cmd(1), now, false);
        assert_eq!(refused, Err(Refused::BusyRelay(100)));
        assert_eq!(refused.unwrap_err().code(), ErrorCode::Busy);
        // Taken: given back; a connection gone gives back its queue.
        drop(receivers[0].try_recv().unwrap());
        assert_eq!(budget.held(), 40);
        routes
            .route("t", "control.cancel", cmd(1), now, false)
            .unwrap();
        routes.disconnect(2, now);
        drop(receivers.pop());
        assert_eq!(budget.held(), 0);
    }

    /// Another node's claims on `session` in `routes`' directory.
    fn remote(routes: &mut Routes, node: &str, session: &str, claims: Value, now: Instant) {
        let held = json!({"session": session, "claims": claims}).to_string();
        routes
            .remote
            .put(&format!("{session}.{node}"), node, held.as_bytes(), now)
            .unwrap();
    }

    fn live(source: &str) -> Value {
        json!({"source": source, "live": {"agent": "far", "control": {"accepts": ["control.cancel"]}}})
    }

    #[test]
    fn a_live_claim_on_one_other_node_names_that_node() {
        let now = Instant::now();
        let mut routes = routes();
        remote(&mut routes, "n2", "s", json!([live(SRC)]), now);
        let cmd = Bytes::from_static(b"{}");
        assert_eq!(
            routes.route("s", "control.cancel", cmd.clone(), now, false),
            Ok(Routed::Node(Arc::from("n2")))
        );
        // Forwarded to that node, which weighs only its own claims.
        assert_eq!(
            routes.route("s", "control.cancel", cmd.clone(), now, true),
            Err(Refused::NoRoute)
        );
        // A second node's live claim: ambiguous, never a broadcast.
        remote(&mut routes, "n3", "s", json!([live(SRC)]), now);
        assert_eq!(
            routes.route("s", "control.cancel", cmd, now, false),
            Err(Refused::Ambiguous(2))
        );
    }

    #[test]
    fn a_forwarded_command_is_weighed_over_the_claims_this_node_knows() {
        let now = Instant::now();
        let mut routes = routes();
        let (tx, mut rx) = mpsc::channel(4);
        routes.connect(1, declared(Role::Emitter, &["control.cancel"]), tx);
        routes.claim(1, &Arc::from("s"), SRC, Claiming::Fresh, now);
        // The sending node saw only this node's claim; this node also
        // knows one on a third node: ambiguous, not delivered.
        remote(&mut routes, "n3", "s", json!([live("urn:other")]), now);
        let cmd = Bytes::from_static(b"{}");
        assert_eq!(
            routes.route("s", "control.cancel", cmd.clone(), now, true),
            Err(Refused::Ambiguous(2))
        );
        assert!(rx.try_recv().is_err());
        // That claim left: delivered here.
        routes.remote.remove("s.n3");
        assert_eq!(
            routes.route("s", "control.cancel", cmd.clone(), now, true),
            Ok(Routed::Here)
        );
        assert_eq!(rx.try_recv().unwrap().0, cmd);
    }

    #[test]
    fn claims_here_and_on_another_node_are_weighed_together() {
        let now = Instant::now();
        let mut routes = routes();
        let (tx, mut rx) = mpsc::channel(4);
        routes.connect(1, declared(Role::Emitter, &["control.cancel"]), tx);
        routes.claim(1, &Arc::from("s"), SRC, Claiming::Fresh, now);
        let cmd = Bytes::from_static(b"{}");
        // Live here and live there: ambiguous, nothing delivered.
        remote(&mut routes, "n2", "s", json!([live(SRC)]), now);
        assert_eq!(
            routes.route("s", "control.cancel", cmd.clone(), now, false),
            Err(Refused::Ambiguous(2))
        );
        assert!(rx.try_recv().is_err());
        // The owner left there (held for its return) and came back here
        // under its source: delivered here.
        let away = json!([{"source": SRC, "away_ms": 3000}]);
        remote(&mut routes, "n2", "s", away, now);
        assert_eq!(
            routes.route("s", "control.cancel", cmd.clone(), now, false),
            Ok(Routed::Here)
        );
        assert_eq!(rx.try_recv().unwrap().0, cmd);
        // Held there under another source: ambiguous.
        let impostor = json!([{"source": "urn:other", "away_ms": 3000}]);
        remote(&mut routes, "n2", "s", impostor, now);
        assert_eq!(
            routes.route("s", "control.cancel", cmd.clone(), now, false),
            Err(Refused::Ambiguous(2))
        );
        // Only held, there: `no-route` for what is left of its grace.
        routes.disconnect(1, now);
        routes.forget_session("s");
        remote(
            &mut routes,
            "n2",
            "s",
            json!([{"source": SRC, "away_ms": 3000}]),
            now,
        );
        assert_eq!(
            routes.route(
                "s",
                "control.cancel",
                cmd.clone(),
                now + Duration::from_secs(1),
                false
            ),
            Err(Refused::Away(Duration::from_secs(2)))
        );
        // A node that stopped publishing: its claims are gone.
        assert_eq!(
            routes.route(
                "s",
                "control.cancel",
                cmd,
                now + crate::directory::TTL,
                false
            ),
            Err(Refused::NoRoute)
        );
    }

    #[test]
    fn an_ack_is_refused_while_another_node_holds_the_owner() {
        let now = Instant::now();
        let mut routes = routes();
        let (tx, _rx) = mpsc::channel(4);
        routes.connect(1, declared(Role::Emitter, &[]), tx);
        assert!(routes.check_ack(1, Some("s"), SRC, now).is_ok());
        assert!(!routes.owned("s", now));
        remote(&mut routes, "n2", "s", json!([live(SRC)]), now);
        assert!(routes.check_ack(1, Some("s"), SRC, now).is_err());
        assert!(routes.owned("s", now));
        // The owner back here, its claim there held for its return.
        remote(
            &mut routes,
            "n2",
            "s",
            json!([{"source": SRC, "away_ms": 3000}]),
            now,
        );
        routes.claim(1, &Arc::from("s"), SRC, Claiming::Fresh, now);
        assert!(routes.check_ack(1, Some("s"), SRC, now).is_ok());
        assert!(routes.check_ack(1, Some("s"), "urn:other", now).is_err());
    }

    #[test]
    fn the_roster_lists_this_nodes_claims_then_the_other_nodes() {
        let now = Instant::now();
        let mut routes = routes();
        let (tx, _rx) = mpsc::channel(4);
        routes.connect(1, declared(Role::Emitter, &["control.cancel"]), tx);
        routes.claim(1, &Arc::from("here"), SRC, Claiming::Fresh, now);
        remote(&mut routes, "n2", "there", json!([live(SRC)]), now);
        let entries = roster_values(&routes);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0]["session"], "here");
        assert_eq!(entries[0]["agent"], "agent-x");
        assert_eq!(entries[1]["session"], "there");
        assert_eq!(entries[1]["agent"], "far");
        // Past the budget, counted as left out.
        let first = 16 + "here".len() + routes.roster(usize::MAX, now).entries[0].1.len();
        let small = routes.roster(first, now);
        assert_eq!((small.entries.len(), small.omitted), (1, 1));
    }

    #[test]
    fn what_this_node_holds_is_published_when_it_changes() {
        let now = Instant::now();
        let mut routes = routes();
        let s: Arc<str> = Arc::from("s");
        let (tx, _rx) = mpsc::channel(4);
        routes.connect(1, declared(Role::Emitter, &["control.cancel"]), tx);
        routes.claim(1, &s, SRC, Claiming::Fresh, now);
        // Not a node of a cluster: nothing tracked.
        assert!(routes.take_changed().is_empty());
        routes.track_changes();
        routes.disconnect(1, now);
        assert_eq!(routes.take_changed(), vec![s.clone()]);
        assert!(routes.take_changed().is_empty());
        let held = routes.held("s", now + Duration::from_secs(1)).unwrap();
        assert_eq!(held.claims.len(), 1);
        assert_eq!(held.claims[0].source, SRC);
        assert_eq!(held.claims[0].live, None);
        assert_eq!(held.claims[0].away_ms, 4000);
        let (tx, _rx) = mpsc::channel(4);
        routes.connect(2, declared(Role::Emitter, &["control.cancel"]), tx);
        routes.claim(2, &s, SRC, Claiming::Fresh, now);
        assert_eq!(routes.take_changed(), vec![s.clone()]);
        let held = routes.held("s", now).unwrap();
        let live = held.claims[0].live.as_ref().unwrap();
        assert_eq!(live["agent"], "agent-x");
        assert_eq!(routes.claimed(), vec![s.clone()]);
        routes.forget_session("s");
        assert_eq!(routes.take_changed(), vec![s]);
        assert_eq!(routes.held("s", now), None);
    }
}
