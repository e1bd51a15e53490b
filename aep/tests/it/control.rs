//! A sender and a target of `aep::control` wired together through a fake
//! relay made of plain function calls: it routes commands to the one
//! target, refuses on the target's behalf with `error` frames, persists
//! the session's history, and can lose lines in either direction. The
//! history is checked with the stream validator at the end of each story.

use std::panic::{catch_unwind, AssertUnwindSafe};

use aep::control::{
    rfc3339, Address, Command, Due, Identity, Ids, Outcome, Received, Sender, Settled, Stamp,
    Target,
};
use aep::control_cancel::Scope;
use aep::frame::ErrorCode;
use aep::stream::{validate_reader, Level, Options};
use aep::{Answer, Capture, ControlCancel, ControlPause, Event, NackReason, Payload};
use serde_json::{json, Value};

const T0: u64 = 1_796_119_200_000;
const SESSION: &str = "s1";

/// What the agent behind the target does with a command to decide.
#[derive(Clone, Copy)]
enum Policy {
    Accept,
    Refuse,
    /// Decide later ([`World::decide_held`]).
    Hold,
}

/// The relay between one sender connection and one target connection.
struct Relay {
    /// Whether a target claims the session (otherwise `no-route`).
    target_connected: bool,
    /// The target's declared `accepts`, learned from its `hello`, when the
    /// relay refuses on its behalf.
    behalf: Option<Vec<String>>,
    /// Command deliveries to lose before the target sees one.
    lose_to_target: usize,
    /// Ack deliveries to lose before the sender sees one.
    lose_to_sender: usize,
    /// The session's history as persisted: commands and target events.
    history: Vec<String>,
}

struct World {
    sender: Sender,
    target: Target,
    relay: Relay,
    policy: Policy,
    /// The target's session counter.
    seq: u64,
    target_ids: Ids,
    now: u64,
    held: Vec<Command>,
    /// Every ack line the target produced, in order (re-emissions too).
    acks: Vec<String>,
    /// Every outcome the sender reported.
    settled: Vec<Settled>,
}

impl World {
    fn new(accepts: &[&str]) -> World {
        let target = Target::new(
            Identity::new("urn:aep:agent:demo", "demo"),
            accepts.iter().copied(),
        )
        .unwrap()
        .with_ceiling(Capture::Redacted);
        let sender = Sender::new(Identity::new("urn:aep:console", "console"))
            .with_ids(Ids::seeded(11))
            .with_retries(2_000, 2);
        let mut world = World {
            sender,
            target,
            relay: Relay {
                target_connected: true,
                behalf: None,
                lose_to_target: 0,
                lose_to_sender: 0,
                history: Vec::new(),
            },
            policy: Policy::Accept,
            seq: 0,
            target_ids: Ids::seeded(22),
            now: T0,
            held: Vec::new(),
            acks: Vec::new(),
            settled: Vec::new(),
        };
        let started = world.target_event("session.started", json!({}));
        world.relay.history.push(started);
        world
    }

    /// The target's next stamp.
    fn stamp(seq: &mut u64, ids: &mut Ids, now: u64) -> Stamp {
        *seq += 1;
        Stamp::new(ids.next(now), rfc3339(now), *seq, 0)
    }

    /// An event the agent emits itself, at its next position.
    fn target_event(&mut self, event_type: &str, data: Value) -> String {
        let stamp = World::stamp(&mut self.seq, &mut self.target_ids, self.now);
        let event = json!({
            "aep": "0.1", "id": stamp.id, "type": event_type, "time": stamp.time,
            "source": "urn:aep:agent:demo", "agent": "demo", "session": SESSION,
            "seq": stamp.seq, "epoch": 0, "capture": "redacted", "data": data
        });
        let event = Event::from_json(&event.to_string()).unwrap();
        assert_eq!(event.validate(), Ok(()));
        self.target.observe(&event);
        serde_json::to_string(&event).unwrap()
    }

