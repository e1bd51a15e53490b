//! Claude Code's AskUserQuestion tool, as one `kind: "form"` request per
//! call, and its answers back.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AttentionRequested, Capture, Choice, FieldSpec, FieldSpecType, Object};

/// The tool's input: one to a few questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskUserQuestion {
    /// The questions, in the order they are asked.
    pub questions: Vec<Question>,
}

/// One question of the tool's input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// The question text.
    pub question: String,
    /// A short header shown with it.
    pub header: String,
    /// Whether several options may be picked.
    #[serde(default)]
    pub multi_select: bool,
    /// The offered options.
    pub options: Vec<QuestionOption>,
}

/// One offered option.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionOption {
    /// The option's label (what the answer reports).
    pub label: String,
    /// A longer description; not carried into the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The `attention.requested` payload for one AskUserQuestion call.
///
/// Question `n` becomes field `"n"` (1-based): a required select with
/// `other: true` (the tool always offers a free-text answer), `multi: true`
/// only for a multi-select question, labelled `"{header}: {question}"`,
/// whose choices are the options with ids `"1"`, `"2"`, ... (descriptions
/// are not carried). Below capture `redacted` every field and choice label
/// is its id, since they are model text.
pub fn request(input: &AskUserQuestion, agent: &str, capture: Capture) -> AttentionRequested {
    let content = capture >= Capture::Redacted;
    let fields = input
        .questions
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let id = (i + 1).to_string();
            let choices = q
                .options
                .iter()
                .enumerate()
                .map(|(j, option)| {
                    let id = (j + 1).to_string();
                    let label = if content {
                        option.label.clone()
                    } else {
                        id.clone()
                    };
                    Choice {
                        id,
                        label,
                        extra: Object::new(),
                    }
                })
                .collect();
            FieldSpec {
                label: if content {
                    format!("{}: {}", q.header, q.question)
                } else {
                    id.clone()
                },
                id,
                type_: FieldSpecType::Select,
                required: Some(true),
                multi: q.multi_select.then_some(true),
                other: Some(true),
                choices: Some(choices),
                min: None,
                max: None,
                extra: Object::new(),
            }
        })
        .collect();
    let n = input.questions.len();
    let noun = if n == 1 { "question" } else { "questions" };
    super::form_request(format!("{agent} asks {n} {noun}"), fields)
}

/// The tool's answers for `answer.values`: keyed by question text, a
/// choice id replaced by its option's label, several joined with `", "`,
/// free text passed through. Entries that name no question are ignored.
pub fn answers(input: &AskUserQuestion, values: &Object) -> BTreeMap<String, String> {
    let mut answers = BTreeMap::new();
    for (i, q) in input.questions.iter().enumerate() {
        let Some(value) = values.get(&(i + 1).to_string()) else {
            continue;
        };
        let label = |answer: &str| -> String {
            answer
                .parse::<usize>()
                .ok()
                .filter(|&n| n >= 1 && answer == n.to_string())
                .and_then(|n| q.options.get(n - 1))
                .map_or_else(|| answer.to_owned(), |option| option.label.clone())
        };
        let text = match value {
            Value::String(answer) => label(answer),
            Value::Array(items) => items
                .iter()
                .filter_map(Value::as_str)
                .map(label)
                .collect::<Vec<_>>()
                .join(", "),
            other => other.to_string(),
        };
        answers.insert(q.question.clone(), text);
    }
    answers
}
