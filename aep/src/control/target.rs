//! The target's side of the control profile: gate, dedupe and answer
//! commands, and build the outcome events that follow.

use std::collections::{HashMap, VecDeque};
use std::fmt;

use aep_types::attention_answered::Via;
use aep_types::attention_requested::Kind;
use aep_types::attention_resolved::Resolution;
use aep_types::form::{self, FormError, FormRule};
use aep_types::{
    Answer, AttentionAnswered, AttentionResolved, Capture, ControlAttentionRespond,
    ControlRejected, Event, FieldSpec, NackReason, Object, Payload, RegisteredType, Violations,
};
use serde_json::Value;

use super::DEFAULT_ACK_WINDOW_MS;
use super::{is_command_type, wants_ack, Identity, Listed, Outgoing, Stamper};
use crate::emit::{EmitError, Emitter};

/// How many commands a [`Target`] remembers by default.
const DEFAULT_CAPACITY: usize = 4096;

/// The dedupe key of a command: its `source` and `id` (AEP-0001 §7.4).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CommandId {
    /// The sender's `source`.
    pub source: String,
    /// The command's `id`.
    pub id: String,
}

impl fmt::Display for CommandId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "command `{}` from `{}`", self.id, self.source)
    }
}

/// A new command of a declared type, well formed, for the caller to
/// decide: [`Target::accept`] or [`Target::reject`] with its
/// [`key`](Command::key), exactly once.
#[derive(Debug, Clone)]
pub struct Command {
    key: CommandId,
    event: Event,
    payload: Payload,
}

impl Command {
    /// The dedupe key, which the decision names.
    pub fn key(&self) -> &CommandId {
        &self.key
    }

    /// The command event as received.
    pub fn event(&self) -> &Event {
        &self.event
    }

    /// Its typed payload ([`Payload::Untyped`] for a vendor command).
    pub fn payload(&self) -> &Payload {
        &self.payload
    }

    /// The addressed session (every command handed over has one).
    pub fn session(&self) -> &str {
        self.event.session.as_deref().unwrap_or_default()
    }
}

/// What to do with a received command.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // a value of the moment, never stored
pub enum Received {
    /// A new command to decide: call [`Target::accept`] or
    /// [`Target::reject`] within the ack window.
    Decide(Command),
    /// The target refused the command itself (`unsupported` for an
    /// undeclared type, `invalid` for a malformed command or a form answer
    /// that breaks its form); the decision is recorded. Write the line.
    Nack(Outgoing),
    /// A redelivery of a decided command: its recorded ack, the same line
    /// as before (same `id`, same position). Write it again.
    Resend(Outgoing),
    /// A redelivery of a command still being decided: nothing to write,
    /// the forthcoming ack answers every delivery.
    InProgress,
}

/// Why a [`Target`] call produced no event.
#[derive(Debug)]
#[non_exhaustive]
pub enum TargetError {
    /// The input is not a command: not JSON, not an object, or of a type
    /// that is not a command (an ack, a domain event). Nothing to answer.
    NotACommand(String),
    /// A command that cannot be answered: its `id`, `source` or `session`
    /// is missing, empty or not a string, so no ack can name it or be
    /// placed in a session. The message names the attribute.
    Unanswerable(String),
    /// An `accepts` entry that is not a command type
    /// ([`is_command_type`](super::is_command_type)).
    NotACommandType(String),
    /// The decision names a command the target does not hold as pending:
    /// never received, refused on receipt, or already forgotten.
    UnknownCommand(CommandId),
    /// The command was already decided; its ack is the recorded one.
    AlreadyDecided(CommandId),
    /// An outcome needs what the command lacks (the message says what).
    Outcome(String),
    /// The event built is invalid, most likely from its [`Stamp`](super::Stamp)
    /// or the [`Identity`]; every violation is listed with its place.
    Invalid(Violations),
    /// The capture step failed on the event built.
    Emit(EmitError),
    /// The event could not be serialized.
    Encode(serde_json::Error),
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::NotACommand(why) => write!(f, "not a command: {why}"),
            TargetError::Unanswerable(why) => write!(f, "a command that cannot be answered: {why}"),
            TargetError::NotACommandType(t) => write!(
                f,
                "`{t}` is not a command type (control.attention.respond, control.cancel, \
                 control.pause, control.resume or x.{{vendor}}.control.{{verb}})"
            ),
            TargetError::UnknownCommand(key) => write!(f, "{key} is not pending here"),
            TargetError::AlreadyDecided(key) => write!(f, "{key} is already decided"),
            TargetError::Outcome(why) => write!(f, "no outcome event: {why}"),
            TargetError::Invalid(v) => write!(f, "the event built is invalid: {v}"),
            TargetError::Emit(e) => write!(f, "the event built could not be emitted: {e}"),
            TargetError::Encode(e) => write!(f, "the event built could not be serialized: {e}"),
        }
    }
}

