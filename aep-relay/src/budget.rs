//! Byte budgets: what queues hold, per queue and across the relay.
//!
//! A [`Budget`] counts the bytes its queues hold. Bytes are charged as a
//! [`Charge`] travels into a queue with what it stands for, and given
//! back when the charge is dropped: when the item is taken from the
//! queue, or when the queue goes away with it. The charge is the one
//! place that adds and subtracts, so a budget cannot drift.
//!
//! A queue's own budget may sit within a shared one (each consumer's
//! `--queue-bytes` within the relay's `--max-queued-bytes`): a charge
//! then counts against both. It is refused when it would pass the queue's
//! own bound, or, as its [`Shared`] rule says, the shared one. A consumer
//! that kept up (its queue empty when the batch began) is bound by its
//! own budget only for that batch, so one batch never cuts off a
//! consumer that reads for what the others left unread; the events such
//! queues hold are the batch's, shared with every queue. A command is
//! bound by both always (refused `busy`, its sender sends it again).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::server::Throttle;

/// How often a refusal at a shared budget is logged; the rest in between
/// are counted, and the count is logged with the next one.
pub(crate) const WARN_INTERVAL: Duration = Duration::from_secs(10);

/// Bytes held in queues, and their bound.
#[derive(Debug)]
pub(crate) struct Budget {
    held: AtomicUsize,
    max: usize,
    /// The shared budget this one is within.
    within: Option<Arc<Budget>>,
    warnings: Mutex<Throttle>,
}

/// How a charge meets the shared budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shared {
    /// Bound by it unless this queue holds nothing.
    UnlessEmpty,
    /// Counted in it, never refused by it.
    Exempt,
    /// Bound by it, whatever this queue holds.
    Always,
}

/// Which bound a charge would have passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Over {
    /// The queue's own.
    Own,
    /// The shared one it is within.
    Shared,
}

impl Default for Budget {
    /// No bound.
    fn default() -> Budget {
        Budget::with(usize::MAX, None)
    }
}

impl Budget {
    fn with(max: usize, within: Option<Arc<Budget>>) -> Budget {
        Budget {
            held: AtomicUsize::new(0),
            max,
            within,
            warnings: Mutex::new(Throttle::new(WARN_INTERVAL)),
        }
    }

    /// A budget of `max` bytes.
    pub fn new(max: usize) -> Arc<Budget> {
        Arc::new(Budget::with(max, None))
    }

    /// A budget of `max` bytes within `shared` (which is within none).
    pub fn within(shared: &Arc<Budget>, max: usize) -> Arc<Budget> {
        debug_assert!(shared.within.is_none(), "one level of sharing");
        Arc::new(Budget::with(max, Some(shared.clone())))
    }

    /// The bytes held now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// The shared budget this one is within.
    pub fn shared(&self) -> Option<&Arc<Budget>> {
        self.within.as_ref()
    }

    /// The bound.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Adds `size` unless that passes the bound (an empty budget takes
    /// anything); `Some(what it held before)` when added. One atomic add,
    /// and one subtract on refusal.
    fn add(&self, size: usize) -> Option<usize> {
        let held = self.held.fetch_add(size, Ordering::AcqRel);
        if held > 0 && held.saturating_add(size) > self.max {
            self.held.fetch_sub(size, Ordering::AcqRel);
            return None;
        }
        Some(held)
    }

    fn sub(&self, size: usize) {
        self.held.fetch_sub(size, Ordering::AcqRel);
    }

    /// Charges `size` bytes to this budget and the one it is within, or
    /// says which bound it would pass (and charges nothing). `rule` says
    /// when the shared one may refuse it.
    pub fn charge(self: &Arc<Budget>, size: usize, rule: Shared) -> Result<Charge, Over> {
        let Some(own) = self.add(size) else {
            return Err(Over::Own);
        };
        if let Some(shared) = &self.within {
            let exempt = match rule {
                Shared::Exempt => true,
                Shared::UnlessEmpty => own == 0,
                Shared::Always => false,
            };
            if exempt {
                shared.held.fetch_add(size, Ordering::AcqRel);
            } else if shared.add(size).is_none() {
                self.sub(size);
                return Err(Over::Shared);
            }
        }
        Ok(Charge {
            budget: self.clone(),
            size,
        })
    }

