//! The target's and the sender's rules one by one; the round trips through
//! a relay are in `tests/it/control.rs` (a relay of plain function calls) and
//! `aep-client`'s `tests/client/control.rs` (the real relay).

use aep_types::control_cancel::Scope as CancelScope;
use aep_types::{
    Answer, Capture, ControlCancel, ControlPause, Event, NackReason, Payload, RunCancelled,
};
use serde_json::{json, Value};

use super::*;
use crate::frame::ErrorCode;

const TARGET: &str = "urn:aep:agent:demo";
const SENDER: &str = "urn:aep:console";

/// The target's session counter: ids `a1`, `a2`... and positions 1, 2...
#[derive(Default)]
struct Counter {
    seq: u64,
}

impl Stamper for Counter {
    fn stamp(&mut self, _session: &str) -> Stamp {
        self.seq += 1;
        Stamp::new(
            format!("a{}", self.seq),
            "2026-12-01T10:00:01Z",
            self.seq,
            0,
        )
    }
}

fn target(accepts: &[&str]) -> Target {
    Target::new(Identity::new(TARGET, "demo"), accepts.iter().copied())
        .expect("command types")
        .with_ceiling(Capture::Redacted)
}

/// A command line from `members` over a valid respond-free base.
fn line(members: Value) -> String {
    let mut base = json!({
        "aep": "0.1", "id": "c1", "type": "control.pause", "time": "2026-12-01T10:00:00Z",
        "source": SENDER, "agent": "console", "session": "s1"
    });
    for (k, v) in members.as_object().expect("an object") {
        if v.is_null() {
            base.as_object_mut().unwrap().remove(k);
        } else {
            base[k] = v.clone();
        }
    }
    base.to_string()
}

fn nack_of(received: Received) -> (NackReason, Option<String>, Outgoing) {
    let Received::Nack(ack) = received else {
        panic!("expected a nack, got {received:?}")
    };
    assert_eq!(ack.event().validate(), Ok(()));
    match ack.event().payload() {
        Ok(Payload::ControlRejected(r)) => (r.reason, r.detail, ack),
        other => panic!("not a control.rejected: {other:?}"),
    }
}

fn decide_of(received: Received) -> Command {
    match received {
        Received::Decide(command) => command,
        other => panic!("expected a command to decide, got {other:?}"),
    }
}

#[test]
fn an_undeclared_command_is_nacked_unsupported_and_the_nack_is_recorded() {
    let mut target = target(&["control.cancel"]);
    let mut counter = Counter::default();
    let (reason, detail, nack) =
        nack_of(target.receive_line(&line(json!({})), &mut counter).unwrap());
    assert_eq!(reason, NackReason::Unsupported);
    assert_eq!(
        detail.as_deref(),
        Some("`control.pause` is not among the commands this target accepts")
    );
    let event = nack.event();
    assert_eq!(event.type_, "control.rejected");
    assert_eq!(event.cause.as_deref(), Some("c1"));
    assert_eq!((event.session.as_deref(), event.seq), (Some("s1"), Some(1)));
    assert_eq!(
        (event.source.as_str(), event.agent.as_str()),
        (TARGET, "demo")
    );
    assert_eq!(event.capture, Some(Capture::Redacted));

    // Redelivered: the same line, not a second decision.
    match target.receive_line(&line(json!({})), &mut counter).unwrap() {
        Received::Resend(again) => assert_eq!(again.line(), nack.line()),
        other => panic!("{other:?}"),
    }
    assert_eq!(counter.seq, 1, "no event was stamped for the redelivery");
}

#[test]
fn a_later_versions_control_type_is_unsupported_not_ignored() {
    let mut target = target(&["control.pause"]);
    let received = target.receive_line(
        &line(json!({"type": "control.rewind"})),
        &mut Counter::default(),
    );
    assert_eq!(nack_of(received.unwrap()).0, NackReason::Unsupported);
}

