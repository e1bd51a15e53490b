//! Byte budgets: what queues hold, per queue and across the relay.
//!
//! A [`Budget`] counts bytes and bounds them. Bytes are charged as a
//! [`Charge`] travels into a queue with what it stands for, and given
//! back when the charge is dropped: when the item is taken from the
//! queue, or when the queue goes away with it. The charge is the one
//! place that adds and subtracts, so a budget cannot drift.
//!
//! Items that many queues share (an event delivered to every consumer
//! whose filter it passes) are counted in the relay's budget for all
//! queues once, however many queues hold them: a [`Share`] of the item
//! counts it when it is the first, and gives it back when the last is
//! dropped, so that budget is the memory the queues keep alive. A queue's
//! own budget counts each delivery it holds.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::server::Throttle;

/// How often a refusal at a shared budget is logged; the rest in between
/// are counted, and the count is logged with the next one.
pub(crate) const WARN_INTERVAL: Duration = Duration::from_secs(10);

/// Bytes held, and their bound.
#[derive(Debug)]
pub(crate) struct Budget {
    held: AtomicUsize,
    max: usize,
    warnings: Mutex<Throttle>,
}

impl Default for Budget {
    /// No bound.
    fn default() -> Budget {
        Budget::with(usize::MAX)
    }
}

impl Budget {
    fn with(max: usize) -> Budget {
        Budget {
            held: AtomicUsize::new(0),
            max,
            warnings: Mutex::new(Throttle::new(WARN_INTERVAL)),
        }
    }

    /// A budget of `max` bytes.
    pub fn new(max: usize) -> Arc<Budget> {
        Arc::new(Budget::with(max))
    }

    /// The bytes held now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// The bound.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Adds `size` unless that passes `limit` (an empty budget takes
    /// anything); `Some(what it held before)` when added. One atomic add,
    /// and one subtract on refusal.
    fn add(&self, size: usize, limit: usize) -> Option<usize> {
        let held = self.held.fetch_add(size, Ordering::AcqRel);
        if held > 0 && held.saturating_add(size) > limit {
            self.held.fetch_sub(size, Ordering::AcqRel);
            return None;
        }
        Some(held)
    }

    fn sub(&self, size: usize) {
        self.held.fetch_sub(size, Ordering::AcqRel);
    }

    /// Charges `size` bytes unless that passes the bound (an empty budget
    /// takes anything): the charge, and whether the budget held nothing
    /// before it.
    pub fn charge(self: &Arc<Budget>, size: usize) -> Option<(Charge, bool)> {
        let before = self.add(size, self.max)?;
        let charge = Charge {
            budget: self.clone(),
            size,
        };
        Some((charge, before == 0))
    }

    /// Charges `size` bytes unless that passes `limit` rather than the
    /// bound (an empty budget takes anything).
    pub fn charge_up_to(self: &Arc<Budget>, size: usize, limit: usize) -> Option<Charge> {
        self.add(size, limit)?;
        Some(Charge {
            budget: self.clone(),
            size,
        })
    }

    /// Charges `size` bytes unless that passes the bound, even when the
    /// budget holds nothing.
    pub fn charge_strict(self: &Arc<Budget>, size: usize) -> Option<Charge> {
        let held = self.held.fetch_add(size, Ordering::AcqRel);
        if held.saturating_add(size) > self.max {
            self.held.fetch_sub(size, Ordering::AcqRel);
            return None;
        }
        Some(Charge {
            budget: self.clone(),
            size,
        })
    }

    /// Adds `size` bytes unless that passes the bound (an empty budget
    /// takes anything): for a holder that keeps its own count and gives
    /// it back with [`Budget::release`].
    pub fn reserve(&self, size: usize) -> bool {
        self.add(size, self.max).is_some()
    }

    /// Gives back `size` bytes taken by [`Budget::reserve`].
    pub fn release(&self, size: usize) {
        self.sub(size);
    }

    /// Whether a refusal at this budget may be logged now:
    /// `Some(refusals not logged since the last one that was)`.
    pub fn warn(&self) -> Option<u64> {
        let mut throttle = self.warnings.lock().unwrap_or_else(|e| e.into_inner());
        throttle.allow(Instant::now())
    }
}

/// Bytes held in a queue; given back when dropped.
#[derive(Debug)]
pub(crate) struct Charge {
    budget: Arc<Budget>,
    size: usize,
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.sub(self.size);
    }
}

/// How many [`Share`]s of one item there are.
#[derive(Debug, Default)]
pub(crate) struct Holders(AtomicUsize);

/// An item many queues may hold at once, counted once in a shared budget.
pub(crate) trait Shareable {
    /// Its shares.
    fn holders(&self) -> &Holders;
    /// The bytes it is counted as.
    fn size(&self) -> usize;
}