    /// Adds `size` bytes unless that passes the bound (an empty budget
    /// takes anything): for a holder that keeps its own count and gives
    /// it back with [`Budget::release`] (a budget within none).
    pub fn reserve(&self, size: usize) -> bool {
        debug_assert!(self.within.is_none());
        self.add(size).is_some()
    }

    /// Gives back `size` bytes taken by [`Budget::reserve`].
    pub fn release(&self, size: usize) {
        self.sub(size);
    }

    /// Counts `size` bytes in this budget whatever it holds: memory the
    /// relay holds anyway (a delivery being written), so that the bound
    /// keeps other queues from adding to it.
    pub fn count(self: &Arc<Budget>, size: usize) -> Charge {
        self.held.fetch_add(size, Ordering::AcqRel);
        if let Some(shared) = &self.within {
            shared.held.fetch_add(size, Ordering::AcqRel);
        }
        Charge {
            budget: self.clone(),
            size,
        }
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

impl Charge {
    /// The same bytes, counted in the shared budget only (never refused),
    /// this one's own budget given them back. A charge to a budget within
    /// none stays as it is.
    pub fn counted_in_shared(self) -> Charge {
        match self.budget.within.clone() {
            Some(shared) => shared.count(self.size),
            None => self,
        }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.sub(self.size);
        if let Some(shared) = &self.budget.within {
            shared.sub(self.size);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_are_given_back_once_when_dropped() {
        let shared = Budget::new(100);
        let a = Budget::within(&shared, 1000);
        let b = Budget::within(&shared, 1000);
        let one = a.charge(60, Shared::UnlessEmpty).unwrap();
        let two = b.charge(40, Shared::UnlessEmpty).unwrap();
        assert_eq!(shared.held(), 100);
        // Past the shared bound, from a budget holding something:
        // refused, nothing charged anywhere.
        assert_eq!(b.charge(1, Shared::UnlessEmpty).unwrap_err(), Over::Shared);
        assert_eq!((a.held(), b.held(), shared.held()), (60, 40, 100));
        drop(one);
        assert_eq!((a.held(), shared.held()), (0, 40));
        let three = a.charge(50, Shared::UnlessEmpty).unwrap();
        drop((two, three));
        assert_eq!((a.held(), b.held(), shared.held()), (0, 0, 0));
    }

    #[test]
    fn an_empty_budget_takes_one_item_of_any_size() {
        let shared = Budget::new(10);
        let a = Budget::within(&shared, 5);
        let big = a.charge(1000, Shared::UnlessEmpty).unwrap();
        assert_eq!(a.charge(1, Shared::UnlessEmpty).unwrap_err(), Over::Own);
        // An empty queue takes one item past the shared bound; one that
        // holds something does not.
        let b = Budget::within(&shared, 5);
        let first = b.charge(1, Shared::UnlessEmpty).unwrap();
        assert_eq!(shared.held(), 1001);
        assert_eq!(b.charge(1, Shared::UnlessEmpty).unwrap_err(), Over::Shared);
        drop((big, first));
        assert_eq!(shared.held(), 0);
    }

    #[test]
    fn an_exempt_charge_counts_but_is_never_refused_and_a_strict_one_always_may_be() {
        let shared = Budget::new(10);
        let a = Budget::within(&shared, 1000);
        let kept_up = a.charge(8, Shared::Exempt).unwrap();
        let more = a.charge(8, Shared::Exempt).unwrap();
        assert_eq!(shared.held(), 16, "counted past the shared bound");
        let b = Budget::within(&shared, 1000);
        assert_eq!(
            b.charge(1, Shared::Always).unwrap_err(),
            Over::Shared,
            "even empty"
        );
        drop((kept_up, more));
        assert_eq!(shared.held(), 0);
        assert!(b.charge(1, Shared::Always).is_ok());
    }
}
