//! Exponential backoff with jitter, shared by every reconnecting or
//! retrying client: each wait doubles from `initial` up to `max`, and a
//! random part (up to half the wait) keeps many clients from retrying in
//! step after a relay restart.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::Duration;

/// The waits between attempts.
///
/// ```
/// use std::time::Duration;
/// use aep_client::Backoff;
///
/// let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
/// let first = backoff.next_wait();
/// assert!(first >= Duration::from_millis(100) && first <= Duration::from_millis(150));
/// for _ in 0..10 {
///     assert!(backoff.next_wait() <= Duration::from_millis(1500));
/// }
/// backoff.reset();
/// assert!(backoff.next_wait() <= Duration::from_millis(150));
/// ```
#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    attempt: u32,
    state: u64,
}

impl Backoff {
    /// Waits from `initial`, doubling to at most `max` (plus jitter).
    pub fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff {
            initial: initial.max(Duration::from_millis(1)),
            max: max.max(initial),
            attempt: 0,
            state: RandomState::new().hash_one(0xb0ff_u64),
        }
    }

    /// The next wait: `initial * 2^attempts`, at most `max`, plus up to
    /// half of it at random.
    pub fn next_wait(&mut self) -> Duration {
        let base = self
            .initial
            .saturating_mul(1u32 << self.attempt.min(20))
            .min(self.max);
        self.attempt = self.attempt.saturating_add(1);
        let half = base.as_millis() as u64 / 2;
        let jitter = if half == 0 {
            0
        } else {
            self.random() % (half + 1)
        };
        base + Duration::from_millis(jitter)
    }

    /// Back to the first wait (after a success).
    pub fn reset(&mut self) {
        self.attempt = 0;
    }

    /// How many waits were taken since the last reset.
    pub fn attempts(&self) -> u32 {
        self.attempt
    }

    /// SplitMix64.
    fn random(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_to_the_cap_with_bounded_jitter() {
        let mut b = Backoff::new(Duration::from_millis(10), Duration::from_millis(80));
        let waits: Vec<u64> = (0..6).map(|_| b.next_wait().as_millis() as u64).collect();
        for (wait, base) in waits.iter().zip([10, 20, 40, 80, 80, 80]) {
            assert!(*wait >= base && *wait <= base + base / 2, "{waits:?}");
        }
        assert_eq!(b.attempts(), 6);
    }
}