    /// The sender writes a command line on its connection.
    fn send(&mut self, line: &str) {
        let relay = &mut self.relay;
        let event_type = serde_json::from_str::<Value>(line).unwrap()["type"]
            .as_str()
            .unwrap()
            .to_owned();
        let id = Event::from_json(line).unwrap().id;
        let refusal = if !relay.target_connected {
            Some("no-route")
        } else if relay
            .behalf
            .as_ref()
            .is_some_and(|accepts| !accepts.contains(&event_type))
        {
            Some("unsupported")
        } else {
            None
        };
        if let Some(code) = refusal {
            // Connection-scoped: never persisted in the session's history.
            let frame = json!({"type": "error", "cause": id, "code": code});
            if let Some(settled) = self.sender.receive_frame(&frame) {
                self.settled.push(settled);
            }
            return;
        }
        relay.history.push(line.to_owned());
        if relay.lose_to_target > 0 {
            relay.lose_to_target -= 1;
            return;
        }
        self.deliver_to_target(line);
    }

    fn deliver_to_target(&mut self, line: &str) {
        let World {
            target,
            seq,
            target_ids,
            now,
            ..
        } = self;
        let mut stamper = |_: &str| World::stamp(seq, target_ids, *now);
        match target.receive_line(line, &mut stamper).unwrap() {
            Received::Decide(command) => match self.policy {
                Policy::Accept => {
                    let ack = target.accept(command.key(), &mut stamper).unwrap();
                    self.ack(ack.into_line());
                }
                Policy::Refuse => {
                    let ack = target
                        .reject(
                            command.key(),
                            NackReason::Refused,
                            Some("not now"),
                            &mut stamper,
                        )
                        .unwrap();
                    self.ack(ack.into_line());
                }
                Policy::Hold => self.held.push(command),
            },
            Received::Nack(ack) | Received::Resend(ack) => self.ack(ack.into_line()),
            Received::InProgress => {}
        }
    }

    /// The agent decides the held commands: accepts them.
    fn decide_held(&mut self) {
        for command in std::mem::take(&mut self.held) {
            let World {
                target,
                seq,
                target_ids,
                now,
                ..
            } = self;
            let mut stamper = |_: &str| World::stamp(seq, target_ids, *now);
            let ack = target.accept(command.key(), &mut stamper).unwrap();
            self.ack(ack.into_line());
        }
    }

    /// The target writes an ack: the relay persists and forwards it.
    fn ack(&mut self, line: String) {
        let event = Event::from_json(&line).unwrap();
        assert_eq!(event.validate(), Ok(()), "{line}");
        self.acks.push(line.clone());
        self.relay.history.push(line.clone());
        if self.relay.lose_to_sender > 0 {
            self.relay.lose_to_sender -= 1;
            return;
        }
        if let Some(settled) = self.sender.receive_line(&line) {
            self.settled.push(settled);
        }
    }

    /// Time passes: whatever the sender finds due is done.
    fn advance_to(&mut self, now: u64) {
        self.now = now;
        for due in self.sender.poll(now) {
            match due {
                Due::Retry(command) => self.send(command.line()),
                Due::Settled(settled) => self.settled.push(settled),
            }
        }
    }

    fn command(&mut self, payload: Payload) -> String {
        let out = self
            .sender
            .command(&Address::session(SESSION), &payload, self.now)
            .unwrap();
        self.send(out.line());
        out.event().id.clone()
    }

    /// The stream validator's errors over the persisted history.
    fn history_errors(&self) -> Vec<String> {
        let text = self.relay.history.join("\n") + "\n";
        let mut errors = Vec::new();
        validate_reader(
            text.as_bytes(),
            Options::default(),
            |f| {
                if f.level == Level::Error {
                    errors.push(format!("line {}: {} {}", f.line, f.rule.name(), f.message));
                }
            },
            |_| {},
        )
        .unwrap();
        errors
    }