impl std::error::Error for TargetError {}

/// What the target remembers of a command.
#[derive(Debug)]
enum Memory {
    /// Handed to the caller; the ack goes in this session.
    Pending { session: String },
    /// Decided: the recorded ack.
    Decided(Box<Outgoing>),
}

/// A form request the target emitted and has not closed.
#[derive(Debug)]
struct Form {
    session: String,
    fields: Vec<FieldSpec>,
}

/// The target's side of the control profile (AEP-0004 §2, §3, §7): one per
/// emitter identity, for all its sessions.
///
/// - [`receive`](Target::receive) / [`receive_line`](Target::receive_line)
///   a command and act on the [`Received`];
/// - [`accept`](Target::accept) or [`reject`](Target::reject) each
///   [`Received::Decide`] exactly once;
/// - [`observe`](Target::observe) the events the agent emits, so form
///   answers are checked against pending `kind: "form"` requests;
/// - [`outcome`](Target::outcome) and [`answered`](Target::answered)
///   build the outcome events, `cause`-linked to the command.
///
/// The target remembers at most [`with_capacity`](Target::with_capacity)
/// commands (4096 by default), pending or decided, forgetting the oldest
/// received first; a forgotten command's redelivery is a new command
/// (AEP-0004 §3). A remembered command holds its key, and once decided
/// its ack (event and line, a few hundred bytes).
///
/// Every event it builds goes through [`Emitter::emit`] at its capture
/// ceiling ([`with_ceiling`](Target::with_ceiling), `metadata` by
/// default, where a nack's free-text `detail` is dropped; at `redacted`
/// it passes the redaction pipeline) and must pass [`Event::validate`].
/// Acks carry the command's `session` and `cause` = the command's `id`.
///
/// A respond that answers a pending form request and breaks the form is
/// nacked `invalid`, naming the fields (AEP-0006); the request stays
/// pending for a better answer:
///
/// ```
/// use aep::control::{Identity, Received, Stamp, Target};
/// use aep::{Capture, Event, NackReason, Payload};
///
/// let mut target = Target::new(Identity::new("urn:aep:agent:demo", "demo"), ["control.attention.respond"])?
///     .with_ceiling(Capture::Redacted);
/// let mut seq = 0;
/// let mut stamp = |_: &str| {
///     seq += 1;
///     Stamp::new(format!("e{seq}"), "2026-12-01T10:00:00Z", seq, 0)
/// };
/// target.observe(&Event::from_json(r#"{"aep":"0.1","id":"q1","type":"attention.requested",
///     "time":"2026-12-01T10:00:00Z","source":"urn:aep:agent:demo","agent":"demo","session":"s1","seq":1,
///     "data":{"kind":"form","prompt":"Port?","fields":[{"id":"port","type":"number","label":"Port","required":true}]}}"#)?);
///
/// let respond = r#"{"aep":"0.1","id":"c1","type":"control.attention.respond","subject":"q1","cause":"q1",
///     "time":"2026-12-01T10:00:05Z","source":"urn:aep:console","agent":"console","session":"s1",
///     "data":{"answer":{"values":{}}}}"#;
/// let Received::Nack(nack) = target.receive_line(respond, &mut stamp)? else { unreachable!() };
/// let Payload::ControlRejected(rejected) = nack.event().payload()? else { unreachable!() };
/// assert_eq!(rejected.reason, NackReason::Invalid);
/// assert_eq!(rejected.detail.as_deref(), Some("the answer breaks the form: field `port`: required, but not answered"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Target {
    identity: Identity,
    accepts: Vec<String>,
    ack_window_ms: u64,
    capacity: usize,
    ceiling: Capture,
    emitter: Emitter,
    memory: HashMap<CommandId, Memory>,
    /// Keys in the order received, oldest first.
    order: VecDeque<CommandId>,
    /// Pending form requests by id.
    forms: HashMap<String, Form>,
}

