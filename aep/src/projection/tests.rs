use serde_json::{json, Value};

use super::*;

/// An event from a JSON object, with the envelope members a test does
/// not care about filled in.
fn ev(members: Value) -> Event {
    let mut object = json!({
        "aep": "0.1",
        "time": "2026-12-01T10:00:00Z",
        "source": "urn:a",
        "agent": "a",
    });
    let o = object.as_object_mut().unwrap();
    for (k, v) in members.as_object().unwrap() {
        o.insert(k.clone(), v.clone());
    }
    serde_json::from_value(object).unwrap()
}

fn fold(events: &[Event]) -> Snapshot {
    let mut p = Projection::new();
    for e in events {
        p.apply(e);
    }
    p.snapshot()
}

fn rules(snapshot: &Snapshot) -> Vec<&'static str> {
    snapshot.violations.iter().map(Violation::rule).collect()
}

#[test]
fn redelivery_with_members_reordered_is_dropped_silently() {
    let first: Event = serde_json::from_str(
        r#"{"aep":"0.1","id":"e1","type":"progress.status","time":"2026-12-01T10:00:00Z","source":"urn:a","agent":"a","session":"s","seq":1,"data":{"state":"x","pct":50}}"#,
    )
    .unwrap();
    let again: Event = serde_json::from_str(
        r#"{"seq":1,"data":{"pct":50.0,"state":"x"},"session":"s","agent":"a","source":"urn:a","time":"2026-12-01T10:00:00Z","type":"progress.status","id":"e1","aep":"0.1"}"#,
    )
    .unwrap();
    let state = fold(&[first, again]);
    assert_eq!(rules(&state), Vec::<&str>::new());
    assert_eq!(
        state.sessions[0].position,
        Some(Position { epoch: 0, seq: 1 })
    );
}

#[test]
fn a_different_event_under_a_seen_id_is_a_collision_and_dropped() {
    let state = fold(&[
        ev(json!({"id": "e1", "type": "session.started", "session": "s", "seq": 1})),
        ev(json!({"id": "e1", "type": "session.ended", "session": "s", "seq": 2})),
    ]);
    assert_eq!(
        state.violations,
        vec![Violation::IdCollision {
            source: "urn:a".into(),
            id: "e1".into()
        }]
    );
    // The collider is not folded: the session has not ended.
    assert_eq!(state.sessions[0].ended, None);
    assert_eq!(
        state.sessions[0].position,
        Some(Position { epoch: 0, seq: 1 })
    );
}

#[test]
fn one_id_from_two_sources_is_two_events() {
    let state = fold(&[
        ev(json!({"id": "e1", "type": "session.started", "session": "s", "seq": 1})),
        ev(
            json!({"id": "e1", "type": "session.ended", "session": "s", "seq": 2, "source": "urn:b"}),
        ),
    ]);
    assert!(state.violations.is_empty());
    assert_eq!(state.sessions.len(), 2);
}

#[test]
fn commands_and_agent_events_fold_no_state_but_are_deduplicated() {
    let state = fold(&[
        ev(json!({"id": "c1", "type": "control.cancel", "session": "s"})),
        ev(json!({"id": "c2", "type": "x.acme.control.reboot", "session": "s2"})),
        ev(json!({"id": "h1", "type": "agent.heartbeat"})),
        ev(json!({"id": "h1", "type": "agent.heartbeat", "time": "2026-12-01T10:00:30Z"})),
    ]);
    assert!(state.sessions.is_empty());
    assert_eq!(rules(&state), ["id-collision"]);
    // Not commands: a vendor event outside `control`, an empty tail.
    assert!(!is_command("x.acme.progress.control"));
    assert!(!is_command("x.acme.control."));
    assert!(!is_command("control.accepted"));
    assert!(is_command("x.a-b_1.control.x.y"));
    // The registered commands are the registry's, whatever it lists.
    for registered in aep_types::RegisteredType::ALL {
        assert_eq!(
            is_command(registered.as_str()),
            registered.scope() == aep_types::Scope::Command,
            "{registered}"
        );
    }
    // attention.routed carries a session and no seq: it folds a session.
    let routed = fold(&[ev(
        json!({"id": "r", "type": "attention.routed", "session": "s"}),
    )]);
    assert_eq!(routed.sessions.len(), 1);
    assert_eq!(routed.sessions[0].position, None);
}

