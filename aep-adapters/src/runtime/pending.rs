//! Attention requests a runtime has recorded and not yet seen closed.
//!
//! A request stays pending in the session's state until it is answered
//! (over control, by a held hook) or the session shows it is over: the
//! tool it gated finished, failed or was denied (matched by tool name and
//! input), the MCP server's elicitation ended (`ElicitationResult`,
//! matched by elicitation id or server), or the turn or session ended. A
//! call that matches closes the oldest request of its key only: two
//! identical prompts are two requests, closed by two tool ends. Each then closes with one
//! `attention.resolved {resolution: "dismissed"}` naming it, before the
//! events of the call that closed it, so no request is left open
//! (AEP-0002 §7). An elicitation the person accepted in the vendor's
//! dialog closes answered instead: `attention.answered {via: "oob"}`
//! with the content as the form's values (gated by field type), then
//! `attention.resolved {resolution: "answered"}`. A result no pending
//! request matches emits nothing.

use crate::MappedEvent;
use aep::form::gate_values;
use aep::{Capture, FieldSpec, Object};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The most requests a session keeps pending; past it the oldest closes.
pub const MAX_PENDING: usize = 64;

/// A request recorded and not yet closed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    /// The `attention.requested` event's id.
    pub id: String,
    /// When it was recorded, in Unix milliseconds.
    pub at_ms: u64,
    /// What closes it (see [`closes`]).
    pub key: String,
    /// A form request's fields, to gate an answer given out of band.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<FieldSpec>>,
}

/// What a hook call closes.
#[derive(Debug, PartialEq)]
pub enum Closes {
    /// The oldest request with this key.
    Key(String),
    /// The oldest request with this key, answered out of band with these
    /// form values (none: declined or cancelled, so dismissed).
    Answered(String, Option<Object>),
    /// Every pending request.
    All,
    /// None.
    Nothing,
}

/// The key of the request a `hook` call opens, if it opens one.
pub fn opens(hook: &str, payload: &Value) -> Option<String> {
    match hook {
        "PermissionRequest" => Some(tool_key(payload)),
        "Elicitation" => Some(elicitation_key(payload)),
        _ => None,
    }
}

/// What a `hook` call closes.
pub fn closes(hook: &str, payload: &Value) -> Closes {
    match hook {
        "PostToolUse" | "PostToolUseFailure" | "PermissionDenied" => Closes::Key(tool_key(payload)),
        "ElicitationResult" => {
            let accepted = payload.get("action").and_then(Value::as_str) == Some("accept");
            let content = payload.get("content").and_then(Value::as_object);
            let values = content.filter(|_| accepted).cloned();
            Closes::Answered(elicitation_key(payload), values)
        }
        "Stop" | "StopFailure" | "SessionEnd" => Closes::All,
        _ => Closes::Nothing,
    }
}

/// A tool call's key: its name and input. AskUserQuestion's input comes
/// back after the call with the person's `answers` added, which are not
/// part of what was asked.
fn tool_key(payload: &Value) -> String {
    let name = payload.get("tool_name");
    let mut input = payload.get("tool_input").cloned();
    if name.and_then(Value::as_str) == Some("AskUserQuestion") {
        if let Some(Value::Object(input)) = &mut input {
            input.remove("answers");
        }
    }
    let tool = json!([name, input]);
    format!("tool:{}", aep::digest::digest(&tool))
}

fn elicitation_key(payload: &Value) -> String {
    let id = payload
        .get("elicitation_id")
        .filter(|v| !v.is_null())
        .or_else(|| payload.get("mcp_server_name"));
    format!("elicitation:{}", aep::digest::digest(&json!(id)))
}