impl Target {
    /// A target emitting as `identity` that declares `accepts`, the command
    /// types it takes (`hello.capabilities.control.accepts`). Fails on an
    /// entry that is not a command type.
    pub fn new<I, T>(identity: Identity, accepts: I) -> Result<Target, TargetError>
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        let mut declared: Vec<String> = Vec::new();
        for entry in accepts {
            let entry = entry.into();
            if !is_command_type(&entry) {
                return Err(TargetError::NotACommandType(entry));
            }
            if !declared.contains(&entry) {
                declared.push(entry);
            }
        }
        Ok(Target {
            identity,
            accepts: declared,
            ack_window_ms: DEFAULT_ACK_WINDOW_MS,
            capacity: DEFAULT_CAPACITY,
            ceiling: Capture::Metadata,
            emitter: Emitter::default(),
            memory: HashMap::new(),
            order: VecDeque::new(),
            forms: HashMap::new(),
        })
    }

    /// Remembers at most `capacity` commands (at least 1).
    pub fn with_capacity(mut self, capacity: usize) -> Target {
        self.capacity = capacity.max(1);
        while self.order.len() > self.capacity {
            self.forget_oldest();
        }
        self
    }

    /// Emits every event at capture `ceiling` (the level it declares).
    pub fn with_ceiling(mut self, ceiling: Capture) -> Target {
        self.ceiling = ceiling;
        self
    }

    /// Uses `emitter` (its redaction pipeline) for the events it builds.
    pub fn with_emitter(mut self, emitter: Emitter) -> Target {
        self.emitter = emitter;
        self
    }

    /// Declares an ack window other than the default 10 000 ms. The target
    /// keeps no time: answering within it is the caller's part.
    pub fn with_ack_window_ms(mut self, ms: u64) -> Target {
        self.ack_window_ms = ms;
        self
    }

    /// The declared command types, without repeats, in declaration order.
    pub fn accepts(&self) -> &[String] {
        &self.accepts
    }

    /// The `control` member of the target's `hello.capabilities`
    /// (AEP-0003 §4): `{"accepts": [...], "ack_window_ms": n}`.
    pub fn capability(&self) -> Value {
        serde_json::json!({ "accepts": self.accepts, "ack_window_ms": self.ack_window_ms })
    }

    /// How many commands are remembered now.
    pub fn remembered(&self) -> usize {
        self.memory.len()
    }

    /// Receives one command event. Order of the checks: dedupe on
    /// `(source, id)`, then the `accepts` gate (`unsupported`), then the
    /// envelope and payload schemas ([`Event::validate_schema`]: a `seq`
    /// or a bad payload is `invalid`), then the form rule for a respond
    /// to a pending form request (`invalid`).
    ///
    /// An `Err` means there is nothing to write: the event is no command,
    /// or one without `id`, `source` or `session` to answer it by.
    pub fn receive(
        &mut self,
        command: &Event,
        stamper: &mut impl Stamper,
    ) -> Result<Received, TargetError> {
        if !wants_ack(&command.type_) {
            return Err(TargetError::NotACommand(format!(
                "`{}` is not a command type",
                command.type_
            )));
        }
        let session = answerable("session", command.session.as_deref())?;
        let source = answerable("source", Some(&command.source))?;
        let id = answerable("id", Some(&command.id))?;
        let key = CommandId {
            source: source.to_owned(),
            id: id.to_owned(),
        };
        let check = |target: &Target| target.check(command);
        self.admit(key, session, &command.type_, check, stamper)
    }

    /// Receives one command as a line (a WebSocket text frame). A command
    /// that does not decode as an [`Event`] is still answered (`invalid`)
    /// when its `id`, `source` and `session` can be read.
    pub fn receive_line(
        &mut self,
        line: &str,
        stamper: &mut impl Stamper,
    ) -> Result<Received, TargetError> {
        let value: Value = serde_json::from_str(line)
            .map_err(|e| TargetError::NotACommand(format!("not JSON: {e}")))?;
        let Value::Object(members) = &value else {
            return Err(TargetError::NotACommand("not a JSON object".to_owned()));
        };
        let Some(event_type) = members.get("type").and_then(Value::as_str) else {
            return Err(TargetError::NotACommand("no string `type`".to_owned()));
        };
        if !wants_ack(event_type) {
            return Err(TargetError::NotACommand(format!(
                "`{event_type}` is not a command type"
            )));
        }
        let error = match Event::from_json(line) {
            Ok(event) => return self.receive(&event, stamper),
            Err(error) => error,
        };
        let member = |name| members.get(name).and_then(Value::as_str);
        let session = answerable("session", member("session"))?;
        let source = answerable("source", member("source"))?;
        let id = answerable("id", member("id"))?;
        let key = CommandId {
            source: source.to_owned(),
            id: id.to_owned(),
        };
        // The place only: a decoding message may quote the content.
        let detail = match error.pointer() {
            Some(pointer) if !pointer.is_empty() => {
                format!("the command does not decode at `{pointer}`")
            }
            _ => "the command does not decode as an event".to_owned(),
        };
        self.admit(key, session, event_type, |_| Err(detail), stamper)
    }

    /// Accepts a pending command: its `control.accepted`, recorded.
    pub fn accept(
        &mut self,
        command: &CommandId,
        stamper: &mut impl Stamper,
    ) -> Result<Outgoing, TargetError> {
        self.decide(command, None, stamper)
    }

    /// Rejects a pending command: its `control.rejected` with `reason`
    /// and `detail` (free text, kept only at ceiling `redacted` and above,
    /// through the redaction pipeline), recorded. `refused` is the
    /// agent's sovereign no (AEP-0004 §2.4).
    pub fn reject(
        &mut self,
        command: &CommandId,
        reason: NackReason,
        detail: Option<&str>,
        stamper: &mut impl Stamper,
    ) -> Result<Outgoing, TargetError> {
        self.decide(
            command,
            Some(nack(reason, detail.map(str::to_owned))),
            stamper,
        )
    }

    /// Follows the events this target emits: a `kind: "form"`
    /// `attention.requested` becomes a pending form request, checked
    /// against every respond that names it; its `attention.resolved` or
    /// `attention.timeout` (by `subject`) or its session's
    /// `session.ended` closes it. Other events change nothing.
    pub fn observe(&mut self, emitted: &Event) {
        let Some(session) = &emitted.session else {
            return;
        };
        match emitted.registered_type() {
            Some(RegisteredType::AttentionRequested) => {
                if let Ok(Payload::AttentionRequested(request)) = emitted.payload() {
                    if request.kind == Kind::Form {
                        let fields = request.fields.unwrap_or_default();
                        let session = session.clone();
                        self.forms
                            .insert(emitted.id.clone(), Form { session, fields });
                    }
                }
            }
            Some(RegisteredType::AttentionResolved | RegisteredType::AttentionTimeout) => {
                if let Some(subject) = &emitted.subject {
                    if self
                        .forms
                        .get(subject)
                        .is_some_and(|f| &f.session == session)
                    {
                        self.forms.remove(subject);
                    }
                }
            }
            Some(RegisteredType::SessionEnded) => {
                self.forms.retain(|_, form| &form.session != session);
            }
            _ => {}
        }
    }

    /// Closes a pending form request by id, as its terminal event would.
    /// Whether it was pending.
    pub fn settle_request(&mut self, request_id: &str) -> bool {
        self.forms.remove(request_id).is_some()
    }

    /// An outcome event of `command` (AEP-0004 §6): `payload`'s type, in
    /// the command's `session` and `run`, `subject` = the command's
    /// `subject`, `cause` = the command's `id`. For a cancel, a
    /// [`RunCancelled`](aep_types::RunCancelled) with `by: control`; for a
    /// pause, a [`ProgressStatus`](aep_types::ProgressStatus). The event is
    /// also [observed](Target::observe).
    pub fn outcome(
        &mut self,
        command: &Command,
        payload: &Payload,
        stamper: &mut impl Stamper,
    ) -> Result<Outgoing, TargetError> {
        let Some(event_type) = payload.event_type() else {
            return Err(TargetError::Outcome(
                "an untyped payload names no event type".to_owned(),
            ));
        };
        let source = &command.event;
        let out = self.build(
            event_type,
            Some(payload),
            Place {
                session: command.session(),
                run: source.run.as_deref(),
                subject: source.subject.as_deref(),
                cause: &source.id,
            },
            stamper,
        )?;
        self.observe(out.event());
        Ok(out)
    }

    /// The outcome of an accepted `control.attention.respond`
    /// (AEP-0004 §5): `attention.answered` with `answer` (what was
    /// actually applied, AEP-0002 §5.3), `by` = the sender's `agent` and
    /// `via: control`, then `attention.resolved` (`answered`); both with
    /// `subject` = the request id and `cause` = the command's `id`. The
    /// request is closed.
    pub fn answered(
        &mut self,
        command: &Command,
        answer: &Answer,
        stamper: &mut impl Stamper,
    ) -> Result<[Outgoing; 2], TargetError> {
        if command.event.subject.is_none() {
            return Err(TargetError::Outcome(format!(
                "{} names no request in `subject`",
                command.key
            )));
        }
        let mut answered = AttentionAnswered::new(answer.clone());
        answered.by = Some(command.event.agent.clone());
        answered.via = Some(Via::Control);
        let answered = self.outcome(command, &Payload::AttentionAnswered(answered), stamper)?;
        let resolved = AttentionResolved::new(Resolution::Answered);
        let resolved = self.outcome(command, &Payload::AttentionResolved(resolved), stamper)?;
        Ok([answered, resolved])
    }

    /// The common path of every received command, once its key is known.
    fn admit(
        &mut self,
        key: CommandId,
        session: &str,
        event_type: &str,
        check: impl FnOnce(&Target) -> Result<(Event, Payload), String>,
        stamper: &mut impl Stamper,
    ) -> Result<Received, TargetError> {
        match self.memory.get(&key) {
            Some(Memory::Decided(ack)) => return Ok(Received::Resend(Outgoing::clone(ack))),
            Some(Memory::Pending { .. }) => return Ok(Received::InProgress),
            None => {}
        }
        if !self.accepts.iter().any(|t| t == event_type) {
            let detail = format!("`{event_type}` is not among the commands this target accepts");
            let rejection = nack(NackReason::Unsupported, Some(detail));
            return self.refuse(key, session, rejection, stamper);
        }
        match check(self) {
            Ok((event, payload)) => {
                let session = session.to_owned();
                self.remember(key.clone(), Memory::Pending { session });
                Ok(Received::Decide(Command {
                    key,
                    event,
                    payload,
                }))
            }
            Err(detail) => {
                let rejection = nack(NackReason::Invalid, Some(detail));
                self.refuse(key, session, rejection, stamper)
            }
        }
    }

    /// Records and returns a nack the target makes on receipt.
    fn refuse(
        &mut self,
        key: CommandId,
        session: &str,
        rejection: Payload,
        stamper: &mut impl Stamper,
    ) -> Result<Received, TargetError> {
        let ack = self.ack(&key, session, Some(rejection), stamper)?;
        self.remember(key, Memory::Decided(Box::new(ack.clone())));
        Ok(Received::Nack(ack))
    }

    /// The checks of a decoded command; the `invalid` detail otherwise.
    fn check(&self, command: &Event) -> Result<(Event, Payload), String> {
        // The payload first: a decoding message may quote the content, so
        // the detail names the place only.
        let payload = command.payload().map_err(|error| match error.pointer() {
            Some(pointer) if !pointer.is_empty() => {
                format!("the command's data does not decode at `{pointer}`")
            }
            _ => "the command's data does not decode".to_owned(),
        })?;
        if let Err(violations) = command.validate_schema() {
            return Err(format!(
                "the command breaks its schema: {}",
                Listed(&violations.0)
            ));
        }
        if let Payload::ControlAttentionRespond(respond) = &payload {
            self.check_form(command, respond)?;
        }
        Ok((command.clone(), payload))
    }

    /// AEP-0006's must-reject, for a respond naming a pending form request
    /// of its session. Without `values`, an `option` or `text` answer to a
    /// one-field form passes (a consumer that renders a form as one
    /// question); otherwise the answer must cover the required fields.
    fn check_form(&self, command: &Event, respond: &ControlAttentionRespond) -> Result<(), String> {
        let Some(form) = command.subject.as_ref().and_then(|s| self.forms.get(s)) else {
            return Ok(());
        };
        if command.session.as_ref() != Some(&form.session) {
            return Ok(());
        }
        let answer = &respond.answer;
        let one_field = form::answered_fields(&form.fields).count() == 1;
        let result = match &answer.values {
            Some(values) => form::validate_values(&form.fields, values),
            None if one_field && (answer.option.is_some() || answer.text.is_some()) => Ok(()),
            None => form::validate_values(&form.fields, &Object::new()),
        };
        result.map_err(|errors| {
            let described: Vec<Described<'_>> = errors.0.iter().map(Described).collect();
            format!("the answer breaks the form: {}", Listed(&described))
        })
    }

    /// Records the decision of a pending command.
    fn decide(
        &mut self,
        command: &CommandId,
        rejection: Option<Payload>,
        stamper: &mut impl Stamper,
    ) -> Result<Outgoing, TargetError> {
        let session = match self.memory.get(command) {
            None => return Err(TargetError::UnknownCommand(command.clone())),
            Some(Memory::Decided(_)) => return Err(TargetError::AlreadyDecided(command.clone())),
            Some(Memory::Pending { session }) => session.clone(),
        };
        let ack = self.ack(command, &session, rejection, stamper)?;
        self.memory
            .insert(command.clone(), Memory::Decided(Box::new(ack.clone())));
        Ok(ack)
    }

    /// The ack of `command`: `control.rejected` with the payload given,
    /// `control.accepted` (no `data`) without.
    fn ack(
        &self,
        command: &CommandId,
        session: &str,
        rejection: Option<Payload>,
        stamper: &mut impl Stamper,
    ) -> Result<Outgoing, TargetError> {
        let event_type = match rejection {
            Some(_) => "control.rejected",
            None => "control.accepted",
        };
        let place = Place {
            session,
            run: None,
            subject: None,
            cause: &command.id,
        };
        self.build(event_type, rejection.as_ref(), place, stamper)
    }

    /// Builds, stamps, emits at the ceiling, validates and serializes.
    fn build(
        &self,
        event_type: &str,
        payload: Option<&Payload>,
        place: Place<'_>,
        stamper: &mut impl Stamper,
    ) -> Result<Outgoing, TargetError> {
        let stamp = stamper.stamp(place.session);
        let mut event = Event::new(
            stamp.id,
            event_type,
            stamp.time,
            self.identity.source.clone(),
            self.identity.agent.clone(),
        );
        event.session = Some(place.session.to_owned());
        event.run = place.run.map(str::to_owned);
        event.subject = place.subject.map(str::to_owned);
        event.cause = Some(place.cause.to_owned());
        event.seq = Some(stamp.seq);
        event.epoch = Some(stamp.epoch);
        if let Some(payload) = payload {
            event.set_payload(payload).map_err(TargetError::Encode)?;
        }
        let event = self
            .emitter
            .emit(&event, self.ceiling)
            .map_err(TargetError::Emit)?;
        event.validate().map_err(TargetError::Invalid)?;
        Outgoing::new(event).map_err(TargetError::Encode)
    }

    /// Remembers a new command, forgetting the oldest beyond capacity.
    fn remember(&mut self, key: CommandId, memory: Memory) {
        while self.order.len() >= self.capacity {
            self.forget_oldest();
        }
        self.order.push_back(key.clone());
        self.memory.insert(key, memory);
    }

    fn forget_oldest(&mut self) {
        if let Some(oldest) = self.order.pop_front() {
            self.memory.remove(&oldest);
        }
    }
}

