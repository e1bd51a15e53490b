//! Event text on a terminal: every control character escaped.
//!
//! An event is producer-controlled input (AEP-0003 §9 rule 6): a session
//! id, a prompt or a label may hold an ESC that clears the screen, moves
//! the cursor over earlier output or retitles the window, a carriage
//! return that overwrites a line, or a bidirectional override that shows
//! text in another order than it has. Whatever a command prints as text
//! (findings, diagnostics, prompts) goes through [`escape`]; JSON output
//! is escaped by its encoder and stays JSON.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether line ends are kept or escaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Newlines {
    /// `\n` stays a line end (a diagnostic of several lines).
    Keep,
    /// `\n` is escaped too: the text stays on one line.
    Escape,
}

/// `text` with every control character written as an escape: `\n`, `\r`
/// and `\t` by name, the other C0 controls and DEL as `\x1b`, C1 controls
/// and the bidirectional marks, embeddings, overrides and isolates as
/// `\u{202e}`. Everything else, backslashes included, is left as it is.
pub fn escape(text: &str, newlines: Newlines) -> Cow<'_, str> {
    let needs = |c: char| is_control(c) && !(c == '\n' && newlines == Newlines::Keep);
    if !text.chars().any(needs) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !needs(c) {
            out.push(c);
            continue;
        }
        // Writing to a String cannot fail.
        let _ = match c {
            '\n' => out.write_str("\\n"),
            '\r' => out.write_str("\\r"),
            '\t' => out.write_str("\\t"),
            c if (c as u32) < 0x80 => write!(out, "\\x{:02x}", c as u32),
            c => write!(out, "\\u{{{:x}}}", c as u32),
        };
    }
    Cow::Owned(out)
}

/// C0, DEL, C1, and the Unicode bidirectional formatting characters.
fn is_control(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_text_is_not() {
        let hostile = "s\u{1b}[2J\u{1b}]0;owned\u{7}\r\tx\u{7f}\u{9b}31m\u{202e}cba";
        assert_eq!(
            escape(hostile, Newlines::Escape),
            "s\\x1b[2J\\x1b]0;owned\\x07\\r\\tx\\x7f\\u{9b}31m\\u{202e}cba"
        );
        assert_eq!(escape("a\nb", Newlines::Escape), "a\\nb");
        assert_eq!(escape("a\nb\u{1b}", Newlines::Keep), "a\nb\\x1b");
        let plain = "ünïcode, emoji 🎉, a \\ backslash";
        assert!(matches!(escape(plain, Newlines::Escape), Cow::Borrowed(_)));
    }
}
