//! Command routing (AEP-0004 §4) and the roster (AEP-0003 §4.1).
//!
//! A WebSocket connection of role `emitter` or `both` claims every session
//! it emits a positioned session event for; a `consumer` connection never
//! claims, and a command claims nothing. A command goes to exactly one
//! live claimant, byte for byte; none is `no-route`, several is
//! `ambiguous` (never a guess, never a broadcast), and a claimant whose
//! declared `control.accepts` lacks the type is `unsupported` on its
//! behalf.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

/// A connection's role from its `hello`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Emitter,
    Consumer,
    Both,
}

impl Role {
    pub fn parse(role: &str) -> Option<Role> {
        match role {
            "emitter" => Some(Role::Emitter),
            "consumer" => Some(Role::Consumer),
            "both" => Some(Role::Both),
            _ => None,
        }
    }

    pub fn emits(self) -> bool {
        self != Role::Consumer
    }

    pub fn watches(self) -> bool {
        self != Role::Emitter
    }
}

/// What a connection declared in its `hello`, kept verbatim.
#[derive(Debug, Clone)]
pub(crate) struct Declared {
    pub role: Role,
    pub agent: Option<Value>,
    pub instance: Option<Value>,
    pub control: Option<Value>,
    pub emits: Option<Value>,
}

impl Declared {
    /// The declared `control.accepts` (absent or malformed: nothing).
    fn accepts(&self, command_type: &str) -> bool {
        self.control
            .as_ref()
            .and_then(|c| c.get("accepts"))
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|t| t.as_str() == Some(command_type)))
    }
}

struct Conn {
    declared: Declared,
    claims: HashSet<Arc<str>>,
    commands: mpsc::Sender<Bytes>,
}

/// The refusal codes of AEP-0004 §4.2 (and `busy` when the owner's
/// command queue is full).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    Unauthorized,
    NoRoute,
    Ambiguous(usize),
    Unsupported,
    Busy,
}

impl Refused {
    pub fn code(&self) -> &'static str {
        match self {
            Refused::Unauthorized => "unauthorized",
            Refused::NoRoute => "no-route",
            Refused::Ambiguous(_) => "ambiguous",
            Refused::Unsupported => "unsupported",
            Refused::Busy => "busy",
        }
    }

    pub fn detail(&self, session: &str, command_type: &str) -> String {
        match self {
            Refused::Unauthorized => "control requires an authenticated binding (AEP-0004 §4.1); this relay runs without a token".into(),
            Refused::NoRoute => format!("no connected emitter owns session {session:?}"),
            Refused::Ambiguous(n) => format!("{n} connected emitters claim session {session:?}; a command goes to at most one (AEP-0004 §4.5)"),
            Refused::Unsupported => format!("the session's owner does not declare {command_type} in control.accepts"),
            Refused::Busy => "the session's owner is not reading its commands".into(),
        }
    }
}

#[derive(Default)]
pub(crate) struct Routes {
    conns: HashMap<u64, Conn>,
    owners: HashMap<Arc<str>, Vec<u64>>,
}

impl Routes {
    pub fn connect(&mut self, conn: u64, declared: Declared, commands: mpsc::Sender<Bytes>) {
        self.conns.insert(
            conn,
            Conn {
                declared,
                claims: HashSet::new(),
                commands,
            },
        );
    }

    pub fn disconnect(&mut self, conn: u64) {
        let Some(gone) = self.conns.remove(&conn) else {
            return;
        };
        for session in gone.claims {
            if let Some(owners) = self.owners.get_mut(&session) {
                owners.retain(|c| *c != conn);
                if owners.is_empty() {
                    self.owners.remove(&session);
                }
            }
        }
    }

