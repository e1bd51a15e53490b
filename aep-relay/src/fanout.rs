//! Live fan-out (AEP-0003 §5, §6.4, §8.4): every subscription's filter
//! and capture ceiling, and the bounded queue toward its consumer.
//!
//! A queue belongs to one consumer connection (an SSE response, or a
//! WebSocket with any number of subscriptions). Past its soft bound,
//! `debug` and `info` events toward it are dropped and counted; at its
//! hard bound the consumer is cut off (its connection then says so and
//! closes, and the consumer resumes from its last position). `notice` and
//! above are never dropped silently.
//!
//! Each delivered form of an event is encoded once: the event as received
//! (its exact bytes) or once per lower capture level, shared by every
//! subscriber that takes it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use aep::filter::Filter;
use aep::{Capture, Event, EventRef, Severity};
use tokio::sync::mpsc;

use crate::metrics::Metrics;
use crate::stored::Stored;

/// One delivery: which subscription of the consumer, and what.
pub(crate) type Delivery = (u64, Arc<Stored>);

/// The receiving end a consumer connection reads deliveries from.
pub(crate) struct Inbox {
    pub rx: mpsc::Receiver<Delivery>,
    /// Set when the relay cut this consumer off at the hard bound.
    pub overflowed: Arc<AtomicBool>,
}

/// The relay's end of a consumer's queue.
#[derive(Clone)]
pub(crate) struct Outbox {
    tx: mpsc::Sender<Delivery>,
    soft: usize,
    overflowed: Arc<AtomicBool>,
}

/// A bounded queue toward one consumer.
pub(crate) fn queue(soft: usize, hard: usize) -> (Outbox, Inbox) {
    let (tx, rx) = mpsc::channel(hard);
    let overflowed = Arc::new(AtomicBool::new(false));
    (
        Outbox {
            tx,
            soft,
            overflowed: overflowed.clone(),
        },
        Inbox { rx, overflowed },
    )
}

/// What offering an event to a queue did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Offer {
    Queued,
    /// Dropped under back-pressure (`debug`/`info` past the soft bound).
    Shed,
    /// The consumer is gone or cut off: remove its subscriptions.
    Closed,
}

impl Outbox {
    fn offer(&self, delivery: Delivery) -> Offer {
        let queued = self.tx.max_capacity() - self.tx.capacity();
        if queued >= self.soft && delivery.1.severity <= Severity::Info {
            return Offer::Shed;
        }
        match self.tx.try_send(delivery) {
            Ok(()) => Offer::Queued,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.overflowed.store(true, Ordering::Release);
                Offer::Closed
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Offer::Closed,
        }
    }

    /// Whether two outboxes feed the same consumer.
    pub fn same(&self, other: &Outbox) -> bool {
        self.tx.same_channel(&other.tx)
    }
}

/// A live subscription.
pub(crate) struct Subscriber {
    pub id: u64,
    pub filter: Filter,
    pub ceiling: Option<Capture>,
    pub outbox: Outbox,
}

/// The level an event is delivered at under `ceiling`: never up
/// (AEP-0001 §8.2), and a mechanical hop never mints `redacted`
/// (AEP-0003 §6.4; `Event::down_level` applies that rule).
pub(crate) fn delivered_level(capture: Capture, ceiling: Option<Capture>) -> Option<Capture> {
    match ceiling {
        Some(ceiling) if ceiling < capture => Some(ceiling),
        _ => None,
    }
}

/// The forms of one event, made on first need.
pub(crate) struct Forms<'a> {
    event: &'a EventRef<'a>,
    original: &'a Arc<Stored>,
    lower: [Option<Arc<Stored>>; 4],
}

