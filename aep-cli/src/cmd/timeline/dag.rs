//! The `cause` tree of a session's events, drawn in ASCII: each event
//! under the event its `cause` names, children in timeline order. Causes
//! are producer-controlled: a cause that names no event of the history, or
//! itself, makes a root; a cycle is broken at its first event in timeline
//! order; deep chains are drawn without growing the indent past a bound.

use std::collections::HashMap;

use aep::Event;

/// Past this depth the indent stops growing.
const MAX_INDENT: usize = 24;

/// The lines of the tree of `events` (in timeline order).
pub fn draw(events: &[Event], colour: bool) -> Vec<String> {
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    for (i, event) in events.iter().enumerate() {
        by_id.entry(event.id.as_str()).or_insert(i);
    }
    let parent: Vec<Option<usize>> = events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            e.cause
                .as_deref()
                .and_then(|cause| by_id.get(cause).copied())
                .filter(|&p| p != i)
        })
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); events.len()];
    for (i, p) in parent.iter().enumerate() {
        if let Some(p) = p {
            children[*p].push(i);
        }
    }
    let mut visited = vec![false; events.len()];
    let mut lines = Vec::with_capacity(events.len());
    // Roots first, in order; then whatever a cycle kept unreachable.
    let roots = (0..events.len()).filter(|&i| parent[i].is_none());
    let rest: Vec<usize> = (0..events.len()).collect();
    for root in roots.chain(rest) {
        if visited[root] {
            continue;
        }
        // (event, depth, prefix, last among its siblings)
        let mut stack = vec![(root, 0usize, String::new(), true)];
        while let Some((i, depth, prefix, last)) = stack.pop() {
            if visited[i] {
                continue;
            }
            visited[i] = true;
            let text = crate::common::render::line(&events[i], colour);
            let (line, child_prefix) = if depth == 0 {
                (text, String::new())
            } else if depth > MAX_INDENT {
                (
                    format!("{prefix}... (depth {depth}) {text}"),
                    prefix.clone(),
                )
            } else {
                let branch = if last { "`-- " } else { "|-- " };
                let more = if last { "    " } else { "|   " };
                (format!("{prefix}{branch}{text}"), format!("{prefix}{more}"))
            };
            lines.push(line);
            let kids: Vec<usize> = children[i]
                .iter()
                .copied()
                .filter(|&c| !visited[c])
                .collect();
            for (n, &child) in kids.iter().enumerate().rev() {
                stack.push((child, depth + 1, child_prefix.clone(), n + 1 == kids.len()));
            }
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: &str, seq: u64, cause: Option<&str>) -> Event {
        let mut e = Event::new(
            id,
            format!("x.t.{id}"),
            "2026-01-01T10:00:00Z",
            "urn:a",
            "a",
        );
        e.session = Some("s".into());
        e.seq = Some(seq);
        e.cause = cause.map(str::to_owned);
        e
    }

    #[test]
    fn children_hang_under_their_cause_and_cycles_end() {
        let events = vec![
            event("req", 1, None),
            event("ans", 2, Some("req")),
            event("other", 3, Some("elsewhere")),
            event("res", 4, Some("req")),
            event("x", 5, Some("y")),
            event("y", 6, Some("x")),
            event("self", 7, Some("self")),
        ];
        let lines: Vec<String> = draw(&events, false)
            .iter()
            .map(|l| l.replace("10:00:00  s  x.t.", ""))
            .collect();
        assert_eq!(
            lines,
            ["req", "|-- ans", "`-- res", "other", "self", "x", "`-- y"],
            "a cause not in the history and a cause naming itself make roots; a cycle is cut at its first event"
        );
    }

    #[test]
    fn a_long_chain_does_not_grow_the_indent_without_bound() {
        let mut events = vec![event("e0", 0, None)];
        for i in 1..200 {
            events.push(event(&format!("e{i}"), i, Some(&format!("e{}", i - 1))));
        }
        let lines = draw(&events, false);
        assert_eq!(lines.len(), 200);
        assert!(lines.iter().all(|l| l.len() < 4 * MAX_INDENT + 200));
        assert!(lines[199].contains("(depth 199)"));
    }
}