    /// Records that `conn` emitted a positioned event of `session`.
    pub fn claim(&mut self, conn: u64, session: &Arc<str>) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        if !c.declared.role.emits() || c.claims.contains(session) {
            return;
        }
        c.claims.insert(session.clone());
        self.owners.entry(session.clone()).or_default().push(conn);
    }

    /// Sends `command` (its exact frame text) to the one owner of
    /// `session`, or says why not.
    pub fn route(&self, session: &str, command_type: &str, command: Bytes) -> Result<(), Refused> {
        let owners = self.owners.get(session).map_or(&[][..], Vec::as_slice);
        let owner = match owners {
            [] => return Err(Refused::NoRoute),
            [one] => &self.conns[one],
            many => return Err(Refused::Ambiguous(many.len())),
        };
        if !owner.declared.accepts(command_type) {
            return Err(Refused::Unsupported);
        }
        owner.commands.try_send(command).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => Refused::Busy,
            mpsc::error::TrySendError::Closed(_) => Refused::NoRoute,
        })
    }

    /// The roster entries: one per live (connection, claimed session).
    pub fn roster(&self) -> Vec<Value> {
        let mut entries = Vec::new();
        let mut conns: Vec<_> = self.conns.iter().collect();
        conns.sort_by_key(|(id, _)| **id);
        for (_, conn) in conns {
            let mut claims: Vec<_> = conn.claims.iter().collect();
            claims.sort();
            for session in claims {
                let mut entry = Map::new();
                entry.insert("session".into(), Value::String(session.to_string()));
                let d = &conn.declared;
                for (name, value) in [
                    ("agent", &d.agent),
                    ("instance", &d.instance),
                    ("control", &d.control),
                    ("emits", &d.emits),
                ] {
                    if let Some(value) = value {
                        entry.insert(name.into(), value.clone());
                    }
                }
                entries.push(Value::Object(entry));
            }
        }
        entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn declared(role: Role, accepts: &[&str]) -> Declared {
        Declared {
            role,
            agent: Some(json!("agent-x")),
            instance: None,
            control: Some(json!({"accepts": accepts, "ack_window_ms": 10000})),
            emits: None,
        }
    }

    #[test]
    fn one_owner_gets_the_command_bytes() {
        let mut routes = Routes::default();
        let (tx, mut rx) = mpsc::channel(4);
        routes.connect(1, declared(Role::Emitter, &["control.cancel"]), tx);
        routes.claim(1, &Arc::from("s"));
        let cmd = Bytes::from_static(b"{\"type\":\"control.cancel\"}");
        routes.route("s", "control.cancel", cmd.clone()).unwrap();
        assert_eq!(rx.try_recv().unwrap(), cmd);
        assert_eq!(
            routes.route("s", "control.pause", cmd.clone()),
            Err(Refused::Unsupported)
        );
        assert_eq!(
            routes.route("t", "control.cancel", cmd),
            Err(Refused::NoRoute)
        );
    }

    #[test]
    fn two_claimants_are_ambiguous_and_consumers_never_claim() {
        let mut routes = Routes::default();
        for id in 1..=2 {
            let (tx, _) = mpsc::channel(4);
            routes.connect(id, declared(Role::Both, &["control.cancel"]), tx);
            routes.claim(id, &Arc::from("s"));
        }
        let (tx, _) = mpsc::channel(4);
        routes.connect(3, declared(Role::Consumer, &["control.cancel"]), tx);
        routes.claim(3, &Arc::from("c"));
        let cmd = Bytes::from_static(b"{}");
        assert_eq!(
            routes.route("s", "control.cancel", cmd.clone()),
            Err(Refused::Ambiguous(2))
        );
        assert_eq!(
            routes.route("c", "control.cancel", cmd.clone()),
            Err(Refused::NoRoute)
        );
        routes.disconnect(2);
        // The remaining owner's channel is closed (its receiver dropped).
        assert_eq!(
            routes.route("s", "control.cancel", cmd),
            Err(Refused::NoRoute)
        );
        assert_eq!(routes.roster().len(), 1);
    }

    #[test]
    fn roster_relays_declarations_verbatim() {
        let mut routes = Routes::default();
        let (tx, _rx) = mpsc::channel(4);
        routes.connect(
            1,
            declared(Role::Emitter, &["control.attention.respond"]),
            tx,
        );
        routes.claim(1, &Arc::from("s1"));
        routes.claim(1, &Arc::from("s0"));
        let roster = routes.roster();
        assert_eq!(
            roster,
            [
                json!({"session": "s0", "agent": "agent-x", "control": {"accepts": ["control.attention.respond"], "ack_window_ms": 10000}}),
                json!({"session": "s1", "agent": "agent-x", "control": {"accepts": ["control.attention.respond"], "ack_window_ms": 10000}}),
            ]
        );
    }

    #[test]
    fn a_full_owner_queue_is_busy() {
        let mut routes = Routes::default();
        let (tx, _rx) = mpsc::channel(1);
        routes.connect(1, declared(Role::Emitter, &["control.cancel"]), tx);
        routes.claim(1, &Arc::from("s"));
        routes.route("s", "control.cancel", Bytes::new()).unwrap();
        assert_eq!(
            routes.route("s", "control.cancel", Bytes::new()),
            Err(Refused::Busy)
        );
    }
}
