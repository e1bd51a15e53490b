//! `hook-runtime`: the Annex A pins of the two vocabularies `aep hook`
//! serves (`mappings/claude-code.json`, `mappings/codex.json`) run
//! through the whole runtime rather than the mapping alone: each pin's
//! input, as the hook payload the vendor sends, goes to `aep hook AGENT`
//! with a relay (`aep relay` on a loopback port) and a fresh `AEP_HOME`,
//! so the adapter daemon records it, stamps it and holds what asks a
//! person. What the session's log holds for the call is compared with the
//! pin the way the `mappings` category compares `aep adapter map`'s
//! output. A pin that asks a person must have been held: its log holds
//! exactly one `attention.timeout` for the request (after a short
//! `AEP_ATTENTION_TIMEOUT_MS`), the runtime's own ending, which is then
//! left out of the comparison. Only the variables set here reach `aep`.
//!
//! | pin | hook payload |
//! |---|---|
//! | codex `hooks.NAME.expected`, `fallback.expected` | the `input` |
//! | claude-code `ask_user_question.expected_data` | a `PermissionRequest` for `AskUserQuestion` whose `tool_input` is the `input` |
//! | claude-code `elicitation.expected_data` | an `Elicitation` with the `input`'s `message` and `requestedSchema` |
//!
//! Each pin runs in a session of its own (its `session_id` replaced by
//! the pin's name), so no pin's run or pending request meets another's.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::aep::Relay;
use crate::json;
use crate::report::{Case, Category};
use crate::Context;

/// The category's name in the report.
pub const NAME: &str = "hook-runtime";

/// How long a held request waits before the runtime times it out.
const HOLD_MS: &str = "300";

/// One pin run through the runtime.
struct Pin {
    name: String,
    agent: &'static str,
    /// Its session id.
    session: String,
    /// The hook payload, as text (a schema's members keep their order).
    payload: String,
    expected: Value,
    /// The pin states the one event's `data` only (claude-code's).
    data_only: bool,
}

/// Runs the category.
pub fn run(context: &Context) -> Category {
    let mut category = Category::new(NAME);
    let pins = match pins(context) {
        Ok(pins) => pins,
        Err(e) => return Category::broken(NAME, e),
    };
    let token = "conformance-hook-runtime";
    let relay = match Relay::start(&context.aep, token) {
        Ok(relay) => relay,
        Err(e) => return Category::broken(NAME, e),
    };
    let home = match tempfile::tempdir() {
        Ok(home) => home,
        Err(e) => return Category::broken(NAME, format!("no temporary AEP_HOME: {e}")),
    };
    let home_path = home.path().to_string_lossy().into_owned();
    let env = [
        ("AEP_HOME", home_path.as_str()),
        ("AEP_RELAY", relay.url.as_str()),
        ("AEP_TOKEN", token),
        ("AEP_ATTENTION_TIMEOUT_MS", HOLD_MS),
        ("AEP_ADAPTER_IDLE", "30s"),
    ];
    for pin in &pins {
        let stdin = pin.payload.as_bytes();
        let case = match context.aep.run_with(&["hook", pin.agent], stdin, &env) {
            Err(e) => Case::fail(pin.name.clone(), e),
            Ok(output) if output.code != Some(0) => {
                Case::fail(pin.name.clone(), output.status_line())
            }
            Ok(_) => match logged(home.path(), pin) {
                Err(e) => Case::fail(pin.name.clone(), e),
                Ok((events, timeouts)) => {
                    let mut failures = compare(pin, &events);
                    failures.extend(held(&events, timeouts));
                    Case::with(pin.name.clone(), failures)
                }
            },
        };
        category.cases.push(case);
    }
    stop_daemon(home.path());
    drop(relay);
    category
}

/// The pins of both vocabularies, as hook payloads.
fn pins(context: &Context) -> Result<Vec<Pin>, String> {
    let mut pins = Vec::new();
    let codex = context.fixtures.json("mappings/codex.json")?;
    let hooks = codex
        .get("hooks")
        .and_then(Value::as_object)
        .ok_or("mappings/codex.json: no `hooks`")?;
    let entries = hooks
        .iter()
        .map(|(name, entry)| (format!("hooks.{name}"), entry))
        .chain(codex.get("fallback").map(|f| ("fallback".to_owned(), f)));
    for (name, entry) in entries {
        let (Some(input), Some(expected)) = (entry.get("input"), entry.get("expected")) else {
            continue;
        };
        let name = format!("codex.json {name}");
        let mut payload = input.clone();
        if let Some(object) = payload.as_object_mut() {
            object.insert("session_id".into(), json!(session(&name)));
        }
        pins.push(Pin {
            session: session(&name),
            payload: payload.to_string(),
            name,
            agent: "codex",
            expected: expected.clone(),
            data_only: false,
        });
    }
    // Read as text: the elicitation's schema lists its fields in order.
    let text = context.fixtures.text("mappings/claude-code.json")?;
    let claude: ClaudeCode<'_> =
        serde_json::from_str(&text).map_err(|e| format!("mappings/claude-code.json: {e}"))?;
    if let Some(entry) = claude.ask_user_question {
        let name = "claude-code.json ask_user_question.expected_data".to_owned();
        let payload = format!(
            r#"{{"hook_event_name":"PermissionRequest","session_id":{},"tool_name":"AskUserQuestion","tool_input":{}}}"#,
            json!(session(&name)),
            entry.input.get()
        );
        pins.push(Pin {
            session: session(&name),
            payload,
            name,
            agent: "claude-code",
            expected: serde_json::from_str(entry.expected_data.get()).unwrap_or(Value::Null),
            data_only: true,
        });
    }
    if let Some(entry) = claude.elicitation {
        let name = "claude-code.json elicitation.expected_data".to_owned();
        let input: Elicitation<'_> = serde_json::from_str(entry.input.get())
            .map_err(|e| format!("mappings/claude-code.json elicitation.input: {e}"))?;
        let payload = format!(
            r#"{{"hook_event_name":"Elicitation","session_id":{},"mcp_server_name":"conformance","message":{},"requested_schema":{}}}"#,
            json!(session(&name)),
            input.message.map_or("null", RawValue::get),
            input.requested_schema.get()
        );
        pins.push(Pin {
            session: session(&name),
            payload,
            name,
            agent: "claude-code",
            expected: serde_json::from_str(entry.expected_data.get()).unwrap_or(Value::Null),
            data_only: true,
        });
    }
    Ok(pins)
}

