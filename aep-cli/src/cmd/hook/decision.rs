//! A person's answer to a held permission request, turned into what was
//! applied (AEP-0008: `attention.answered` records the applied option) and
//! the vendor's hook output.
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

use aep::Answer;
use serde_json::json;

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

    #[test]
    fn answers_that_break_the_request_are_refused() {
        assert!(permission(&answer(Some("always"), None)).is_err());
        assert!(permission(&answer(None, Some("   "))).is_err());
        assert!(permission(&Answer::new()).is_err());
    }
}
