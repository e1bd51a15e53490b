//! The control profile (AEP-0004) without I/O: the target that answers
//! commands and the sender that issues them, as state machines the caller
//! drives.
//!
//! Nothing here reads a clock, opens a socket or spawns a thread. Time is
//! a value the caller passes: **`now` is always milliseconds since the
//! Unix epoch (`u64`)**, the same reading for the timers and for the
//! `time` attribute of the events built here ([`rfc3339`]). Lines go in
//! and out as `&str`/[`String`]; the caller carries them over whatever
//! binding it has (AEP-0004 §4.1: an authenticated WebSocket).
//!
//! - [`Target`]: the emitter's side. It gates each command against its
//!   declared `accepts` (`unsupported` otherwise), refuses malformed ones
//!   and form answers that break their form (`invalid`, AEP-0006), hands
//!   every other new command to the caller to [`accept`](Target::accept)
//!   or [`reject`](Target::reject) exactly once, and answers a
//!   redelivered command with its recorded ack, byte for byte (AEP-0004
//!   §3), for as long as it remembers the command.
//! - [`Sender`]: the consumer's side. It builds commands (no `seq`, the
//!   target's `session`, a fresh ULID), tracks each until exactly one
//!   [`Outcome`]: the target's ack or nack, a relay's `error` frame, or a
//!   local timeout; [`Sender::poll`] says when to resend the same bytes.
//!
//! # Stamping the target's events
//!
//! Acks and outcomes are ordinary events of the target's session: they
//! need an `id`, a `time` and the session's next `(epoch, seq)` position,
//! which only the caller knows. Every method of [`Target`] that produces
//! an event takes a [`Stamper`], asked once per event for a [`Stamp`];
//! a closure `|session: &str| Stamp { .. }` is one. The target records the
//! stamped ack, so a redelivery re-emits that exact line, with its `id`
//! and its position.
//!
//! # A round trip
//!
//! A sender and a target, wired by hand (a relay would carry the lines):
//!
//! ```
//! use aep::control::{Address, Identity, Outcome, Received, Sender, Stamp, Target};
//! use aep::control_cancel::Scope;
//! use aep::{ControlCancel, Payload};
//!
//! let mut target = Target::new(
//!     Identity::new("urn:aep:agent:demo", "demo"),
//!     ["control.cancel", "control.attention.respond"],
//! )?;
//! // The target's session counter, owned by the caller.
//! let mut seq = 41;
//! let mut stamp = |_: &str| {
//!     seq += 1;
//!     Stamp::new(format!("ack-{seq}"), "2026-12-01T10:00:00.250Z", seq, 0)
//! };
//!
//! let mut sender = Sender::new(Identity::new("urn:aep:console", "console"));
//! let now = 1_796_119_200_000; // ms since the Unix epoch
//! let cancel = Payload::ControlCancel(ControlCancel::new(Scope::Run));
//! let command = sender.command(&Address::session("s1").run("r7"), &cancel, now)?;
//! assert_eq!(command.event().seq, None);
//!
//! // The target's side: a declared command, handed over to decide.
//! let Received::Decide(cmd) = target.receive_line(command.line(), &mut stamp)? else {
//!     unreachable!("a new declared command")
//! };
//! let ack = target.accept(cmd.key(), &mut stamp)?;
//! assert_eq!(ack.event().cause.as_deref(), Some(command.event().id.as_str()));
//! assert_eq!(ack.event().seq, Some(42));
//!
//! // A redelivery gets the recorded ack, byte for byte.
//! match target.receive_line(command.line(), &mut stamp)? {
//!     Received::Resend(again) => assert_eq!(again.line(), ack.line()),
//!     other => unreachable!("{other:?}"),
//! }
//!
//! // The sender's side: the ack settles the command, once.
//! let settled = sender.receive_line(ack.line()).expect("the ack of a pending command");
//! assert!(matches!(settled.outcome, Outcome::Accepted(_)));
//! assert!(sender.receive_line(ack.line()).is_none());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod ids;
mod sender;
mod target;

#[cfg(test)]
mod tests;

use std::fmt;

use aep_types::{Event, RegisteredType, Scope};

pub use ids::{rfc3339, Ids};
pub use sender::{Address, Due, Outcome, Sender, SenderError, Settled};
pub use target::{Command, CommandId, Received, Target, TargetError};

/// The ack window when the target declares none
/// (`hello.capabilities.control.ack_window_ms`, AEP-0004 §3).
pub const DEFAULT_ACK_WINDOW_MS: u64 = 10_000;

