//! The sender's side of the control profile: build commands, and track
//! each until exactly one outcome.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use aep_types::form::gate_values;
use aep_types::{
    Answer, Capture, ControlAttentionRespond, Event, FieldSpec, NackReason, Payload,
    RegisteredType, Violations,
};
use serde_json::Value;

use crate::frame::{self, Decoded, ErrorCode, ErrorFrame, Frame};

use super::{is_command_type, rfc3339, Identity, Ids, Outgoing, DEFAULT_ACK_WINDOW_MS};

/// The default pause between two attempts of one command.
const DEFAULT_RETRY_INTERVAL_MS: u64 = 2_000;
/// The default number of retries after the first attempt.
const DEFAULT_RETRIES: u32 = 2;

/// Where a command goes and what it links to (AEP-0004 §2.2, §6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    /// The target's `session`.
    pub session: String,
    /// The target's `run`, for a run-scoped command.
    pub run: Option<String>,
    /// The entity acted on (for a respond: the request's `id`).
    pub subject: Option<String>,
    /// The event that prompted the command.
    pub cause: Option<String>,
}

impl Address {
    /// A command to `session`, with no `run`, `subject` or `cause`.
    pub fn session(session: impl Into<String>) -> Address {
        Address {
            session: session.into(),
            run: None,
            subject: None,
            cause: None,
        }
    }

    /// With the target's `run`.
    pub fn run(mut self, run: impl Into<String>) -> Address {
        self.run = Some(run.into());
        self
    }

    /// With a `subject`.
    pub fn subject(mut self, subject: impl Into<String>) -> Address {
        self.subject = Some(subject.into());
        self
    }

    /// With a `cause`.
    pub fn cause(mut self, cause: impl Into<String>) -> Address {
        self.cause = Some(cause.into());
        self
    }
}

/// How a command ended. Each command gets exactly one.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The target will attempt it (`control.accepted`). The outcome proper
    /// arrives later, as domain events `cause`-linked to the command.
    Accepted(Event),
    /// The target will not (`control.rejected`); `refused` is its
    /// sovereign, non-error no.
    Rejected {
        /// The reason; `None` when the nack's payload does not decode (a
        /// reason of a later version, say).
        reason: Option<NackReason>,
        /// The target's explanation, if it gave one.
        detail: Option<String>,
        /// The nack event.
        ack: Event,
    },
    /// A relay refused it on the target's behalf with an `error` frame
    /// (AEP-0004 §4.2: `unauthorized`, `unsupported`, `ambiguous`,
    /// `no-route`, or any other code); it may be retried when conditions
    /// change.
    Refused {
        /// The frame's `code` (an empty [`ErrorCode::Other`] when the
        /// frame has none).
        code: ErrorCode,
        /// The frame's `detail`, if any.
        detail: Option<String>,
    },
    /// No answer within the ack window after the last attempt: a nack
    /// `timeout` synthesized here, never on the wire (AEP-0004 §3).
    Timeout,
}

/// A command's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    /// The command's `id`.
    pub command: String,
    /// Its outcome.
    pub outcome: Outcome,
}

/// What [`Sender::poll`] finds due.
#[derive(Debug, Clone, PartialEq)]
pub enum Due {
    /// Send this command again: the same line, byte for byte (AEP-0004
    /// §2.3).
    Retry(Outgoing),
    /// A command timed out ([`Outcome::Timeout`]).
    Settled(Settled),
}

/// Why a command was not built or not tracked.
#[derive(Debug)]
#[non_exhaustive]
pub enum SenderError {
    /// The type is not a command type
    /// ([`is_command_type`](super::is_command_type)).
    NotACommandType(String),
    /// [`Sender::respond`] was given something other than an
    /// `attention.requested` with a `session`.
    NotARequest(String),
    /// A command with this `id` is already pending.
    AlreadyPending(String),
    /// The command breaks the envelope or payload schema (a `seq`, an
    /// empty `session`, a bad `source`...); every violation with its place.
    Invalid(Violations),
    /// The command could not be serialized.
    Encode(serde_json::Error),
}

impl fmt::Display for SenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SenderError::NotACommandType(t) => write!(f, "`{t}` is not a command type"),
            SenderError::NotARequest(why) => write!(f, "not an attention request: {why}"),
            SenderError::AlreadyPending(id) => write!(f, "command `{id}` is already pending"),
            SenderError::Invalid(v) => write!(f, "the command is invalid: {v}"),
            SenderError::Encode(e) => write!(f, "the command could not be serialized: {e}"),
        }
    }
}

impl std::error::Error for SenderError {}

