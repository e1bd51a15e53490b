//! Schema names to Rust names, through `heck`.

use heck::{ToSnakeCase, ToUpperCamelCase};

/// Words that cannot be plain identifiers (strict and reserved keywords).
const KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
    "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "Self", "static", "struct", "super", "trait", "true", "try", "type",
    "typeof", "union", "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// A field or module name: `snake_case`, `_` before a leading digit, `_`
/// after a keyword, `field` for a name with no letters or digits.
pub fn field(name: &str) -> String {
    let snake = name.to_snake_case();
    fix(snake, "field", "_")
}

/// A type or variant name: `UpperCamelCase`, `V` before a leading digit,
/// `_` after a keyword, `Empty` for a name with no letters or digits.
pub fn type_name(name: &str) -> String {
    let camel = name.to_upper_camel_case();
    fix(camel, "Empty", "V")
}

fn fix(name: String, empty: &str, digit_prefix: &str) -> String {
    let name: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if name.is_empty() || name.chars().all(|c| c == '_') {
        empty.to_owned()
    } else if name.starts_with(|c: char| c.is_ascii_digit()) {
        format!("{digit_prefix}{name}")
    } else if KEYWORDS.contains(&name.as_str()) {
        format!("{name}_")
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_become_identifiers() {
        assert_eq!(field("call_id"), "call_id");
        assert_eq!(field("type"), "type_");
        assert_eq!(
            field("gen_ai.usage.input_tokens"),
            "gen_ai_usage_input_tokens"
        );
        assert_eq!(field("2fa-code"), "_2fa_code");
        assert_eq!(field("content-type"), "content_type");
        assert_eq!(field("with space"), "with_space");
        assert_eq!(field("$$"), "field");
        assert_eq!(field("self"), "self_");
    }

    #[test]
    fn types_become_identifiers() {
        assert_eq!(type_name("tool.requested"), "ToolRequested");
        assert_eq!(type_name("user_setting"), "UserSetting");
        assert_eq!(type_name("0.1"), "V01");
        assert_eq!(type_name(""), "Empty");
        assert_eq!(type_name("self"), "Self_");
    }
}
