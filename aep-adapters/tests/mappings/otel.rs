//! The Codex and VS Code OpenTelemetry channels, from AEP-0002 Annex
//! A.2/A.5 and the vendors' telemetry documentation (Codex's
//! `codex.tool_decision` carries `decision` and `source`; VS Code's
//! `copilot_chat.tool.call` carries `success` and `error.type`).

use crate::common;

use aep::Capture;
use aep_adapters::{Mode, Posture, Vocabulary};
use common::{map_at, map_mode};
use serde_json::json;

fn record(attributes: serde_json::Value) -> serde_json::Value {
    json!({"resource": {"service.name": "x"}, "attributes": attributes})
}

#[test]
fn companion_mode_never_emits_a_core_type() {
    for input in [
        record(
            json!({"event.name": "codex.conversation_starts", "model": "m", "user.email": "a@b.c"}),
        ),
        record(
            json!({"event.name": "codex.tool_result", "tool_name": "shell", "success": "false"}),
        ),
    ] {
        let events = map_mode(Vocabulary::CodexOtel, None, Mode::Companion, &input);
        assert!(events[0]["type"]
            .as_str()
            .unwrap()
            .starts_with("x.codex.otel."));
        assert!(
            !events[0].to_string().contains("a@b.c"),
            "only named attributes ride"
        );
    }
}

#[test]
fn only_policy_and_automation_denies_are_denials() {
    let decision = |source: &str| {
        record(json!({"event.name": "codex.tool_decision",
        "tool_name": "shell", "decision": "denied", "source": source}))
    };
    let automation = map_mode(
        Vocabulary::CodexOtel,
        None,
        Mode::Primary,
        &decision("automation"),
    );
    assert_eq!(automation[0]["data"]["by"], "runtime");
    assert!(map_mode(
        Vocabulary::CodexOtel,
        None,
        Mode::Primary,
        &decision("user")
    )
    .is_empty());
    let approved = record(
        json!({"event.name": "codex.tool_decision", "decision": "approved", "source": "config"}),
    );
    assert!(map_mode(Vocabulary::CodexOtel, None, Mode::Primary, &approved).is_empty());
}

#[test]
fn content_attributes_ride_from_redacted_up_and_unknowns_are_not_guessed() {
    let details = record(
        json!({"event.name": "gen_ai.client.inference.operation.details",
        "gen_ai.input.messages": "[{\"content\":\"hi\"}]"}),
    );
    let posture = Posture::uniform(Capture::Redacted).mode(Mode::Primary);
    let events = map_at(Vocabulary::VscodeOtel, None, posture, &details);
    assert_eq!(
        events[0]["data"]["gen_ai.input.messages"],
        "[{\"content\":\"hi\"}]"
    );
    let default = map_mode(Vocabulary::VscodeOtel, None, Mode::Primary, &details);
    assert_eq!(default[0]["data"], json!({}));
    let unknown = map_mode(
        Vocabulary::VscodeOtel,
        None,
        Mode::Primary,
        &record(json!({"event.name": "copilot_chat.tool.call.v2"})),
    );
    assert_eq!(
        unknown[0],
        json!({"type": "x.vscode.otel.unknown", "data": {"event.name": "copilot_chat.tool.call.v2"}})
    );
}
