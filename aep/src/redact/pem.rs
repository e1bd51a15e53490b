//! PEM blocks: from `-----BEGIN <LABEL>-----` to the next
//! `-----END <LABEL>-----`, or to the end of the text when none follows (a
//! key cut short is still key material).

use regex::Regex;

use super::heads::{Head, HeadKind};
use super::scan::{Kind, Scan};

/// The END marker (the BEGIN marker is a head).
#[derive(Debug, Clone)]
pub(crate) struct Pem {
    end: Regex,
}

impl Pem {
    pub fn new() -> Self {
        Pem {
            end: Regex::new(r"-----END [A-Z0-9 ]+-----").expect("the marker compiles"),
        }
    }

    /// Marks the blocks of the line, `open` when it starts inside one;
    /// returns whether it ends inside one. Each search for an END marker
    /// starts where the last one stopped: one pass over the line, however
    /// many markers.
    pub fn scan(&self, scan: &mut Scan<'_>, open: bool, heads: &[Head]) -> bool {
        let mut from = 0;
        if open {
            let Some(end) = scan.find(&self.end, 0) else {
                scan.push(0, scan.len(), Kind::Secret);
                return true;
            };
            scan.push(0, end.end(), Kind::Secret);
            from = end.end();
        }
        for begin in heads.iter().filter(|h| h.kind == HeadKind::Begin) {
            if begin.start < from {
                continue;
            }
            let Some(end) = scan.find(&self.end, begin.end) else {
                scan.push(begin.start, scan.len(), Kind::Secret);
                return true;
            };
            scan.push(begin.start, end.end(), Kind::Secret);
            from = end.end();
        }
        false
    }
}
