//! Hermes Agent shell hooks, from AEP-0002 Annex A.10 and the vendor's
//! clarify tool (up to four choices, dict choices unwrapped by
//! `label`/`description`/`text`/`title`, an "Other" answer always
//! offered, timeout and delivery sentinels in `user_response`).

use crate::common;

use aep::Capture;
use aep_adapters::Posture;
use aep_adapters::Vocabulary::Hermes;
use common::{map, map_at};
use serde_json::json;

fn pre(args: serde_json::Value) -> serde_json::Value {
    json!({"hook_event_name": "pre_tool_call", "tool_name": "clarify", "tool_input": args,
           "session_id": "s", "extra": {"tool_call_id": "c1"}})
}

fn post(result: serde_json::Value) -> serde_json::Value {
    json!({"hook_event_name": "post_tool_call", "tool_name": "clarify", "session_id": "s",
           "extra": {"tool_call_id": "c1", "status": "ok", "result": result.to_string()}})
}

#[test]
fn clarify_choices_are_normalized_as_the_vendor_shows_them() {
    let events = map(
        Hermes,
        &pre(json!({"question": " Pick ", "choices":
        [{"title": "t"}, ["a", "b"], null, {"name": "dropped"}, 7, "five", "six"]})),
    );
    assert_eq!(events.len(), 2);
    let field = &events[1]["data"]["fields"][0];
    let labels: Vec<&str> = field["choices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["t", "a b", "7", "five"]);
    assert_eq!(field["label"], "Pick");
    assert_eq!(events[1]["subject"], "c1");
    assert_eq!(
        map(Hermes, &pre(json!({"question": "  "}))).len(),
        1,
        "no question, no card"
    );
}

#[test]
fn clarify_answers_time_out_dismiss_or_answer() {
    let answered = |response: &str| {
        let result =
            json!({"question": "Q", "choices_offered": ["a", "b"], "user_response": response});
        map_at(
            Hermes,
            None,
            Posture::uniform(Capture::Redacted),
            &post(result),
        )
        .remove(1)
    };
    assert_eq!(answered("b")["data"]["answer"]["values"], json!({"1": "2"}));
    assert_eq!(
        answered("neither")["data"]["answer"]["values"],
        json!({"1": "neither"})
    );
    assert_eq!(
        answered("[user did not respond within 5m]")["type"],
        "attention.timeout"
    );
    assert_eq!(
        answered("[user declined the clarification]")["data"],
        json!({"resolution": "dismissed"})
    );
    assert_eq!(answered("")["type"], "attention.resolved");
    let broken = map(
        Hermes,
        &json!({"hook_event_name": "post_tool_call", "tool_name": "clarify",
                                     "extra": {"status": "ok", "result": "not json"}}),
    );
    assert_eq!(broken[1]["type"], "attention.resolved");
}

#[test]
fn the_per_turn_end_closes_runs_and_the_reset_is_no_end() {
    let end = map(
        Hermes,
        &json!({"hook_event_name": "on_session_end", "extra": {"completed": true}}),
    );
    assert_eq!(end[0]["type"], "run.finished");
    let reset = map(
        Hermes,
        &json!({"hook_event_name": "on_session_reset", "extra": {"reason": "new"}}),
    );
    assert_eq!(
        reset[0],
        json!({"type": "x.hermes.session.reset", "data": {"reason": "new"}})
    );
    let denied = map(
        Hermes,
        &json!({"hook_event_name": "post_tool_call", "tool_name": "terminal",
                                     "extra": {"status": "blocked", "error_message": "policy 7"}}),
    );
    assert_eq!(
        denied[0]["data"],
        json!({"tool": {"name": "terminal"}, "by": "policy"})
    );
}
