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
            Test::Pattern(p) => format!("`{member}` matches `{p}`"),
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
