//! The replay plan: a capture turned into new sessions, without I/O.
//!
//! One rule decides everything: a re-emitter cannot carry a foreign
//! emitter's `(epoch, seq)` counter forward (AEP-0001 §7), so each
//! recorded `(source, session)` becomes a new session:
//!
//! 1. commands are dropped (a replay must never drive a live target), and
//!    agent-scoped events (liveness, no session);
//! 2. redeliveries collapse on `(source, id)`, the first kept, before any
//!    new identity is given;
//! 3. each group is put in recorded `(epoch, seq)` order (events without
//!    `seq` keep their place after the event they followed);
//! 4. each group gets a session `replay-<ulid>`, each event a fresh ULID
//!    id, one epoch (0, left implicit) and `seq` from 0 without gaps;
//!    `cause` and `subject` are rewritten through the id map (the group's
//!    first, then the capture's), and provenance rides the extension
//!    attributes `aepreplayof` (the recorded session), `aepreplayid` (the
//!    recorded id) and `aepreplaytime` (the recorded time), kept as they
//!    are when the capture is itself a replay;
//! 5. groups interleave by recorded time, each keeping its own order, and
//!    the pauses between events are the recorded ones divided by the speed,
//!    capped by the longest gap.

use std::collections::{HashMap, HashSet, VecDeque};

use aep::control::{is_command_type, Ids};
use aep::{Event, ExtensionName, ExtensionValue};

/// One event to emit, `at` milliseconds after the replay starts. Its
/// `time` is set when it leaves.
#[derive(Debug)]
pub struct Planned {
    /// When, from the start, in milliseconds.
    pub at: u64,
    /// The rewritten event.
    pub event: Event,
}

/// The plan and what it left out.
#[derive(Debug, Default)]
pub struct Plan {
    /// The events, in emission order.
    pub events: Vec<Planned>,
    /// The new sessions: (recorded source, recorded session, new session).
    pub sessions: Vec<(String, String, String)>,
    /// Commands dropped.
    pub commands: usize,
    /// Agent-scoped events dropped.
    pub sessionless: usize,
    /// Redeliveries collapsed.
    pub collapsed: usize,
}

/// The pacing: `speed` (> 0) and the longest pause.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    /// How many times faster than recorded.
    pub speed: f64,
    /// The longest pause between two events, in milliseconds.
    pub max_gap: Option<u64>,
}

/// Plans the replay of `events` (in capture order), minting ids at `now`.
pub fn plan(events: Vec<Event>, pace: Pace, now: u64) -> Plan {
    let mut plan = Plan::default();
    let mut seen = HashSet::new();
    let mut groups: Vec<((String, String), Vec<Event>)> = Vec::new();
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    for event in events {
        if is_command_type(&event.type_) {
            plan.commands += 1;
            continue;
        }
        let Some(session) = event.session.clone() else {
            plan.sessionless += 1;
            continue;
        };
        if !seen.insert((event.source.clone(), event.id.clone())) {
            plan.collapsed += 1;
            continue;
        }
        let key = (event.source.clone(), session);
        let at = *index.entry(key.clone()).or_insert_with(|| {
            groups.push((key, Vec::new()));
            groups.len() - 1
        });
        groups[at].1.push(event);
    }
    let mut ids = Ids::new();
    // The capture's id map, for references across groups.
    let mut global: HashMap<String, String> = HashMap::new();
    let mut ordered: Vec<(String, HashMap<String, String>, Vec<Event>)> = Vec::new();
    for ((source, session), group) in groups {
        let (group, _) = crate::common::order::dedupe_and_order(group);
        let new_session = format!("replay-{}", ids.next(now).to_lowercase());
        let map: HashMap<String, String> = group
            .iter()
            .map(|e| (e.id.clone(), ids.next(now)))
            .collect();
        for (old, new) in &map {
            global.entry(old.clone()).or_insert_with(|| new.clone());
        }
        plan.sessions.push((source, session, new_session.clone()));
        ordered.push((new_session, map, group));
    }
    let mut queues: Vec<VecDeque<Event>> = Vec::with_capacity(ordered.len());
    let mut seqs = vec![0u64; ordered.len()];
    for (new_session, map, group) in &ordered {
        let mut queue = VecDeque::with_capacity(group.len());
        for event in group {
            queue.push_back(rewrite(event, new_session, map, &global));
        }
        queues.push(queue);
    }
    // Interleave by recorded time; each group keeps its order.
    let recorded = |e: &Event| {
        e.extensions
            .get(&name("aepreplaytime"))
            .and_then(|v| match v {
                ExtensionValue::String(s) => parse_time(s),
                _ => None,
            })
    };
    let mut last_time: Option<i64> = None;
    let mut at = 0u64;
    loop {
        let next = queues
            .iter()
            .enumerate()
            .filter_map(|(g, q)| q.front().map(|e| (recorded(e).unwrap_or(i64::MIN), g)))
            .min();
        let Some((_, g)) = next else { break };
        let Some(mut event) = queues[g].pop_front() else {
            break;
        };
        if event.seq.is_some() {
            event.seq = Some(seqs[g]);
            seqs[g] += 1;
        }
        if let Some(time) = recorded(&event) {
            if let Some(last) = last_time {
                let gap = ((time - last).max(0) as f64 / pace.speed) as u64;
                at += pace.max_gap.map_or(gap, |max| gap.min(max));
            }
            last_time = Some(time);
        }
        plan.events.push(Planned { at, event });
    }
    plan
}

