//! The values the operator lists as secret (AEP-0003 §9.4(b)): literals,
//! found wherever they are, the longest first where two start at the same
//! place. A value may hold line breaks (a key read from a file); a stream
//! then holds back the few lines such a value could still complete.

use regex::Regex;

/// The compiled values.
#[derive(Debug, Clone)]
pub(crate) struct Operator {
    values: Regex,
    /// The values that hold a line break: their prefixes up to each break
    /// are what a stream must wait on.
    multiline: Vec<String>,
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
            multiline: values
                .iter()
                .filter(|v| v.contains('\n'))
                .map(|v| (*v).to_owned())
                .collect(),
        })
    }

    /// Whether a value holds a line break.
    pub fn spans_lines(&self) -> bool {
        !self.multiline.is_empty()
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

    /// The positions where the rest of `text` (which ends with a line
    /// break) begins a value that more text could complete, in order.
    pub fn open_positions(&self, text: &str, work: &mut u64) -> Vec<usize> {
        let mut open = Vec::new();
        for value in &self.multiline {
            for (i, _) in value.match_indices('\n') {
                let prefix = &value[..=i];
                *work += prefix.len() as u64;
                if prefix.len() < value.len() && text.ends_with(prefix) {
                    open.push(text.len() - prefix.len());
                }
            }
        }
        open.sort_unstable();
        open.dedup();
        open
    }
}