/// Who emits: the `source` and `agent` of every event a [`Target`] or a
/// [`Sender`] builds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The `source` URI, the namespace of the emitter's ids.
    pub source: String,
    /// The `agent` name.
    pub agent: String,
}

impl Identity {
    /// An identity. Neither value is checked here: the events built with
    /// it are validated, and a bad `source` or `agent` is reported there.
    pub fn new(source: impl Into<String>, agent: impl Into<String>) -> Identity {
        Identity {
            source: source.into(),
            agent: agent.into(),
        }
    }
}

/// An event ready to write, with its exact line (JSON, no newline).
///
/// The line is the event serialized once; a recorded ack or a retried
/// command is this same line again, never a fresh serialization.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    event: Event,
    line: String,
}

impl Outgoing {
    /// Serializes `event` once. Every event reaching here has passed
    /// [`Event::validate`].
    fn new(event: Event) -> Result<Outgoing, serde_json::Error> {
        let line = serde_json::to_string(&event)?;
        Ok(Outgoing { event, line })
    }

    /// The event.
    pub fn event(&self) -> &Event {
        &self.event
    }

    /// The line to write.
    pub fn line(&self) -> &str {
        &self.line
    }

    /// The line to write, by value.
    pub fn into_line(self) -> String {
        self.line
    }
}

/// The place of one event in the target's session: what only the caller
/// knows. See [`Stamper`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// The event's `id`, unique for the target's `source` ([`Ids`] mints
    /// ULIDs).
    pub id: String,
    /// The event's `time`, RFC 3339 ([`rfc3339`] formats a `now`).
    pub time: String,
    /// The session's next `seq`.
    pub seq: u64,
    /// The session's `epoch`, written even when 0.
    pub epoch: u64,
}

impl Stamp {
    /// A stamp.
    pub fn new(id: impl Into<String>, time: impl Into<String>, seq: u64, epoch: u64) -> Stamp {
        Stamp {
            id: id.into(),
            time: time.into(),
            seq,
            epoch,
        }
    }
}

/// Gives each event a [`Target`] builds its [`Stamp`]: asked once per
/// event, with the `session` the event belongs to.
///
/// Any `FnMut(&str) -> Stamp` is a stamper (annotate the closure's
/// argument: `|session: &str| ...`). A stamp that makes an invalid event
/// (an empty `id`, a `time` that is not RFC 3339) is reported as
/// [`TargetError::Invalid`]; the `seq` it took is then a gap, which the
/// protocol allows (AEP-0001 §7.2).
pub trait Stamper {
    /// The stamp of the next event in `session`.
    fn stamp(&mut self, session: &str) -> Stamp;
}

impl<F: FnMut(&str) -> Stamp> Stamper for F {
    fn stamp(&mut self, session: &str) -> Stamp {
        self(session)
    }
}

/// Whether `event_type` is a command type a target may declare and a
/// sender may send: a registered command (`control.attention.respond`,
/// `control.cancel`, `control.pause`, `control.resume`) or a vendor
/// command `x.{vendor}.control.{rest}` (AEP-0004 §5).
pub fn is_command_type(event_type: &str) -> bool {
    match event_type.parse::<RegisteredType>() {
        Ok(registered) => registered.scope() == Scope::Command,
        Err(_) => is_vendor_command(event_type),
    }
}

/// `x.{vendor}.control.{rest}`, as the envelope schema's scoping rule
/// reads it.
fn is_vendor_command(event_type: &str) -> bool {
    let Some(rest) = event_type.strip_prefix("x.") else {
        return false;
    };
    let Some((vendor, rest)) = rest.split_once('.') else {
        return false;
    };
    let vendor_ok = !vendor.is_empty()
        && vendor
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    vendor_ok && rest.strip_prefix("control.").is_some_and(|r| !r.is_empty())
}

/// Whether an incoming event's type asks for an ack: every command type,
/// and every other `control.*` type but the two acks (a command of a
/// later version, which the target nacks `unsupported`).
fn wants_ack(event_type: &str) -> bool {
    is_command_type(event_type)
        || (event_type.starts_with("control.")
            && !matches!(event_type, "control.accepted" | "control.rejected"))
}

/// A list of items, `; `-separated, for a `detail` or an error message.
struct Listed<'a, T>(&'a [T]);

impl<T: fmt::Display> fmt::Display for Listed<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, item) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{item}")?;
        }
        Ok(())
    }
}