fn name(text: &str) -> ExtensionName {
    ExtensionName::new(text).expect("a valid extension name")
}

/// `event` as it is replayed in `session`; its `seq` is renumbered later.
fn rewrite(
    event: &Event,
    session: &str,
    map: &HashMap<String, String>,
    global: &HashMap<String, String>,
) -> Event {
    let mut out = event.clone();
    let through = |id: &String| {
        map.get(id)
            .or_else(|| global.get(id))
            .cloned()
            .unwrap_or_else(|| id.clone())
    };
    out.id = map
        .get(&event.id)
        .cloned()
        .unwrap_or_else(|| event.id.clone());
    out.session = Some(session.to_owned());
    out.epoch = None;
    out.cause = event.cause.as_ref().map(through);
    out.subject = event.subject.as_ref().map(through);
    let trail = [
        ("aepreplayof", event.session.clone().unwrap_or_default()),
        ("aepreplayid", event.id.clone()),
        ("aepreplaytime", event.time.clone()),
    ];
    for (key, value) in trail {
        out.extensions
            .entry(name(key))
            .or_insert(ExtensionValue::String(value));
    }
    out
}

/// Milliseconds since the Unix epoch of an RFC 3339 date-time
/// (`2026-11-30T09:00:01.5Z`, `...+02:00`), if it is one.
pub fn parse_time(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    let mut millis = 0;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let padded = format!("{:0<3}", &fraction[..digits.min(3)]);
        millis = padded.parse::<i64>().ok()?;
        rest = &fraction[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first() {
                Some(b'+') => 1,
                Some(b'-') => -1,
                _ => return None,
            };
            let (h, m) = rest.get(1..)?.split_once(':')?;
            if h.len() != 2 || m.len() != 2 {
                return None;
            }
            sign * (h.parse::<i64>().ok()? * 60 + m.parse::<i64>().ok()?)
        }
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset * 60;
    Some(seconds * 1000 + millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_with_fractions_and_offsets() {
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_time("1970-01-01T00:00:01.5Z"), Some(1500));
        assert_eq!(parse_time("2026-11-30T09:00:00Z"), Some(1_796_029_200_000));
        assert_eq!(
            parse_time("2026-11-30T11:00:00+02:00"),
            Some(1_796_029_200_000)
        );
        assert_eq!(
            parse_time("2000-03-01T00:00:00.123456Z"),
            Some(951_868_800_123)
        );
        for bad in [
            "",
            "yesterday",
            "2026-11-30 09:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-11-30T09:00:00",
            "2026-11-30T09:00:00.Z",
        ] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }
}