#[test]
fn what_is_not_a_command_is_an_error_with_nothing_to_write() {
    let mut target = target(&["control.pause"]);
    let mut counter = Counter::default();
    for input in [
        "not json",
        "[1, 2]",
        r#"{"id": "c1"}"#,
        &line(json!({"type": "tool.requested", "seq": 1})),
        &line(json!({"type": "control.accepted", "seq": 1, "cause": "x"})),
    ] {
        match target.receive_line(input, &mut counter) {
            Err(TargetError::NotACommand(_)) => {}
            other => panic!("{input}: {other:?}"),
        }
    }
    let event = Event::from_json(&line(json!({"type": "control.rejected", "seq": 2}))).unwrap();
    assert!(matches!(
        target.receive(&event, &mut counter),
        Err(TargetError::NotACommand(_))
    ));
    assert_eq!(counter.seq, 0);
}

#[test]
fn a_command_without_id_source_or_session_cannot_be_answered() {
    let mut target = target(&["control.pause"]);
    let mut counter = Counter::default();
    for (members, attribute) in [
        (json!({"session": null}), "`session`"),
        (json!({"session": ""}), "`session`"),
        (json!({"id": 7}), "`id`"),
        (json!({"source": null, "time": 5}), "`source`"),
    ] {
        match target.receive_line(&line(members.clone()), &mut counter) {
            Err(TargetError::Unanswerable(why)) => assert!(why.contains(attribute), "{why}"),
            other => panic!("{members}: {other:?}"),
        }
    }
    assert_eq!(target.remembered(), 0);
}

#[test]
fn malformed_commands_are_nacked_invalid_naming_the_place() {
    let mut target = target(&["control.pause", "control.cancel"]);
    let mut counter = Counter::default();
    let cases = [
        (json!({"id": "c1", "seq": 3}), "/seq: must be absent"),
        (
            json!({"id": "c2", "time": "yesterday"}),
            "/time: not an RFC 3339",
        ),
        (
            json!({"id": "c3", "type": "control.cancel", "data": {"scope": "everything"}}),
            "/data/scope",
        ),
        // Does not decode as an event at all: answered from the raw members.
        (json!({"id": "c4", "time": 5}), "does not decode at `/time`"),
    ];
    for (members, place) in cases {
        let (reason, detail, nack) = nack_of(
            target
                .receive_line(&line(members.clone()), &mut counter)
                .unwrap(),
        );
        assert_eq!(reason, NackReason::Invalid, "{members}");
        let detail = detail.unwrap();
        assert!(detail.contains(place), "{members}: {detail}");
        assert_eq!(
            nack.event().cause,
            members["id"].as_str().map(str::to_owned)
        );
    }
    // The bad value itself is not echoed.
    let (_, detail, _) = nack_of(
        target
            .receive_line(
                &line(json!({"id": "c5", "type": "control.cancel", "data": {"scope": "hunter2"}})),
                &mut counter,
            )
            .unwrap(),
    );
    assert!(!detail.unwrap().contains("hunter2"));
}

#[test]
fn each_command_gets_exactly_one_decision() {
    let mut target = target(&["control.pause"]);
    let mut counter = Counter::default();
    let command = decide_of(target.receive_line(&line(json!({})), &mut counter).unwrap());
    assert_eq!(
        command.key(),
        &CommandId {
            source: SENDER.into(),
            id: "c1".into()
        }
    );
    assert_eq!(command.session(), "s1");
    assert!(matches!(command.payload(), Payload::ControlPause(_)));

    // Still pending: a redelivery gets nothing.
    assert!(matches!(
        target.receive_line(&line(json!({})), &mut counter).unwrap(),
        Received::InProgress
    ));
    let ack = target.accept(command.key(), &mut counter).unwrap();
    assert_eq!(ack.event().validate(), Ok(()));
    assert_eq!(ack.event().type_, "control.accepted");
    assert_eq!(ack.event().data, None);
    assert!(matches!(
        target.accept(command.key(), &mut counter),
        Err(TargetError::AlreadyDecided(_))
    ));
    assert!(matches!(
        target.reject(command.key(), NackReason::Busy, None, &mut counter),
        Err(TargetError::AlreadyDecided(_))
    ));
    match target.receive_line(&line(json!({})), &mut counter).unwrap() {
        Received::Resend(again) => assert_eq!(again.line(), ack.line()),
        other => panic!("{other:?}"),
    }
    let unknown = CommandId {
        source: SENDER.into(),
        id: "nope".into(),
    };
    assert!(matches!(
        target.accept(&unknown, &mut counter),
        Err(TargetError::UnknownCommand(_))
    ));
    // The same id from another source is another command.
    let other = line(json!({"source": "urn:aep:other"}));
    decide_of(target.receive_line(&other, &mut counter).unwrap());
}

