//! AG-UI events, from AEP-0002 Annex A.14 and the `@ag-ui/core` types
//! (`RUN_ERROR {message, code?}`, `STATE_DELTA {delta: JSON Patch}`,
//! the deprecated `THINKING_*` names).

use crate::common;

use aep::Capture;
use aep_adapters::{Posture, Vocabulary::Agui};
use common::{map, map_at, one, one_at};
use serde_json::json;

#[test]
fn deprecated_thinking_names_map_as_their_successors() {
    for (old, new) in [
        ("THINKING_END", "REASONING_END"),
        ("THINKING_TEXT_MESSAGE_START", "REASONING_MESSAGE_START"),
    ] {
        assert_eq!(
            one(Agui, &json!({"type": old})),
            one(Agui, &json!({"type": new}))
        );
    }
    assert_eq!(
        one(Agui, &json!({"type": "REASONING_MESSAGE_START"}))["type"],
        "x.agui.reasoning_message.start"
    );
}

#[test]
fn state_patches_count_at_metadata_and_ride_at_redacted() {
    let delta = json!({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1},
                                                       {"op": "remove", "path": "/b"}]});
    assert_eq!(one(Agui, &delta)["data"], json!({"ops": 2}));
    let redacted = one_at(Agui, Capture::Redacted, &delta);
    assert_eq!(
        redacted["data"]["delta"][1],
        json!({"op": "remove", "path": "/b"})
    );
    let error = json!({"type": "RUN_ERROR", "message": "boom"});
    assert_eq!(one(Agui, &error)["data"], json!({"reason": "error"}));
}

#[test]
fn only_assistant_replies_end_and_ciphertext_never_maps() {
    assert!(map(
        Agui,
        &json!({"type": "TEXT_MESSAGE_END", "messageId": "m", "role": "tool"})
    )
    .is_empty());
    let encrypted = json!({"type": "REASONING_ENCRYPTED_VALUE", "value": "x"});
    assert!(map_at(
        Agui,
        None,
        Posture::uniform(Capture::Full).deltas(true),
        &encrypted
    )
    .is_empty());
    assert_eq!(
        one(Agui, &json!({"type": "ACTIVITY_SNAPSHOT"}))["type"],
        "x.agui.activity.snapshot"
    );
}
