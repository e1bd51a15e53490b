//! Mechanical event-type names for what a vocabulary does not map: the
//! vendor-extension fallbacks (AEP-0001 §6), which must match the envelope
//! type pattern `x.{vendor}.{segment}.{segment}…` with segments of
//! `[a-z0-9_]`.

/// `CamelCase`, `camelCase` or `kebab-case` as `snake_case`: a `_` before
/// an upper-case letter that follows a lower-case letter or a digit, or
/// that starts a word after an acronym (`ACPToolCall` → `acp_tool_call`);
/// every character outside `[a-z0-9]` becomes `_`, runs of `_` collapse,
/// and none leads or trails. Empty when nothing is left.
pub fn snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev = i.checked_sub(1).map(|j| chars[j]);
            let next = chars.get(i + 1).copied();
            let after_word = prev.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit());
            let ends_acronym = prev.is_some_and(|p| p.is_ascii_uppercase())
                && next.is_some_and(|n| n.is_ascii_lowercase());
            if after_word || ends_acronym {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else {
            out.push('_');
        }
    }
    tidy(&out)
}

/// One type segment from arbitrary text: lower-cased, every character
/// outside `[a-z0-9_]` as `_`, runs of `_` collapsed, none leading or
/// trailing. Empty when nothing is left.
pub fn segment(text: &str) -> String {
    let lowered: String = text
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '_'
            }
        })
        .collect();
    tidy(&lowered)
}

/// Collapses runs of `_` and trims them at both ends.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '_' && (out.is_empty() || out.ends_with('_')) {
            continue;
        }
        out.push(c);
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

/// The segments of `text` split at any of `separators`, each made a
/// [`segment`], empty ones dropped.
pub fn segments(text: &str, separators: &[char]) -> Vec<String> {
    text.split(|c| separators.contains(&c))
        .map(segment)
        .filter(|s| !s.is_empty())
        .collect()
}

/// `x.{vendor}.{segments…}`, with `event` appended when fewer than two
/// segments are left (the pattern wants two after the vendor token) and
/// `unknown` standing for none.
pub fn vendor_type(vendor: &str, mut parts: Vec<String>) -> String {
    parts.retain(|p| !p.is_empty());
    if parts.is_empty() {
        parts.push("unknown".to_owned());
    }
    if parts.len() == 1 {
        parts.push("event".to_owned());
    }
    format!("x.{vendor}.{}", parts.join("."))
}

/// The hook fallback of the Claude Code family:
/// `x.{vendor}.session.{snake_case(hook)}`.
pub fn session_fallback(vendor: &str, hook: &str) -> String {
    let name = snake_case(hook);
    let name = if name.is_empty() {
        "unknown".to_owned()
    } else {
        name
    };
    format!("x.{vendor}.session.{name}")
}

/// `family.leaf` from a `snake_case` name split at its last `_`
/// (`text_message_start` → `text_message.start`); a name without `_`
/// becomes `name.event`.
pub fn family_leaf(snake: &str) -> Vec<String> {
    match snake.rsplit_once('_') {
        Some((family, leaf)) if !family.is_empty() && !leaf.is_empty() => {
            vec![family.to_owned(), leaf.to_owned()]
        }
        _ => vec![snake.to_owned()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_becomes_snake_case() {
        assert_eq!(snake_case("SomeFutureHook"), "some_future_hook");
        assert_eq!(snake_case("PreCompact"), "pre_compact");
        assert_eq!(snake_case("ACPToolCallEvent"), "acp_tool_call_event");
        assert_eq!(
            snake_case("LLMCompletionLogEvent"),
            "llm_completion_log_event"
        );
        assert_eq!(snake_case("beforeModel2Go"), "before_model2_go");
        assert_eq!(snake_case("kebab-case name!"), "kebab_case_name");
        assert_eq!(snake_case("__"), "");
        assert_eq!(snake_case("Ünïcode"), "n_code");
    }

    #[test]
    fn segments_keep_to_the_type_alphabet() {
        assert_eq!(segment("Tool.Call"), "tool_call");
        assert_eq!(
            segments("fs/read_text_file", &['/', '_']),
            ["fs", "read", "text", "file"]
        );
        assert_eq!(segments("//", &['/']), Vec::<String>::new());
    }

    #[test]
    fn vendor_types_always_have_two_segments() {
        assert_eq!(
            vendor_type("acp", vec!["initialize".into()]),
            "x.acp.initialize.event"
        );
        assert_eq!(vendor_type("acp", vec![]), "x.acp.unknown.event");
        assert_eq!(
            vendor_type("agui", family_leaf("wholly_novel_signal")),
            "x.agui.wholly_novel.signal"
        );
        assert_eq!(
            session_fallback("codex", "SomeFutureHook"),
            "x.codex.session.some_future_hook"
        );
        assert_eq!(session_fallback("codex", "!!"), "x.codex.session.unknown");
    }
}
