//! A person's answer to a held request, turned into what was applied
//! (AEP-0008: `attention.answered` records the applied answer) and the
//! vendor's hook output: a permission's decision, AskUserQuestion's
//! answers, an MCP elicitation's content.
//!
//! Both vendors read a `PermissionRequest` hook's decision from standard
//! output as `{"hookSpecificOutput": {"hookEventName": "PermissionRequest",
//! "decision": {"behavior": "allow" | "deny", "message"?: ...}}}` (Claude
//! Code's hooks reference; Codex's hooks documentation). An empty output
//! is no decision: the vendor shows its own dialog.
//!
//! The answer's three shapes:
//! - `{option: "allow"}` or `{option: "deny"}`: that decision;
//! - `{text}` alone: the words `allow` or `deny` are that decision, any
//!   other text is a deny whose message is the guidance (the model reads
//!   it, adjusts and may ask again);
//! - anything else (another option, nothing usable) breaks the request
//!   and is refused `invalid`, the request still pending.

use aep::form::mcp::Elicitation;
use aep::form::{answered_fields, claude_code, validate_values};
use aep::{Answer, Capture, FieldSpec, FieldSpecType, Object};
use serde_json::{json, Value};

/// The message of a plain deny.
const DENIED: &str = "Denied by the person answering this request over AEP.";

/// What answering applies: the answer to record and the hook's output.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The applied answer (`option`, and `text` for guidance).
    pub answer: Answer,
    /// The hook's standard output.
    pub stdout: String,
}

/// The decision `answer` means for a permission request, or why it
/// cannot be applied.
pub fn permission(answer: &Answer) -> Result<Applied, String> {
    let text = answer
        .text
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let (option, guidance) = match (answer.option.as_deref(), text) {
        (Some(option @ ("allow" | "deny")), _) => (option, None),
        (Some(other), _) => {
            return Err(format!(
                "`{other}` is not an option of this request (allow, deny)"
            ))
        }
        (None, Some(text)) if text.eq_ignore_ascii_case("allow") => ("allow", None),
        (None, Some(text)) if text.eq_ignore_ascii_case("deny") => ("deny", None),
        (None, Some(text)) => ("deny", Some(text)),
        (None, None) => return Err("the answer has neither an `option` nor a `text`".to_owned()),
    };
    let mut applied = Answer::new();
    applied.option = Some(option.to_owned());
    applied.text = guidance.map(str::to_owned);
    let decision = match (option, guidance) {
        ("allow", _) => json!({"behavior": "allow"}),
        (_, Some(guidance)) => json!({"behavior": "deny", "message": guidance}),
        _ => json!({"behavior": "deny", "message": DENIED}),
    };
    let output = json!({"hookSpecificOutput": {
        "hookEventName": "PermissionRequest",
        "decision": decision,
    }});
    Ok(Applied {
        answer: applied,
        stdout: output.to_string(),
    })
}

/// Claude Code's AskUserQuestion, asked as a `PermissionRequest` for the
/// tool (`input` is its `tool_input`): a form answer's values become the
/// tool's `answers` (keyed by question text, option labels, several
/// joined with `", "`, "Other" text as given), and the hook allows the
/// call with its input updated to carry them, the shape the vendor
/// documents for answering the tool on the person's behalf
/// (`{"behavior": "allow", "updatedInput": {"questions", "answers"}}`),
/// so its own question dialog is not shown.
pub fn questions(
    input: &Value,
    call: &claude_code::AskUserQuestion,
    answer: &Answer,
) -> Result<Applied, String> {
    let request = claude_code::request(call, "agent", Capture::Full);
    let fields = request.fields.unwrap_or_default();
    let values = form_values(&fields, answer)?;
    validate_values(&fields, &values).map_err(|e| format!("the answer breaks the form: {e}"))?;
    let mut updated = input.as_object().cloned().unwrap_or_default();
    updated.insert("answers".into(), json!(claude_code::answers(call, &values)));
    let output = json!({"hookSpecificOutput": {
        "hookEventName": "PermissionRequest",
        "decision": {"behavior": "allow", "updatedInput": updated},
    }});
    Ok(applied_values(values, output))
}

