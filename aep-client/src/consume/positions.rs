//! Per-session resume positions (AEP-0003 §7): the last `(epoch, seq)`
//! the caller processed in each session, in a bounded map that knows
//! which sessions moved most recently (they ride the live request when
//! the set is larger than the budget).

use std::collections::{BTreeMap, HashMap};

/// A resume position: the last event processed in a session.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Position {
    /// The session.
    pub session: String,
    /// Its epoch.
    pub epoch: u64,
    /// The `seq` of the last event processed in that epoch.
    pub seq: u64,
}

impl Position {
    /// A position.
    pub fn new(session: impl Into<String>, epoch: u64, seq: u64) -> Position {
        Position {
            session: session.into(),
            epoch,
            seq,
        }
    }

    /// The `{session, epoch, seq}` object of a `from` array.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"session": self.session, "epoch": self.epoch, "seq": self.seq})
    }

    /// A position read from a `{session, epoch, seq}` object.
    pub fn from_json(value: &serde_json::Value) -> Option<Position> {
        Some(Position {
            session: value
                .get("session")?
                .as_str()
                .filter(|s| !s.is_empty())?
                .to_owned(),
            epoch: value
                .get("epoch")
                .map_or(Some(0), serde_json::Value::as_u64)?,
            seq: value.get("seq")?.as_u64()?,
        })
    }
}

/// The positions of many sessions, at most `capacity` of them: past it,
/// the session that moved least recently is forgotten (and returned, so
/// the caller can say so).
#[derive(Debug, Clone)]
pub(crate) struct Positions {
    by_session: HashMap<String, (u64, u64, u64)>,
    /// tick → session, oldest first.
    recency: BTreeMap<u64, String>,
    tick: u64,
    capacity: usize,
}

impl Positions {
    pub fn new(capacity: usize) -> Positions {
        Positions {
            by_session: HashMap::new(),
            recency: BTreeMap::new(),
            tick: 0,
            capacity: capacity.max(1),
        }
    }

    /// Moves `session` forward to `(epoch, seq)`; a position at or below
    /// the held one changes nothing (redelivery, backfill). Returns a
    /// position forgotten to make room.
    pub fn advance(&mut self, session: &str, epoch: u64, seq: u64) -> Option<Position> {
        self.tick += 1;
        let tick = self.tick;
        if let Some(held) = self.by_session.get_mut(session) {
            if (epoch, seq) > (held.0, held.1) {
                self.recency.remove(&held.2);
                *held = (epoch, seq, tick);
                self.recency.insert(tick, session.to_owned());
            }
            return None;
        }
        let mut forgotten = None;
        if self.by_session.len() >= self.capacity {
            if let Some((_, oldest)) = self.recency.pop_first() {
                if let Some((e, s, _)) = self.by_session.remove(&oldest) {
                    forgotten = Some(Position::new(oldest, e, s));
                }
            }
        }
        self.by_session
            .insert(session.to_owned(), (epoch, seq, tick));
        self.recency.insert(tick, session.to_owned());
        forgotten
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.by_session.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_session.is_empty()
    }

    /// Every position, least recently moved first.
    pub fn all(&self) -> Vec<Position> {
        self.recency
            .values()
            .filter_map(|s| {
                let (e, q, _) = self.by_session.get(s)?;
                Some(Position::new(s.clone(), *e, *q))
            })
            .collect()
    }

    /// The `budget` most recently moved positions (for the live request)
    /// and the rest (for history reads).
    pub fn split(&self, budget: usize) -> (Vec<Position>, Vec<Position>) {
        let mut all = self.all();
        let rest_len = all.len().saturating_sub(budget);
        let head = all.split_off(rest_len);
        (head, all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_moves_forward_and_splits_by_recency() {
        let mut p = Positions::new(3);
        p.advance("a", 0, 5);
        p.advance("b", 1, 0);
        p.advance("a", 0, 4); // redelivery: no change
        p.advance("c", 0, 1);
        assert_eq!(p.all()[0], Position::new("a", 0, 5));
        p.advance("a", 0, 6); // a is now the most recent
        let (head, rest) = p.split(2);
        assert_eq!(head, [Position::new("c", 0, 1), Position::new("a", 0, 6)]);
        assert_eq!(rest, [Position::new("b", 1, 0)]);
        // Full: the least recently moved goes, and is returned.
        assert_eq!(p.advance("d", 0, 0), Some(Position::new("b", 1, 0)));
        assert_eq!(p.len(), 3);
        assert_eq!(p.split(0).1.len(), 3);
    }
}
