//! A session's events in protocol order: deduplicated on `(source, id)`
//! (the first delivery kept, AEP-0001 §7.4) and ordered by
//! `(epoch, seq)`; an event without `seq` (a command, a foreign emitter's
//! event) keeps its arrival place after the positioned event it followed.

use std::collections::HashSet;

use aep::Event;

/// `events` (in arrival order) deduplicated and ordered; returns them and
/// how many redeliveries were dropped.
pub fn dedupe_and_order(events: Vec<Event>) -> (Vec<Event>, usize) {
    let mut seen = HashSet::new();
    let before = events.len();
    let mut kept: Vec<Event> = events
        .into_iter()
        .filter(|e| seen.insert((e.source.clone(), e.id.clone())))
        .collect();
    let dropped = before - kept.len();
    let mut last = (0, 0, 0u8);
    let mut keys = Vec::with_capacity(kept.len());
    for (arrival, event) in kept.iter().enumerate() {
        let key = match event.seq {
            Some(seq) => {
                last = (event.epoch_or_default(), seq, 1);
                (event.epoch_or_default(), seq, 0u8, arrival)
            }
            None => (last.0, last.1, last.2, arrival),
        };
        keys.push(key);
    }
    let mut order: Vec<usize> = (0..kept.len()).collect();
    order.sort_by_key(|&i| keys[i]);
    let mut slots: Vec<Option<Event>> = kept.drain(..).map(Some).collect();
    let ordered = order.into_iter().filter_map(|i| slots[i].take()).collect();
    (ordered, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: &str, epoch: Option<u64>, seq: Option<u64>) -> Event {
        let mut e = Event::new(id, "x.t.e", "2026-01-01T00:00:00Z", "urn:a", "a");
        e.session = Some("s".into());
        e.epoch = epoch;
        e.seq = seq;
        e
    }

    #[test]
    fn ordered_by_epoch_and_seq_with_seqless_events_kept_in_place() {
        let events = vec![
            event("b", None, Some(2)),
            event("a", None, Some(1)),
            event("cmd", None, None),
            event("c", Some(1), Some(0)),
            event("b", None, Some(2)),
            event("d", None, Some(3)),
        ];
        let (ordered, dropped) = dedupe_and_order(events);
        let ids: Vec<_> = ordered.iter().map(|e| e.id.as_str()).collect();
        // `cmd` arrived after `a` (seq 1): it stays right after it.
        assert_eq!(ids, ["a", "cmd", "b", "d", "c"]);
        assert_eq!(dropped, 1);
    }
}
