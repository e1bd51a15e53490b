//! Turning spans into text: overlapping secrets merge into one marker, a
//! secret wins over PII and PII over a home where they meet, and the rest
//! of the line is copied as it is.

use super::scan::{Kind, Span};
use super::{HOME, PII, SECRET};

/// Writes `text` with its spans replaced to `out`. `continuing` says that
/// the previous line ended inside a secret whose marker is written
/// already; a secret at the start of this line goes on with it. Returns
/// whether this line ends inside a secret (its line break included).
pub(crate) fn paint(text: &str, spans: &[Span], continuing: bool, out: &mut String) -> bool {
    let secrets = merged(spans, Kind::Secret, true);
    let pii = subtract(&merged(spans, Kind::Pii, false), &secrets);
    let homes = subtract(&subtract(&merged(spans, Kind::Home, false), &secrets), &pii);
    let mut all: Vec<(usize, usize, Kind)> = secrets
        .iter()
        .map(|&(s, e)| (s, e, Kind::Secret))
        .chain(pii.iter().map(|&(s, e)| (s, e, Kind::Pii)))
        .chain(homes.iter().map(|&(s, e)| (s, e, Kind::Home)))
        .collect();
    all.sort_unstable_by_key(|&(start, _, _)| start);
    let mut copied = 0;
    for (start, end, kind) in all {
        out.push_str(&text[copied..start]);
        out.push_str(match kind {
            Kind::Secret if continuing && start == 0 => "",
            Kind::Secret => SECRET,
            Kind::Pii => PII,
            Kind::Home => HOME,
        });
        copied = end;
    }
    out.push_str(&text[copied..]);
    secrets.last().is_some_and(|&(_, end)| end == text.len())
}

/// The spans of one kind, sorted and merged (`touching` ones too).
fn merged(spans: &[Span], kind: Kind, touching: bool) -> Vec<(usize, usize)> {
    let mut of_kind: Vec<(usize, usize)> = spans
        .iter()
        .filter(|s| s.kind == kind)
        .map(|s| (s.start, s.end))
        .collect();
    of_kind.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(of_kind.len());
    for (start, end) in of_kind {
        match out.last_mut() {
            Some(last) if start < last.1 || (touching && start == last.1) => {
                last.1 = last.1.max(end);
            }
            _ => out.push((start, end)),
        }
    }
    out
}

/// The parts of the sorted, disjoint `spans` outside the sorted, disjoint
/// `cut`.
fn subtract(spans: &[(usize, usize)], cut: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(spans.len());
    let mut c = 0;
    for &(mut start, end) in spans {
        while c < cut.len() && cut[c].1 <= start {
            c += 1;
        }
        let mut k = c;
        while k < cut.len() && cut[k].0 < end {
            if cut[k].0 > start {
                out.push((start, cut[k].0));
            }
            start = start.max(cut[k].1);
            k += 1;
        }
        if start < end {
            out.push((start, end));
        }
    }
    out
}
