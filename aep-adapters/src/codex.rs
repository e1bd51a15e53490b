//! Codex hooks (AEP-0002 Annex A.2): ten hooks onto ten core types. A
//! Codex thread is the AEP session and its `turn_id` the run (envelope
//! identity, the runtime's); compaction is emitted once, at `PostCompact`;
//! a failed tool still reports through `PostToolUse`, so `tool.failed`
//! has no Codex moment.

use serde_json::Value;

use aep::{
    DelegationSubagentStarted, DelegationSubagentStopped, Payload, RunFinished, RunStarted,
    SessionCompacted, SessionStarted,
};

use crate::build::Cx;
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::hooks::{self, Hook};
use crate::names;

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
        "UserPromptSubmit" => {
            let mut started = RunStarted::new();
            started.trigger = Some(aep::run_started::Trigger::User);
            started.prompt = hooks::prompt_text(hook.prompt.as_ref());
            cx.core(Payload::RunStarted(started)).build()?
        }
        "Stop" => cx.core(Payload::RunFinished(RunFinished::new())).build()?,
        "PreToolUse" => {
            let tool = hooks::tool_ref(hook.tool()?, hook.tool_use_id.as_deref());
            hooks::tool_requested(cx, tool, hook.tool_input.as_ref()).build()?
        }
        "PostToolUse" => {
            let tool = hooks::tool_ref(hook.tool()?, hook.tool_use_id.as_deref());
            hooks::tool_completed(cx, tool, hook.tool_response.as_ref()).build()?
        }
        "PermissionRequest" => {
            let tool = hook.tool()?;
            let prompt = hooks::permission_prompt(tool, hook.tool_input.as_ref());
            let request = hooks::permission_over_control(prompt);
            cx.core(Payload::AttentionRequested(request))
                .subject(Some(tool))
                .build()?
        }
        "SubagentStart" => {
            let mut started = DelegationSubagentStarted::new();
            started.agent_type = hook.agent_type.clone();
            cx.core(Payload::DelegationSubagentStarted(started))
                .subject(hook.agent_id.as_deref())
                .build()?
        }
        "SubagentStop" => {
            let mut stopped = DelegationSubagentStopped::new();
            stopped.agent_type = hook.agent_type.clone();
            cx.core(Payload::DelegationSubagentStopped(stopped))
                .subject(hook.agent_id.as_deref())
                .build()?
        }
        // Compaction is one fact, emitted at its post moment.
        "PreCompact" => return Ok(Vec::new()),
        "PostCompact" => {
            let mut compacted = SessionCompacted::new();
            compacted.trigger = hook.trigger.clone();
            cx.core(Payload::SessionCompacted(compacted)).build()?
        }
        other => cx.vendor(names::session_fallback(VENDOR, other)).build()?,
    };
    Ok(vec![event])
}