    fn outcome_of(&self, id: &str) -> Vec<&Outcome> {
        self.settled
            .iter()
            .filter(|s| s.command == id)
            .map(|s| &s.outcome)
            .collect()
    }
}

fn pause() -> Payload {
    Payload::ControlPause(ControlPause::new())
}

#[test]
fn a_declared_command_is_accepted() {
    let mut world = World::new(&["control.pause"]);
    let id = world.command(pause());
    assert!(
        matches!(world.outcome_of(&id)[..], [Outcome::Accepted(ref ack)] if ack.seq == Some(2))
    );
    assert_eq!(world.acks.len(), 1);
    assert_eq!(world.history_errors(), Vec::<String>::new());
    world.advance_to(T0 + 60_000);
    assert_eq!(world.settled.len(), 1, "one outcome, no timeout after it");
}

#[test]
fn an_undeclared_command_is_nacked_unsupported_by_the_target() {
    let mut world = World::new(&["control.pause"]);
    let id = world.command(Payload::ControlCancel(ControlCancel::new(Scope::Session)));
    match world.outcome_of(&id)[..] {
        [Outcome::Rejected {
            reason, ref detail, ..
        }] => {
            assert_eq!(*reason, Some(NackReason::Unsupported));
            assert!(detail.as_deref().unwrap().contains("control.cancel"));
        }
        ref other => panic!("{other:?}"),
    }
    assert_eq!(world.history_errors(), Vec::<String>::new());
}

#[test]
fn a_retry_after_a_lost_ack_gets_the_recorded_ack_byte_for_byte() {
    let mut world = World::new(&["control.pause"]);
    world.relay.lose_to_sender = 1;
    let id = world.command(pause());
    assert!(world.settled.is_empty());
    let seq_after_decision = world.seq;

    world.advance_to(T0 + 2_000);
    assert_eq!(world.acks.len(), 2);
    assert_eq!(world.acks[0], world.acks[1], "the same line, not a new ack");
    assert_eq!(world.seq, seq_after_decision, "no new position taken");
    assert!(matches!(world.outcome_of(&id)[..], [Outcome::Accepted(_)]));
    // The history holds the command twice and the ack twice: redeliveries.
    assert_eq!(world.history_errors(), Vec::<String>::new());
    world.advance_to(T0 + 60_000);
    assert_eq!(world.settled.len(), 1);
}

#[test]
fn a_redelivery_while_the_decision_is_pending_gets_nothing() {
    let mut world = World::new(&["control.pause"]);
    world.policy = Policy::Hold;
    let id = world.command(pause());
    world.advance_to(T0 + 2_000);
    world.advance_to(T0 + 4_000);
    assert!(world.acks.is_empty(), "two retries, no ack while pending");
    world.decide_held();
    assert_eq!(world.acks.len(), 1);
    assert!(matches!(world.outcome_of(&id)[..], [Outcome::Accepted(_)]));
    assert_eq!(world.history_errors(), Vec::<String>::new());
}

#[test]
fn a_refusal_is_a_rejection_with_its_detail() {
    let mut world = World::new(&["control.pause"]);
    world.policy = Policy::Refuse;
    let id = world.command(pause());
    assert!(matches!(
        world.outcome_of(&id)[..],
        [Outcome::Rejected { reason: Some(NackReason::Refused), ref detail, .. }]
            if detail.as_deref() == Some("not now")
    ));
}

