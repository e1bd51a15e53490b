//! Documentation: doc attributes, and the schemas' rules in words (for
//! docs and for violation messages alike).

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use crate::ir::{Assertion, Conditional, Test};

/// Doc attributes, one paragraph each.
pub(crate) fn docs(paragraphs: &[String]) -> TokenStream {
    let mut out = TokenStream::new();
    for (i, paragraph) in paragraphs.iter().enumerate() {
        if i > 0 {
            out.extend(doc_attr(""));
        }
        out.extend(doc_attr(
            &paragraph.split_whitespace().collect::<Vec<_>>().join(" "),
        ));
    }
    out
}

fn doc_attr(text: &str) -> TokenStream {
    let line = doc_line(text);
    quote!(#[doc = #line])
}

/// A doc line as prettyplease prints it after `///`.
pub(crate) fn doc_line(text: &str) -> Literal {
    if text.is_empty() {
        Literal::string("")
    } else {
        Literal::string(&format!(" {text}"))
    }
}

/// A rule in words, for documentation (its condition worded as the
/// violations word it).
pub fn describe_rule(rule: &Conditional) -> String {
    let when = describe_predicate(rule);
    let mut text = format!("when {when}, {}", describe_assertion(&rule.then));
    if let Some(otherwise) = &rule.otherwise {
        text.push_str(&format!("; otherwise {}", describe_assertion(otherwise)));
    }
    text
}

fn describe_assertion(a: &Assertion) -> String {
    let mut parts = Vec::new();
    if !a.required.is_empty() {
        parts.push(format!("{} must be present", list(&a.required)));
    }
    if !a.forbidden.is_empty() {
        parts.push(format!("{} must be absent", list(&a.forbidden)));
    }
    if let Some(nested) = &a.nested {
        parts.push(describe_rule(nested));
    }
    if parts.is_empty() {
        "nothing more is required".to_owned()
    } else {
        parts.join(", and ")
    }
}

fn list(members: &[String]) -> String {
    members
        .iter()
        .map(|m| format!("`{m}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `if` of a rule in words.
pub fn describe_predicate(rule: &Conditional) -> String {
    let mut parts: Vec<String> = rule
        .when
        .tests
        .iter()
        .map(|(member, test)| match test {
            Test::Const(c) => format!("`{member}` is \"{c}\""),
            Test::Pattern(p) => match pattern_in_words(p) {
                Some(words) => format!("`{member}` {words}"),
                None => format!("`{member}` matches `{p}`"),
            },
        })
        .collect();
    let tested = |m: &String| rule.when.tests.iter().any(|(t, _)| t == m);
    parts.extend(
        rule.when
            .required
            .iter()
            .filter(|m| !tested(m))
            .map(|m| format!("`{m}` is present")),
    );
    parts.join(" and ")
}

/// A pattern of the simple kinds rules use, in words: `^lit` is "starts
/// with `lit`", `^(a|b)$` is "is a or b"; a character class or `.` with
/// `+` or `*` reads as `*`. `None` for anything else.
fn pattern_in_words(pattern: &str) -> Option<String> {
    let body = pattern.strip_prefix('^')?;
    match body.strip_suffix('$') {
        Some(whole) => {
            let inner = whole
                .strip_prefix('(')
                .and_then(|w| w.strip_suffix(')'))
                .unwrap_or(whole);
            let alternatives = inner
                .split('|')
                .map(literal_in_words)
                .collect::<Option<Vec<_>>>()?;
            Some(match alternatives.split_last()? {
                (last, []) => format!("is `{last}`"),
                (last, rest) => format!("is one of {} or {last}", rest.join(", ")),
            })
        }
        None => Some(format!("starts with `{}`", literal_in_words(body)?)),
    }
}

/// A regular expression made of literal characters, escapes and
/// repeated classes (read as `*`), in words; `None` for anything else.
fn literal_in_words(regex: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = regex.chars().peekable();
    while let Some(c) = chars.next() {
        let repeated = match c {
            '\\' => {
                let escaped = chars.next().filter(|e| e.is_ascii_punctuation())?;
                out.push(escaped);
                continue;
            }
            '[' => {
                chars.by_ref().find(|&c| c == ']')?;
                true
            }
            '.' => true,
            c if c.is_alphanumeric() || "_-:/@".contains(c) => {
                out.push(c);
                continue;
            }
            _ => return None,
        };
        if repeated && matches!(chars.next(), Some('+' | '*')) {
            out.push('*');
        } else {
            return None;
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::pattern_in_words;

    #[test]
    fn simple_patterns_read_as_words() {
        assert_eq!(
            pattern_in_words(r"^agent\.").as_deref(),
            Some("starts with `agent.`")
        );
        assert_eq!(
            pattern_in_words(r"^(control\.cancel|x\.[a-z0-9_-]+\.control\..+|attention\.routed)$")
                .as_deref(),
            Some("is one of control.cancel, x.*.control.* or attention.routed")
        );
        assert_eq!(pattern_in_words(r"^a\.b$").as_deref(), Some("is `a.b`"));
        for other in [r"^a{2}$", r"a\.b", r"^(a|b?)$", r"^a\d+$", r"^$"] {
            assert_eq!(pattern_in_words(other), None, "{other}");
        }
    }
}
