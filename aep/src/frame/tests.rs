use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;

/// Decodes a frame, failing the test on anything else.
fn frame(text: &str) -> Frame {
    match decode(text) {
        Ok(Decoded::Frame(frame)) => frame,
        other => panic!("{text} decoded as {other:?}"),
    }
}

/// A frame re-encoded is the same JSON as the text it came from.
fn same_after_round_trip(text: &str) {
    let decoded = frame(text);
    let original: Value = serde_json::from_str(text).unwrap();
    let encoded: Value = serde_json::from_str(&decoded.encode()).unwrap();
    assert_eq!(encoded, original, "{text}");
}

#[test]
fn the_specs_examples_decode_and_encode_unchanged() {
    // AEP-0003 §4, §4.1, §6.5 and §3.5 rule 4, as the spec writes them
    // (the hello's `card: null` is the one member that does not survive:
    // an absent card and a null one say the same).
    same_after_round_trip(
        r#"{"type":"hello","versions":["0.1"],"role":"emitter",
            "identity":{"agent":"claude-code","instance":"host-a/7c1f"},
            "capabilities":{"emits":["session","run","tool","attention","error"],
              "capture":["none","metadata","redacted"],
              "control":{"accepts":["control.attention.respond"],"ack_window_ms":10000},
              "replay":{"buffer":10000,"all":true},"filters":["attr-match"],"experimental":{}}}"#,
    );
    same_after_round_trip(r#"{"type":"roster","id":"r-1"}"#);
    same_after_round_trip(
        r#"{"type":"roster","id":"r-1","entries":[{"session":"s_8f2c","agent":"claude-code",
            "instance":"host-a/7c1f","control":{"accepts":["control.attention.respond"],"ack_window_ms":10000},
            "emits":["session","run","tool","attention"]}]}"#,
    );
    same_after_round_trip(
        r#"{"type":"subscribe","id":"sub-1","filter":{"type":["attention.*"],"severity":{"gte":"notice"}},
            "from":[{"session":"s_8f2c","epoch":3,"seq":187}],"capture":"metadata"}"#,
    );
    same_after_round_trip(r#"{"type":"subscribed","id":"sub-1"}"#);
    same_after_round_trip(
        r#"{"type":"error","id":"sub-1","code":"invalid-filter","detail":"severity is not a level"}"#,
    );
    same_after_round_trip(r#"{"type":"unsubscribe","id":"sub-1"}"#);
    same_after_round_trip(r#"{"type":"unsubscribed","id":"sub-1"}"#);
    same_after_round_trip(
        r#"{"type":"closing","reason":"shutdown","delivered":[{"sub":"sub-1","session":"s","epoch":0,"seq":9}]}"#,
    );
    same_after_round_trip(r#"{"type":"ping","t":1733400000000}"#);
    same_after_round_trip(r#"{"type":"pong","t":1733400000000}"#);

    let Frame::Hello(hello) = frame(
        r#"{"type":"hello","versions":["0.1"],"role":"emitter","identity":{"agent":"a","card":null},"capabilities":{"control":{"accepts":["control.attention.respond","control.cancel"]},"roster":{}}}"#,
    ) else {
        panic!("not a hello")
    };
    assert_eq!(hello.role, Some(Role::Emitter));
    assert_eq!(
        hello.accepts(),
        ["control.attention.respond", "control.cancel"]
    );
    assert!(hello.declares("roster"));
    assert!(!hello.declares("filters"));
}

#[test]
fn the_frames_the_relay_sends_decode_and_encode_unchanged() {
    // Recorded from `aep relay` 0.1 before frames were typed.
    for text in [
        r#"{"type":"hello","versions":["0.1"],"role":"both","identity":{"agent":"aep-relay","instance":"aep-relay/0.1.0"},"capabilities":{"filters":["attr-match"],"replay":{"buffer":10000,"all":true},"roster":{}}}"#,
        r#"{"type":"error","code":"hello-required","detail":"the first frame must be hello (AEP-0003 §3.5)"}"#,
        r#"{"type":"error","code":"version-unsupported","versions":["0.1"],"detail":"this relay speaks AEP 0.1"}"#,
        r#"{"type":"error","code":"binary-unsupported","detail":"binary frames are reserved in AEP 0.1"}"#,
        r#"{"type":"error","cause":"01JD0000000000000000000000","code":"no-route","detail":"no connected emitter owns session \"s\""}"#,
        r#"{"type":"error","cause":"e1","code":"invalid-event","detail":"missing field `time`"}"#,
        r#"{"type":"replay-exhausted","sub":"aep-client","session":"s","earliest":{"epoch":2,"seq":40}}"#,
        r#"{"type":"closing","reason":"slow consumer","delivered":[{"sub":"a","session":"s","epoch":0,"seq":3}],"omitted":2}"#,
    ] {
        same_after_round_trip(text);
    }
}

#[test]
fn events_and_unknown_frames_are_told_from_frames() {
    let event = r#"{"aep":"0.1","type":"session.started","id":"e"}"#;
    assert!(matches!(decode(event), Ok(Decoded::Event(v)) if v["id"] == "e"));
    // Unknown frame types are ignored, whatever their members.
    assert_eq!(
        decode(r#"{"type":"whisper","id":5}"#),
        Ok(Decoded::Unknown("whisper".into()))
    );
    // Unknown members of a known frame are ignored.
    assert_eq!(
        frame(r#"{"type":"subscribed","id":"x","later":true}"#),
        Frame::Subscribed(Id { id: "x".into() })
    );
}

#[test]
fn what_is_not_a_frame_says_why() {
    assert!(matches!(decode("{"), Err(FrameError::Json(_))));
    for text in ["[]", "7", r#"{"id":"x"}"#, r#"{"type":3}"#] {
        assert_eq!(decode(text), Err(FrameError::NotAFrame), "{text}");
    }
    let missing_id = decode(r#"{"type":"subscribe"}"#).unwrap_err();
    assert!(
        matches!(&missing_id, FrameError::Malformed { kind, detail } if kind == "subscribe" && detail.contains("id")),
        "{missing_id:?}"
    );
    assert!(missing_id
        .to_string()
        .starts_with("a subscribe frame that does not parse"));
    assert!(matches!(
        decode(r#"{"type":"hello","versions":["0.1"],"role":"admin"}"#),
        Err(FrameError::Malformed { .. })
    ));
    assert!(matches!(
        decode(r#"{"type":"subscribe","id":"s","from":"everything"}"#),
        Err(FrameError::Malformed { .. })
    ));
    assert!(matches!(
        decode(r#"{"type":"replay-exhausted","session":"s","earliest":{"epoch":1}}"#),
        Err(FrameError::Malformed { .. })
    ));
}

#[test]
fn resume_positions_and_all() {
    let Frame::Subscribe(all) = frame(r#"{"type":"subscribe","id":"s","from":"all"}"#) else {
        panic!()
    };
    assert_eq!(all.from, Some(Resume::All));
    let Frame::Subscribe(some) = frame(
        r#"{"type":"subscribe","id":"s","from":[{"session":"a"},{"session":"b","epoch":2,"seq":7}]}"#,
    ) else {
        panic!()
    };
    assert_eq!(
        some.from,
        Some(Resume::Positions(vec![
            Position {
                session: "a".into(),
                epoch: None,
                seq: None
            },
            Position {
                session: "b".into(),
                epoch: Some(2),
                seq: Some(Seq::Seen(7))
            },
        ]))
    );
}

#[test]
fn a_seq_of_minus_one_is_the_epochs_start() {
    same_after_round_trip(
        r#"{"type":"subscribe","id":"s","from":[{"session":"a","epoch":1,"seq":-1}]}"#,
    );
    let Frame::Subscribe(sub) =
        frame(r#"{"type":"subscribe","id":"s","from":[{"session":"a","seq":-1}]}"#)
    else {
        panic!()
    };
    let Some(Resume::Positions(positions)) = sub.from else {
        panic!()
    };
    assert_eq!(positions[0].seq, Some(Seq::Start));
    assert_eq!(Seq::Start.get(), -1);
    assert_eq!(Seq::from(7).get(), 7);
}

/// The member-by-member read of a request: what it says of each
/// malformed member, what it ignores.
#[test]
fn a_request_names_its_malformed_member() {
    let read = |text: &str| match Request::read(text) {
        Ok(Some(Request::Subscribe(sub))) => sub,
        other => panic!("{text} read as {other:?}"),
    };
    for (from, detail) in [
        (
            json!({}),
            r#"from must be an array of {session, epoch, seq} positions or the string "all""#,
        ),
        (
            json!("some"),
            r#"from must be an array of {session, epoch, seq} positions or the string "all""#,
        ),
        (
            json!([{"epoch": 1}]),
            "from[0]: session must be a non-empty string",
        ),
        (
            json!([{"session": ""}]),
            "from[0]: session must be a non-empty string",
        ),
        (json!(["s"]), "from[0]: session must be a non-empty string"),
        (
            json!([{"session": "s"}, {"session": "s", "seq": -2}]),
            "from[1]: seq must be an integer >= -1",
        ),
        (
            json!([{"session": "s", "seq": null}]),
            "from[0]: seq must be an integer >= -1",
        ),
        (
            json!([{"session": "s", "seq": 1.5}]),
            "from[0]: seq must be an integer >= -1",
        ),
        (
            json!([{"session": "s", "epoch": "1"}]),
            "from[0]: epoch must be an integer >= 0",
        ),
        (
            json!([{"session": "s", "epoch": -1}]),
            "from[0]: epoch must be an integer >= 0",
        ),
    ] {
        let text = json!({"type": "subscribe", "id": "s", "from": from}).to_string();
        let sub = read(&text);
        assert_eq!(sub.from.unwrap_err().to_string(), detail, "{text}");
        // The other members are read all the same.
        assert_eq!(sub.id, "s");
        assert_eq!(sub.capture, Ok(None));
    }
    // The array's length is kept with its first malformed position.
    let sub = read(r#"{"type":"subscribe","id":"s","from":[{"session":"a"},{},{}]}"#);
    assert!(matches!(
        sub.from,
        Err(FromError::Position {
            index: 1,
            of: 3,
            error: PositionError::Session
        })
    ));

    for (capture, detail) in [
        (
            json!("everything"),
            r#"capture "everything" is not one of none, metadata, redacted, full"#,
        ),
        (
            json!(5),
            r#"capture "5" is not one of none, metadata, redacted, full"#,
        ),
        (
            json!(["full"]),
            r#"capture "[\"full\"]" is not one of none, metadata, redacted, full"#,
        ),
    ] {
        let text = json!({"type": "subscribe", "id": "s", "capture": capture}).to_string();
        assert_eq!(
            read(&text).capture.unwrap_err().to_string(),
            detail,
            "{text}"
        );
    }

    // Absent and null members are alike; unknown ones are ignored; a
    // member sent twice counts with its last value.
    let sub = read(
        r#"{"type":"subscribe","filter":null,"capture":null,"from":null,"x-later":{"a":1},"capture":"full","from":"all"}"#,
    );
    assert_eq!(
        sub,
        SubscribeRequest {
            id: RequestId(Value::Null),
            filter: None,
            capture: Ok(Some(crate::Capture::Full)),
            from: Ok(Some(Resume::All)),
        }
    );
}

#[test]
fn requests_other_than_subscribe_read_their_members() {
    assert_eq!(
        Request::read(r#"{"type":"roster","id":"r-1","entries":"not a list"}"#),
        Ok(Some(Request::Roster(Id { id: "r-1".into() })))
    );
    assert_eq!(
        Request::read(r#"{"type":"roster"}"#),
        Ok(Some(Request::Roster(Id {
            id: RequestId(Value::Null)
        })))
    );
    assert_eq!(
        Request::read(r#"{"id":{"n":1},"type":"unsubscribe","why":0}"#),
        Ok(Some(Request::Unsubscribe(Id {
            id: RequestId(json!({"n": 1}))
        })))
    );
    assert_eq!(
        Request::read(r#"{"type":"ping","t":null}"#),
        Ok(Some(Request::Ping(Ping { t: None })))
    );
    assert_eq!(
        Request::read(r#"{"type":"ping","t":[1],"t":2}"#),
        Ok(Some(Request::Ping(Ping { t: Some(json!(2)) })))
    );
    for not_a_request in [
        r#"{"type":"pong"}"#,
        r#"{"type":"subscribed","id":"s"}"#,
        r#"{"type":"whisper"}"#,
        r#"{"type":"session.started"}"#,
    ] {
        assert_eq!(Request::read(not_a_request), Ok(None), "{not_a_request}");
    }
    assert_eq!(Request::read("[1]"), Err(FrameError::NotAFrame));
    assert_eq!(Request::read(r#"{"type":1}"#), Err(FrameError::NotAFrame));
    assert!(matches!(Request::read("{"), Err(FrameError::Json(_))));
}

/// The member-by-member read of a `hello`, as the endpoint that answers
/// it reads it.
#[test]
fn a_hello_reads_each_role_and_names_its_malformed_member() {
    let read = |text: &str| match HelloRequest::read(text) {
        Ok(Some(hello)) => hello,
        other => panic!("{text} read as {other:?}"),
    };
    for (role, read_as) in [
        ("emitter", Role::Emitter),
        ("consumer", Role::Consumer),
        ("both", Role::Both),
    ] {
        let text = json!({
            "type": "hello",
            "versions": ["0.2", "0.1"],
            "role": role,
            "identity": {"agent": "a", "instance": "a/1", "x-later": 1},
            "capabilities": {"control": {"accepts": ["control.x"]}},
        })
        .to_string();
        let hello = read(&text);
        assert_eq!(hello.role, Ok(Some(read_as)), "{text}");
        assert_eq!(hello.versions, Ok(vec!["0.2".to_owned(), "0.1".to_owned()]));
        assert!(hello.speaks("0.1") && hello.speaks("0.2") && !hello.speaks("0.3"));
        assert_eq!(hello.identity.unwrap()["agent"], "a");
        assert_eq!(
            hello.capabilities.unwrap()["control"],
            json!({"accepts": ["control.x"]})
        );
    }

    // Absent members: no versions, no role, nothing declared.
    assert_eq!(
        read(r#"{"type":"hello"}"#),
        HelloRequest {
            versions: Ok(vec![]),
            role: Ok(None),
            identity: Ok(Map::new()),
            capabilities: Ok(Map::new()),
        }
    );
    // `null` is absent, but for `role`, which is then malformed.
    let nulls = read(r#"{"type":"hello","versions":null,"identity":null,"capabilities":null}"#);
    assert_eq!(nulls, read(r#"{"type":"hello"}"#));
    assert_eq!(
        read(r#"{"type":"hello","role":null}"#).role,
        Err(HelloError::Role)
    );

    // Each malformed member on its own; the others are read all the same.
    for (member, value, error) in [
        ("versions", json!("0.1"), HelloError::Versions),
        ("versions", json!({"0.1": true}), HelloError::Versions),
        ("role", json!("admin"), HelloError::Role),
        ("role", json!("Emitter"), HelloError::Role),
        ("role", json!(["emitter"]), HelloError::Role),
        ("role", json!(1), HelloError::Role),
        ("identity", json!("a"), HelloError::Identity),
        ("identity", json!(["a"]), HelloError::Identity),
        ("capabilities", json!(true), HelloError::Capabilities),
        ("capabilities", json!([]), HelloError::Capabilities),
    ] {
        let mut hello = json!({
            "type": "hello",
            "versions": ["0.1"],
            "role": "consumer",
            "identity": {"agent": "a"},
            "capabilities": {"roster": {}},
        });
        hello[member] = value;
        let text = hello.to_string();
        let read = read(&text);
        let got = match member {
            "versions" => read.versions.clone().err(),
            "role" => read.role.err(),
            "identity" => read.identity.clone().err(),
            _ => read.capabilities.clone().err(),
        };
        assert_eq!(got, Some(error), "{text}");
        assert_eq!(read.speaks("0.1"), member != "versions", "{text}");
        assert_eq!(
            read.role.is_ok_and(|r| r == Some(Role::Consumer)),
            member != "role",
            "{text}"
        );
        assert_eq!(read.identity.is_ok(), member != "identity", "{text}");
        assert_eq!(
            read.capabilities.is_ok(),
            member != "capabilities",
            "{text}"
        );
    }
    assert_eq!(
        HelloError::Role.to_string(),
        "role must be emitter, consumer or both"
    );

    // Entries of `versions` that are not strings are skipped; unknown
    // members are ignored; a member sent twice counts with its last value.
    let hello = read(
        r#"{"type":"hello","versions":[1,"0.1",null],"x-later":{"a":1},"role":"admin","role":"emitter"}"#,
    );
    assert_eq!(hello.versions, Ok(vec!["0.1".to_owned()]));
    assert_eq!(hello.role, Ok(Some(Role::Emitter)));

    // Identity and capabilities are kept as sent, whatever their members.
    let hello = read(r#"{"type":"hello","identity":{"agent":7},"capabilities":{"emits":"*"}}"#);
    assert_eq!(hello.identity.unwrap()["agent"], 7);
    assert_eq!(hello.capabilities.unwrap()["emits"], "*");

    // A frame of another type, or an event, is not a hello; what is not a
    // frame says why.
    for not_a_hello in [
        r#"{"type":"subscribe","id":"s"}"#,
        r#"{"type":"Hello"}"#,
        r#"{"type":"session.started"}"#,
    ] {
        assert_eq!(HelloRequest::read(not_a_hello), Ok(None), "{not_a_hello}");
    }
    assert_eq!(HelloRequest::read("[1]"), Err(FrameError::NotAFrame));
    assert_eq!(
        HelloRequest::read(r#"{"versions":["0.1"]}"#),
        Err(FrameError::NotAFrame)
    );
    assert_eq!(
        HelloRequest::read(r#"{"type":null}"#),
        Err(FrameError::NotAFrame)
    );
    assert!(matches!(HelloRequest::read(""), Err(FrameError::Json(_))));
}

#[test]
fn error_codes_known_and_unknown_keep_their_spelling() {
    for code in [
        "hello-required",
        "version-unsupported",
        "invalid-hello",
        "binary-unsupported",
        "bad-frame",
        "bad-json",
        "invalid-utf8",
        "invalid-json",
        "invalid-event",
        "unauthorized",
        "invalid-filter",
        "unknown-dialect",
        "limit-exceeded",
        "no-route",
        "ambiguous",
        "unsupported",
        "busy",
    ] {
        let parsed = ErrorCode::parse(code);
        assert!(
            !matches!(parsed, ErrorCode::Other(_)),
            "{code} is a known code"
        );
        assert_eq!(parsed.as_str(), code);
    }
    let Frame::Error(error) = frame(r#"{"type":"error","code":"too-loud","detail":"d"}"#) else {
        panic!()
    };
    assert_eq!(error.code, ErrorCode::Other("too-loud".into()));
    assert_eq!(
        serde_json::from_str::<Value>(&Frame::Error(error).encode()).unwrap(),
        json!({"type": "error", "code": "too-loud", "detail": "d"})
    );
}

#[test]
fn a_ping_is_answered_by_a_pong_echoing_its_stamp() {
    let ping = frame(r#"{"type":"ping","t":{"at":5}}"#);
    assert_eq!(
        ping.pong().map(|p| p.encode()).as_deref(),
        Some(r#"{"type":"pong","t":{"at":5}}"#)
    );
    assert_eq!(frame(r#"{"type":"pong"}"#).pong(), None);
}

#[test]
fn kind_names_the_type_encode_writes() {
    for text in [
        r#"{"type":"subscribed","id":"x"}"#,
        r#"{"type":"unsubscribe","id":"x"}"#,
        r#"{"type":"unsubscribed","id":"x"}"#,
        r#"{"type":"roster","id":"x"}"#,
        r#"{"type":"ping"}"#,
        r#"{"type":"pong"}"#,
        r#"{"type":"error","code":"busy"}"#,
        r#"{"type":"closing","reason":"r"}"#,
        r#"{"type":"replay-exhausted","session":"s","earliest":{"seq":1}}"#,
        r#"{"type":"hello","versions":["0.1"],"role":"consumer"}"#,
        r#"{"type":"subscribe","id":"x"}"#,
    ] {
        let decoded = frame(text);
        let encoded: Value = serde_json::from_str(&decoded.encode()).unwrap();
        assert_eq!(encoded["type"], decoded.kind(), "{text}");
        assert!(KNOWN.contains(&decoded.kind()));
    }
}

fn text() -> impl Strategy<Value = String> {
    // Quotes, escapes, dots and non-ASCII included.
    "[a-z.\"\\\\é\u{1F600} -]{0,12}"
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(text(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A JSON value that is not null (an `Option<Value>` holding null
/// encodes as the member's absence, which decodes as `None`).
fn some_value() -> impl Strategy<Value = Option<Value>> {
    prop::option::of(value().prop_filter("not null", |v| !v.is_null()))
}

/// A request id: a string, as clients send, or any other JSON but null
/// (an optional id holding null encodes as null, which decodes as none).
fn request_id() -> impl Strategy<Value = RequestId> {
    prop_oneof![
        text().prop_map(RequestId::from),
        value()
            .prop_filter("not null", |v| !v.is_null())
            .prop_map(RequestId),
    ]
}

/// A resume position's `seq`: -1 included.
fn seq() -> impl Strategy<Value = Seq> {
    prop_oneof![Just(Seq::Start), any::<u64>().prop_map(Seq::Seen)]
}

fn code() -> impl Strategy<Value = ErrorCode> {
    prop_oneof![
        Just(ErrorCode::LimitExceeded),
        Just(ErrorCode::NoRoute),
        Just(ErrorCode::HelloRequired),
        "[a-z-]{1,10}".prop_map(|c| ErrorCode::parse(&c)),
    ]
}

fn capture() -> impl Strategy<Value = crate::Capture> {
    prop_oneof![
        Just(crate::Capture::None),
        Just(crate::Capture::Metadata),
        Just(crate::Capture::Redacted),
        Just(crate::Capture::Full),
    ]
}

fn resume() -> impl Strategy<Value = Resume> {
    let position = (
        text().prop_filter("a session is not empty", |s| !s.is_empty()),
        prop::option::of(any::<u64>()),
        prop::option::of(seq()),
    )
        .prop_map(|(session, epoch, seq)| Position {
            session,
            epoch,
            seq,
        });
    prop_oneof![
        Just(Resume::All),
        prop::collection::vec(position, 0..3).prop_map(Resume::Positions),
    ]
}

fn role() -> impl Strategy<Value = Role> {
    prop_oneof![Just(Role::Emitter), Just(Role::Consumer), Just(Role::Both)]
}

fn identity() -> impl Strategy<Value = Identity> {
    (
        prop::option::of(text()),
        prop::option::of(text()),
        some_value(),
    )
        .prop_map(|(agent, instance, card)| Identity {
            agent,
            instance,
            card,
        })
}

fn capabilities() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(text(), value(), 0..3)
        .prop_map(|m| m.into_iter().collect::<Map<String, Value>>())
}

fn any_frame() -> impl Strategy<Value = Frame> {
    let resume = resume();
    let role = prop::option::of(role());
    let identity = identity();
    let capabilities = capabilities();
    let entry = (
        text(),
        some_value(),
        some_value(),
        some_value(),
        some_value(),
    )
        .prop_map(|(session, agent, instance, control, emits)| RosterEntry {
            session,
            agent,
            instance,
            control,
            emits,
        });
    let delivered = (request_id(), text(), any::<u64>(), any::<u64>()).prop_map(
        |(sub, session, epoch, seq)| Delivered {
            sub,
            session,
            epoch,
            seq,
        },
    );
    prop_oneof![
        (
            prop::collection::vec(text(), 0..3),
            role,
            prop::option::of(identity),
            capabilities
        )
            .prop_map(
                |(versions, role, identity, capabilities)| Frame::Hello(Hello {
                    versions,
                    role,
                    identity,
                    capabilities
                })
            ),
        (
            request_id(),
            some_value(),
            prop::option::of(resume),
            prop::option::of(text())
        )
            .prop_map(|(id, filter, from, capture)| Frame::Subscribe(Subscribe {
                id,
                filter,
                from,
                capture
            })),
        request_id().prop_map(|id| Frame::Subscribed(Id { id })),
        request_id().prop_map(|id| Frame::Unsubscribe(Id { id })),
        request_id().prop_map(|id| Frame::Unsubscribed(Id { id })),
        (
            request_id(),
            prop::option::of(prop::collection::vec(entry, 0..3))
        )
            .prop_map(|(id, entries)| Frame::Roster(Roster { id, entries })),
        (
            prop::option::of(request_id()),
            prop::option::of(text()),
            code(),
            prop::option::of(text()),
            prop::option::of(prop::collection::vec(text(), 0..2))
        )
            .prop_map(
                |(id, cause, code, detail, versions)| Frame::Error(ErrorFrame {
                    id,
                    cause,
                    code,
                    detail,
                    versions
                })
            ),
        (
            prop::option::of(request_id()),
            text(),
            any::<u64>(),
            any::<u64>()
        )
            .prop_map(|(sub, session, epoch, seq)| {
                Frame::ReplayExhausted(ReplayExhausted {
                    sub,
                    session,
                    earliest: Earliest { epoch, seq },
                })
            }),
        (
            text(),
            prop::collection::vec(delivered, 0..3),
            prop::option::of(any::<u64>())
        )
            .prop_map(|(reason, delivered, omitted)| Frame::Closing(Closing {
                reason,
                delivered,
                omitted
            })),
        some_value().prop_map(|t| Frame::Ping(Ping { t })),
        some_value().prop_map(|t| Frame::Pong(Ping { t })),
    ]
}

proptest! {
    #[test]
    fn every_frame_decodes_as_it_was_encoded(frame in any_frame()) {
        let text = frame.encode();
        prop_assert_eq!(decode(&text), Ok(Decoded::Frame(frame)), "{}", text);
    }

    /// A `subscribe` an endpoint reads is the one a client encoded, member
    /// for member (a capture ceiling named by its level).
    #[test]
    fn a_subscribe_reads_as_it_was_encoded(
        id in request_id(),
        filter in some_value(),
        from in prop::option::of(resume()),
        capture in prop::option::of(capture()),
        extra in value(),
    ) {
        let frame = Frame::Subscribe(Subscribe {
            id: id.clone(),
            filter: filter.clone(),
            from: from.clone(),
            capture: capture.map(|c| c.as_str().to_owned()),
        });
        let mut members: Value = serde_json::from_str(&frame.encode()).unwrap();
        // A member this revision does not define is ignored.
        members["x-later"] = extra;
        let read = Request::read(&members.to_string());
        prop_assert_eq!(
            read,
            Ok(Some(Request::Subscribe(SubscribeRequest {
                id,
                filter,
                capture: Ok(capture),
                from: Ok(from),
            })))
        );
    }

    /// A `hello` an endpoint reads is the one a client encoded, member
    /// for member.
    #[test]
    fn a_hello_reads_as_it_was_encoded(
        versions in prop::collection::vec(text(), 0..3),
        role in prop::option::of(role()),
        identity in prop::option::of(identity()),
        capabilities in capabilities(),
        extra in value(),
    ) {
        let hello = Hello {
            versions: versions.clone(),
            role,
            identity: identity.clone(),
            capabilities: capabilities.clone(),
        };
        let mut members: Value = serde_json::from_str(&Frame::Hello(hello).encode()).unwrap();
        // A member this revision does not define is ignored.
        members["x-later"] = extra;
        let identity = match identity.map(|i| serde_json::to_value(i).unwrap()) {
            Some(Value::Object(identity)) => identity,
            _ => Map::new(),
        };
        prop_assert_eq!(
            HelloRequest::read(&members.to_string()),
            Ok(Some(HelloRequest {
                versions: Ok(versions),
                role: Ok(role),
                identity: Ok(identity),
                capabilities: Ok(capabilities),
            }))
        );
    }

    /// Any integer from -1 up is a `seq`, and encodes as it was sent.
    #[test]
    fn a_seq_round_trips(seq in seq()) {
        let text = serde_json::to_string(&seq).unwrap();
        prop_assert_eq!(serde_json::from_str::<Seq>(&text).unwrap(), seq);
        prop_assert_eq!(Seq::from_value(&json!(seq.get() as f64)), None);
    }

    /// Below -1 is no `seq`.
    #[test]
    fn below_minus_one_is_no_seq(seq in i64::MIN..-1) {
        prop_assert_eq!(Seq::from_value(&json!(seq)), None);
        let position = json!({"session": "s", "seq": seq});
        prop_assert_eq!(Position::from_value(&position), Err(PositionError::Seq));
    }
}
