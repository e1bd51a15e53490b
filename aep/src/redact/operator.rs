//! The values the operator lists as secret (AEP-0003 §9.4(b)): literals,
//! found wherever they are, the longest first where two start at the same
//! place. A value may hold line breaks (a key read from a file).

use regex::Regex;

/// The compiled values.
#[derive(Debug, Clone)]
pub(crate) struct Operator {
    values: Regex,
}

impl Operator {
    /// The values, empty ones dropped; `None` when none is left.
    pub fn new(values: &[String]) -> Option<Operator> {
        let mut values: Vec<&str> = values
            .iter()
            .map(String::as_str)
            .filter(|v| !v.is_empty())
            .collect();
        if values.is_empty() {
            return None;
        }
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        let alternation: Vec<String> = values.iter().map(|v| regex::escape(v)).collect();
        Some(Operator {
            values: Regex::new(&alternation.join("|")).expect("escaped literals compile"),
        })
    }

    /// The leftmost value at or after `from`.
    pub fn find(&self, text: &str, from: usize, work: &mut u64) -> Option<(usize, usize)> {
        let found = self.values.find_at(text, from);
        *work += (found.map_or(text.len(), |m| m.end()) - from) as u64 + 1;
        found.map(|m| (m.start(), m.end()))
    }

    /// Every value in `text`, left to right, none overlapping.
    pub fn find_all(&self, text: &str, work: &mut u64) -> Vec<(usize, usize)> {
        let mut found = Vec::new();
        let mut from = 0;
        while from <= text.len() {
            let Some((start, end)) = self.find(text, from, work) else {
                break;
            };
            found.push((start, end));
            from = end;
        }
        found
    }
}