#[test]
fn a_form_answer_is_refused_until_it_fits_the_form_then_answered() {
    let mut world = World::new(&["control.attention.respond"]);
    let request = world.target_event(
        "attention.requested",
        json!({"kind": "form", "prompt": "Set up the database", "respond_via": ["control"],
        "fields": [
            {"id": "name", "type": "string", "label": "Name", "required": true},
            {"id": "engine", "type": "select", "label": "Engine", "required": true,
             "choices": [{"id": "pg", "label": "PostgreSQL"}]}
        ]}),
    );
    world.relay.history.push(request.clone());
    let request = Event::from_json(&request).unwrap();

    let mut answer = Answer::new();
    answer.values = json!({"engine": "mysql"}).as_object().cloned();
    let bad = world.sender.respond(&request, answer, world.now).unwrap();
    world.send(bad.line());
    match world.outcome_of(&bad.event().id)[..] {
        [Outcome::Rejected {
            reason: Some(NackReason::Invalid),
            ref detail,
            ..
        }] => {
            let detail = detail.as_deref().unwrap();
            assert!(detail.contains("field `name`: required"), "{detail}");
            assert!(
                detail.contains("field `engine`: not one of its choices"),
                "{detail}"
            );
        }
        ref other => panic!("{other:?}"),
    }

    let mut answer = Answer::new();
    answer.values = json!({"name": "orders", "engine": "pg"})
        .as_object()
        .cloned();
    let good = world.sender.respond(&request, answer, world.now).unwrap();
    assert_eq!(
        good.event().capture,
        Some(Capture::Redacted),
        "a string field"
    );
    world.policy = Policy::Hold;
    world.send(good.line());
    let command = world.held[0].clone();
    world.decide_held();
    assert!(matches!(
        world.outcome_of(&good.event().id)[..],
        [Outcome::Accepted(_)]
    ));

    // The agent applies the answer: answered, then resolved, cause-linked.
    let World {
        target,
        seq,
        target_ids,
        now,
        relay,
        ..
    } = &mut world;
    let mut stamper = |_: &str| World::stamp(seq, target_ids, *now);
    let Payload::ControlAttentionRespond(respond) = command.payload() else {
        panic!("a respond")
    };
    let [answered, resolved] = target
        .answered(&command, &respond.answer, &mut stamper)
        .unwrap();
    assert_eq!(answered.event().subject.as_ref(), Some(&request.id));
    assert_eq!(resolved.event().cause.as_ref(), Some(&good.event().id));
    relay.history.push(answered.into_line());
    relay.history.push(resolved.into_line());
    // The validator finds the refused answer in the history, and only it.
    let errors = world.history_errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].starts_with("line 3: form-values"), "{errors:?}");
}

#[test]
fn the_target_forgets_the_oldest_commands_beyond_its_bound() {
    let mut world = World::new(&["control.pause"]);
    world.target = Target::new(
        Identity::new("urn:aep:agent:demo", "demo"),
        ["control.pause"],
    )
    .unwrap()
    .with_capacity(3);
    let lines: Vec<String> = (0..4)
        .map(|_| {
            let out = world
                .sender
                .command(&Address::session(SESSION), &pause(), world.now)
                .unwrap();
            world.send(out.line());
            out.into_line()
        })
        .collect();
    assert_eq!(world.acks.len(), 4);
    assert_eq!(world.target.remembered(), 3);

    // A captured command replayed: the second is still remembered...
    world.deliver_to_target(&lines[1]);
    assert_eq!(world.acks[4], world.acks[1]);
    // ...the first is not, and is decided anew (a new ack, a new position).
    world.deliver_to_target(&lines[0]);
    assert_ne!(world.acks[5], world.acks[0]);
    let first = Event::from_json(&world.acks[0]).unwrap();
    let again = Event::from_json(&world.acks[5]).unwrap();
    assert_eq!(first.cause, again.cause);
    assert!(again.seq > first.seq);
}

#[test]
fn silence_brings_retries_of_the_same_command_then_a_timeout() {
    let mut world = World::new(&["control.pause"]);
    world.relay.lose_to_target = usize::MAX;
    let id = world.command(pause());
    for t in [2_000, 4_000, 13_999] {
        world.advance_to(T0 + t);
        assert!(world.settled.is_empty(), "at +{t}");
    }
    let sent: Vec<&String> = world.relay.history.iter().skip(1).collect();
    assert_eq!(sent.len(), 3, "the command and two retries");
    assert!(
        sent.iter().all(|line| *line == sent[0]),
        "byte-identical retries"
    );
    assert_eq!(Event::from_json(sent[0]).unwrap().id, id);

    world.advance_to(T0 + 14_000);
    assert_eq!(world.outcome_of(&id), [&Outcome::Timeout]);
    world.advance_to(T0 + 100_000);
    assert_eq!(world.settled.len(), 1);
    assert!(world.acks.is_empty(), "a timeout is never on the wire");
}