/// A command waiting for its outcome.
#[derive(Debug)]
struct Pending {
    command: Outgoing,
    /// When the last attempt went out.
    sent_ms: u64,
    retries_left: u32,
}

/// The sender's side of the control profile (AEP-0004 §2, §3, §7): builds
/// commands and settles each exactly once.
///
/// Timing, with `now` in milliseconds since the Unix epoch: each attempt
/// opens the ack window ([`with_window_ms`](Sender::with_window_ms),
/// 10 000 ms by default, the target's declared `ack_window_ms`). While
/// retries remain ([`with_retries`](Sender::with_retries), 2 retries
/// 2 000 ms apart by default), [`poll`](Sender::poll) returns a
/// [`Due::Retry`] of the same line once the interval has passed since the
/// last attempt; once none remain and the window after the last attempt
/// has closed silent, it returns [`Outcome::Timeout`].
/// [`next_due_ms`](Sender::next_due_ms) says when to poll next.
///
/// An ack settles a command when it is `control.accepted` or
/// `control.rejected` with `cause` = the command's `id` and the
/// command's `session`; an `error` frame when its `cause` is the
/// command's `id`. Anything else, and anything for a command already
/// settled, is ignored.
///
/// ```
/// use aep::control::{Address, Due, Identity, Outcome, Sender};
/// use aep::frame::ErrorCode;
/// use aep::{ControlPause, Payload};
///
/// let mut sender = Sender::new(Identity::new("urn:aep:console", "console")).with_retries(1_000, 1);
/// let t0 = 1_796_119_200_000;
/// let pause = sender.command(&Address::session("s1"), &Payload::ControlPause(ControlPause::new()), t0)?;
/// assert_eq!(sender.next_due_ms(), Some(t0 + 1_000));
///
/// // Silence: one retry of the same bytes, then the timeout.
/// let due = sender.poll(t0 + 1_000);
/// assert!(matches!(&due[..], [Due::Retry(again)] if again.line() == pause.line()));
/// assert!(sender.poll(t0 + 10_999).is_empty());
/// let due = sender.poll(t0 + 11_000);
/// assert!(matches!(&due[..], [Due::Settled(s)] if s.outcome == Outcome::Timeout));
///
/// // A relay's refusal settles a command too.
/// let cancel = sender.command(&Address::session("s2"), &Payload::ControlPause(ControlPause::new()), t0)?;
/// let frame = serde_json::json!({"type": "error", "cause": cancel.event().id, "code": "no-route"});
/// let settled = sender.receive_frame(&frame).expect("the refusal of a pending command");
/// assert!(matches!(settled.outcome, Outcome::Refused { code: ErrorCode::NoRoute, .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Sender {
    identity: Identity,
    ids: Ids,
    window_ms: u64,
    retry_interval_ms: u64,
    retries: u32,
    /// Pending commands in the order sent, by a serial number.
    pending: BTreeMap<u64, Pending>,
    /// The serial of each pending command's id.
    serials: HashMap<String, u64>,
    next_serial: u64,
}

impl Sender {
    /// A sender emitting as `identity`, with the default window and
    /// retries and ids from [`Ids::new`].
    pub fn new(identity: Identity) -> Sender {
        Sender {
            identity,
            ids: Ids::new(),
            window_ms: DEFAULT_ACK_WINDOW_MS,
            retry_interval_ms: DEFAULT_RETRY_INTERVAL_MS,
            retries: DEFAULT_RETRIES,
            pending: BTreeMap::new(),
            serials: HashMap::new(),
            next_serial: 0,
        }
    }

    /// Waits `ms` for an ack after each attempt.
    pub fn with_window_ms(mut self, ms: u64) -> Sender {
        self.window_ms = ms;
        self
    }

    /// Retries a silent command `retries` times, `interval_ms` apart.
    pub fn with_retries(mut self, interval_ms: u64, retries: u32) -> Sender {
        self.retry_interval_ms = interval_ms;
        self.retries = retries;
        self
    }

    /// Mints ids with `ids` (a seeded generator replays in tests).
    pub fn with_ids(mut self, ids: Ids) -> Sender {
        self.ids = ids;
        self
    }

    /// Builds a command carrying `payload` to `to`, sent at `now`, and
    /// tracks it. The event has a fresh ULID `id`, `time` from `now`, the
    /// sender's `source` and `agent`, no `seq`, and the lowest `capture`
    /// its payload needs (`redacted` for free text such as a cancel's
    /// `reason` or `answer.text`, and for form `values` holding strings).
    /// The text is sent as given: pass it through [`crate::redact`] first
    /// where it may hold secrets.
    pub fn command(
        &mut self,
        to: &Address,
        payload: &Payload,
        now: u64,
    ) -> Result<Outgoing, SenderError> {
        self.build(to, payload, None, now)
    }