/// Where an event goes: its session and its links.
struct Place<'a> {
    session: &'a str,
    run: Option<&'a str>,
    subject: Option<&'a str>,
    cause: &'a str,
}

/// A `control.rejected` payload.
fn nack(reason: NackReason, detail: Option<String>) -> Payload {
    let mut rejected = ControlRejected::new(reason);
    rejected.detail = detail;
    Payload::ControlRejected(rejected)
}

/// A non-empty string attribute needed to answer a command.
fn answerable<'a>(name: &str, value: Option<&'a str>) -> Result<&'a str, TargetError> {
    match value {
        Some(value) if !value.is_empty() => Ok(value),
        Some(_) => Err(TargetError::Unanswerable(format!("`{name}` is empty"))),
        None => Err(TargetError::Unanswerable(format!("no string `{name}`"))),
    }
}

/// A form error as a nack states it: the field and the rule, never the
/// answer's own text (a `detail` may be stored where the answer may not).
struct Described<'a>(&'a FormError);

impl fmt::Display for Described<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let FormError { field, rule } = self.0;
        match rule {
            FormRule::NotAChoice(_) => write!(
                f,
                "field `{field}`: not one of its choices, and the field takes no free text"
            ),
            FormRule::OutOfRange { min, max, .. } => {
                write!(f, "field `{field}`: outside ")?;
                match (min, max) {
                    (Some(min), Some(max)) => write!(f, "[{min}, {max}]"),
                    (Some(min), None) => write!(f, "[{min}, ∞)"),
                    (None, Some(max)) => write!(f, "(-∞, {max}]"),
                    (None, None) => f.write_str("its range"),
                }
            }
            _ => write!(f, "{}", self.0),
        }
    }
}
