//! OpenCode and Kilo Code moments, from AEP-0002 Annex A.7/A.8 and the
//! published SDK types (the bus `Event` union: `session.idle`,
//! `todo.updated` with `{id, content, status, priority}` todos, ...).

use crate::common;

use aep::Capture;
use aep_adapters::{Mode, Posture, Surface, Vocabulary};
use common::{map, map_at, map_mode, one};
use serde_json::json;

#[test]
fn todo_snapshots_diff_into_transitions_in_order() {
    let input = json!({
        "prev": [{"id": "a", "status": "completed"}, {"id": "b", "status": "pending"}],
        "next": [{"id": "b", "status": "completed", "content": "two"},
                 {"id": "a", "status": "completed"},
                 {"id": "c", "status": "pending", "content": "three"},
                 {"status": "completed"}]
    });
    let events = map_at(
        Vocabulary::Opencode,
        Some(Surface::Todos),
        Posture::default(),
        &input,
    );
    let seen: Vec<(String, String)> = events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap().into(),
                e["subject"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("progress.task.completed".into(), "b".into()),
            ("progress.task.planned".into(), "c".into())
        ]
    );
    assert!(events.iter().all(|e| e["data"] == json!({})));
    let redacted = map_at(
        Vocabulary::Kilocode,
        Some(Surface::Todos),
        Posture::uniform(Capture::Redacted),
        &input,
    );
    assert_eq!(redacted[1]["data"], json!({"task": {"title": "three"}}));
    // No previous list: everything is new.
    let first = map_at(
        Vocabulary::Opencode,
        Some(Surface::Todos),
        Posture::default(),
        &json!({"prev": null, "next": [{"id": "x", "status": "pending"}]}),
    );
    assert_eq!(first.len(), 1);
}

#[test]
fn the_plugin_suppresses_the_bus_ask_the_hook_carries() {
    let ask = json!({"kind": "bus", "event": {"type": "permission.updated",
                     "properties": {"id": "p", "type": "edit", "title": "edit a.ts"}}});
    assert!(map(Vocabulary::Opencode, &ask).is_empty());
    let primary = map_mode(
        Vocabulary::Opencode,
        Some(Surface::Sse),
        Mode::Primary,
        &ask["event"],
    );
    assert_eq!(
        primary[0]["data"],
        json!({"kind": "permission", "prompt": "Permission requested: edit — edit a.ts"})
    );
    let companion = map_mode(
        Vocabulary::Opencode,
        Some(Surface::Sse),
        Mode::Companion,
        &ask["event"],
    );
    assert_eq!(
        companion,
        [json!({"type": "x.opencode.permission.updated", "data": {}})]
    );
}

#[test]
fn errors_stay_vendor_scoped_and_the_fork_keeps_its_identity() {
    let error = json!({"kind": "bus", "event": {"type": "session.error",
                       "properties": {"error": {"name": "ProviderAuthError", "data": {"message": "no key"}}}}});
    assert_eq!(
        one(Vocabulary::Kilocode, &error),
        json!({"type": "x.kilocode.session.error", "data": {"type": "ProviderAuthError"}})
    );
    // OpenCode has no `permission.asked`: it falls back mechanically.
    let asked = json!({"kind": "bus", "event": {"type": "permission.asked", "properties": {}}});
    assert_eq!(
        one(Vocabulary::Opencode, &asked)["type"],
        "x.opencode.permission.asked"
    );
    assert_eq!(
        one(Vocabulary::Kilocode, &asked)["type"],
        "attention.requested"
    );
    let single = json!({"kind": "bus", "event": {"type": "installation", "properties": {}}});
    assert_eq!(
        one(Vocabulary::Opencode, &single)["type"],
        "x.opencode.installation.event"
    );
}