    /// Answers an `attention.requested`: a `control.attention.respond`
    /// to its `session` with `subject` and `cause` = its `id` (AEP-0004
    /// §6). For a form request, `capture` is `redacted` only when a value
    /// is free text by the form's fields (a string field, an `other`
    /// text), as the type-dependent gate says (AEP-0006). The answer is
    /// not checked against the form here: the target does that
    /// ([`aep_types::form::validate_values`] checks it beforehand).
    pub fn respond(
        &mut self,
        request: &Event,
        answer: Answer,
        now: u64,
    ) -> Result<Outgoing, SenderError> {
        if request.registered_type() != Some(RegisteredType::AttentionRequested) {
            return Err(SenderError::NotARequest(format!(
                "`{}` is not `attention.requested`",
                request.type_
            )));
        }
        let Some(session) = &request.session else {
            return Err(SenderError::NotARequest("it has no `session`".to_owned()));
        };
        let fields = match request.payload() {
            Ok(Payload::AttentionRequested(asked)) => asked.fields,
            _ => None,
        };
        let to = Address::session(session.clone())
            .subject(request.id.clone())
            .cause(request.id.clone());
        let payload = Payload::ControlAttentionRespond(ControlAttentionRespond::new(answer));
        self.build(&to, &payload, fields.as_deref(), now)
    }

    /// The command event of [`command`](Sender::command), tracked; `fields`
    /// is the form a respond answers, when known.
    fn build(
        &mut self,
        to: &Address,
        payload: &Payload,
        fields: Option<&[FieldSpec]>,
        now: u64,
    ) -> Result<Outgoing, SenderError> {
        let Some(event_type) = payload.event_type() else {
            return Err(SenderError::NotACommandType(
                "(an untyped payload; `track` takes a vendor command)".to_owned(),
            ));
        };
        if !is_command_type(event_type) {
            return Err(SenderError::NotACommandType(event_type.to_owned()));
        }
        let mut event = Event::new(
            self.ids.next(now),
            event_type,
            rfc3339(now),
            self.identity.source.clone(),
            self.identity.agent.clone(),
        );
        event.session = Some(to.session.clone());
        event.run = to.run.clone();
        event.subject = to.subject.clone();
        event.cause = to.cause.clone();
        event.set_payload(payload).map_err(SenderError::Encode)?;
        event.capture = Some(lowest_capture(&event, payload, fields));
        self.track(event, now)
    }

    /// Tracks a command built by the caller (a vendor
    /// `x.{vendor}.control.{verb}`, an extension attribute), sent at
    /// `now`. It must be of a command type, not pending yet, and pass
    /// [`Event::validate`] (so carry `session` and no `seq`).
    pub fn track(&mut self, command: Event, now: u64) -> Result<Outgoing, SenderError> {
        if !is_command_type(&command.type_) {
            return Err(SenderError::NotACommandType(command.type_));
        }
        if self.serials.contains_key(&command.id) {
            return Err(SenderError::AlreadyPending(command.id));
        }
        command.validate().map_err(SenderError::Invalid)?;
        let command = Outgoing::new(command).map_err(SenderError::Encode)?;
        let serial = self.next_serial;
        self.next_serial += 1;
        self.serials.insert(command.event().id.clone(), serial);
        self.pending.insert(
            serial,
            Pending {
                command: command.clone(),
                sent_ms: now,
                retries_left: self.retries,
            },
        );
        Ok(command)
    }

    /// Settles the command an ack answers: `control.accepted` or
    /// `control.rejected`, `cause`-matched, from the command's `session`.
    pub fn receive(&mut self, event: &Event) -> Option<Settled> {
        let accepted = match event.type_.as_str() {
            "control.accepted" => true,
            "control.rejected" => false,
            _ => return None,
        };
        let serial = *self.serials.get(event.cause.as_deref()?)?;
        let addressed = self
            .pending
            .get(&serial)?
            .command
            .event()
            .session
            .as_deref();
        if event.session.as_deref() != addressed {
            return None;
        }
        let outcome = if accepted {
            Outcome::Accepted(event.clone())
        } else {
            match event.payload() {
                Ok(Payload::ControlRejected(nack)) => Outcome::Rejected {
                    reason: Some(nack.reason),
                    detail: nack.detail,
                    ack: event.clone(),
                },
                _ => Outcome::Rejected {
                    reason: None,
                    detail: raw_detail(event),
                    ack: event.clone(),
                },
            }
        };
        Some(self.settle(serial, outcome))
    }

