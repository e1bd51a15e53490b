//! Live fan-out (AEP-0003 §5, §6.4, §8.4): every subscription's filter
//! and capture ceiling, and the bounded queue toward its consumer.
//!
//! A queue belongs to one consumer connection (an SSE response, or a
//! WebSocket with any number of subscriptions). Its depth is judged when
//! an ingest begins, not between the events of one batch: a consumer that
//! keeps up takes a whole batch, since it cannot drain while the batch is
//! fanned out. Past the soft bound, `debug` and `info` events toward it
//! are dropped and counted; at the hard bound the consumer is cut off (its
//! connection then says so and closes, and the consumer resumes from its
//! last position). `notice` and above are never dropped silently. A queue
//! so holds at most its hard bound plus one batch (`--max-batch`); a
//! consumer whose subscriptions together take more than that from one
//! ingest is cut off too.
//!
//! Each delivered form of an event is encoded once: the event as received
//! (its exact bytes) or once per lower capture level, shared by every
//! subscriber that takes it.
//!
//! A consumer cut off or gone is marked once, on its shared queue (see
//! [`Outbox::is_cut`]): every later event skips all of its subscriptions
//! with one flag read each, however many consumers were cut, and their
//! removal is one pass over the subscriptions.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use aep::filter::Filter;
use aep::{Capture, Event, EventRef, Severity};
use tokio::sync::mpsc;

use crate::budget::{Budget, Charge, Share, WARN_INTERVAL};
use crate::metrics::Metrics;
use crate::stored::Stored;

/// One delivery: which subscription of the consumer, and what.
pub(crate) type Delivery = (u64, Arc<Stored>);

/// A delivery in its queue, with its bytes charged to the consumer's
/// budget, its place in the queue ([`SLOT`]) charged to the relay's, and
/// its event counted in the relay's (once, however many queues hold it):
/// given back when it is taken (the event once it is written), or
/// dropped with the queue when the consumer goes away.
type Queued = (u64, Charge, Charge, Share<Stored>);

/// What one delivery's place in a queue is charged to the relay's budget
/// for all queues, beside its event: the queue entry and its share of
/// the channel's blocks.
pub(crate) const SLOT: usize = 64;

const _: () = assert!(std::mem::size_of::<Queued>() <= SLOT);

/// The receiving end a consumer connection reads deliveries from.
pub(crate) struct Inbox {
    rx: mpsc::Receiver<Queued>,
    /// Set when the relay cut this consumer off at the hard bound.
    pub overflowed: Arc<AtomicBool>,
    /// The bytes the queue holds (each delivery's [`Stored::size`]).
    #[cfg_attr(not(test), allow(dead_code))]
    bytes: Arc<Budget>,
}

impl Inbox {
    /// The next delivery (cancel-safe, as `mpsc::Receiver::recv`).
    pub async fn recv(&mut self) -> Option<Taken> {
        self.rx.recv().await.map(Taken::new)
    }

    /// The next delivery if one is waiting.
    pub fn try_recv(&mut self) -> Option<Taken> {
        self.rx.try_recv().ok().map(Taken::new)
    }
}

/// A delivery taken from its queue. The queue has its bytes back (it is
/// judged empty again), but its event stays counted in the relay's budget
/// for all queues until this is dropped, once the delivery is written:
/// what a connection is writing is held in memory as surely as what
/// waits, and may be an event the buffer has let go of.
pub(crate) struct Taken {
    /// Which subscription of the consumer.
    pub sub: u64,
    pub stored: Arc<Stored>,
    _writing: Share<Stored>,
}

impl Taken {
    /// Its event's place in the relay's budget, for a delivery handed on
    /// to be written later.
    pub fn into_share(self) -> Share<Stored> {
        self._writing
    }

    fn new((sub, charge, slot, share): Queued) -> Taken {
        drop((charge, slot));
        Taken {
            sub,
            stored: share.item().clone(),
            _writing: share,
        }
    }
}

