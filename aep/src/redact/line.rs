//! One line through every rule: what it carries in, the spans it gets,
//! what it carries out.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::carry::Carry;
use super::heads::{Head, HeadKind, Heads};
use super::homes::Homes;
use super::pem::Pem;
use super::scan::{Kind, Scan};
use super::PII;
use super::{assign, bearer, pii, shapes};

/// Every rule but the operator's values, compiled.
#[derive(Debug, Clone)]
pub(crate) struct Rules {
    heads: Heads,
    pem: Pem,
    homes: Homes,
    pii: bool,
}

impl Rules {
    pub fn new(home: Option<String>, pii: bool) -> Self {
        Rules {
            heads: Heads::new(
                assign::NAMES,
                assign::FLAGS,
                &shapes::prefixes(),
                pii.then_some(pii::PHONE),
            ),
            pem: Pem::new(),
            homes: Homes::new(home.as_deref()),
            pii,
        }
    }

    /// Finds the spans of the line in `scan` (the operator's values,
    /// `operator`, among them) and returns what the line carries out.
    ///
    /// Markers already in the text come first: no rule may cut into one.
    /// Secrets next; a secret rule whose prefix is glued to a word before
    /// it is decided last, when it is known whether that word is a secret
    /// (then the prefix follows a marker, as it will on a second pass).
    /// PII and homes come after, so that they can treat a neighbour that
    /// is redacted as the marker it becomes, and ignore what starts inside
    /// a secret (`user:pw@host` holds no email).
    pub fn scan_line(
        &self,
        scan: &mut Scan<'_>,
        carry: Carry,
        operator: &[(usize, usize)],
    ) -> Carry {
        let mut heads = Vec::new();
        self.heads.find(scan, &mut heads);
        if heads.is_empty() && carry == Carry::default() && operator.is_empty() {
            // Nothing starts in this line and nothing goes on into it: only
            // the configured home directory can be in it.
            self.homes.scan(scan, &heads, &Cover::default());
            return Carry::default();
        }
        let mut owes = 0;
        markers(scan, &heads);
        let pem = self.pem.scan(scan, carry.pem, &heads);
        for &(start, end) in operator {
            scan.push(start, end, Kind::Secret);
        }
        assign::scan(scan, &heads, carry.owed, &mut owes);
        let mut deferred = Vec::new();
        bearer::scan(scan, &heads, carry.owed, &mut owes, &mut deferred);
        shapes::scan(scan, &heads, &mut deferred);
        resolve(scan, deferred, &mut owes);
        if self.pii {
            pii::scan(scan, &heads, &Cover::of(scan, &[Kind::Secret]));
        }
        let redacted = Cover::of(scan, &[Kind::Secret, Kind::Pii]);
        self.homes.scan(scan, &heads, &redacted);
        Carry { pem, owed: owes }
    }
}

/// The markers of an earlier redaction, as spans of their kind.
fn markers(scan: &mut Scan<'_>, heads: &[Head]) {
    for head in heads.iter().filter(|h| h.kind == HeadKind::Marker) {
        let kind = if &scan.text[head.start..head.end] == PII {
            Kind::Pii
        } else {
            Kind::Secret
        };
        scan.push(head.start, head.end, kind);
    }
}

/// A secret candidate glued to the word before it: taken when that word
/// is part of a secret.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deferred {
    /// Where the candidate starts; the character before it is the glue.
    pub at: usize,
    /// The span it redacts.
    pub span: Option<(usize, usize)>,
    /// What it leaves owed to the next line.
    pub owes: u8,
}

impl Deferred {
    pub fn apply(self, scan: &mut Scan<'_>, owes: &mut u8) {
        if let Some((start, end)) = self.span {
            scan.push(start, end, Kind::Secret);
        }
        *owes |= self.owes;
    }
}

/// Takes the deferred candidates whose glue is inside a secret, in order,
/// so that a chain of glued secrets goes whole.
fn resolve(scan: &mut Scan<'_>, mut deferred: Vec<Deferred>, owes: &mut u8) {
    if deferred.is_empty() {
        return;
    }
    deferred.sort_by_key(|d| d.at);
    let mut secrets: Vec<(usize, usize)> = scan
        .spans
        .iter()
        .filter(|s| s.kind == Kind::Secret)
        .map(|s| (s.start, s.end))
        .collect();
    secrets.sort_unstable();
    let mut taken = BinaryHeap::new();
    let (mut next, mut reach) = (0, 0);
    for candidate in deferred {
        let glue = candidate.at - 1;
        while next < secrets.len() && secrets[next].0 <= glue {
            reach = reach.max(secrets[next].1);
            next += 1;
        }
        while let Some(&Reverse((start, end))) = taken.peek() {
            if start > glue {
                break;
            }
            reach = reach.max(end);
            taken.pop();
        }
        scan.work += 1;
        if reach > glue {
            if let Some(span) = candidate.span {
                taken.push(Reverse(span));
            }
            candidate.apply(scan, owes);
        }
    }
}

/// Spans of a line, merged: which positions a marker replaces.
#[derive(Debug, Default)]
pub(crate) struct Cover {
    spans: Vec<(usize, usize)>,
}

impl Cover {
    /// The spans of `scan` of the given kinds.
    fn of(scan: &Scan<'_>, kinds: &[Kind]) -> Cover {
        let mut spans: Vec<(usize, usize)> = scan
            .spans
            .iter()
            .filter(|s| kinds.contains(&s.kind))
            .map(|s| (s.start, s.end))
            .collect();
        spans.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
        for (start, end) in spans {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        Cover { spans: merged }
    }

    /// Whether the byte at `at` is covered.
    pub fn contains(&self, at: usize) -> bool {
        let i = self.spans.partition_point(|&(start, _)| start <= at);
        i > 0 && self.spans[i - 1].1 > at
    }

    /// The end of the last span that starts before `at`, if any.
    pub fn last_end_before(&self, at: usize) -> Option<usize> {
        let i = self.spans.partition_point(|&(start, _)| start < at);
        (i > 0).then(|| self.spans[i - 1].1)
    }
}