    /// Settles from one WebSocket frame, parsed: an event (its `type`
    /// holds a dot, AEP-0003 §2) as [`receive`](Sender::receive) does, or
    /// an `error` frame `{"type": "error", "cause", "code", "detail"?}`
    /// naming a pending command ([`Outcome::Refused`]). Other frames give
    /// `None`.
    pub fn receive_frame(&mut self, frame: &Value) -> Option<Settled> {
        match frame::decode_value(frame.clone()).ok()? {
            Decoded::Event(event) => {
                let event = Event::from_json(&event.to_string()).ok()?;
                self.receive(&event)
            }
            Decoded::Frame(Frame::Error(error)) => self.receive_error(error),
            _ => None,
        }
    }

    /// Settles from an `error` frame whose `cause` names a pending command
    /// ([`Outcome::Refused`]); `None` for any other.
    pub fn receive_error(&mut self, error: ErrorFrame) -> Option<Settled> {
        let serial = *self.serials.get(error.cause.as_deref()?)?;
        let outcome = Outcome::Refused {
            code: error.code,
            detail: error.detail,
        };
        Some(self.settle(serial, outcome))
    }

    /// [`receive_frame`](Sender::receive_frame) for a text frame; `None`
    /// for text that is not JSON.
    pub fn receive_line(&mut self, line: &str) -> Option<Settled> {
        let frame: Value = serde_json::from_str(line).ok()?;
        self.receive_frame(&frame)
    }

    /// What is due at `now`: retries (at most one per command per call),
    /// then timeouts, each in the order the commands were sent.
    pub fn poll(&mut self, now: u64) -> Vec<Due> {
        let mut due = Vec::new();
        let mut expired = Vec::new();
        for (serial, pending) in &mut self.pending {
            if pending.retries_left > 0 {
                if now >= pending.sent_ms.saturating_add(self.retry_interval_ms) {
                    pending.retries_left -= 1;
                    pending.sent_ms = now;
                    due.push(Due::Retry(pending.command.clone()));
                }
            } else if now >= pending.sent_ms.saturating_add(self.window_ms) {
                expired.push(*serial);
            }
        }
        for serial in expired {
            due.push(Due::Settled(self.settle(serial, Outcome::Timeout)));
        }
        due
    }

    /// When [`poll`](Sender::poll) next has something to do, if anything
    /// is pending.
    pub fn next_due_ms(&self) -> Option<u64> {
        self.pending
            .values()
            .map(|p| {
                let wait = if p.retries_left > 0 {
                    self.retry_interval_ms
                } else {
                    self.window_ms
                };
                p.sent_ms.saturating_add(wait)
            })
            .min()
    }

    /// The commands waiting for an outcome, in the order sent (to send
    /// again on a new connection, say).
    pub fn pending(&self) -> impl Iterator<Item = &Outgoing> {
        self.pending.values().map(|p| &p.command)
    }

    fn settle(&mut self, serial: u64, outcome: Outcome) -> Settled {
        let command = match self.pending.remove(&serial) {
            Some(pending) => pending.command.event().id.clone(),
            None => String::new(),
        };
        self.serials.remove(&command);
        Settled { command, outcome }
    }
}

/// The lowest capture level at which `event` is honest: `metadata`
/// unless a member needs more (free text needs `redacted`); a respond's
/// form values count as free text unless `fields` shows them structural
/// (without the form, any string might be free text).
fn lowest_capture(event: &Event, payload: &Payload, fields: Option<&[FieldSpec]>) -> Capture {
    let values_need_redacted = match payload {
        Payload::ControlAttentionRespond(respond) => match (&respond.answer.values, fields) {
            (Some(values), Some(fields)) => {
                &gate_values(fields, values, Capture::Metadata) != values
            }
            (Some(values), None) => values.values().any(|v| !(v.is_number() || v.is_boolean())),
            (None, _) => false,
        },
        _ => false,
    };
    let floor = if values_need_redacted {
        Capture::Redacted
    } else {
        Capture::Metadata
    };
    let mut probe = event.clone();
    [Capture::Metadata, Capture::Redacted, Capture::Full]
        .into_iter()
        .filter(|level| *level >= floor)
        .find(|level| {
            probe.capture = Some(*level);
            probe.validate_capture().is_ok()
        })
        .unwrap_or(Capture::Full)
}

/// A nack's `detail` read from its raw data, when the payload does not
/// decode.
fn raw_detail(event: &Event) -> Option<String> {
    let data = event.data.as_ref()?.to_object().ok()?;
    data.get("detail")?.as_str().map(str::to_owned)
}