#[test]
fn one_session_string_from_two_sources_is_two_sessions_sorted_by_source() {
    let state = fold(&[
        ev(
            json!({"id": "1", "type": "session.started", "session": "s", "seq": 1, "source": "urn:z", "agent": "z"}),
        ),
        ev(
            json!({"id": "1", "type": "session.started", "session": "s", "seq": 1, "source": "urn:b", "agent": "b"}),
        ),
        ev(
            json!({"id": "2", "type": "session.started", "session": "r", "seq": 1, "source": "urn:z", "agent": "z2"}),
        ),
    ]);
    let keys: Vec<(&str, &str, &str)> = state
        .sessions
        .iter()
        .map(|s| (s.source.as_str(), s.session.as_str(), s.agent.as_str()))
        .collect();
    assert_eq!(
        keys,
        [
            ("urn:b", "s", "b"),
            ("urn:z", "r", "z2"),
            ("urn:z", "s", "z")
        ]
    );
    assert!(state.violations.is_empty());
}

#[test]
fn runs_first_start_wins_and_one_terminal_per_run() {
    let state = fold(&[
        ev(
            json!({"id": "1", "type": "run.started", "session": "s", "seq": 1, "run": "r", "time": "2026-12-01T10:00:01Z"}),
        ),
        ev(
            json!({"id": "2", "type": "run.started", "session": "s", "seq": 2, "run": "r", "time": "2026-12-01T10:00:02Z"}),
        ),
        ev(
            json!({"id": "3", "type": "run.failed", "session": "s", "seq": 3, "run": "r", "time": "2026-12-01T10:00:03Z"}),
        ),
        ev(
            json!({"id": "4", "type": "run.finished", "session": "s", "seq": 4, "run": "r", "time": "2026-12-01T10:00:04Z"}),
        ),
        ev(
            json!({"id": "5", "type": "run.cancelled", "session": "s", "seq": 5, "run": "orphan", "time": "2026-12-01T10:00:05Z"}),
        ),
        ev(
            json!({"id": "6", "type": "run.started", "session": "s", "seq": 6, "run": "open", "time": "2026-12-01T10:00:06Z"}),
        ),
    ]);
    assert_eq!(
        state.violations,
        vec![Violation::RunTerminalExclusivity {
            source: "urn:a".into(),
            session: "s".into(),
            run: "r".into()
        }]
    );
    assert_eq!(
        serde_json::to_value(&state.sessions[0].runs).unwrap(),
        json!([
            {"run": "r", "status": "failed", "started": "2026-12-01T10:00:01Z", "ended": "2026-12-01T10:00:03Z"},
            {"run": "orphan", "status": "cancelled", "started": null, "ended": "2026-12-01T10:00:05Z"},
            {"run": "open", "status": "running", "started": "2026-12-01T10:00:06Z", "ended": null},
        ])
    );
}

#[test]
fn a_start_after_a_terminal_without_start_changes_nothing() {
    let state = fold(&[
        ev(json!({"id": "1", "type": "run.finished", "session": "s", "seq": 1, "run": "r"})),
        ev(json!({"id": "2", "type": "run.started", "session": "s", "seq": 2, "run": "r"})),
    ]);
    assert!(state.violations.is_empty());
    assert_eq!(state.sessions[0].runs[0].started, None);
    assert_eq!(state.sessions[0].runs[0].status, RunStatus::Finished);
}

