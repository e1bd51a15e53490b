//! VS Code agent hooks (AEP-0002 Annex A.5): the eight-event Preview
//! surface, a Claude Code family member. Runs are the runtime's; the
//! success-only `PostToolUse` leaves `tool.failed` without a moment;
//! compaction rides the only (pre) moment; `transcript_path` never rides.

use serde_json::Value;

use aep::{Payload, SessionStarted};

use crate::build::Cx;
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::hooks::{self, Hook};
use crate::names;

const VENDOR: &str = "vscode";

/// Maps one VS Code agent hook payload.
pub fn map(input: &Value, cx: &Cx<'_>) -> Result<Vec<MappedEvent>, MapError> {
    let hook = Hook::read(input, VENDOR)?;
    let event = match hook.hook_event_name.as_str() {
        "SessionStart" => {
            let mut started = SessionStarted::new();
            started.client = Some(aep::session_started::Client::new(VENDOR));
            started.gen_ai_request_model = hook.model.clone();
            started.extra = hooks::extras([
                ("trigger", hook.source.clone().map(Value::from)),
                ("agent_type", hook.agent_type.clone().map(Value::from)),
            ]);
            cx.core(Payload::SessionStarted(started)).build()?
        }
        // Compaction rides the only (pre) moment.
        "PreCompact" => hooks::compacted(cx, &hook)?,
        // Not hooks of the Preview surface: a payload so named stays
        // vendor-scoped, as any unknown hook (a post moment would compact
        // a second time).
        name @ ("PermissionRequest" | "PostCompact") => {
            cx.vendor(names::session_fallback(VENDOR, name)).build()?
        }
        // The prompt, tool, subagent and stop hooks are the family's.
        _ => hooks::shared(cx, &hook, VENDOR)?,
    };
    Ok(vec![event])
}