#[test]
fn a_refusal_on_receipt_is_decided_and_cannot_be_decided_again() {
    let mut target = target(&["control.cancel"]);
    let mut counter = Counter::default();
    let (_, _, _) = nack_of(target.receive_line(&line(json!({})), &mut counter).unwrap());
    let key = CommandId {
        source: SENDER.into(),
        id: "c1".into(),
    };
    assert!(matches!(
        target.accept(&key, &mut counter),
        Err(TargetError::AlreadyDecided(_))
    ));
}

#[test]
fn the_memory_is_bounded_and_forgets_the_oldest_first() {
    let mut target = target(&["control.pause"]).with_capacity(2);
    let mut counter = Counter::default();
    let mut acks = Vec::new();
    for id in ["c1", "c2", "c3"] {
        let command = decide_of(
            target
                .receive_line(&line(json!({"id": id})), &mut counter)
                .unwrap(),
        );
        acks.push(target.accept(command.key(), &mut counter).unwrap());
        assert!(target.remembered() <= 2);
    }
    // c2 and c3 are remembered: c3's redelivery is answered from memory.
    match target
        .receive_line(&line(json!({"id": "c3"})), &mut counter)
        .unwrap()
    {
        Received::Resend(again) => assert_eq!(again.line(), acks[2].line()),
        other => panic!("{other:?}"),
    }
    // c1 is forgotten: its redelivery is a new command, and pushes c2 out.
    decide_of(
        target
            .receive_line(&line(json!({"id": "c1"})), &mut counter)
            .unwrap(),
    );
    decide_of(
        target
            .receive_line(&line(json!({"id": "c2"})), &mut counter)
            .unwrap(),
    );
    // A pending command pushed out cannot be decided any more.
    let forgotten = CommandId {
        source: SENDER.into(),
        id: "c1".into(),
    };
    decide_of(
        target
            .receive_line(&line(json!({"id": "c4"})), &mut counter)
            .unwrap(),
    );
    decide_of(
        target
            .receive_line(&line(json!({"id": "c5"})), &mut counter)
            .unwrap(),
    );
    assert!(matches!(
        target.accept(&forgotten, &mut counter),
        Err(TargetError::UnknownCommand(_))
    ));
    assert_eq!(target.remembered(), 2);
    // Shrinking forgets at once.
    assert_eq!(target.with_capacity(1).remembered(), 1);
}

/// A form request with a required string, a required closed select and an
/// optional number.
fn form_request(id: &str, session: &str) -> Event {
    Event::from_json(
        &json!({
            "aep": "0.1", "id": id, "type": "attention.requested", "time": "2026-12-01T10:00:00Z",
            "source": TARGET, "agent": "demo", "session": session, "seq": 1,
            "data": {"kind": "form", "prompt": "Set up", "fields": [
                {"id": "name", "type": "string", "label": "Name", "required": true},
                {"id": "engine", "type": "select", "label": "Engine", "required": true,
                 "choices": [{"id": "pg", "label": "PostgreSQL"}, {"id": "sqlite", "label": "SQLite"}]},
                {"id": "port", "type": "number", "label": "Port", "min": 1, "max": 65535}
            ]}
        })
        .to_string(),
    )
    .unwrap()
}

fn respond(id: &str, subject: &str, answer: Value) -> String {
    line(json!({
        "id": id, "type": "control.attention.respond", "subject": subject, "cause": subject,
        "capture": "redacted", "data": {"answer": answer}
    }))
}

#[test]
fn a_form_answer_that_breaks_the_form_is_nacked_invalid_naming_the_fields() {
    let mut target = target(&["control.attention.respond"]);
    let mut counter = Counter::default();
    target.observe(&form_request("q1", "s1"));

    let bad = respond(
        "c1",
        "q1",
        json!({"values": {"engine": "mysql-secret", "port": 0, "x": 1}}),
    );
    let (reason, detail, nack) = nack_of(target.receive_line(&bad, &mut counter).unwrap());
    assert_eq!(reason, NackReason::Invalid);
    assert_eq!(
        detail.as_deref(),
        Some(
            "the answer breaks the form: field `name`: required, but not answered; \
             field `engine`: not one of its choices, and the field takes no free text; \
             field `port`: outside [1, 65535]; field `x`: the form has no such field"
        )
    );
    assert!(!nack.line().contains("mysql-secret"));

    // The request stays pending; a good answer (a new command) goes to the caller.
    let good = respond(
        "c2",
        "q1",
        json!({"values": {"name": "orders", "engine": "pg"}}),
    );
    decide_of(target.receive_line(&good, &mut counter).unwrap());

    // Text alone does not answer a form of three fields with required ones.
    let text = respond("c3", "q1", json!({"text": "orders on pg"}));
    assert_eq!(
        nack_of(target.receive_line(&text, &mut counter).unwrap()).0,
        NackReason::Invalid
    );
}