#[test]
fn pending_attention_is_cleared_only_by_resolution_or_timeout() {
    let state = fold(&[
        ev(
            json!({"id": "q1", "type": "attention.requested", "session": "s", "seq": 1, "data": {"kind": "form", "prompt": "p"}}),
        ),
        ev(
            json!({"id": "q2", "type": "attention.requested", "session": "s", "seq": 2, "data": {"kind": 3}}),
        ),
        ev(
            json!({"id": "q3", "type": "attention.requested", "session": "s", "seq": 3, "time": "2026-12-01T10:00:03Z"}),
        ),
        ev(
            json!({"id": "a1", "type": "attention.answered", "session": "s", "seq": 4, "subject": "q1", "data": {"answer": {}}}),
        ),
        ev(
            json!({"id": "t2", "type": "attention.timeout", "session": "s", "seq": 5, "subject": "q2"}),
        ),
        ev(
            json!({"id": "x", "type": "attention.resolved", "session": "s", "seq": 6, "subject": "unknown"}),
        ),
        ev(json!({"id": "end", "type": "session.ended", "session": "s", "seq": 7})),
    ]);
    assert_eq!(
        serde_json::to_value(&state).unwrap()["violations"],
        json!([{"rule": "ended-with-pending-attention", "source": "urn:a", "session": "s", "pending": 2}])
    );
    assert_eq!(
        serde_json::to_value(&state.sessions[0].pending).unwrap(),
        json!([
            {"id": "q1", "kind": "form", "since": "2026-12-01T10:00:00Z"},
            {"id": "q3", "kind": null, "since": "2026-12-01T10:00:03Z"},
        ])
    );
}

#[test]
fn a_closed_session_ending_cleanly_is_legal() {
    let state = fold(&[
        ev(json!({"id": "q", "type": "attention.requested", "session": "s", "seq": 1})),
        ev(
            json!({"id": "r", "type": "attention.resolved", "session": "s", "seq": 2, "subject": "q"}),
        ),
        ev(
            json!({"id": "e", "type": "session.ended", "session": "s", "seq": 3, "time": "2026-12-01T10:00:09Z"}),
        ),
        ev(json!({"id": "late", "type": "tool.completed", "session": "s", "seq": 4})),
    ]);
    assert!(state.violations.is_empty());
    assert_eq!(
        state.sessions[0].ended.as_deref(),
        Some("2026-12-01T10:00:09Z")
    );
}

#[test]
fn a_second_session_end_is_a_violation_and_the_first_stays() {
    let state = fold(&[
        ev(
            json!({"id": "s0", "type": "session.started", "session": "s", "seq": 0, "time": "2026-12-01T10:00:00Z"}),
        ),
        ev(
            json!({"id": "s1", "type": "session.started", "session": "s", "seq": 1, "time": "2026-12-01T10:00:01Z"}),
        ),
        ev(
            json!({"id": "e1", "type": "session.ended", "session": "s", "seq": 2, "time": "2026-12-01T10:00:02Z"}),
        ),
        ev(json!({"id": "q", "type": "attention.requested", "session": "s", "seq": 3})),
        ev(
            json!({"id": "e2", "type": "session.ended", "session": "s", "seq": 4, "time": "2026-12-01T10:00:04Z"}),
        ),
    ]);
    assert_eq!(
        rules(&state),
        [
            "ended-with-pending-attention",
            "session-terminal-exclusivity"
        ]
    );
    assert_eq!(
        state.sessions[0].started.as_deref(),
        Some("2026-12-01T10:00:00Z")
    );
    assert_eq!(
        state.sessions[0].ended.as_deref(),
        Some("2026-12-01T10:00:02Z")
    );
}

#[test]
fn positions_epoch_bump_resets_seq_regressions_are_violations() {
    let state = fold(&[
        ev(json!({"id": "1", "type": "progress.status", "session": "s", "seq": 5})),
        ev(json!({"id": "2", "type": "progress.status", "session": "s", "seq": 1, "epoch": 1})),
        ev(json!({"id": "3", "type": "progress.status", "session": "s", "seq": 1, "epoch": 1})),
        ev(json!({"id": "4", "type": "progress.status", "session": "s", "seq": 0, "epoch": 1})),
        ev(json!({"id": "5", "type": "progress.status", "session": "s", "seq": 9})),
        ev(json!({"id": "6", "type": "attention.routed", "session": "s"})),
    ]);
    assert_eq!(
        serde_json::to_value(&state.violations).unwrap(),
        json!([
            {"rule": "seq-regression", "source": "urn:a", "session": "s", "id": "3"},
            {"rule": "seq-regression", "source": "urn:a", "session": "s", "id": "4"},
            {"rule": "epoch-regression", "source": "urn:a", "session": "s", "id": "5"},
        ])
    );
    // The position is the last folded, regressions included; no seq, no move.
    assert_eq!(
        state.sessions[0].position,
        Some(Position { epoch: 0, seq: 9 })
    );
}

