//! Codex hooks (AEP-0002 Annex A.2): ten hooks onto ten core types. A
//! Codex thread is the AEP session and its `turn_id` the run (envelope
//! identity, the runtime's); compaction is emitted once, at `PostCompact`;
//! a failed tool still reports through `PostToolUse`, so `tool.failed`
//! has no Codex moment.

use serde_json::Value;

use aep::{Payload, SessionStarted};

use crate::build::Cx;
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::hooks::{self, Hook};

const VENDOR: &str = "codex";

/// Maps one Codex hook payload.
pub fn map(input: &Value, cx: &Cx<'_>) -> Result<Vec<MappedEvent>, MapError> {
    let hook = Hook::read(input, VENDOR)?;
    let event = match hook.hook_event_name.as_str() {
        "SessionStart" => {
            let mut started = SessionStarted::new();
            started.client = Some(aep::session_started::Client::new(VENDOR));
            started.gen_ai_request_model = hook.model.clone();
            started.cwd = hook.cwd.clone();
            started.extra = hooks::extras([("trigger", hook.source.clone().map(Value::from))]);
            cx.core(Payload::SessionStarted(started)).build()?
        }
        // Compaction is one fact, emitted at its post moment.
        "PreCompact" => return Ok(Vec::new()),
        // The other eight hooks mean what they mean across the family.
        _ => hooks::shared(cx, &hook, VENDOR)?,
    };
    Ok(vec![event])
}