/// Takes out of `pending` (oldest first) what `closes` closes (and the oldest past
/// [`MAX_PENDING`] once `opening` more are added), returning the events
/// that close them, oldest first: `attention.resolved` (dismissed), or
/// for an out-of-band answer `attention.answered` (its values gated at
/// `ceiling`) and `attention.resolved` (answered).
pub fn close(
    pending: &mut Vec<Pending>,
    closes: &Closes,
    opening: usize,
    now_ms: u64,
    ceiling: Capture,
) -> Vec<MappedEvent> {
    let mut closed = Vec::new();
    match closes {
        Closes::All => closed.extend(pending.drain(..).map(|p| (p, true))),
        Closes::Key(key) | Closes::Answered(key, _) => {
            // The vector is oldest first: the first match is the oldest.
            if let Some(at) = pending.iter().position(|p| &p.key == key) {
                closed.push((pending.remove(at), true));
            }
        }
        Closes::Nothing => {}
    }
    let over = (pending.len() + opening).saturating_sub(MAX_PENDING);
    closed.extend(pending.drain(..over.min(pending.len())).map(|p| (p, false)));
    closed.sort_by_key(|(p, _)| p.at_ms);
    let values = match closes {
        Closes::Answered(_, Some(values)) => Some(values),
        _ => None,
    };
    let mut events = Vec::with_capacity(closed.len());
    for (p, hit) in closed {
        let latency = now_ms.saturating_sub(p.at_ms);
        match values.filter(|_| hit) {
            Some(values) => {
                let fields = p.fields.as_deref().unwrap_or_default();
                let gated = gate_values(fields, values, ceiling);
                let mut answer = Object::new();
                answer.insert("values".into(), Value::Object(gated));
                let mut data = Object::new();
                data.insert("answer".into(), Value::Object(answer));
                data.insert("via".into(), json!("oob"));
                events.push(settled("attention.answered", data, &p.id, ceiling));
                events.push(resolved(&p.id, "answered", latency));
            }
            None => events.push(resolved(&p.id, "dismissed", latency)),
        }
    }
    events
}

fn resolved(id: &str, resolution: &str, latency_ms: u64) -> MappedEvent {
    let mut data = Object::new();
    data.insert("resolution".into(), json!(resolution));
    data.insert("latency_ms".into(), json!(latency_ms));
    settled("attention.resolved", data, id, Capture::Metadata)
}

fn settled(type_: &str, data: Object, id: &str, capture: Capture) -> MappedEvent {
    MappedEvent {
        type_: type_.into(),
        data,
        subject: Some(id.to_owned()),
        step: None,
        capture,
    }
}

