//! Ids and times from a clock reading the caller passes: ULIDs and
//! RFC 3339 timestamps, both from milliseconds since the Unix epoch.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

/// The last millisecond RFC 3339 can write with a four-digit year:
/// 9999-12-31T23:59:59.999Z.
const MAX_MS: u64 = 253_402_300_799_999;

/// Crockford's base32, as ULIDs are written.
const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Mints ULIDs: 26 characters of Crockford base32 holding 48 bits of
/// milliseconds and 80 random bits, so ids sort by time (AEP-0001 §5.1
/// recommends them).
///
/// Ids from one generator strictly increase, also within one
/// millisecond and when `now` goes back (the last id plus one). The
/// random bits come from a seed: [`Ids::new`] takes one from the
/// standard library's per-process randomness, [`Ids::seeded`] from the
/// caller, for tests that replay.
///
/// ```
/// use aep::control::Ids;
///
/// let mut ids = Ids::seeded(7);
/// let a = ids.next(1_796_119_200_000);
/// let b = ids.next(1_796_119_200_000);
/// assert_eq!(a.len(), 26);
/// assert!(a < b);
/// assert!(a.starts_with("01M8RGR080")); // the time part: 2026-12-01T10:00Z
/// ```
#[derive(Debug, Clone)]
pub struct Ids {
    state: u64,
    last: u128,
}

impl Ids {
    /// A generator seeded from the process's randomness.
    pub fn new() -> Ids {
        Ids::seeded(RandomState::new().hash_one(0x5eed_u64))
    }

    /// A generator whose random bits follow from `seed`.
    pub fn seeded(seed: u64) -> Ids {
        Ids {
            state: seed,
            last: 0,
        }
    }

    /// The next id, at `now_ms` (milliseconds since the Unix epoch).
    pub fn next(&mut self, now_ms: u64) -> String {
        let time = u128::from(now_ms.min(MAX_MS)) << 80;
        let random = (u128::from(self.splitmix()) << 16) ^ u128::from(self.splitmix() >> 48);
        let mut id = time | (random & ((1 << 80) - 1));
        if id <= self.last {
            // Past 9999 years, the largest id repeats: unreachable from MAX_MS.
            id = self.last.saturating_add(1);
        }
        self.last = id;
        encode(id)
    }

    /// SplitMix64: a small, full-period sequence from the seed.
    fn splitmix(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl Default for Ids {
    fn default() -> Ids {
        Ids::new()
    }
}

/// 128 bits as 26 Crockford characters, most significant first.
fn encode(id: u128) -> String {
    (0..26)
        .map(|i| char::from(CROCKFORD[((id >> (125 - 5 * i)) & 31) as usize]))
        .collect()
}

/// `now_ms` (milliseconds since the Unix epoch) as an RFC 3339 UTC
/// timestamp with milliseconds, the form of the `time` attribute. Readings
/// past the year 9999 give its last millisecond.
///
/// ```
/// assert_eq!(aep::control::rfc3339(0), "1970-01-01T00:00:00.000Z");
/// assert_eq!(aep::control::rfc3339(1_796_119_200_250), "2026-12-01T10:00:00.250Z");
/// ```
pub fn rfc3339(now_ms: u64) -> String {
    let ms = now_ms.min(MAX_MS);
    let (days, in_day) = (ms / 86_400_000, ms % 86_400_000);
    let (year, month, day) = civil(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard
/// Hinnant's `civil_from_days`, for non-negative days).
fn civil(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_the_calendar_dates() {
        // Expected values computed independently (Python's datetime).
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(1_709_251_199_999), "2024-02-29T23:59:59.999Z");
        assert_eq!(rfc3339(1_783_073_709_150), "2026-07-03T10:15:09.150Z");
        assert_eq!(rfc3339(4_107_542_400_000), "2100-03-01T00:00:00.000Z");
        assert_eq!(rfc3339(u64::MAX), "9999-12-31T23:59:59.999Z");
        assert!(
            aep_types::Event::new("e", "run.started", rfc3339(u64::MAX), "urn:a", "a")
                .validate_schema()
                .err()
                .is_none_or(|v| v.0.iter().all(|v| v.pointer != "/time"))
        );
    }

    #[test]
    fn ids_are_ulids_that_increase() {
        let mut ids = Ids::seeded(1);
        let first = ids.next(1_783_073_709_150);
        // The 48-bit time in Crockford base32, computed independently.
        assert_eq!(&first[..10], "01KWKQK72Y");
        assert!(first.bytes().all(|b| CROCKFORD.contains(&b)));
        let mut last = first;
        // Same millisecond, then a clock that goes back: still increasing.
        for now in [1_783_073_709_150, 1_783_073_709_150, 5, 0] {
            let next = ids.next(now);
            assert!(next > last, "{next} after {last}");
            last = next;
        }
        assert_ne!(Ids::seeded(1).next(9), Ids::seeded(2).next(9));
        assert_eq!(Ids::seeded(3).next(9), Ids::seeded(3).next(9));
        assert_ne!(Ids::new().next(9), Ids::new().next(9));
    }
}
