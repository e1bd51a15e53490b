//! Claude Code (AEP-0002 Annex A.1): the two structured-input surfaces,
//! AskUserQuestion and MCP elicitation, as one `attention.requested`
//! (`kind: "form"`) each. The pure form mappings are `aep::form`'s; this
//! module runs them at the posture.

use serde_json::Value;

use aep::form::{claude_code, mcp};
use aep::{Capture, Payload};

use crate::build::Cx;
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::json;

const REQUESTED: &str = "attention.requested";

/// An AskUserQuestion tool input (`{"questions": [...]}`) as one form
/// request: a field per question, real labels from `redacted` up,
/// structural placeholders below.
pub fn ask_user_question(input: &Value, cx: &Cx<'_>) -> Result<MappedEvent, MapError> {
    let call: claude_code::AskUserQuestion = json::decode(input, "AskUserQuestion")?;
    let capture = cx.ceiling(REQUESTED).max(Capture::Metadata);
    let request = claude_code::request(&call, cx.agent, capture);
    cx.pregated(Payload::AttentionRequested(request)).build()
}

/// An MCP `elicitation/create` request (`{message, requestedSchema}`, as
/// JSON text: the fields follow the schema's property order) as one form
/// request.
pub fn elicitation(text: &str, cx: &Cx<'_>) -> Result<MappedEvent, MapError> {
    let capture = cx.ceiling(REQUESTED).max(Capture::Metadata);
    let request = mcp::request(text, cx.agent, capture)
        .map_err(|e| MapError::new(format!("elicitation: {e}")))?;
    cx.pregated(Payload::AttentionRequested(request)).build()
}
