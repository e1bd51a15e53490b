//! Map an AskUserQuestion call to a form request and gate its answer.

use aep_types::form::{claude_code, gate_values, validate_values, FormValue};
use aep_types::{Capture, Object};

fn main() {
    let input = claude_code::AskUserQuestion {
        questions: vec![claude_code::Question {
            question: "Which database?".into(),
            header: "Storage".into(),
            multi_select: false,
            options: vec![claude_code::QuestionOption { label: "SQLite".into(), description: None }],
        }],
    };
    let request = claude_code::request(&input, "claude-code", Capture::Redacted);
    let fields = request.fields.unwrap_or_default();
    let mut answer = Object::new();
    answer.insert("1".into(), FormValue::Choice("1".into()).to_json());
    validate_values(&fields, &answer).unwrap();
    let gated = gate_values(&fields, &answer, Capture::Metadata);
    assert_eq!(claude_code::answers(&input, &gated)["Which database?"], "SQLite");
}