impl<'a> Forms<'a> {
    pub fn new(event: &'a EventRef<'a>, original: &'a Arc<Stored>) -> Forms<'a> {
        Forms {
            event,
            original,
            lower: Default::default(),
        }
    }

    /// The event as delivered under `ceiling`.
    pub fn at(&mut self, ceiling: Option<Capture>) -> Arc<Stored> {
        match delivered_level(self.original.capture, ceiling) {
            None => self.original.clone(),
            Some(level) => self.lower[slot(level)]
                .get_or_insert_with(|| down_levelled(&self.event.to_owned(), level))
                .clone(),
        }
    }
}

/// The cache slot of a capture level.
fn slot(level: Capture) -> usize {
    match level {
        Capture::None => 0,
        Capture::Metadata => 1,
        Capture::Redacted => 2,
        _ => 3,
    }
}

/// `event` down-levelled to `level`, encoded.
pub(crate) fn down_levelled(event: &Event, level: Capture) -> Arc<Stored> {
    let lower = event.down_level(level);
    // An event that decoded encodes; if it ever did not, the envelope
    // alone is the safe form (never the original bytes above the ceiling).
    let stored = Stored::encode(&lower).unwrap_or_else(|_| {
        Stored::encode(&event.with_data(None).down_level(level))
            .expect("an envelope without data encodes")
    });
    Arc::new(stored)
}

/// Offers `event` to every matching subscriber; returns the ids of the
/// subscriptions whose consumer is gone or was cut off.
pub(crate) fn fan_out(
    subscribers: &[Subscriber],
    event: &EventRef<'_>,
    original: &Arc<Stored>,
    metrics: &Metrics,
) -> Vec<u64> {
    let mut forms = Forms::new(event, original);
    let mut closed = Vec::new();
    for sub in subscribers {
        if !sub.filter.matches(event) {
            continue;
        }
        match sub.outbox.offer((sub.id, forms.at(sub.ceiling))) {
            Offer::Queued => metrics.delivered.inc(),
            Offer::Shed => metrics.dropped_backpressure.inc(),
            Offer::Closed => closed.push(sub.id),
        }
    }
    closed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(severity: &str) -> Arc<Stored> {
        let json = format!(
            r#"{{"aep":"0.1","id":"e","type":"progress.status","time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a","session":"s","seq":0,"severity":"{severity}"}}"#
        );
        Arc::new(Stored::new(
            &Event::from_json(&json).unwrap(),
            json.as_bytes(),
        ))
    }

    #[test]
    fn soft_bound_sheds_low_severity_only_and_hard_bound_cuts_off() {
        let (outbox, inbox) = queue(2, 4);
        assert_eq!(outbox.offer((1, stored("info"))), Offer::Queued);
        assert_eq!(outbox.offer((1, stored("debug"))), Offer::Queued);
        // Past the soft bound: info and debug go, notice and above stay.
        assert_eq!(outbox.offer((1, stored("info"))), Offer::Shed);
        assert_eq!(outbox.offer((1, stored("debug"))), Offer::Shed);
        assert_eq!(outbox.offer((1, stored("notice"))), Offer::Queued);
        assert_eq!(outbox.offer((1, stored("critical"))), Offer::Queued);
        assert!(!inbox.overflowed.load(Ordering::Acquire));
        // Full: never a silent drop of `error`; the consumer is cut off.
        assert_eq!(outbox.offer((1, stored("error"))), Offer::Closed);
        assert!(inbox.overflowed.load(Ordering::Acquire));
    }

    #[test]
    fn a_gone_consumer_closes() {
        let (outbox, inbox) = queue(2, 4);
        drop(inbox);
        assert_eq!(outbox.offer((1, stored("error"))), Offer::Closed);
    }

    #[test]
    fn forms_down_level_once_per_level_and_keep_the_original_otherwise() {
        let json = r#"{"aep":"0.1","id":"e","type":"progress.status","time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a","session":"s","seq":0,"capture":"redacted","data":{"message":"secret words","phase":"test"}}"#;
        let event = EventRef::from_json(json).unwrap();
        let original = Arc::new(Stored::new(&event.to_owned(), json.as_bytes()));
        let mut forms = Forms::new(&event, &original);
        assert!(Arc::ptr_eq(&forms.at(None), &original));
        assert!(Arc::ptr_eq(&forms.at(Some(Capture::Full)), &original));
        assert!(Arc::ptr_eq(&forms.at(Some(Capture::Redacted)), &original));
        let metadata = forms.at(Some(Capture::Metadata));
        let text = String::from_utf8(metadata.json().to_vec()).unwrap();
        assert!(!text.contains("secret"), "{text}");
        assert!(text.contains(r#""phase":"test""#), "{text}");
        assert_eq!(metadata.capture, Capture::Metadata);
        assert!(Arc::ptr_eq(&forms.at(Some(Capture::Metadata)), &metadata));
        let none = forms.at(Some(Capture::None));
        assert!(!String::from_utf8(none.json().to_vec())
            .unwrap()
            .contains("data"));
    }

    #[test]
    fn levels_go_down_never_up() {
        assert_eq!(
            delivered_level(Capture::Full, Some(Capture::Metadata)),
            Some(Capture::Metadata)
        );
        assert_eq!(
            delivered_level(Capture::Metadata, Some(Capture::Full)),
            None
        );
        assert_eq!(delivered_level(Capture::Redacted, None), None);
    }
}
