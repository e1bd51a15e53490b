//! `claude-code.json`: AskUserQuestion (`form::claude_code`) and MCP
//! elicitation (`form::mcp`) as `kind: "form"` requests, at capture
//! `redacted` (`expected_data`) and `metadata` (`expected_data_metadata`).

use aep::form::{claude_code, mcp};
use aep::{AttentionRequested, Capture};
use serde_json::value::RawValue;
use serde_json::Value;

use super::{Entry, Pin};

/// The entries the project maps.
pub const ENTRIES: &[Entry] = &[
    Entry {
        name: "ask_user_question",
        pins: &[
            Pin {
                key: "expected_data",
                map: |agent, input| ask_user_question(agent, input, Capture::Redacted),
            },
            Pin {
                key: "expected_data_metadata",
                map: |agent, input| ask_user_question(agent, input, Capture::Metadata),
            },
        ],
    },
    Entry {
        name: "elicitation",
        pins: &[
            Pin {
                key: "expected_data",
                map: |agent, input| elicitation(agent, input, Capture::Redacted),
            },
            Pin {
                key: "expected_data_metadata",
                map: |agent, input| elicitation(agent, input, Capture::Metadata),
            },
        ],
    },
];

fn ask_user_question(agent: &str, input: &RawValue, capture: Capture) -> Result<Value, String> {
    let input: claude_code::AskUserQuestion = serde_json::from_str(input.get())
        .map_err(|e| format!("the input is not an AskUserQuestion call: {e}"))?;
    payload(&claude_code::request(&input, agent, capture))
}

fn elicitation(agent: &str, input: &RawValue, capture: Capture) -> Result<Value, String> {
    let request = mcp::request(input.get(), agent, capture)
        .map_err(|e| format!("the elicitation is refused: {e}"))?;
    payload(&request)
}

fn payload(request: &AttentionRequested) -> Result<Value, String> {
    serde_json::to_value(request).map_err(|e| format!("the payload cannot be encoded: {e}"))
}
