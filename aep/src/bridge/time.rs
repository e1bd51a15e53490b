//! RFC 3339 timestamps as exact integer nanoseconds since the Unix epoch,
//! in integer arithmetic only (a float cannot hold `.310` exactly).

/// Nanoseconds in one second.
const NANOS_PER_SECOND: i128 = 1_000_000_000;

/// The instant `text` names, in nanoseconds since 1970-01-01T00:00:00Z,
/// or `None` when `text` is not an RFC 3339 `date-time`.
///
/// - `T`/`t` and `Z`/`z` are accepted, as RFC 3339 allows.
/// - Fraction digits beyond the ninth are below a nanosecond and are
///   truncated (toward the past).
/// - A leap second (`:60`) counts as the first second of the next minute,
///   as POSIX time has no leap seconds.
pub fn unix_nanos(text: &str) -> Option<i128> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 || !matches!(bytes[10], b'T' | b't') {
        return None;
    }
    let (date, rest) = (&bytes[..10], &bytes[11..]);
    if date[4] != b'-' || date[7] != b'-' || rest.len() < 9 || rest[2] != b':' || rest[5] != b':' {
        return None;
    }
    let year = number(&date[..4])?;
    let month = number(&date[5..7])?;
    let day = number(&date[8..10])?;
    let hour = number(&rest[..2])?;
    let minute = number(&rest[3..5])?;
    let second = number(&rest[6..8])?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &rest[8..];
    let mut nanos: i128 = 0;
    if let Some(fraction) = rest.strip_prefix(b".") {
        let digits = fraction.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        let mut scale = NANOS_PER_SECOND;
        for &digit in &fraction[..digits.min(9)] {
            scale /= 10;
            nanos += i128::from(digit - b'0') * scale;
        }
        rest = &fraction[digits..];
    }
    let offset_minutes: i128 = match rest {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let hours = number(&[*h1, *h2])?;
            let minutes = number(&[*m1, *m2])?;
            if hours > 23 || minutes > 59 {
                return None;
            }
            let total = hours * 60 + minutes;
            if *sign == b'+' {
                total
            } else {
                -total
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds * NANOS_PER_SECOND + nanos)
}

/// Decimal digits (all of them, at least one) as a number.
fn number(digits: &[u8]) -> Option<i128> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(digits.iter().fold(0, |n, &d| n * 10 + i128::from(d - b'0')))
}

fn days_in_month(year: i128, month: i128) -> i128 {
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given proleptic Gregorian date (Howard
/// Hinnant's `days_from_civil`).
fn days_from_civil(year: i128, month: i128, day: i128) -> i128 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::unix_nanos;

    #[test]
    fn instants_are_exact_nanoseconds() {
        assert_eq!(unix_nanos("1970-01-01T00:00:00Z"), Some(0));
        // `date -u -d 2026-11-30T12:00:00Z +%s` is 1796040000.
        assert_eq!(
            unix_nanos("2026-11-30T12:00:00.310Z"),
            Some(1_796_040_000_310_000_000)
        );
        assert_eq!(
            unix_nanos("2026-11-30T14:00:00.310+02:00"),
            unix_nanos("2026-11-30T12:00:00.310Z")
        );
        assert_eq!(
            unix_nanos("2026-11-30t11:30:00.000000001-00:30"),
            Some(1_796_040_000_000_000_001)
        );
        // Below a nanosecond is truncated.
        assert_eq!(
            unix_nanos("1970-01-01T00:00:00.1234567899Z"),
            Some(123_456_789)
        );
        // 2000-02-29 exists (a leap year divisible by 400); 951782400 per `date`.
        assert_eq!(
            unix_nanos("2000-02-29T00:00:00Z"),
            Some(951_782_400 * 1_000_000_000)
        );
        assert_eq!(unix_nanos("1969-12-31T23:59:59.5Z"), Some(-500_000_000));
        // A leap second is the next minute's first second.
        assert_eq!(
            unix_nanos("2016-12-31T23:59:60Z"),
            unix_nanos("2017-01-01T00:00:00Z")
        );
    }

    #[test]
    fn malformed_timestamps_are_refused() {
        for text in [
            "",
            "2026-11-30",
            "2026-11-30T12:00:00",
            "2026-11-30 12:00:00Z",
            "2026-02-29T12:00:00Z",
            "2026-13-01T12:00:00Z",
            "2026-11-30T24:00:00Z",
            "2026-11-30T12:00:00.Z",
            "2026-11-30T12:00:00+2:00",
            "2026-11-30T12:00:00+24:00",
            "2026-11-30T12:00:00Zjunk",
            "2026-11-3xT12:00:00Z",
            "２０２６-11-30T12:00:00Z",
        ] {
            assert_eq!(unix_nanos(text), None, "{text}");
        }
    }
}
