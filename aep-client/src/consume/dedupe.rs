//! Dedupe on `(source, id)` (AEP-0001 §7.4) in bounded memory: each key
//! is kept as a 128-bit keyed hash (16 bytes, whatever the ids' length),
//! the oldest forgotten first past the capacity.

use std::collections::hash_map::RandomState;
use std::collections::{HashSet, VecDeque};
use std::hash::BuildHasher;

#[derive(Debug)]
pub(crate) struct Dedupe {
    seen: HashSet<u128>,
    order: VecDeque<u128>,
    capacity: usize,
    keys: (RandomState, RandomState),
}

impl Dedupe {
    pub fn new(capacity: usize) -> Dedupe {
        Dedupe {
            seen: HashSet::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
            keys: (RandomState::new(), RandomState::new()),
        }
    }

    fn key(&self, source: &str, id: &str) -> u128 {
        let half = |state: &RandomState| state.hash_one((source, id));
        (u128::from(half(&self.keys.0)) << 64) | u128::from(half(&self.keys.1))
    }

    /// Whether `(source, id)` was seen; remembers it when not.
    pub fn seen(&mut self, source: &str, id: &str) -> bool {
        let key = self.key(source, id);
        if !self.seen.insert(key) {
            return true;
        }
        self.order.push_back(key);
        while self.order.len() > self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.seen.remove(&old);
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_pairs_within_capacity() {
        let mut d = Dedupe::new(2);
        assert!(!d.seen("s", "1"));
        assert!(d.seen("s", "1"));
        assert!(!d.seen("t", "1"), "the key is the pair");
        assert!(!d.seen("s", "2"));
        // "s"/"1" was the oldest and is forgotten.
        assert!(!d.seen("s", "1"));
    }
}