#[test]
fn relay_refusals_settle_by_error_frame_and_stay_out_of_the_history() {
    let mut world = World::new(&["control.pause"]);
    world.relay.target_connected = false;
    let id = world.command(pause());
    assert!(matches!(
        world.outcome_of(&id)[..],
        [Outcome::Refused {
            code: ErrorCode::NoRoute,
            detail: None
        }]
    ));

    world.relay.target_connected = true;
    world.relay.behalf = Some(vec!["control.pause".into()]);
    let id = world.command(Payload::ControlCancel(ControlCancel::new(Scope::Run)));
    assert!(matches!(
        world.outcome_of(&id)[..],
        [Outcome::Refused {
            code: ErrorCode::Unsupported,
            ..
        }]
    ));
    assert_eq!(world.relay.history.len(), 1, "only the session.started");
    world.advance_to(T0 + 100_000);
    assert_eq!(world.settled.len(), 2, "no timeout after a refusal");
}

/// xorshift64*: a small, seedable generator, so every failure replays.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    /// A JSON value, biased towards what a command holds.
    fn value(&mut self, depth: usize) -> Value {
        const STRINGS: &[&str] = &[
            "",
            "s1",
            "c1",
            "q1",
            "urn:aep:console",
            "control.pause",
            "control.cancel",
            "control.attention.respond",
            "control.accepted",
            "control.rejected",
            "error",
            "x.acme.control.reboot",
            "tool.requested",
            "run",
            "session",
            "0.1",
            "2026-12-01T10:00:00Z",
            "not a time",
            "pg",
            "\u{0}",
            "é",
            "run.cancelled",
        ];
        match self.below(if depth == 0 { 5 } else { 7 }) {
            0 => Value::Null,
            1 => Value::Bool(self.below(2) == 0),
            2 => json!(self.next_u64() as i64 >> self.below(64)),
            3 => json!(f64::from(self.below(1000) as u32) / 7.0),
            4 => Value::String(self.pick(STRINGS).to_owned()),
            5 => (0..self.below(4)).map(|_| self.value(depth - 1)).collect(),
            _ => Value::Object(self.object(depth - 1)),
        }
    }

    fn object(&mut self, depth: usize) -> serde_json::Map<String, Value> {
        const KEYS: &[&str] = &[
            "aep", "id", "type", "subject", "time", "source", "agent", "session", "run", "seq",
            "epoch", "cause", "capture", "data", "answer", "values", "option", "text", "scope",
            "reason", "detail", "code", "engine", "name", "x1",
        ];
        (0..self.below(8))
            .map(|_| (self.pick(KEYS).to_owned(), self.value(depth)))
            .collect()
    }
}

/// A well-formed command to mutate, of a random type.
fn base_command(rng: &mut Rng, n: usize) -> serde_json::Map<String, Value> {
    let (event_type, data) = match rng.below(4) {
        0 => ("control.pause", json!({})),
        1 => ("control.cancel", json!({"scope": "run"})),
        2 => (
            "control.attention.respond",
            json!({"answer": {"values": {"engine": "pg"}}}),
        ),
        _ => ("x.acme.control.reboot", json!({"delay": 5})),
    };
    json!({
        "aep": "0.1", "id": format!("c{}", n % 13), "type": event_type, "subject": "q1",
        "time": "2026-12-01T10:00:00Z", "source": "urn:aep:console", "agent": "console",
        "session": "s1", "data": data
    })
    .as_object()
    .cloned()
    .unwrap()
}

