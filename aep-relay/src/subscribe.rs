//! The members of a subscription, as SSE query parameters and the
//! WebSocket `subscribe` frame carry them (AEP-0003 §3.3, §6.5): the
//! `attr-match` filter, the capture ceiling and the resume positions.
//! Malformed members fail closed with the closed §6.5 codes.

use aep::filter::Filter;
use aep::frame::{CaptureError, ErrorCode, FromError, Resume, Seq};
use aep::Capture;
use serde_json::Value;

use crate::hub::From;

// Per-subscription and per-connection bounds. Each one, when hit, is
// refused on the wire with `limit-exceeded` and a detail naming it.

/// Bytes of a subscription id's JSON text (`"sub-1"` is 7). An id is
/// echoed in every frame about its subscription and in each `closing`
/// position, so a long one multiplies.
pub(crate) const MAX_ID_BYTES: usize = 256;
/// Bytes of a filter's JSON text (compact, as re-serialized).
pub(crate) const MAX_FILTER_BYTES: usize = 16 * 1024;
/// Members (keys) of one filter.
pub(crate) const MAX_FILTER_KEYS: usize = 32;
/// Elements of one inclusion array in a filter.
pub(crate) const MAX_INCLUSION: usize = 256;
/// Bytes of a WebSocket `hello` frame's text: its declarations
/// (identity, capabilities) are kept for the connection's life.
pub(crate) const MAX_HELLO_BYTES: usize = 64 * 1024;
// `routing::Declared` keeps where each accepted command type ends in 16
// bits: the hello's text bounds them.
const _: () = assert!(MAX_HELLO_BYTES <= 1 << 16);
/// Positions (subscription, session) a WebSocket connection remembers for
/// its `closing` frame, across all its subscriptions; the least recently
/// delivered are forgotten first.
pub(crate) const MAX_POSITIONS: usize = 4096;
/// Bytes those remembered positions may hold (session ids counted).
pub(crate) const MAX_POSITION_BYTES: usize = 512 * 1024;
/// Bytes of the `closing` frame's `delivered` entries (and never more
/// than a quarter of `--max-frame`); the most recent positions are kept.
pub(crate) const CLOSING_BUDGET: usize = 64 * 1024;

/// A refused subscription: `invalid-filter` or `limit-exceeded`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub code: ErrorCode,
    pub detail: String,
}

fn invalid(detail: impl Into<String>) -> Refusal {
    Refusal {
        code: ErrorCode::InvalidFilter,
        detail: detail.into(),
    }
}

fn limit(detail: String) -> Refusal {
    Refusal {
        code: ErrorCode::LimitExceeded,
        detail,
    }
}

/// A subscription id: its JSON text, at most [`MAX_ID_BYTES`] bytes.
pub(crate) fn id(value: &Value) -> Result<String, Refusal> {
    if json_len(value, MAX_ID_BYTES) > MAX_ID_BYTES {
        return Err(limit(format!(
            "the subscription id is longer than {MAX_ID_BYTES} bytes of JSON, this relay's limit: use a shorter id"
        )));
    }
    Ok(value.to_string())
}

/// The filter (absent: match everything), within [`MAX_FILTER_BYTES`],
/// [`MAX_FILTER_KEYS`] and [`MAX_INCLUSION`].
pub(crate) fn filter(value: Option<&Value>) -> Result<Filter, Refusal> {
    let value = match value {
        None | Some(Value::Null) => return Ok(Filter::all()),
        Some(value) => value,
    };
    if json_len(value, MAX_FILTER_BYTES) > MAX_FILTER_BYTES {
        return Err(limit(format!(
            "the filter is longer than {MAX_FILTER_BYTES} bytes of JSON, this relay's limit: \
             split it into several subscriptions"
        )));
    }
    if let Value::Object(members) = value {
        if members.len() > MAX_FILTER_KEYS {
            return Err(limit(format!(
                "the filter has {} keys; this relay takes at most {MAX_FILTER_KEYS}",
                members.len()
            )));
        }
        for (key, member) in members {
            if let Value::Array(elements) = member {
                if elements.len() > MAX_INCLUSION {
                    return Err(limit(format!(
                        "filter key `{key}` lists {} values; this relay takes at most \
                         {MAX_INCLUSION} per inclusion array: split it into several subscriptions",
                        elements.len()
                    )));
                }
            }
        }
    }
    Filter::from_value(value).map_err(|e| invalid(e.to_string()))
}