/// Marks a recorded request as answered out of band only.
pub fn out_of_band(event: &mut MappedEvent) {
    if event.type_ == "attention.requested" {
        event.data.insert("respond_via".into(), json!(["oob"]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(id: &str, at_ms: u64, key: &str) -> Pending {
        Pending {
            id: id.into(),
            at_ms,
            key: key.into(),
            fields: None,
        }
    }

    fn close_at(
        pending: &mut Vec<Pending>,
        closes: &Closes,
        opening: usize,
        now_ms: u64,
    ) -> Vec<MappedEvent> {
        close(pending, closes, opening, now_ms, Capture::Metadata)
    }

    #[test]
    fn the_finished_tool_closes_its_own_request_only() {
        let ls = json!({"tool_name": "Bash", "tool_input": {"command": "ls"}});
        let rm = json!({"tool_name": "Bash", "tool_input": {"command": "rm x"}});
        let mut open = vec![
            pending("a", 10, &opens("PermissionRequest", &ls).unwrap()),
            pending("b", 20, &opens("PermissionRequest", &rm).unwrap()),
        ];
        let closed = close_at(&mut open, &closes("PostToolUse", &rm), 0, 25);
        assert_eq!(closed.len(), 1);
        assert_eq!(closed[0].subject.as_deref(), Some("b"));
        assert_eq!(closed[0].data["resolution"], "dismissed");
        assert_eq!(closed[0].data["latency_ms"], 5);
        assert_eq!(open.len(), 1);
        let closed = close_at(&mut open, &closes("Stop", &json!({})), 0, 30);
        assert_eq!(closed[0].subject.as_deref(), Some("a"));
        assert!(open.is_empty());
    }

    #[test]
    fn an_elicitation_closes_by_its_id_and_unrelated_calls_close_nothing() {
        let ask = json!({"mcp_server_name": "db", "elicitation_id": "e1"});
        let mut open = vec![pending("a", 1, &opens("Elicitation", &ask).unwrap())];
        let other = json!({"mcp_server_name": "db", "elicitation_id": "e2"});
        assert!(close_at(&mut open, &closes("ElicitationResult", &other), 0, 2).is_empty());
        assert!(close_at(&mut open, &closes("PreToolUse", &ask), 0, 2).is_empty());
        assert_eq!(
            close_at(&mut open, &closes("ElicitationResult", &ask), 0, 2).len(),
            1
        );
    }

    #[test]
    fn an_accepted_elicitation_is_answered_out_of_band_its_text_gated() {
        let ask = json!({"mcp_server_name": "db", "elicitation_id": "e1"});
        let fields: Vec<FieldSpec> = serde_json::from_value(json!([
            {"id": "name", "label": "name", "type": "string"},
            {"id": "rows", "label": "rows", "type": "number"}
        ]))
        .unwrap();
        let open = || {
            let mut p = pending("a", 1, &opens("Elicitation", &ask).unwrap());
            p.fields = Some(fields.clone());
            vec![p]
        };
        let mut result = ask.clone();
        result["action"] = json!("accept");
        result["content"] = json!({"name": "my secret table", "rows": 3, "stray": 1});
        let closes = closes("ElicitationResult", &result);
        let events = close(&mut open(), &closes, 0, 9, Capture::Metadata);
        let types: Vec<_> = events.iter().map(|e| e.type_.as_str()).collect();
        assert_eq!(types, ["attention.answered", "attention.resolved"]);
        assert_eq!(events[0].data["via"], "oob");
        assert_eq!(events[0].data["answer"]["values"], json!({"rows": 3}));
        assert_eq!(events[0].capture, Capture::Metadata);
        assert_eq!(events[1].data["resolution"], "answered");
        let events = close(&mut open(), &closes, 0, 9, Capture::Redacted);
        assert_eq!(
            events[0].data["answer"]["values"],
            json!({"name": "my secret table", "rows": 3})
        );
        // Declined: nothing was answered.
        result["action"] = json!("decline");
        let events = close(
            &mut open(),
            &super::closes("ElicitationResult", &result),
            0,
            9,
            Capture::Redacted,
        );
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data["resolution"], "dismissed");
    }

    #[test]
    fn a_question_closes_though_its_input_comes_back_with_answers() {
        let asked = json!({"tool_name": "AskUserQuestion", "tool_input": {"questions": [1]}});
        let mut open = vec![pending(
            "q",
            1,
            &opens("PermissionRequest", &asked).unwrap(),
        )];
        let mut done = asked.clone();
        done["tool_input"]["answers"] = json!({"Which?": "A"});
        assert_eq!(
            close_at(&mut open, &closes("PostToolUse", &done), 0, 2).len(),
            1
        );
    }

    #[test]
    fn past_the_bound_the_oldest_close() {
        let mut open: Vec<Pending> = (0..MAX_PENDING as u64)
            .map(|i| pending(&format!("r{i}"), i, "k"))
            .collect();
        let closed = close_at(&mut open, &Closes::Nothing, 2, 100);
        let ids: Vec<_> = closed.iter().map(|e| e.subject.clone().unwrap()).collect();
        assert_eq!(ids, ["r0", "r1"]);
        assert_eq!(open.len(), MAX_PENDING - 2);
    }

    #[test]
    fn two_identical_prompts_are_closed_one_tool_end_each_oldest_first() {
        let ls = json!({"tool_name": "Bash", "tool_input": {"command": "ls"}});
        let key = opens("PermissionRequest", &ls).unwrap();
        let mut open = vec![pending("a", 10, &key), pending("b", 20, &key)];
        let closed = close_at(&mut open, &closes("PostToolUse", &ls), 0, 30);
        let ids: Vec<_> = closed.iter().map(|e| e.subject.clone().unwrap()).collect();
        assert_eq!(ids, ["a"]);
        assert_eq!(open.len(), 1);
        let closed = close_at(&mut open, &closes("PostToolUse", &ls), 0, 40);
        assert_eq!(closed[0].subject.as_deref(), Some("b"));
        assert!(open.is_empty());
        // An elicitation with no id is keyed by its server: one result
        // closes one of them.
        let ask = json!({"mcp_server_name": "db"});
        let key = opens("Elicitation", &ask).unwrap();
        let mut open = vec![pending("e1", 1, &key), pending("e2", 2, &key)];
        let closed = close_at(&mut open, &closes("ElicitationResult", &ask), 0, 3);
        assert_eq!(closed.len(), 1);
        assert_eq!(open[0].id, "e2");
    }
}