#[test]
fn garbage_never_panics_and_every_ack_is_a_valid_event() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut target = Target::new(
        Identity::new("urn:aep:agent:demo", "demo"),
        [
            "control.pause",
            "control.attention.respond",
            "x.acme.control.reboot",
        ],
    )
    .unwrap()
    .with_ceiling(Capture::Redacted)
    .with_capacity(8);
    let form = json!({
        "aep": "0.1", "id": "q1", "type": "attention.requested", "time": "2026-12-01T10:00:00Z",
        "source": "urn:aep:agent:demo", "agent": "demo", "session": "s1", "seq": 0,
        "data": {"kind": "form", "prompt": "?", "fields": [
            {"id": "engine", "type": "select", "label": "E", "required": true,
             "choices": [{"id": "pg", "label": "P"}]}]}
    });
    target.observe(&Event::from_json(&form.to_string()).unwrap());
    let mut sender =
        Sender::new(Identity::new("urn:aep:console", "console")).with_ids(Ids::seeded(3));
    let pending = sender
        .command(&Address::session("s1"), &pause(), T0)
        .unwrap()
        .event()
        .id
        .clone();

    let mut seq = 0;
    let mut ids = Ids::seeded(4);
    let (mut nacks, mut decided, mut resent) = (0, 0, 0);
    for n in 0..3_000 {
        // Half mutated commands, half arbitrary objects; some cut as text.
        let mut object = if rng.below(2) == 0 {
            let mut base = base_command(&mut rng, n);
            for _ in 0..rng.below(3) {
                let key = [
                    "id", "type", "session", "seq", "data", "time", "source", "subject",
                ][rng.below(8)];
                match rng.below(3) {
                    0 => {
                        base.remove(key);
                    }
                    _ => {
                        base.insert(key.to_owned(), rng.value(2));
                    }
                }
            }
            base
        } else {
            rng.object(3)
        };
        if rng.below(4) == 0 {
            object.insert("cause".into(), Value::String(pending.clone()));
        }
        let mut text = Value::Object(object).to_string();
        if rng.below(10) == 0 {
            text.truncate(rng.below(text.len() + 1));
        }

        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let mut stamper = |_: &str| {
                seq += 1;
                Stamp::new(ids.next(T0), rfc3339(T0), seq, 0)
            };
            let mut acks = Vec::new();
            match target.receive_line(&text, &mut stamper) {
                Ok(Received::Decide(command)) => {
                    decided += 1;
                    let ack = if rng.below(2) == 0 {
                        target.accept(command.key(), &mut stamper)
                    } else {
                        target.reject(command.key(), NackReason::Busy, Some("later"), &mut stamper)
                    };
                    acks.push((ack.unwrap(), command.event().id.clone()));
                }
                Ok(Received::Nack(ack)) => {
                    nacks += 1;
                    let cause = ack.event().cause.clone().unwrap();
                    acks.push((ack, cause));
                }
                Ok(Received::Resend(ack)) => {
                    resent += 1;
                    let cause = ack.event().cause.clone().unwrap();
                    acks.push((ack, cause));
                }
                Ok(Received::InProgress) | Err(_) => {}
            }
            for (ack, cause) in &acks {
                assert_eq!(ack.event().validate(), Ok(()), "{text}");
                assert_eq!(ack.event().cause.as_deref(), Some(cause.as_str()));
                assert_eq!(Event::from_json(ack.line()).as_ref(), Ok(ack.event()));
            }
            sender.receive_line(&text);
            if let Ok(frame) = serde_json::from_str::<Value>(&text) {
                sender.receive_frame(&frame);
            }
            sender.poll(T0 + n as u64);
        }));
        assert!(outcome.is_ok(), "panicked on {text}");
    }
    // The generator reached every branch.
    assert!(
        nacks > 100 && decided > 100 && resent > 10,
        "{nacks} {decided} {resent}"
    );
    assert!(target.remembered() <= 8);
}