/// An MCP elicitation (Claude Code's `Elicitation` hook): a form answer's
/// values are the result's content, verbatim, accepted
/// (`{"hookSpecificOutput": {"hookEventName": "Elicitation", "action":
/// "accept", "content": ...}}`).
pub fn elicitation(elicitation: &Elicitation, answer: &Answer) -> Result<Applied, String> {
    let fields = elicitation.request.fields.as_deref().unwrap_or_default();
    let values = form_values(fields, answer)?;
    let result = elicitation
        .result(&values)
        .map_err(|e| format!("the answer breaks the form: {e}"))?;
    let output = json!({"hookSpecificOutput": {
        "hookEventName": "Elicitation",
        "action": result["action"],
        "content": result["content"],
    }});
    Ok(applied_values(values, output))
}

fn applied_values(values: Object, output: Value) -> Applied {
    let mut answer = Answer::new();
    answer.values = Some(values);
    Applied {
        answer,
        stdout: output.to_string(),
    }
}

/// A form answer's values: its `values`, or for a form of one field a
/// plain `option` or `text` read as that field's answer (AEP-0006's
/// degradation path: a select takes a choice id or a choice's label, a
/// number or boolean its text).
fn form_values(fields: &[FieldSpec], answer: &Answer) -> Result<Object, String> {
    if let Some(values) = &answer.values {
        return Ok(values.clone());
    }
    let mut answered = answered_fields(fields);
    let (Some(field), None) = (answered.next(), answered.next()) else {
        return Err("a form of several fields is answered with `values`".to_owned());
    };
    let text = answer
        .text
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let Some(given) = answer.option.as_deref().or(text) else {
        return Err("the answer has no `values`, `option` or `text`".to_owned());
    };
    let value = match field.type_ {
        FieldSpecType::Number => given
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .map(|n| match n.fract() == 0.0 && n.abs() < 9.0e15 {
                true => json!(n as i64),
                false => json!(n),
            })
            .ok_or_else(|| format!("field `{}`: expected a number", field.id))?,
        FieldSpecType::Boolean => match given.to_ascii_lowercase().as_str() {
            "true" | "yes" => json!(true),
            "false" | "no" => json!(false),
            _ => return Err(format!("field `{}`: expected true or false", field.id)),
        },
        FieldSpecType::Select => {
            let choices = field.choices.as_deref().unwrap_or_default();
            let id = choices
                .iter()
                .find(|c| c.id == given)
                .or_else(|| choices.iter().find(|c| c.label.eq_ignore_ascii_case(given)))
                .map_or(given, |c| c.id.as_str());
            match field.multi == Some(true) {
                true => json!([id]),
                false => json!(id),
            }
        }
        _ => json!(given),
    };
    let mut values = Object::new();
    values.insert(field.id.clone(), value);
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn answer(option: Option<&str>, text: Option<&str>) -> Answer {
        let mut answer = Answer::new();
        answer.option = option.map(str::to_owned);
        answer.text = text.map(str::to_owned);
        answer
    }

    fn decision(applied: &Applied) -> Value {
        let out: Value = serde_json::from_str(&applied.stdout).unwrap();
        assert_eq!(
            out["hookSpecificOutput"]["hookEventName"],
            "PermissionRequest"
        );
        out["hookSpecificOutput"]["decision"].clone()
    }

    #[test]
    fn options_are_decisions() {
        let allow = permission(&answer(Some("allow"), None)).unwrap();
        assert_eq!(decision(&allow), json!({"behavior": "allow"}));
        assert_eq!(allow.answer.option.as_deref(), Some("allow"));
        let deny = permission(&answer(Some("deny"), Some("ignored"))).unwrap();
        assert_eq!(decision(&deny)["behavior"], "deny");
        assert_eq!(deny.answer.text, None);
    }

    #[test]
    fn free_text_is_a_deny_with_guidance_unless_it_says_the_decision() {
        let guided = permission(&answer(None, Some("  use cargo nextest instead "))).unwrap();
        assert_eq!(
            decision(&guided),
            json!({"behavior": "deny", "message": "use cargo nextest instead"})
        );
        assert_eq!(guided.answer.option.as_deref(), Some("deny"));
        assert_eq!(
            guided.answer.text.as_deref(),
            Some("use cargo nextest instead")
        );
        let said = permission(&answer(None, Some("Allow"))).unwrap();
        assert_eq!(decision(&said), json!({"behavior": "allow"}));
    }

    fn ask() -> (Value, claude_code::AskUserQuestion) {
        let input = json!({"questions": [
            {"question": "Which db?", "header": "DB", "multiSelect": false,
             "options": [{"label": "Postgres"}, {"label": "SQLite"}]},
            {"question": "Which checks?", "header": "CI", "multiSelect": true,
             "options": [{"label": "fmt"}, {"label": "clippy"}, {"label": "test"}]}
        ]});
        let call = serde_json::from_value(input.clone()).unwrap();
        (input, call)
    }

    fn values(value: Value) -> Answer {
        let mut answer = Answer::new();
        answer.values = Some(value.as_object().unwrap().clone());
        answer
    }

    #[test]
    fn questions_answered_become_the_tools_answers() {
        let (input, call) = ask();
        let applied = questions(
            &input,
            &call,
            &values(json!({"1": "Use DuckDB", "2": ["1", "3"]})),
        )
        .unwrap();
        let out: Value = serde_json::from_str(&applied.stdout).unwrap();
        let decision = &out["hookSpecificOutput"]["decision"];
        assert_eq!(decision["behavior"], "allow");
        assert_eq!(decision["updatedInput"]["questions"], input["questions"]);
        assert_eq!(
            decision["updatedInput"]["answers"],
            json!({"Which db?": "Use DuckDB", "Which checks?": "fmt, test"})
        );
        assert_eq!(applied.answer.values.unwrap()["2"], json!(["1", "3"]));
        // A required question left out is refused, naming it.
        let missing = questions(&input, &call, &values(json!({"1": "2"}))).unwrap_err();
        assert!(missing.contains("`2`"), "{missing}");
        // Several questions need `values`.
        assert!(questions(&input, &call, &answer(Some("1"), None)).is_err());
    }

    #[test]
    fn one_question_takes_a_plain_option_or_text() {
        let input = json!({"questions": [{"question": "Which db?", "header": "DB",
            "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]});
        let call = serde_json::from_value(input.clone()).unwrap();
        for (option, text, expected) in [
            (Some("2"), None, "SQLite"),
            (None, Some("sqlite"), "SQLite"),
            (None, Some("whatever is fastest"), "whatever is fastest"),
        ] {
            let applied = questions(&input, &call, &answer(option, text)).unwrap();
            let out: Value = serde_json::from_str(&applied.stdout).unwrap();
            assert_eq!(
                out["hookSpecificOutput"]["decision"]["updatedInput"]["answers"]["Which db?"],
                expected
            );
        }
    }

    #[test]
    fn an_elicitation_answered_is_its_content() {
        let params = r#"{"message": "Connect", "requestedSchema": {"type": "object",
            "properties": {"host": {"type": "string"}, "port": {"type": "integer"},
            "tls": {"type": "boolean"}, "mode": {"type": "string", "enum": ["ro", "rw"]}},
            "required": ["host"]}}"#;
        let form = aep::form::mcp::map(params, "agent", Capture::Full).unwrap();
        let applied = elicitation(
            &form,
            &values(json!({"host": "db", "port": 5432, "tls": true, "mode": "ro"})),
        )
        .unwrap();
        let out: Value = serde_json::from_str(&applied.stdout).unwrap();
        assert_eq!(
            out,
            json!({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept",
                "content": {"host": "db", "port": 5432, "tls": true, "mode": "ro"}}})
        );
        // Closed selects take no free text; integers no fractions.
        assert!(elicitation(&form, &values(json!({"host": "db", "mode": "admin"}))).is_err());
        assert!(elicitation(&form, &values(json!({"host": "db", "port": 1.5}))).is_err());
    }

    #[test]
    fn answers_that_break_the_request_are_refused() {
        assert!(permission(&answer(Some("always"), None)).is_err());
        assert!(permission(&answer(None, Some("   "))).is_err());
        assert!(permission(&Answer::new()).is_err());
    }
}