/// The session a pin runs in.
fn session(name: &str) -> String {
    format!("conformance {name}")
}

/// The Claude Code pins this category reads, as the file writes them.
#[derive(Deserialize)]
struct ClaudeCode<'a> {
    #[serde(borrow)]
    ask_user_question: Option<FormPin<'a>>,
    #[serde(borrow)]
    elicitation: Option<FormPin<'a>>,
}

#[derive(Deserialize)]
struct FormPin<'a> {
    #[serde(borrow)]
    input: &'a RawValue,
    #[serde(borrow)]
    expected_data: &'a RawValue,
}

#[derive(Deserialize)]
struct Elicitation<'a> {
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
    #[serde(borrow, rename = "requestedSchema")]
    requested_schema: &'a RawValue,
}

/// Whether each request the call opened was held: one
/// `attention.timeout` about it, and none about anything else.
fn held(events: &[Value], timeouts: Vec<Value>) -> Vec<String> {
    let asked: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "attention.requested")
        .map(|e| &e["id"])
        .collect();
    let about: Vec<&Value> = timeouts.iter().map(|t| &t["subject"]).collect();
    if asked == about {
        Vec::new()
    } else {
        vec![format!(
            "the runtime did not hold what was asked: requests {}, timeouts about {}",
            Value::from(asked.into_iter().cloned().collect::<Vec<_>>()),
            Value::from(about.into_iter().cloned().collect::<Vec<_>>())
        )]
    }
}

/// The events the runtime recorded for `pin`'s session, but the hold's
/// own ending, and those endings (`attention.timeout`).
fn logged(home: &std::path::Path, pin: &Pin) -> Result<(Vec<Value>, Vec<Value>), String> {
    let session = Value::from(pin.session.as_str());
    let dir = home.join("logs").join(pin.agent);
    let entries =
        std::fs::read_dir(&dir).map_err(|e| format!("no log in {}: {e}", dir.display()))?;
    let mut events = Vec::new();
    let mut timeouts = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        for line in text.lines() {
            let event: Value = serde_json::from_str(line)
                .map_err(|e| format!("{}: a line that is not JSON: {e}", path.display()))?;
            if event["session"] != session {
                continue;
            }
            if event["type"] == "attention.timeout" {
                timeouts.push(event);
            } else {
                events.push(event);
            }
        }
    }
    Ok((events, timeouts))
}

/// What differs between the pin and what the runtime recorded.
fn compare(pin: &Pin, events: &[Value]) -> Vec<String> {
    if pin.data_only {
        return match events {
            [event] => json::diff(&pin.expected, &event["data"]),
            _ => vec![format!(
                "expected one event, the log holds {}: {}",
                events.len(),
                json::shorten(&Value::Array(events.to_vec()).to_string())
            )],
        };
    }
    let project = |events: &[Value]| -> Value {
        Value::Array(
            events
                .iter()
                .map(|event| {
                    let mut kept = serde_json::Map::new();
                    for member in ["type", "data", "subject"] {
                        if let Some(v) = event.get(member) {
                            kept.insert(member.to_owned(), v.clone());
                        }
                    }
                    Value::Object(kept)
                })
                .collect(),
        )
    };
    let expected = match &pin.expected {
        Value::Null => Vec::new(),
        Value::Array(items) => items.clone(),
        one => vec![one.clone()],
    };
    if expected.len() != events.len() {
        return vec![format!(
            "expected {} event(s), the log holds {}: {}",
            expected.len(),
            events.len(),
            json::shorten(&project(events).to_string())
        )];
    }
    json::diff(&project(&expected), &project(events))
}

/// Stops the adapter daemon the hooks started under `home`, by its pid.
fn stop_daemon(home: &std::path::Path) {
    let pid = std::fs::read_to_string(home.join("run").join("adapter.pid")).unwrap_or_default();
    if let Ok(pid) = pid.trim().parse::<u32>() {
        let _ = std::process::Command::new("kill")
            .arg(pid.to_string())
            .status();
        // Bounded: it exits within its 2 s close, or is left to its idle.
        for _ in 0..50 {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}