/// The length of `value`'s compact JSON text, counted up to just past
/// `cap` (so a huge value is not written out to be measured).
pub(crate) fn json_len(value: &impl serde::Serialize, cap: usize) -> usize {
    struct Count {
        n: usize,
        cap: usize,
    }
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.n += buf.len();
            if self.n > self.cap {
                return Err(std::io::Error::other("past the cap"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count { n: 0, cap };
    let _ = serde_json::to_writer(&mut count, value);
    count.n
}

/// The capture ceiling (absent: as received).
pub(crate) fn ceiling(value: Option<&str>) -> Result<Option<Capture>, Refusal> {
    value
        .map(|v| {
            v.parse::<Capture>()
                .map_err(|_| invalid(CaptureError(v.to_owned()).to_string()))
        })
        .transpose()
}

/// A `subscribe` frame's capture ceiling, as [`aep::frame`] read it.
pub(crate) fn read_ceiling(
    read: Result<Option<Capture>, CaptureError>,
) -> Result<Option<Capture>, Refusal> {
    read.map_err(|e| invalid(e.to_string()))
}

/// Resume positions as JSON (the SSE `from` parameter): see [`positions`].
pub(crate) fn from(value: Option<&Value>, max: usize) -> Result<Option<From>, Refusal> {
    positions(
        value
            .filter(|v| !v.is_null())
            .map(Resume::from_value)
            .transpose(),
        max,
    )
}

/// Resume positions, as [`aep::frame`] read them: the string `all`, or
/// an array of `{session, epoch?, seq?}` (`epoch` 0 and `seq` -1, the
/// start, when absent), at most `max` of them (counted before any is
/// looked at).
pub(crate) fn positions(
    read: Result<Option<Resume>, FromError>,
    max: usize,
) -> Result<Option<From>, Refusal> {
    let count = match &read {
        Ok(Some(Resume::Positions(positions))) => positions.len(),
        Err(FromError::Position { of, .. }) => *of,
        Ok(None | Some(Resume::All)) | Err(FromError::NotPositions) => 0,
    };
    if count > max {
        return Err(limit(format!(
            "from has {count} positions; this relay replays at most {max} (--max-from)"
        )));
    }
    match read.map_err(|e| invalid(e.to_string()))? {
        None => Ok(None),
        Some(Resume::All) => Ok(Some(From::All)),
        Some(Resume::Positions(positions)) => Ok(Some(From::Positions(
            positions
                .into_iter()
                .map(|p| {
                    let seq = p.seq.unwrap_or(Seq::Start).get();
                    (p.session, p.epoch.unwrap_or(0), seq)
                })
                .collect(),
        ))),
    }
}

/// The position a `Last-Event-ID` names: `session:epoch:seq`, split from
/// the right since a session id may hold `:`.
pub(crate) fn last_event_id(value: &str) -> Option<(String, u64, i128)> {
    let mut parts = value.rsplitn(3, ':');
    let seq = parts.next()?.parse::<u64>().ok()?;
    let epoch = parts.next()?.parse::<u64>().ok()?;
    let session = parts.next().filter(|s| !s.is_empty())?;
    Some((session.to_owned(), epoch, seq.into()))
}

/// The session a filter names by plain equality, if it does.
pub(crate) fn named_session(filter: Option<&Value>) -> Option<String> {
    filter?.get("session")?.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn positions_default_to_the_start() {
        let from = from(
            Some(&json!([{"session": "s"}, {"session": "t", "epoch": 2, "seq": 7}])),
            10,
        );
        assert_eq!(
            from,
            Ok(Some(From::Positions(vec![
                ("s".into(), 0, -1),
                ("t".into(), 2, 7)
            ])))
        );
        assert_eq!(super::from(Some(&json!("all")), 0), Ok(Some(From::All)));
    }

    #[test]
    fn malformed_members_fail_closed() {
        for bad in [
            json!({}),
            json!("some"),
            json!([{"epoch": 1}]),
            json!([{"session": "s", "seq": -2}]),
            json!([{"session": "s", "epoch": "1"}]),
        ] {
            assert_eq!(
                from(Some(&bad), 10).unwrap_err().code,
                ErrorCode::InvalidFilter,
                "{bad}"
            );
        }
        let many = Value::Array(vec![json!({"session": "s"}); 3]);
        assert_eq!(
            from(Some(&many), 2).unwrap_err().code,
            ErrorCode::LimitExceeded
        );
        // Too many positions is the refusal, malformed or not.
        let many = Value::Array(vec![json!({"seq": -9}); 3]);
        let refused = from(Some(&many), 2).unwrap_err();
        assert_eq!(refused.code, ErrorCode::LimitExceeded);
        assert_eq!(
            refused.detail,
            "from has 3 positions; this relay replays at most 2 (--max-from)"
        );
        assert_eq!(
            from(Some(&json!([{"session": "s", "seq": -2}])), 2)
                .unwrap_err()
                .detail,
            "from[0]: seq must be an integer >= -1"
        );
        assert_eq!(
            filter(Some(&json!({"seq": 1}))).unwrap_err().code,
            ErrorCode::InvalidFilter
        );
        assert_eq!(
            ceiling(Some("everything")).unwrap_err().code,
            ErrorCode::InvalidFilter
        );
        assert_eq!(ceiling(Some("redacted")), Ok(Some(Capture::Redacted)));
    }

    #[test]
    fn oversize_ids_and_filters_are_limits() {
        let at = json!("x".repeat(MAX_ID_BYTES - 2));
        assert_eq!(id(&at).unwrap().len(), MAX_ID_BYTES);
        let past = json!("x".repeat(MAX_ID_BYTES - 1));
        let refused = id(&past).unwrap_err();
        assert_eq!(refused.code, ErrorCode::LimitExceeded);
        assert!(refused.detail.contains("256 bytes"), "{}", refused.detail);

        let values: Vec<Value> = (0..MAX_INCLUSION).map(|i| json!(format!("s{i}"))).collect();
        assert!(filter(Some(&json!({ "session": values }))).is_ok());
        let values: Vec<Value> = (0..=MAX_INCLUSION).map(|i| json!(i)).collect();
        let refused = filter(Some(&json!({ "epoch": values }))).unwrap_err();
        assert_eq!(refused.code, ErrorCode::LimitExceeded);
        assert!(refused.detail.contains("`epoch`"), "{}", refused.detail);

        let big = json!({"session": "s".repeat(MAX_FILTER_BYTES)});
        let refused = filter(Some(&big)).unwrap_err();
        assert_eq!(refused.code, ErrorCode::LimitExceeded);
        assert!(refused.detail.contains("16384 bytes"), "{}", refused.detail);

        let keys: serde_json::Map<String, Value> = (0..=MAX_FILTER_KEYS)
            .map(|i| (format!("x{i}"), json!(1)))
            .collect();
        let refused = filter(Some(&Value::Object(keys))).unwrap_err();
        assert!(refused.detail.contains("keys"), "{}", refused.detail);
        assert_eq!(json_len(&json!([1, 2]), 100), 5);
        assert!(json_len(&json!("x".repeat(1000)), 10) <= 1002);
    }

    #[test]
    fn last_event_id_splits_from_the_right() {
        assert_eq!(last_event_id("a:b:c:2:15"), Some(("a:b:c".into(), 2, 15)));
        assert_eq!(last_event_id("s:0:0"), Some(("s".into(), 0, 0)));
        assert_eq!(last_event_id(":0:0"), None);
        assert_eq!(last_event_id("s:x:0"), None);
        assert_eq!(last_event_id("0:0"), None);
    }
}
