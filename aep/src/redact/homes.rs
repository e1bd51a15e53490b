//! Home directories (AEP-0003 §9.4(c)): the configured one, and every
//! `/home/<user>`, `/Users/<user>` and `C:\Users\<user>` prefix, become `~`.

use regex::Regex;

use super::heads::{Head, HeadKind};
use super::line::Cover;
use super::scan::{Kind, Scan};

/// The home rules: the configured home directory (without a trailing
/// separator), as a literal, and the prefixes, which are heads.
#[derive(Debug, Clone)]
pub(crate) struct Homes {
    home: Option<Regex>,
}

impl Homes {
    pub fn new(home: Option<&str>) -> Self {
        Homes {
            home: home.map(|h| Regex::new(&regex::escape(h)).expect("a literal compiles")),
        }
    }

    /// Marks the home directories of the line. A neighbour that is
    /// redacted counts as the marker that replaces it; what starts inside
    /// one is none.
    pub fn scan(&self, scan: &mut Scan<'_>, heads: &[Head], redacted: &Cover) {
        if let Some(home) = &self.home {
            let mut from = 0;
            while let Some(found) = scan.find(home, from) {
                let (start, end) = (found.start(), found.end());
                // A longer name is someone else's directory (`/srv/adam`).
                let longer = scan.char_at(end).is_some_and(is_path_char) && !redacted.contains(end);
                if longer || redacted.contains(start) {
                    from = scan.next_boundary(start);
                } else {
                    scan.push(start, end, Kind::Home);
                    from = end;
                }
            }
        }
        let mut from = 0;
        for prefix in heads.iter().filter(|h| h.kind == HeadKind::Home) {
            let start = prefix.start;
            if start < from {
                continue;
            }
            let glued = scan
                .char_before(start)
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
                && !redacted.contains(start - 1);
            if glued || redacted.contains(start) {
                continue;
            }
            let separator = if scan.byte(start) == Some(b'/') {
                '/'
            } else {
                '\\'
            };
            let mut end = prefix.end;
            for c in scan.text[end..].chars() {
                scan.work += 1;
                if c.is_whitespace()
                    || c == separator
                    || matches!(
                        c,
                        '"' | '\'' | '`' | '<' | '>' | '|' | ':' | ';' | ',' | ')' | ']' | '}'
                    )
                {
                    break;
                }
                end += c.len_utf8();
            }
            if end > prefix.end {
                scan.push(start, end, Kind::Home);
                from = end;
            }
        }
    }
}

fn is_path_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.')
}