#[test]
fn a_respond_outside_a_pending_form_goes_to_the_caller() {
    let mut target = target(&["control.attention.respond"]);
    let mut counter = Counter::default();
    target.observe(&form_request("q1", "s1"));
    let empty = json!({"values": {}});
    // Another request, another session, no subject: not checked here.
    decide_of(
        target
            .receive_line(&respond("c1", "q9", empty.clone()), &mut counter)
            .unwrap(),
    );
    let elsewhere = line(json!({
        "id": "c2", "type": "control.attention.respond", "subject": "q1", "session": "s2",
        "data": {"answer": {"values": {}}}
    }));
    decide_of(target.receive_line(&elsewhere, &mut counter).unwrap());
    let unaddressed = line(json!({
        "id": "c3", "type": "control.attention.respond", "data": {"answer": {"values": {}}}
    }));
    decide_of(target.receive_line(&unaddressed, &mut counter).unwrap());

    // Closed by its terminal event: no longer checked.
    let mut resolved = form_request("r1", "s1");
    resolved.type_ = "attention.resolved".into();
    resolved.subject = Some("q1".into());
    resolved.data = Some(aep_types::Data::from_json(r#"{"resolution":"dismissed"}"#).unwrap());
    target.observe(&resolved);
    decide_of(
        target
            .receive_line(&respond("c4", "q1", empty.clone()), &mut counter)
            .unwrap(),
    );

    // settle_request and session.ended close requests too.
    target.observe(&form_request("q2", "s1"));
    assert!(target.settle_request("q2"));
    assert!(!target.settle_request("q2"));
    target.observe(&form_request("q3", "s1"));
    let mut ended = form_request("e1", "s1");
    ended.type_ = "session.ended".into();
    ended.data = None;
    target.observe(&ended);
    decide_of(
        target
            .receive_line(&respond("c5", "q3", empty), &mut counter)
            .unwrap(),
    );
}

#[test]
fn one_question_forms_take_an_option_or_text() {
    let mut target = target(&["control.attention.respond"]);
    let mut counter = Counter::default();
    let mut request = form_request("q1", "s1");
    request.data = Some(
        aep_types::Data::from_json(
            r#"{"kind":"form","prompt":"Engine?","fields":[{"id":"engine","type":"select","label":"Engine",
                "required":true,"choices":[{"id":"pg","label":"PostgreSQL"}]}]}"#,
        )
        .unwrap(),
    );
    target.observe(&request);
    decide_of(
        target
            .receive_line(&respond("c1", "q1", json!({"option": "pg"})), &mut counter)
            .unwrap(),
    );
    decide_of(
        target
            .receive_line(&respond("c2", "q1", json!({"text": "pg"})), &mut counter)
            .unwrap(),
    );
    // An empty answer still misses the required field.
    assert_eq!(
        nack_of(
            target
                .receive_line(&respond("c3", "q1", json!({})), &mut counter)
                .unwrap()
        )
        .0,
        NackReason::Invalid
    );
}