/// One queue's hold on a shared item: the item is counted in the budget
/// while any share of it is alive, once.
#[derive(Debug)]
pub(crate) struct Share<T: Shareable> {
    item: Arc<T>,
    budget: Arc<Budget>,
}

impl<T: Shareable> Share<T> {
    /// A share of `item` in `budget`: free when the item is counted there
    /// already, otherwise refused when counting it would take the budget
    /// past `limit` (an empty budget takes anything). Every share of an
    /// item must be of the same budget.
    pub fn take(item: &Arc<T>, budget: &Arc<Budget>, limit: usize) -> Option<Share<T>> {
        let holders = &item.holders().0;
        let mut now = holders.load(Ordering::Acquire);
        loop {
            if now > 0 {
                match holders.compare_exchange_weak(
                    now,
                    now + 1,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => break,
                    Err(seen) => now = seen,
                }
                continue;
            }
            // The first share counts the item.
            let size = item.size();
            budget.add(size, limit)?;
            match holders.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(seen) => {
                    // Another share came first and counted it.
                    budget.sub(size);
                    now = seen;
                }
            }
        }
        Some(Share {
            item: item.clone(),
            budget: budget.clone(),
        })
    }

    /// The item.
    pub fn item(&self) -> &Arc<T> {
        &self.item
    }
}

impl<T: Shareable> Drop for Share<T> {
    fn drop(&mut self) {
        // The last share gives the item back.
        if self.item.holders().0.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.budget.sub(self.item.size());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_are_given_back_once_when_dropped() {
        let budget = Budget::new(100);
        let (one, empty) = budget.charge(60).unwrap();
        assert!(empty);
        let (two, empty) = budget.charge(40).unwrap();
        assert!(!empty);
        assert_eq!(budget.held(), 100);
        // Past the bound: refused, nothing charged.
        assert!(budget.charge(1).is_none());
        assert_eq!(budget.held(), 100);
        drop(one);
        assert_eq!(budget.held(), 40);
        let three = budget.charge(50).unwrap();
        drop((two, three));
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn an_empty_budget_takes_one_item_of_any_size() {
        let budget = Budget::new(5);
        let big = budget.charge(1000).unwrap();
        assert!(budget.charge(1).is_none());
        drop(big);
        // Unless the charge is strict.
        assert!(budget.charge_strict(6).is_none());
        let five = budget.charge_strict(5).unwrap();
        assert!(budget.charge_strict(1).is_none());
        drop(five);
        assert_eq!(budget.held(), 0);
        assert!(budget.reserve(1000));
        assert!(!budget.reserve(1));
        budget.release(1000);
        assert_eq!(budget.held(), 0);
    }

    #[derive(Default)]
    struct Item(Holders, usize);

    impl Shareable for Item {
        fn holders(&self) -> &Holders {
            &self.0
        }
        fn size(&self) -> usize {
            self.1
        }
    }

    #[test]
    fn a_shared_item_is_counted_once_while_any_share_of_it_lives() {
        let budget = Budget::new(100);
        let item = Arc::new(Item(Holders::default(), 60));
        let a = Share::take(&item, &budget, 100).unwrap();
        assert_eq!(budget.held(), 60);
        // More shares cost nothing, even past the limit.
        let b = Share::take(&item, &budget, 0).unwrap();
        let c = Share::take(&item, &budget, 100).unwrap();
        assert_eq!(budget.held(), 60);
        // Another item is counted on its own, and refused past the limit.
        let other = Arc::new(Item(Holders::default(), 50));
        assert!(Share::take(&other, &budget, 100).is_none());
        assert_eq!(budget.held(), 60, "a refusal counts nothing");
        let other_share = Share::take(&other, &budget, 110).unwrap();
        assert_eq!(budget.held(), 110);
        drop((a, b));
        assert_eq!(budget.held(), 110, "one share left");
        drop(c);
        assert_eq!(budget.held(), 50);
        drop(other_share);
        assert_eq!(budget.held(), 0);
        // Counted again from nothing.
        let again = Share::take(&item, &budget, 100).unwrap();
        assert_eq!(budget.held(), 60);
        drop(again);
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn shares_taken_and_dropped_on_many_threads_leave_nothing_counted() {
        let budget = Budget::new(usize::MAX);
        let items: Vec<Arc<Item>> = (1..=8)
            .map(|n| Arc::new(Item(Holders::default(), n)))
            .collect();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for round in 0..2000 {
                        let shares: Vec<_> = items
                            .iter()
                            .filter(|i| (round + i.1) % 3 != 0)
                            .map(|i| Share::take(i, &budget, usize::MAX).unwrap())
                            .collect();
                        // At most one count per item and thread in a race.
                        assert!(budget.held() <= 4 * 36);
                        drop(shares);
                    }
                });
            }
        });
        assert_eq!(budget.held(), 0);
        assert!(items.iter().all(|i| i.0 .0.load(Ordering::Acquire) == 0));
    }
}