/// The relay's end of a consumer's queue.
#[derive(Clone)]
pub(crate) struct Outbox {
    tx: mpsc::Sender<Queued>,
    soft: usize,
    hard: usize,
    bytes: Arc<Budget>,
    /// The relay's budget for all queues.
    shared: Arc<Budget>,
    overflowed: Arc<AtomicBool>,
}

/// A bounded queue toward one consumer: `soft` and `hard` bound its depth
/// when an ingest begins, `batch` is the most one ingest may add on top;
/// no bound in bytes (see [`bounded`]).
#[cfg(test)]
pub(crate) fn queue(soft: usize, hard: usize, batch: usize) -> (Outbox, Inbox) {
    // One budget for every such queue: all shares of an event are taken
    // in the same budget.
    static UNBOUNDED: std::sync::OnceLock<Arc<Budget>> = std::sync::OnceLock::new();
    let shared = UNBOUNDED.get_or_init(Arc::default);
    bounded(soft, hard, batch, usize::MAX, shared)
}

/// [`queue`], and at most `max_bytes` held at once, within the relay's
/// `shared` budget for all consumers, where each event is counted once
/// however many queues hold it: a delivery that would take the queue past
/// `max_bytes`, or all queues together past `shared`, cuts this consumer
/// off. One delivery of any size fits into an empty queue. A consumer
/// that keeps up (its queue empty when the batch began, or now) may take
/// `shared` up to twice its bound, so a batch does not cut it off for
/// what others left unread until the queues hold that much. What a queue
/// holds is shared with the buffer, but outlives its eviction: this
/// bounds what consumers that stopped reading keep alive.
pub(crate) fn bounded(
    soft: usize,
    hard: usize,
    batch: usize,
    max_bytes: usize,
    shared: &Arc<Budget>,
) -> (Outbox, Inbox) {
    let (tx, rx) = mpsc::channel(hard.saturating_add(batch).max(1));
    let overflowed = Arc::new(AtomicBool::new(false));
    let bytes = Budget::new(max_bytes);
    (
        Outbox {
            tx,
            soft,
            hard,
            bytes: bytes.clone(),
            shared: shared.clone(),
            overflowed: overflowed.clone(),
        },
        Inbox {
            rx,
            overflowed,
            bytes,
        },
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
    /// The deliveries waiting in the queue now.
    pub fn depth(&self) -> usize {
        self.tx.max_capacity() - self.tx.capacity()
    }

    /// Offers one delivery to a queue that was `depth` deep when the
    /// ingest carrying it began.
    fn offer(&self, delivery: Delivery, depth: usize) -> Offer {
        if depth >= self.hard {
            return self.cut_off();
        }
        if depth >= self.soft && delivery.1.severity <= Severity::Info {
            return Offer::Shed;
        }
        // Charged before it is sent, so the consumer never gives back
        // bytes that were not charged; a send that fails drops the
        // charge with the delivery.
        let (sub, stored) = delivery;
        let Some((charge, was_empty)) = self.bytes.charge(stored.size()) else {
            return self.cut_off();
        };
        // A queue empty when the batch began (its consumer keeps up), or
        // empty now, may take the relay's budget up to twice its bound.
        let limit = match depth == 0 || was_empty {
            true => self.shared.max().saturating_mul(2),
            false => self.shared.max(),
        };
        let Some(share) = Share::take(&stored, &self.shared, limit) else {
            self.over_shared();
            return self.cut_off();
        };
        let Some(slot) = self.shared.charge_up_to(SLOT, limit) else {
            self.over_shared();
            return self.cut_off();
        };
        match self.tx.try_send((sub, charge, slot, share)) {
            Ok(()) => Offer::Queued,
            Err(mpsc::error::TrySendError::Full(_)) => self.cut_off(),
            Err(mpsc::error::TrySendError::Closed(_)) => Offer::Closed,
        }
    }

    /// Says, at most once per [`WARN_INTERVAL`], that a consumer was cut
    /// off at `--max-queued-bytes`.
    #[cold]
    fn over_shared(&self) {
        let shared = &self.shared;
        if let Some(suppressed) = shared.warn() {
            tracing::warn!(
                held = shared.held(),
                suppressed,
                "consumer disconnected: the queues toward all consumers hold --max-queued-bytes {} (raise it, or find the consumers that stopped reading); further ones in the next {}s are counted, not logged",
                shared.max(),
                WARN_INTERVAL.as_secs()
            );
        }
    }

    fn cut_off(&self) -> Offer {
        self.overflowed.store(true, Ordering::Release);
        Offer::Closed
    }

    /// Whether this consumer was cut off or is gone: its subscriptions
    /// take nothing more and are to be removed. One flag read, whatever
    /// the number of consumers cut.
    pub fn is_cut(&self) -> bool {
        self.overflowed.load(Ordering::Acquire) || self.tx.is_closed()
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

/// How an event is delivered under a subscription's capture ceiling.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Delivered {
    /// As received: no ceiling, a `full` one, or a ceiling above the
    /// event's capture that the event's members keep to.
    Original,
    /// Down-levelled to this level (AEP-0001 §8.2): never up, and a
    /// mechanical hop never mints `redacted` (AEP-0003 §6.4;
    /// `Event::down_level` applies that rule).
    Lowered(Capture),
    /// The event declares `capture` at or below the ceiling but may carry
    /// members above it: delivered as it would be if those members were
    /// all that is known of it, down-levelled to its own declared level
    /// (the relay does not vouch for content it did not check).
    Checked(Capture),
}

/// What [`Forms::at`] does with an event of `capture` under `ceiling`.
pub(crate) fn delivered(capture: Capture, ceiling: Option<Capture>) -> Delivered {
    match ceiling {
        None | Some(Capture::Full) => Delivered::Original,
        Some(ceiling) if ceiling < capture => Delivered::Lowered(ceiling),
        Some(_) => Delivered::Checked(capture),
    }
}

/// The forms of one event, made on first need.
pub(crate) struct Forms<'a> {
    event: &'a EventRef<'a>,
    original: &'a Arc<Stored>,
    lower: [Option<Arc<Stored>>; 4],
    /// Whether the event's members keep to its declared capture.
    honest: Option<bool>,
}

impl<'a> Forms<'a> {
    pub fn new(event: &'a EventRef<'a>, original: &'a Arc<Stored>) -> Forms<'a> {
        Forms {
            event,
            original,
            lower: Default::default(),
            honest: None,
        }
    }

    /// The event as delivered under `ceiling`.
    pub fn at(&mut self, ceiling: Option<Capture>) -> Arc<Stored> {
        let (level, distrusted) = match delivered(self.original.capture, ceiling) {
            Delivered::Original => return self.original.clone(),
            Delivered::Lowered(level) => (level, false),
            Delivered::Checked(level) => {
                let event = self.event;
                if *self
                    .honest
                    .get_or_insert_with(|| event.to_owned().validate_capture().is_ok())
                {
                    return self.original.clone();
                }
                (level, true)
            }
        };
        let event = self.event;
        self.lower[slot(level)]
            .get_or_insert_with(|| {
                let mut owned = event.to_owned();
                if distrusted {
                    // Taken as full content, so that `down_level` drops
                    // and degrades everything above its declared level.
                    owned.capture = Some(Capture::Full);
                }
                down_levelled(&owned, level)
            })
            .clone()
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

/// Each subscriber's queue depth as an ingest begins, in the order of
/// `subscribers`: what [`fan_out`] judges back-pressure by.
pub(crate) fn depths(subscribers: &[Subscriber]) -> Vec<usize> {
    subscribers.iter().map(|s| s.outbox.depth()).collect()
}

/// Offers `event` to every matching subscriber whose consumer is not cut
/// off (`depths` from [`depths`] over the same subscribers). Returns how
/// many offers found their consumer gone or cut it off: when any did,
/// [`remove_cut`] ends those subscriptions.
///
/// The work per subscriber is constant: a cut consumer is known by a flag
/// on its queue, never by searching a list of the ones cut so far.
pub(crate) fn fan_out(
    subscribers: &[Subscriber],
    depths: &[usize],
    event: &EventRef<'_>,
    original: &Arc<Stored>,
    metrics: &Metrics,
) -> usize {
    let mut forms = Forms::new(event, original);
    let mut cut = 0;
    for (sub, depth) in subscribers.iter().zip(depths) {
        #[cfg(test)]
        work::step();
        if sub.outbox.is_cut() || !sub.filter.matches(event) {
            continue;
        }
        match sub.outbox.offer((sub.id, forms.at(sub.ceiling)), *depth) {
            Offer::Queued => metrics.delivered.inc(),
            Offer::Shed => metrics.dropped_backpressure.inc(),
            Offer::Closed => cut += 1,
        }
    }
    cut
}

/// Drops the subscriptions whose consumer is cut off or gone, in one
/// pass; returns how many went.
pub(crate) fn remove_cut(subscribers: &mut Vec<Subscriber>) -> usize {
    let before = subscribers.len();
    subscribers.retain(|s| {
        #[cfg(test)]
        work::step();
        !s.outbox.is_cut()
    });
    before - subscribers.len()
}

/// Counts the per-subscriber steps fan-out takes, so tests measure work
/// rather than time.
#[cfg(test)]
pub(crate) mod work {
    use std::cell::Cell;

    thread_local!(static STEPS: Cell<u64> = const { Cell::new(0) });

    pub(crate) fn step() {
        STEPS.with(|s| s.set(s.get() + 1));
    }

    /// The steps taken on this thread since the last call.
    pub(crate) fn take() -> u64 {
        STEPS.with(|s| s.replace(0))
    }
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

    /// Offers one delivery judged by the queue's depth now, as a
    /// one-event ingest does.
    fn offer_one(outbox: &Outbox, severity: &str) -> Offer {
        outbox.offer((1, stored(severity)), outbox.depth())
    }

    /// Fans a batch of `events` out to `total` consumers of which `cut`
    /// are cut off by its first event (their queues hold nothing at all),
    /// then removes them; returns the steps taken and the deliveries.
    fn fan_out_work(total: usize, cut: usize, events: usize) -> (u64, u64, usize) {
        let json = r#"{"aep":"0.1","id":"e","type":"progress.status","time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a","session":"s","seq":0,"severity":"error"}"#;
        let event = EventRef::from_json(json).unwrap();
        let original = Arc::new(Stored::new(&event, json.as_bytes()));
        let mut inboxes = Vec::new();
        let mut subscribers: Vec<Subscriber> = (0..total)
            .map(|i| {
                // A hard bound of 0: cut off at the first offer.
                let (outbox, inbox) = if i < cut {
                    queue(0, 0, 0)
                } else {
                    queue(10, 10, events)
                };
                inboxes.push(inbox);
                Subscriber {
                    id: i as u64,
                    filter: Filter::all(),
                    ceiling: None,
                    outbox,
                }
            })
            .collect();
        let metrics = Metrics::default();
        let depths = depths(&subscribers);
        work::take();
        let mut gone = 0;
        for _ in 0..events {
            gone += fan_out(&subscribers, &depths, &event, &original, &metrics);
        }
        assert_eq!(gone, cut, "each cut consumer is found once");
        assert_eq!(remove_cut(&mut subscribers), cut);
        (work::take(), metrics.delivered.get(), subscribers.len())
    }

    #[test]
    fn fan_out_work_does_not_grow_with_the_consumers_cut() {
        let (total, events) = (200, 50);
        let (few, delivered_few, left_few) = fan_out_work(total, 1, events);
        let (many, delivered_many, left_many) = fan_out_work(total, 150, events);
        // One step per subscriber per event, one per subscriber to remove
        // the cut ones: the same whether 1 or 150 consumers were cut.
        let expected = (total * events + total) as u64;
        assert_eq!(few, expected);
        assert_eq!(many, expected);
        assert_eq!(delivered_few, ((total - 1) * events) as u64);
        assert_eq!(delivered_many, ((total - 150) * events) as u64);
        assert_eq!((left_few, left_many), (total - 1, total - 150));
    }

    #[test]
    fn soft_bound_sheds_low_severity_only_and_hard_bound_cuts_off() {
        let (outbox, inbox) = queue(2, 4, 0);
        assert_eq!(offer_one(&outbox, "info"), Offer::Queued);
        assert_eq!(offer_one(&outbox, "debug"), Offer::Queued);
        // Past the soft bound: info and debug go, notice and above stay.
        assert_eq!(offer_one(&outbox, "info"), Offer::Shed);
        assert_eq!(offer_one(&outbox, "debug"), Offer::Shed);
        assert_eq!(offer_one(&outbox, "notice"), Offer::Queued);
        assert_eq!(offer_one(&outbox, "critical"), Offer::Queued);
        assert!(!inbox.overflowed.load(Ordering::Acquire));
        // Full: never a silent drop of `error`; the consumer is cut off.
        assert_eq!(offer_one(&outbox, "error"), Offer::Closed);
        assert!(inbox.overflowed.load(Ordering::Acquire));
    }

    #[test]
    fn a_batch_is_judged_by_the_depth_before_it() {
        // A batch longer than both bounds reaches a consumer that had
        // nothing waiting when it began, every event of it.
        let (outbox, inbox) = queue(2, 4, 10);
        for _ in 0..10 {
            assert_eq!(outbox.offer((1, stored("info")), 0), Offer::Queued);
        }
        assert!(!inbox.overflowed.load(Ordering::Acquire));
        // Past the batch's room the consumer is cut off, never dropped
        // from silently.
        assert_eq!(outbox.offer((1, stored("notice")), 0), Offer::Queued);
        assert_eq!(outbox.offer((1, stored("notice")), 0), Offer::Queued);
        assert_eq!(outbox.offer((1, stored("notice")), 0), Offer::Queued);
        assert_eq!(outbox.offer((1, stored("notice")), 0), Offer::Queued);
        assert_eq!(outbox.offer((1, stored("notice")), 0), Offer::Closed);
        assert!(inbox.overflowed.load(Ordering::Acquire));
    }

    #[test]
    fn a_queue_deep_when_the_ingest_begins_sheds_or_cuts_off() {
        let (outbox, inbox) = queue(2, 4, 10);
        assert_eq!(outbox.offer((1, stored("info")), 2), Offer::Shed);
        assert_eq!(outbox.offer((1, stored("notice")), 2), Offer::Queued);
        assert!(!inbox.overflowed.load(Ordering::Acquire));
        assert_eq!(outbox.offer((1, stored("notice")), 4), Offer::Closed);
        assert!(inbox.overflowed.load(Ordering::Acquire));
    }

    #[test]
    fn a_queue_past_its_bytes_cuts_the_consumer_off_and_reading_frees_them() {
        let size = stored("notice").size();
        let (outbox, mut inbox) = bounded(100, 200, 0, 2 * size, &Arc::default());
        assert_eq!(offer_one(&outbox, "notice"), Offer::Queued);
        assert_eq!(offer_one(&outbox, "notice"), Offer::Queued);
        assert!(inbox.try_recv().is_some(), "one read");
        assert_eq!(offer_one(&outbox, "notice"), Offer::Queued);
        assert!(!inbox.overflowed.load(Ordering::Acquire));
        // Full in bytes, far below its bounds in events: cut off.
        assert_eq!(offer_one(&outbox, "critical"), Offer::Closed);
        assert!(inbox.overflowed.load(Ordering::Acquire));
        // One delivery of any size fits into an empty queue.
        let (outbox, mut inbox) = bounded(100, 200, 0, 1, &Arc::default());
        assert_eq!(offer_one(&outbox, "notice"), Offer::Queued);
        assert_eq!(offer_one(&outbox, "notice"), Offer::Closed);
        assert!(inbox.try_recv().is_some());
        assert_eq!(inbox.bytes.held(), 0, "all given back");
    }

    #[test]
    fn a_delivery_being_written_stays_counted_in_the_shared_budget_only() {
        let size = stored("notice").size();
        let shared = Budget::new(100 * size);
        let (outbox, mut inbox) = bounded(100, 200, 0, 100 * size, &shared);
        assert_eq!(offer_one(&outbox, "notice"), Offer::Queued);
        assert_eq!((inbox.bytes.held(), shared.held()), (size, size + SLOT));
        let writing = inbox.try_recv().expect("queued");
        // The queue is empty again (a consumer that keeps up is judged
        // so), the relay still holds the bytes.
        assert_eq!((inbox.bytes.held(), shared.held()), (0, size));
        drop(writing);
        assert_eq!(shared.held(), 0);
    }

    #[test]
    fn past_the_shared_budget_the_consumer_enqueued_to_is_cut_and_bytes_come_back() {
        let size = stored("notice").size();
        // A delivery of an event no other queue holds.
        let unit = size + SLOT;
        let shared = Budget::new(2 * unit);
        let (a, mut a_in) = bounded(100, 200, 0, 100 * size, &shared);
        let (b, b_in) = bounded(100, 200, 0, 100 * size, &shared);
        assert_eq!(offer_one(&a, "notice"), Offer::Queued);
        assert_eq!(offer_one(&a, "notice"), Offer::Queued);
        assert_eq!(shared.held(), 2 * unit);
        assert_eq!(offer_one(&a, "notice"), Offer::Closed);
        // `a` is cut off past the shared budget; an empty queue still
        // takes one delivery, then is cut off in turn.
        assert_eq!(offer_one(&b, "notice"), Offer::Queued);
        assert_eq!(offer_one(&b, "notice"), Offer::Closed);
        assert!(a_in.overflowed.load(Ordering::Acquire));
        assert!(b_in.overflowed.load(Ordering::Acquire));
        assert_eq!(shared.held(), 3 * unit, "a refusal charges nothing");
        // A read gives back to both budgets; a consumer gone gives back
        // what its queue held.
        assert!(a_in.try_recv().is_some());
        assert_eq!((a_in.bytes.held(), shared.held()), (size, 2 * unit));
        drop(b_in);
        assert_eq!(shared.held(), unit);
        drop(a_in);
        assert_eq!(shared.held(), 0, "all given back");
    }

    #[test]
    fn an_event_in_many_queues_is_counted_once_in_the_shared_budget() {
        let event = stored("notice");
        let size = event.size();
        let shared = Budget::new(2 * size + 50 * SLOT);
        let queues: Vec<_> = (0..50)
            .map(|_| bounded(100, 200, 0, 100 * size, &shared))
            .collect();
        for (outbox, _) in &queues {
            // Queues that already hold something: bound by the shared
            // budget, which holds this event once.
            assert_eq!(outbox.offer((1, event.clone()), 1), Offer::Queued);
        }
        // The event once, and each queue's place.
        assert_eq!(shared.held(), size + 50 * SLOT);
        let mut inboxes: Vec<_> = queues.into_iter().map(|(_, inbox)| inbox).collect();
        for inbox in &inboxes {
            assert_eq!(inbox.bytes.held(), size, "each queue counts its delivery");
        }
        // Taken and being written by all but one: still counted, once.
        let writing: Vec<_> = inboxes[1..]
            .iter_mut()
            .map(|i| i.try_recv().unwrap())
            .collect();
        assert_eq!(shared.held(), size + SLOT);
        drop(writing);
        assert_eq!(shared.held(), size + SLOT, "one queue still holds it");
        inboxes.truncate(0);
        assert_eq!(shared.held(), 0);
    }

    #[test]
    fn consumers_that_keep_up_take_the_shared_budget_to_twice_its_bound_not_more() {
        // Each consumer watches its own session and never reads: every
        // event is one queue's alone, and each queue was empty when its
        // batch began.
        let unit = stored("notice").size() + SLOT;
        let shared = Budget::new(2 * unit);
        let mut kept = Vec::new();
        let mut offers = Vec::new();
        for _ in 0..10 {
            let (outbox, inbox) = bounded(100, 200, 0, 100 * unit, &shared);
            offers.push(outbox.offer((1, stored("notice")), 0));
            kept.push((outbox, inbox));
        }
        let queued = offers.iter().filter(|o| **o == Offer::Queued).count();
        assert_eq!(queued, 4, "{offers:?}");
        assert_eq!(offers[4..], [const { Offer::Closed }; 6]);
        assert_eq!(shared.held(), 4 * unit);
        // What is written stays counted: taking a delivery makes no room.
        let writing = kept[0].1.try_recv().unwrap();
        assert_eq!(kept[0].0.offer((1, stored("notice")), 0), Offer::Closed);
        drop(writing);
        assert_eq!(shared.held(), 3 * unit);
        drop(kept);
        assert_eq!(shared.held(), 0);
    }

    #[test]
    fn a_gone_consumer_closes() {
        let (outbox, inbox) = queue(2, 4, 0);
        drop(inbox);
        assert_eq!(offer_one(&outbox, "error"), Offer::Closed);
    }

    #[test]
    fn forms_down_level_once_per_level_and_keep_the_original_otherwise() {
        let json = r#"{"aep":"0.1","id":"e","type":"progress.status","time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a","session":"s","seq":0,"capture":"redacted","data":{"message":"secret words","phase":"test"}}"#;
        let event = EventRef::from_json(json).unwrap();
        let original = Arc::new(Stored::new(&event, json.as_bytes()));
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
            delivered(Capture::Full, Some(Capture::Metadata)),
            Delivered::Lowered(Capture::Metadata)
        );
        assert_eq!(
            delivered(Capture::Metadata, Some(Capture::Full)),
            Delivered::Original
        );
        assert_eq!(
            delivered(Capture::Metadata, Some(Capture::Redacted)),
            Delivered::Checked(Capture::Metadata)
        );
        assert_eq!(delivered(Capture::Redacted, None), Delivered::Original);
    }

    /// An event that under-declares its capture: `metadata` (by default)
    /// with a `full` member and a `redacted` one.
    const LYING: &str = r#"{"aep":"0.1","id":"e","type":"tool.requested","time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a","session":"s","seq":0,"data":{"tool":{"name":"Bash","call_id":"c1"},"args":{"cmd":"cat /etc/shadow SECRET"},"args_redacted":{"cmd":"cat REDACTED-SECRET"}}}"#;

    #[test]
    fn a_ceiling_never_passes_members_above_it_whatever_the_event_declares() {
        let event = EventRef::from_json(LYING).unwrap();
        let original = Arc::new(Stored::new(&event, LYING.as_bytes()));
        let mut forms = Forms::new(&event, &original);
        for ceiling in [Capture::Redacted, Capture::Metadata, Capture::None] {
            let form = forms.at(Some(ceiling));
            let text = String::from_utf8(form.json().to_vec()).unwrap();
            assert!(!text.contains("SECRET"), "{ceiling:?}: {text}");
            assert!(form.capture <= Capture::Metadata, "{ceiling:?}: {text}");
            let delivered = Event::from_json(&text).unwrap();
            assert!(delivered.validate_capture().is_ok(), "{ceiling:?}: {text}");
        }
        // Without a ceiling, or at `full`, the consumer asked for what was
        // sent, byte for byte.
        assert!(Arc::ptr_eq(&forms.at(None), &original));
        assert!(Arc::ptr_eq(&forms.at(Some(Capture::Full)), &original));
    }

    #[test]
    fn an_honest_event_under_a_higher_ceiling_is_delivered_as_received() {
        let json = r#"{"aep":"0.1","id":"e","type":"tool.requested","time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a","session":"s","seq":0,"capture":"redacted","data":{"tool":{"name":"Bash","call_id":"c1"},"args_redacted":{"cmd":"ls"}}}"#;
        let event = EventRef::from_json(json).unwrap();
        let original = Arc::new(Stored::new(&event, json.as_bytes()));
        let mut forms = Forms::new(&event, &original);
        assert!(Arc::ptr_eq(&forms.at(Some(Capture::Redacted)), &original));
    }
}