#[test]
fn a_nacks_detail_follows_the_capture_ceiling() {
    let mut counter = Counter::default();
    let detail = "Authorization: Bearer abc123.def456 was refused";

    let mut redacted = target(&["control.pause"]);
    let command = decide_of(
        redacted
            .receive_line(&line(json!({})), &mut counter)
            .unwrap(),
    );
    let nack = redacted
        .reject(
            command.key(),
            NackReason::Refused,
            Some(detail),
            &mut counter,
        )
        .unwrap();
    assert_eq!(nack.event().capture, Some(Capture::Redacted));
    assert!(nack
        .line()
        .contains(r#""detail":"Authorization: Bearer [REDACTED:secret] was refused""#));

    let mut metadata = Target::new(Identity::new(TARGET, "demo"), ["control.pause"]).unwrap();
    let command = decide_of(
        metadata
            .receive_line(&line(json!({})), &mut counter)
            .unwrap(),
    );
    let nack = metadata
        .reject(
            command.key(),
            NackReason::Refused,
            Some(detail),
            &mut counter,
        )
        .unwrap();
    assert_eq!(nack.event().capture, Some(Capture::Metadata));
    assert!(!nack.line().contains("detail"), "{}", nack.line());
    assert_eq!(nack.event().validate(), Ok(()));
}

#[test]
fn a_bad_stamp_is_an_error_and_the_command_stays_pending() {
    let mut target = target(&["control.pause"]);
    let mut counter = Counter::default();
    let command = decide_of(target.receive_line(&line(json!({})), &mut counter).unwrap());
    let mut bad = |_: &str| Stamp::new("", "noon", 1, 0);
    match target.accept(command.key(), &mut bad) {
        Err(TargetError::Invalid(violations)) => {
            let places: Vec<&str> = violations.0.iter().map(|v| v.pointer.as_str()).collect();
            assert_eq!(places, ["/id", "/time"]);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        target.receive_line(&line(json!({})), &mut counter).unwrap(),
        Received::InProgress
    ));
    target.accept(command.key(), &mut counter).unwrap();
    // A bad identity is reported the same way, with its place.
    let mut nameless = Target::new(Identity::new("not a uri", ""), ["control.pause"]).unwrap();
    match nameless.receive_line(&line(json!({"type": "control.cancel"})), &mut counter) {
        Err(TargetError::Invalid(violations)) => {
            let places: Vec<&str> = violations.0.iter().map(|v| v.pointer.as_str()).collect();
            assert_eq!(places, ["/source", "/agent"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn outcomes_are_cause_linked_to_the_command() {
    let mut target = target(&["control.attention.respond", "control.cancel"]);
    let mut counter = Counter::default();
    target.observe(&form_request("q1", "s1"));
    let answer = json!({"values": {"name": "orders", "engine": "pg"}});
    let command = decide_of(
        target
            .receive_line(&respond("c1", "q1", answer), &mut counter)
            .unwrap(),
    );
    target.accept(command.key(), &mut counter).unwrap();
    let Payload::ControlAttentionRespond(respond_payload) = command.payload() else {
        panic!("a respond")
    };
    let [answered, resolved] = target
        .answered(&command, &respond_payload.answer, &mut counter)
        .unwrap();
    for (event, event_type) in [
        (answered.event(), "attention.answered"),
        (resolved.event(), "attention.resolved"),
    ] {
        assert_eq!(event.type_, event_type);
        assert_eq!(event.subject.as_deref(), Some("q1"));
        assert_eq!(event.cause.as_deref(), Some("c1"));
        assert_eq!(event.session.as_deref(), Some("s1"));
        assert_eq!(event.validate(), Ok(()));
    }
    assert!(answered.line().contains(r#""by":"console""#));
    assert!(answered.line().contains(r#""via":"control""#));
    assert!(resolved.line().contains(r#""resolution":"answered""#));
    // The request is closed: an empty answer to it is no longer refused.
    decide_of(
        target
            .receive_line(&respond("c2", "q1", json!({"values": {}})), &mut counter)
            .unwrap(),
    );

    let cancel =
        line(json!({"id": "c3", "type": "control.cancel", "run": "r7", "data": {"scope": "run"}}));
    let command = decide_of(target.receive_line(&cancel, &mut counter).unwrap());
    let mut cancelled = RunCancelled::new();
    cancelled.by = Some(aep_types::run_cancelled::By::Control);
    let out = target
        .outcome(&command, &Payload::RunCancelled(cancelled), &mut counter)
        .unwrap();
    assert_eq!(out.event().type_, "run.cancelled");
    assert_eq!(out.event().run.as_deref(), Some("r7"));
    assert_eq!(out.event().cause.as_deref(), Some("c3"));
    assert!(matches!(
        target.answered(&command, &Answer::new(), &mut counter),
        Err(TargetError::Outcome(_))
    ));
}

#[test]
fn a_target_declares_command_types_only() {
    assert!(matches!(
        Target::new(Identity::new(TARGET, "demo"), ["control.accepted"]),
        Err(TargetError::NotACommandType(t)) if t == "control.accepted"
    ));
    assert!(Target::new(Identity::new(TARGET, "demo"), ["x.acme-1.control"]).is_err());
    let target = Target::new(
        Identity::new(TARGET, "demo"),
        [
            "control.cancel",
            "x.acme-1.control.reboot",
            "control.cancel",
        ],
    )
    .unwrap()
    .with_ack_window_ms(5_000);
    assert_eq!(
        target.accepts(),
        ["control.cancel", "x.acme-1.control.reboot"]
    );
    assert_eq!(
        target.capability(),
        json!({"accepts": ["control.cancel", "x.acme-1.control.reboot"], "ack_window_ms": 5000})
    );
}

#[test]
fn a_declared_vendor_command_is_handed_over_untyped() {
    let mut target = target(&["x.acme.control.reboot"]);
    let vendor = line(json!({"type": "x.acme.control.reboot", "data": {"delay": 5}}));
    let command = decide_of(
        target
            .receive_line(&vendor, &mut Counter::default())
            .unwrap(),
    );
    assert!(matches!(command.payload(), Payload::Untyped(_)));
}

fn sender() -> Sender {
    Sender::new(Identity::new(SENDER, "console")).with_ids(Ids::seeded(1))
}

#[test]
fn a_command_is_addressed_and_carries_no_seq() {
    let mut sender = sender();
    let mut cancel = ControlCancel::new(CancelScope::Run);
    let address = Address::session("s1").run("r7").cause("e5");
    let out = sender
        .command(
            &address,
            &Payload::ControlCancel(cancel.clone()),
            1_796_119_200_000,
        )
        .unwrap();
    let event = out.event();
    assert_eq!(event.validate(), Ok(()));
    assert_eq!((event.seq, event.epoch), (None, None));
    assert_eq!(event.session.as_deref(), Some("s1"));
    assert_eq!(event.run.as_deref(), Some("r7"));
    assert_eq!(event.cause.as_deref(), Some("e5"));
    assert_eq!(event.time, "2026-12-01T10:00:00.000Z");
    assert_eq!(
        (event.source.as_str(), event.agent.as_str()),
        (SENDER, "console")
    );
    assert_eq!(event.id.len(), 26);
    assert_eq!(event.capture, Some(Capture::Metadata));
    // Free text needs `redacted`.
    cancel.reason = Some("stuck".into());
    let out = sender
        .command(&address, &Payload::ControlCancel(cancel), 1_796_119_200_000)
        .unwrap();
    assert_eq!(out.event().capture, Some(Capture::Redacted));
    assert_ne!(out.event().id, event.id);
    assert_eq!(sender.pending().count(), 2);
}

#[test]
fn only_commands_are_sent() {
    let mut sender = sender();
    let not_a_command = Payload::RunCancelled(RunCancelled::new());
    assert!(matches!(
        sender.command(&Address::session("s1"), &not_a_command, 0),
        Err(SenderError::NotACommandType(t)) if t == "run.cancelled"
    ));
    let pause = Payload::ControlPause(ControlPause::new());
    assert!(matches!(
        sender.command(&Address::session(""), &pause, 0),
        Err(SenderError::Invalid(v)) if v.0[0].pointer == "/session"
    ));
    let mut with_seq = Event::from_json(&line(json!({}))).unwrap();
    with_seq.seq = Some(1);
    assert!(matches!(
        sender.track(with_seq, 0),
        Err(SenderError::Invalid(_))
    ));
    let command = Event::from_json(&line(json!({}))).unwrap();
    sender.track(command.clone(), 0).unwrap();
    assert!(matches!(sender.track(command, 0), Err(SenderError::AlreadyPending(id)) if id == "c1"));
    assert!(matches!(
        sender.respond(
            &Event::from_json(&line(json!({}))).unwrap(),
            Answer::new(),
            0
        ),
        Err(SenderError::NotARequest(_))
    ));
}

#[test]
fn a_respond_names_the_request_and_declares_the_capture_its_answer_needs() {
    let mut sender = sender();
    let request = form_request("q1", "s1");
    let answer = |values: Value| {
        let mut answer = Answer::new();
        answer.values = values.as_object().cloned();
        answer
    };
    let closed = sender
        .respond(&request, answer(json!({"engine": "pg", "port": 5432})), 0)
        .unwrap();
    let event = closed.event();
    assert_eq!(event.type_, "control.attention.respond");
    assert_eq!(
        (event.subject.as_deref(), event.cause.as_deref()),
        (Some("q1"), Some("q1"))
    );
    assert_eq!(
        (event.session.as_deref(), event.run.as_deref()),
        (Some("s1"), None)
    );
    assert_eq!(event.capture, Some(Capture::Metadata));
    let free = sender
        .respond(&request, answer(json!({"name": "orders"})), 0)
        .unwrap();
    assert_eq!(free.event().capture, Some(Capture::Redacted));
    let mut text = Answer::new();
    text.text = Some("yes".into());
    assert_eq!(
        sender.respond(&request, text, 0).unwrap().event().capture,
        Some(Capture::Redacted)
    );
    // Without the form, any string may be free text.
    let mut respond = aep_types::ControlAttentionRespond::new(answer(json!({"engine": "pg"})));
    let to = Address::session("s1").subject("q1");
    let out = sender
        .command(&to, &Payload::ControlAttentionRespond(respond.clone()), 0)
        .unwrap();
    assert_eq!(out.event().capture, Some(Capture::Redacted));
    respond.answer = answer(json!({"port": 1, "tls": true}));
    let out = sender
        .command(&to, &Payload::ControlAttentionRespond(respond), 0)
        .unwrap();
    assert_eq!(out.event().capture, Some(Capture::Metadata));
}

/// An ack event from the target for `cause` in `session`.
fn ack_line(kind: &str, cause: &str, session: &str, data: Option<Value>) -> String {
    let mut ack = json!({
        "aep": "0.1", "id": format!("ack-{cause}"), "type": kind, "time": "2026-12-01T10:00:01Z",
        "source": TARGET, "agent": "demo", "session": session, "seq": 9, "cause": cause,
        "capture": "redacted"
    });
    if let Some(data) = data {
        ack["data"] = data;
    }
    ack.to_string()
}

#[test]
fn acks_settle_their_command_once() {
    let mut sender = sender();
    let pause = Payload::ControlPause(ControlPause::new());
    let a = sender.command(&Address::session("s1"), &pause, 0).unwrap();
    let b = sender.command(&Address::session("s1"), &pause, 0).unwrap();
    let c = sender.command(&Address::session("s1"), &pause, 0).unwrap();
    let (a, b, c) = (&a.event().id, &b.event().id, &c.event().id);

    // Another session, another cause, another type: ignored.
    assert_eq!(
        sender.receive_line(&ack_line("control.accepted", a, "s2", None)),
        None
    );
    assert_eq!(
        sender.receive_line(&ack_line("control.accepted", "zz", "s1", None)),
        None
    );
    assert_eq!(
        sender.receive_line(&ack_line("run.cancelled", a, "s1", None)),
        None
    );

    let settled = sender
        .receive_line(&ack_line("control.accepted", a, "s1", None))
        .unwrap();
    assert_eq!(&settled.command, a);
    assert!(matches!(settled.outcome, Outcome::Accepted(ref e) if e.cause.as_ref() == Some(a)));
    assert_eq!(
        sender.receive_line(&ack_line("control.accepted", a, "s1", None)),
        None
    );
    assert_eq!(
        sender.receive_line(&ack_line("control.rejected", a, "s1", None)),
        None
    );

    let nack = ack_line(
        "control.rejected",
        b,
        "s1",
        Some(json!({"reason": "refused", "detail": "no"})),
    );
    match sender.receive_line(&nack).unwrap().outcome {
        Outcome::Rejected {
            reason,
            detail,
            ack,
        } => {
            assert_eq!(reason, Some(NackReason::Refused));
            assert_eq!(detail.as_deref(), Some("no"));
            assert_eq!(ack.id, format!("ack-{b}"));
        }
        other => panic!("{other:?}"),
    }
    // A reason this version does not know still settles, as a rejection.
    let later = ack_line(
        "control.rejected",
        c,
        "s1",
        Some(json!({"reason": "expired", "detail": "late"})),
    );
    match sender.receive_line(&later).unwrap().outcome {
        Outcome::Rejected { reason, detail, .. } => {
            assert_eq!((reason, detail.as_deref()), (None, Some("late")));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(sender.pending().count(), 0);
    assert_eq!(sender.next_due_ms(), None);
}

#[test]
fn error_frames_settle_by_cause_and_other_frames_are_ignored() {
    let mut sender = sender();
    let pause = Payload::ControlPause(ControlPause::new());
    let id = sender
        .command(&Address::session("s1"), &pause, 0)
        .unwrap()
        .event()
        .id
        .clone();
    for frame in [
        json!({"type": "pong", "t": 1}),
        json!({"type": "error", "code": "hello-required"}),
        json!({"type": "error", "cause": "other", "code": "no-route"}),
        json!({"type": "error", "cause": 5}),
        json!({"type": "control.accepted"}),
        json!("error"),
        json!(null),
    ] {
        assert_eq!(sender.receive_frame(&frame), None, "{frame}");
    }
    assert_eq!(sender.receive_line("{not json"), None);
    let settled = sender
        .receive_frame(
            &json!({"type": "error", "cause": id, "code": "ambiguous", "detail": "2 claimants"}),
        )
        .unwrap();
    assert_eq!(
        settled,
        Settled {
            command: id.clone(),
            outcome: Outcome::Refused {
                code: ErrorCode::Ambiguous,
                detail: Some("2 claimants".into())
            }
        }
    );
    // A second frame for it finds nothing pending.
    assert_eq!(
        sender.receive_frame(&json!({"type": "error", "cause": id, "code": "x"})),
        None
    );
    // A frame without a code still refuses.
    let id = sender
        .command(&Address::session("s1"), &pause, 0)
        .unwrap()
        .event()
        .id
        .clone();
    let settled = sender
        .receive_frame(&json!({"type": "error", "cause": id}))
        .unwrap();
    assert_eq!(
        settled.outcome,
        Outcome::Refused {
            code: ErrorCode::Other(String::new()),
            detail: None
        }
    );
}

#[test]
fn silence_brings_retries_of_the_same_bytes_then_one_timeout() {
    let mut sender = sender().with_window_ms(10_000).with_retries(2_000, 2);
    let pause = Payload::ControlPause(ControlPause::new());
    let t0 = 1_000_000;
    let first = sender.command(&Address::session("s1"), &pause, t0).unwrap();
    let second = sender
        .command(&Address::session("s1"), &pause, t0 + 500)
        .unwrap();
    assert_eq!(sender.next_due_ms(), Some(t0 + 2_000));
    assert!(sender.poll(t0 + 1_999).is_empty());
    let due = sender.poll(t0 + 2_600);
    assert_eq!(due, [Due::Retry(first.clone()), Due::Retry(second.clone())]);
    // The next retry counts from the last attempt.
    assert!(sender.poll(t0 + 4_599).is_empty());
    assert_eq!(
        sender.poll(t0 + 4_600),
        [Due::Retry(first.clone()), Due::Retry(second.clone())]
    );
    // Retries exhausted: the window after the last attempt.
    assert_eq!(sender.next_due_ms(), Some(t0 + 14_600));
    // The second is answered meanwhile; the first times out, once.
    let ack = ack_line("control.accepted", &second.event().id, "s1", None);
    assert!(sender.receive_line(&ack).is_some());
    assert!(sender.poll(t0 + 14_599).is_empty());
    let due = sender.poll(t0 + 14_600);
    assert_eq!(
        due,
        [Due::Settled(Settled {
            command: first.event().id.clone(),
            outcome: Outcome::Timeout
        })]
    );
    assert!(sender.poll(t0 + 100_000).is_empty());
    // A late ack finds nothing pending: the outcome stays the timeout.
    let late = ack_line("control.accepted", &first.event().id, "s1", None);
    assert_eq!(sender.receive_line(&late), None);
}

#[test]
fn without_retries_the_timeout_is_one_window_after_sending() {
    let mut sender = sender().with_retries(1_000, 0).with_window_ms(3_000);
    let pause = Payload::ControlPause(ControlPause::new());
    sender.command(&Address::session("s1"), &pause, 10).unwrap();
    assert!(sender.poll(3_009).is_empty());
    assert!(matches!(
        &sender.poll(3_010)[..],
        [Due::Settled(Settled {
            outcome: Outcome::Timeout,
            ..
        })]
    ));
    // A clock that goes back does no harm.
    sender
        .command(&Address::session("s1"), &pause, 10_000)
        .unwrap();
    assert!(sender.poll(0).is_empty());
}