#[test]
fn batch_repairs_arrival_order_and_keeps_duplicated_positions() {
    let events = [
        ev(
            json!({"id": "3", "type": "run.finished", "session": "s", "seq": 3, "run": "r", "time": "2026-12-01T10:00:03Z"}),
        ),
        ev(json!({"id": "1", "type": "session.started", "session": "s", "seq": 1})),
        ev(
            json!({"id": "x", "type": "session.started", "session": "a", "seq": 1, "source": "urn:b"}),
        ),
        ev(
            json!({"id": "2", "type": "run.started", "session": "s", "seq": 2, "run": "r", "time": "2026-12-01T10:00:02Z"}),
        ),
        ev(json!({"id": "2b", "type": "progress.status", "session": "s", "seq": 2})),
    ];
    // Arrival order: 1 after 3 regresses.
    assert_eq!(rules(&fold(&events)), ["seq-regression", "seq-regression"]);
    let state = project(&events);
    assert_eq!(
        serde_json::to_value(&state.violations).unwrap(),
        json!([{"rule": "seq-regression", "source": "urn:a", "session": "s", "id": "2b"}])
    );
    let run = &state.sessions[0].runs[0];
    assert_eq!(
        (run.started.is_some(), run.status),
        (true, RunStatus::Finished)
    );
}

#[test]
fn batch_folds_groups_in_key_order() {
    // Collisions across groups come out in group order, not arrival order.
    let events = [
        ev(json!({"id": "k", "type": "progress.status", "session": "z", "seq": 1})),
        ev(json!({"id": "k", "type": "progress.status", "session": "b", "seq": 1})),
        ev(json!({"id": "k", "type": "progress.status", "session": "a", "seq": 1})),
    ];
    let state = project(&events);
    // "a" is folded first and kept; "b" and "z" collide with it.
    assert_eq!(rules(&state), ["id-collision", "id-collision"]);
    assert_eq!(state.sessions.len(), 1);
    assert_eq!(state.sessions[0].session, "a");
}

#[test]
fn sessions_sort_by_utf16_code_units() {
    // U+FFFF is one unit 0xFFFF; U+10000 is the pair 0xD800 0xDC00.
    assert_eq!(utf16_cmp("\u{10000}", "\u{FFFF}"), Ordering::Less);
    assert_eq!(utf16_cmp("a", "b"), Ordering::Less);
    let state = fold(&[
        ev(json!({"id": "1", "type": "progress.status", "session": "\u{FFFF}", "seq": 1})),
        ev(json!({"id": "2", "type": "progress.status", "session": "\u{10000}", "seq": 1})),
    ]);
    assert_eq!(state.sessions[0].session, "\u{10000}");
}

#[test]
fn snapshot_is_detached_and_has_the_sdk_shape() {
    let mut p = Projection::new();
    p.apply(&ev(
        json!({"id": "1", "type": "progress.status", "session": "s", "seq": 1}),
    ));
    let before = p.snapshot();
    p.apply(&ev(
        json!({"id": "2", "type": "session.started", "session": "s", "seq": 2}),
    ));
    assert_eq!(
        serde_json::to_value(&before).unwrap(),
        json!({"sessions": [{
            "source": "urn:a", "session": "s", "agent": "a",
            "started": null, "ended": null,
            "position": {"epoch": 0, "seq": 1},
            "runs": [], "pending": []
        }], "violations": []})
    );
    assert_eq!(
        p.snapshot().sessions[0].position,
        Some(Position { epoch: 0, seq: 2 })
    );
}
