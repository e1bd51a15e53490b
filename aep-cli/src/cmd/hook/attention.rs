//! Attention requests a hook call records without holding the hook open.
//!
//! Such a request is answered in the vendor's own dialog, so it says
//! `respond_via: ["oob"]`, and it stays pending in the session's state
//! until the session shows it is over: the tool it gated finished, failed
//! or was denied (matched by tool name and input), the MCP server's
//! elicitation ended (`ElicitationResult`, matched by elicitation id or
//! server), or the turn or session ended. Each then closes with one
//! `attention.resolved {resolution: "dismissed"}` naming it, before the
//! events of the call that closed it, so no request is left open
//! (AEP-0002 §7).

use aep::Capture;
use aep_adapters::MappedEvent;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The most requests a session keeps pending; past it the oldest closes.
pub const MAX_PENDING: usize = 64;

/// A request recorded and not yet closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// The `attention.requested` event's id.
    pub id: String,
    /// When it was recorded, in Unix milliseconds.
    pub at_ms: u64,
    /// What closes it (see [`closes`]).
    pub key: String,
}

/// What a hook call closes.
#[derive(Debug, PartialEq, Eq)]
pub enum Closes {
    /// The requests with this key.
    Key(String),
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
        "ElicitationResult" => Closes::Key(elicitation_key(payload)),
        "Stop" | "StopFailure" | "SessionEnd" => Closes::All,
        _ => Closes::Nothing,
    }
}

fn tool_key(payload: &Value) -> String {
    let tool = json!([payload.get("tool_name"), payload.get("tool_input")]);
    format!("tool:{}", aep::digest::digest(&tool))
}

fn elicitation_key(payload: &Value) -> String {
    let id = payload
        .get("elicitation_id")
        .filter(|v| !v.is_null())
        .or_else(|| payload.get("mcp_server_name"));
    format!("elicitation:{}", aep::digest::digest(&json!(id)))
}

/// Takes out of `pending` what `closes` closes (and the oldest past
/// [`MAX_PENDING`] once `opening` more are added), returning the
/// `attention.resolved` events that close them, oldest first.
pub fn close(
    pending: &mut Vec<Pending>,
    closes: &Closes,
    opening: usize,
    now_ms: u64,
) -> Vec<MappedEvent> {
    let mut closed = Vec::new();
    pending.retain(|p| {
        let hit = match closes {
            Closes::All => true,
            Closes::Key(key) => &p.key == key,
            Closes::Nothing => false,
        };
        if hit {
            closed.push(p.clone());
        }
        !hit
    });
    let over = (pending.len() + opening).saturating_sub(MAX_PENDING);
    closed.extend(pending.drain(..over.min(pending.len())));
    closed.sort_by_key(|p| p.at_ms);
    closed
        .into_iter()
        .map(|p| {
            let mut data = aep::Object::new();
            data.insert("resolution".into(), json!("dismissed"));
            data.insert("latency_ms".into(), json!(now_ms.saturating_sub(p.at_ms)));
            MappedEvent {
                type_: "attention.resolved".into(),
                data,
                subject: Some(p.id),
                step: None,
                capture: Capture::Metadata,
            }
        })
        .collect()
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
        }
    }

    #[test]
    fn the_finished_tool_closes_its_own_request_only() {
        let ls = json!({"tool_name": "Bash", "tool_input": {"command": "ls"}});
        let rm = json!({"tool_name": "Bash", "tool_input": {"command": "rm x"}});
        let mut open = vec![
            pending("a", 10, &opens("PermissionRequest", &ls).unwrap()),
            pending("b", 20, &opens("PermissionRequest", &rm).unwrap()),
        ];
        let closed = close(&mut open, &closes("PostToolUse", &rm), 0, 25);
        assert_eq!(closed.len(), 1);
        assert_eq!(closed[0].subject.as_deref(), Some("b"));
        assert_eq!(closed[0].data["resolution"], "dismissed");
        assert_eq!(closed[0].data["latency_ms"], 5);
        assert_eq!(open.len(), 1);
        let closed = close(&mut open, &closes("Stop", &json!({})), 0, 30);
        assert_eq!(closed[0].subject.as_deref(), Some("a"));
        assert!(open.is_empty());
    }

    #[test]
    fn an_elicitation_closes_by_its_id_and_unrelated_calls_close_nothing() {
        let ask = json!({"mcp_server_name": "db", "elicitation_id": "e1"});
        let mut open = vec![pending("a", 1, &opens("Elicitation", &ask).unwrap())];
        let other = json!({"mcp_server_name": "db", "elicitation_id": "e2"});
        assert!(close(&mut open, &closes("ElicitationResult", &other), 0, 2).is_empty());
        assert!(close(&mut open, &closes("PreToolUse", &ask), 0, 2).is_empty());
        assert_eq!(
            close(&mut open, &closes("ElicitationResult", &ask), 0, 2).len(),
            1
        );
    }

    #[test]
    fn past_the_bound_the_oldest_close() {
        let mut open: Vec<Pending> = (0..MAX_PENDING as u64)
            .map(|i| pending(&format!("r{i}"), i, "k"))
            .collect();
        let closed = close(&mut open, &Closes::Nothing, 2, 100);
        let ids: Vec<_> = closed.iter().map(|e| e.subject.clone().unwrap()).collect();
        assert_eq!(ids, ["r0", "r1"]);
        assert_eq!(open.len(), MAX_PENDING - 2);
    }
}
