//! Property test: inputs with members dropped, added and retyped, at every
//! posture, never panic and never give an invalid event. Every produced
//! event, wrapped in a full envelope at the capture its posture sets for
//! its type, passes `Event::validate`; an input that cannot be mapped is
//! an error, never a panic. Fixed seeds, bounded case counts.

use std::panic::{catch_unwind, AssertUnwindSafe};

use aep::{Capture, Event};
use aep_adapters::{MappedEvent, Mapper, Mode, Posture, Surface, Vocabulary};
use serde_json::{json, Map, Value};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Seed inputs per surface, written from the vendors' documented shapes.
fn seeds() -> Vec<(Vocabulary, Option<Surface>, Value)> {
    use Vocabulary::*;
    let hook = |name: &str| {
        json!({"hook_event_name": name, "session_id": "s", "turn_id": "t", "tool_name": "Bash",
               "tool_use_id": "u", "tool_call_id": "c", "tool_input": {"command": "ls ~/x"},
               "tool_response": {"output": "ok"}, "tool_output": "ok", "prompt": "do it",
               "agent_id": "a", "agent_type": "explore", "trigger": "auto", "source": "startup",
               "model": "m", "cwd": "/home/u/p", "notification_type": "idle_prompt",
               "message": "hi", "error": {"name": "E", "message": "m"}, "reason": "exit",
               "phase": "postWrite", "todo_id": "t1", "todo_content": "c", "decision": "approved",
               "display": "Run?", "feedback": "no", "error_type": "E", "agent_name": "n",
               "is_steer": false, "is_interrupt": false, "input_tokens": 3,
               "llm_request": {"model": "m"}, "permission_mode": "yolo"})
    };
    let hooks = [
        "SessionStart",
        "SessionEnd",
        "UserPromptSubmit",
        "Stop",
        "StopFailure",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PermissionRequest",
        "PermissionResult",
        "SubagentStart",
        "SubagentStop",
        "PreCompact",
        "PostCompact",
        "Notification",
        "TodoCreated",
        "TodoCompleted",
        "Interrupt",
        "BeforeAgent",
        "AfterAgent",
        "BeforeTool",
        "AfterTool",
        "BeforeModel",
        "PreCompress",
        "Other",
    ];
    let mut seeds = Vec::new();
    for vocabulary in [Codex, GeminiCli, QwenCode, Vscode, KimiCode] {
        for name in hooks {
            seeds.push((vocabulary, None, hook(name)));
        }
    }
    seeds.push((ClaudeCode, Some(Surface::AskUserQuestion), json!({"questions": [
        {"question": "Q?", "header": "H", "multiSelect": true, "options": [{"label": "a"}, {"label": "b"}]}]})));
    seeds.push((ClaudeCode, Some(Surface::Elicitation), json!({"message": "m", "requestedSchema": {
        "type": "object", "properties": {"a": {"type": "string", "enum": ["x"]}, "n": {"type": "integer"}},
        "required": ["a"]}})));
    for event in [
        json!({"type": "session.created", "properties": {"info": {"id": "s", "parentID": "p", "title": "t", "version": "1"}}}),
        json!({"type": "message.updated", "properties": {"info": {"role": "assistant", "tokens": {"input": 1, "output": 2}}}}),
        json!({"type": "permission.updated", "properties": {"id": "p", "type": "bash", "title": "rm"}}),
        json!({"type": "permission.asked", "properties": {"id": "p", "type": "bash", "title": "rm"}}),
        json!({"type": "question.asked", "properties": {"id": "q", "questions": [{"question": "Q", "header": "", "options": [{"label": "a"}], "custom": false}]}}),
        json!({"type": "session.error", "properties": {"error": {"name": "E", "data": {"message": "m"}}}}),
        json!({"type": "session.status", "properties": {"status": {"type": "retry", "message": "m"}}}),
        json!({"type": "command.executed", "properties": {"name": "n", "arguments": "--x"}}),
    ] {
        for vocabulary in [Opencode, Kilocode] {
            seeds.push((
                vocabulary,
                None,
                json!({"kind": "bus", "event": event.clone()}),
            ));
            seeds.push((vocabulary, Some(Surface::Sse), event.clone()));
        }
    }
    for vocabulary in [Opencode, Kilocode] {
        seeds.push((vocabulary, None, json!({"kind": "tool.before", "input": {"tool": "t", "callID": "c"}, "output": {"args": {"a": 1}}})));
        seeds.push((
            vocabulary,
            None,
            json!({"kind": "tool.after", "input": {"tool": "t"}, "output": {"output": "o"}}),
        ));
        seeds.push((
            vocabulary,
            None,
            json!({"kind": "permission.ask", "permission": {"type": "t", "title": "x"}}),
        ));
        seeds.push((vocabulary, Some(Surface::Todos), json!({"prev": [{"id": "a", "status": "pending", "content": "c"}],
                                                              "next": [{"id": "a", "status": "completed"}, {"id": "b", "status": "completed"}]})));
    }
    for frame in [
        "turn.started",
        "turn.ended",
        "tool.call.started",
        "event.approval.requested",
        "event.approval.resolved",
        "event.question.requested",
        "event.question.answered",
        "event.session.work_changed",
        "permission.approval.requested",
    ] {
        seeds.push((
            KimiCode,
            Some(Surface::Ws),
            json!({"type": frame, "seq": 1, "payload": {
            "origin": {"kind": "user"}, "reason": "completed", "toolCallId": "c", "name": "Bash",
            "args": {"command": "x"}, "approval_id": "a", "action": "run", "decision": "rejected",
            "feedback": "f", "question_id": "q", "questions": [{"id": "q0", "question": "Q",
            "options": [{"id": "o", "label": "L"}]}], "answers": {"q0": "o"}, "busy": true}}),
        ));
    }
    for name in [
        "agent_start",
        "agent_resume",
        "agent_end",
        "agent_abort",
        "agent_error",
        "tool_call",
        "tool_result",
        "prompt_submit",
        "pre_compact",
        "session_shutdown",
        "x",
    ] {
        seeds.push((Cline, None, json!({"hookName": name, "taskId": "t", "agent_id": "a",
            "parent_agent_id": "p", "iteration": 2, "reason": "r", "error": {"name": "E", "message": "m"},
            "tool_call": {"id": "c", "name": "n", "input": {"a": 1}},
            "tool_result": {"id": "c", "name": "n", "output": "o", "error": "e", "durationMs": 3},
            "preCompact": {"compactionStrategy": "s", "tokensIn": 1, "tokensOut": 2}})));
    }
    for name in [
        "on_session_start",
        "pre_llm_call",
        "pre_tool_call",
        "post_tool_call",
        "pre_approval_request",
        "post_approval_response",
        "on_session_end",
        "subagent_start",
        "subagent_stop",
        "api_request_error",
        "on_session_finalize",
        "on_session_reset",
        "x",
    ] {
        for tool in ["terminal", "clarify"] {
            seeds.push((Hermes, None, json!({"hook_event_name": name, "tool_name": tool,
                "tool_input": {"question": "Q", "choices": ["a", {"label": "b"}]}, "session_id": "s",
                "extra": {"tool_call_id": "c", "status": "ok", "result": "{\"user_response\":\"a\",\"choices_offered\":[\"a\"]}",
                          "user_message": "m", "command": "sudo x", "pattern_key": "k", "choice": "once",
                          "child_session_id": "cs", "duration_ms": 1, "status_code": 500,
                          "error": {"message": "m"}, "interrupted": false, "completed": true}})));
        }
    }
    for hook in [
        "PreToolUse",
        "PostToolUse",
        "PreInvocation",
        "PostInvocation",
        "Stop",
        "X",
    ] {
        seeds.push((Antigravity, None, json!({"hook": hook, "input": {"conversationId": "c",
            "toolCall": {"name": "n", "args": {"a": 1}}, "stepIdx": 1, "error": "e", "invocationNum": 2,
            "initialNumSteps": 3, "terminationReason": "error", "executionNum": 1, "fullyIdle": true},
            "join": {"name": "n"}})));
    }
    for event in [
        json!({"type": "agent_end", "messages": [{"role": "assistant", "stopReason": "error", "errorMessage": "m"}]}),
        json!({"type": "message_end", "message": {"role": "assistant", "content": [{"type": "text", "text": "t"}], "usage": {"input": 1}}}),
        json!({"type": "message_start", "message": {"role": "user", "content": "c"}}),
        json!({"type": "message_update", "assistantMessageEvent": {"type": "text_delta", "delta": "d"}}),
        json!({"type": "tool_execution_update", "toolCallId": "c", "toolName": "t", "partialResult": "p"}),
        json!({"type": "tool_execution_end", "toolCallId": "c", "toolName": "t", "result": {"content": []}, "isError": true}),
        json!({"type": "session_start", "reason": "resume", "previousSessionFile": "/home/u/f"}),
        json!({"type": "turn_start", "turnIndex": 0}),
    ] {
        seeds.push((Pi, None, json!({"session": {"id": "s"}, "event": event})));
    }
    for moment in [
        json!({"kind": "request", "method": "session/prompt", "params": {"prompt": [{"type": "text", "text": "t"}]}}),
        json!({"kind": "request", "method": "session/request_permission", "params": {"toolCall": {"toolCallId": "t", "title": "x"}, "options": [1]}}),
        json!({"kind": "response", "method": "session/prompt", "result": {"stopReason": "refusal"}}),
        json!({"kind": "response", "method": "session/request_permission", "result": {"outcome": {"outcome": "selected", "optionId": "o"}}}),
        json!({"kind": "notification", "method": "session/update", "params": {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed", "rawOutput": {"o": 1}}}}),
        json!({"kind": "notification", "method": "session/update", "params": {"update": {"sessionUpdate": "agent_message_chunk", "content": {"text": "x"}}}}),
        json!({"kind": "notification", "method": "session/update", "params": {"update": {"sessionUpdate": "plan", "entries": [{"status": "pending"}]}}}),
    ] {
        seeds.push((Acp, None, moment));
    }
    for event in [
        json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r", "parentRunId": "p"}),
        json!({"type": "RUN_ERROR", "message": "m", "code": "c"}),
        json!({"type": "STEP_STARTED", "stepName": "s"}),
        json!({"type": "TOOL_CALL_RESULT", "toolCallId": "c", "content": "x"}),
        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d"}),
        json!({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1}]}),
        json!({"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}}),
        json!({"type": "CUSTOM", "name": "n", "value": 1}),
    ] {
        seeds.push((Agui, None, event));
    }
    for event in [
        json!({"kind": "ActionEvent", "id": "e", "timestamp": "t", "tool_name": "n", "tool_call_id": "c",
               "action": {"kind": "A", "command": "x"}, "llm_response_id": "r", "security_risk": "HIGH",
               "thought": [{"type": "text", "text": "t"}]}),
        json!({"kind": "ObservationEvent", "id": "e", "tool_name": "n", "observation": {"content": [{"text": "o"}], "is_error": true}}),
        json!({"kind": "MessageEvent", "id": "e", "llm_message": {"role": "user", "content": [{"text": "m"}]}, "activated_skills": []}),
        json!({"kind": "ConversationStateUpdateEvent", "id": "e", "key": "execution_status", "value": "running"}),
        json!({"kind": "ConversationErrorEvent", "id": "e", "code": "C", "detail": "d"}),
        json!({"kind": "Condensation", "id": "e", "forgotten_event_ids": ["a"], "summary": "s"}),
        json!({"kind": "StreamingDeltaEvent", "id": "e", "content": "c"}),
    ] {
        seeds.push((Openhands, None, event));
    }
    for (prev, next) in [
        (json!("waiting_for_confirmation"), "deleting"),
        (json!(null), "running"),
        (json!("running"), "idle"),
    ] {
        seeds.push((
            Openhands,
            Some(Surface::Status),
            json!({"prev": prev, "next": next}),
        ));
    }
    for name in [
        "codex.conversation_starts",
        "codex.tool_decision",
        "codex.tool_result",
        "codex.user_prompt",
        "codex.x",
    ] {
        seeds.push((CodexOtel, None, json!({"resource": {}, "attributes": {"event.name": name, "model": "m",
            "tool_name": "t", "decision": "deny", "source": "config", "success": "false", "duration_ms": "4",
            "prompt": "p", "error": "e"}})));
    }
    for name in [
        "copilot_chat.session.start",
        "copilot_chat.tool.call",
        "gen_ai.client.inference.operation.details",
        "x",
    ] {
        seeds.push((
            VscodeOtel,
            None,
            json!({"resource": {}, "attributes": {"event.name": name,
            "gen_ai.tool.name": "t", "success": false, "error.type": "E", "duration_ms": 3,
            "gen_ai.input.messages": "m"}}),
        ));
    }
    seeds
}

/// Every value in `value` by path, the root first.
fn paths(value: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(path.clone());
    match value {
        Value::Object(members) => {
            for (k, v) in members {
                path.push(k.clone());
                paths(v, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                path.push(i.to_string());
                paths(v, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn at<'a>(value: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |v, k| match v {
        Value::Object(m) => m.get_mut(k),
        Value::Array(a) => k.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
        _ => None,
    })
}

fn random_value(rng: &mut Rng) -> Value {
    match rng.below(9) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => json!(rng.below(1000) as i64 - 500),
        3 => json!(0.5),
        4 => json!(""),
        5 => json!(["x", 1, null]),
        6 => json!({"type": "text", "text": "Bearer abc.def /home/u/x a@b.co"}),
        7 => json!("completed"),
        _ => json!({}),
    }
}

/// Drops, adds or retypes one member somewhere in `input`.
fn mutate(rng: &mut Rng, input: &mut Value) {
    let mut all = Vec::new();
    paths(input, &mut Vec::new(), &mut all);
    let path = all[rng.below(all.len())].clone();
    match rng.below(3) {
        // Drop.
        0 if !path.is_empty() => {
            let (last, parent) = path.split_last().expect("not the root");
            match at(input, parent) {
                Some(Value::Object(m)) => {
                    m.remove(last);
                }
                Some(Value::Array(a)) => {
                    if let Ok(i) = last.parse::<usize>() {
                        if i < a.len() {
                            a.remove(i);
                        }
                    }
                }
                _ => {}
            }
        }
        // Add.
        1 => {
            if let Some(Value::Object(m)) = at(input, &path) {
                let keys = [
                    "extra", "type", "status", "error", "content", "name", "id", "role",
                ];
                m.insert(keys[rng.below(keys.len())].to_owned(), random_value(rng));
            }
        }
        // Retype.
        _ => {
            if let Some(v) = at(input, &path) {
                *v = random_value(rng);
            }
        }
    }
}

fn postures() -> Vec<Posture> {
    let mut all = vec![
        Posture::default(),
        Posture::default().deltas(true).mode(Mode::Primary),
    ];
    for ceiling in Capture::ALL {
        all.push(Posture::uniform(ceiling));
        all.push(Posture::uniform(ceiling).deltas(true).mode(Mode::Primary));
    }
    all
}

/// The event as a runtime sends it, at the capture the posture sets.
fn envelope(event: &MappedEvent, vocabulary: Vocabulary, posture: &Posture) -> Event {
    let capture = posture.ceiling_for(&event.type_);
    let mut full = Map::new();
    for (k, v) in [
        ("aep", json!("0.1")),
        ("id", json!("e1")),
        ("time", json!("2026-01-01T00:00:00Z")),
        ("source", json!("urn:aep:test")),
        ("agent", json!(vocabulary.agent())),
        ("session", json!("s")),
        ("seq", json!(1)),
        ("capture", json!(capture.as_str())),
        ("type", json!(event.type_)),
    ] {
        full.insert(k.to_owned(), v);
    }
    if capture != Capture::None || !event.data.is_empty() {
        full.insert("data".to_owned(), Value::Object(event.data.clone()));
    }
    if let Some(subject) = &event.subject {
        full.insert("subject".to_owned(), json!(subject));
    }
    if let Some(step) = &event.step {
        full.insert("step".to_owned(), json!(step));
    }
    Event::from_json(&Value::Object(full).to_string()).expect("a mapped event decodes as an event")
}

#[test]
fn mutated_inputs_never_panic_and_never_give_an_invalid_event() {
    let seeds = seeds();
    let postures = postures();
    let mut rng = Rng(0x5EED_ADA9_7E55_0001);
    let (mut mapped, mut refused, mut events) = (0usize, 0usize, 0usize);
    for round in 0..6_000 {
        let (vocabulary, surface, seed) = &seeds[rng.below(seeds.len())];
        let mut input = seed.clone();
        if round % 7 != 0 {
            for _ in 0..=rng.below(3) {
                mutate(&mut rng, &mut input);
            }
        }
        let posture = postures[rng.below(postures.len())].clone();
        let mapper = Mapper::new(*vocabulary, *surface, posture.clone()).expect("a known surface");
        let text = input.to_string();
        let outcome = catch_unwind(AssertUnwindSafe(|| mapper.map(&text)))
            .unwrap_or_else(|_| panic!("{vocabulary} {surface:?} panicked on {text}"));
        match outcome {
            Ok(list) => {
                mapped += 1;
                for event in &list {
                    events += 1;
                    let envelope = envelope(event, *vocabulary, &posture);
                    if let Err(violations) = envelope.validate() {
                        panic!("{vocabulary} {surface:?} at {posture:?} gave an invalid event for {text}: {violations}\n{event:?}");
                    }
                }
            }
            Err(_) => refused += 1,
        }
    }
    // The corpus reaches both sides, and real events.
    assert!(
        mapped > 3_000 && refused > 100 && events > 3_000,
        "{mapped} {refused} {events}"
    );
}

#[test]
fn unmapped_text_is_an_error_not_a_panic() {
    for vocabulary in Vocabulary::ALL {
        let (surfaces, default) = vocabulary.surfaces();
        let mut all: Vec<Option<Surface>> = surfaces.iter().copied().map(Some).collect();
        if default {
            all.push(None);
        }
        for surface in all {
            let mapper =
                Mapper::new(vocabulary, surface, Posture::default()).expect("a known surface");
            for text in ["", "{", "null", "[]", "1", "\"x\"", "{}", "{\"type\":null}"] {
                let _ = mapper.map(text);
            }
            assert!(mapper.map("not json").is_err());
        }
    }
}
