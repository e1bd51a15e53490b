//! The emitter's bounded queue (AEP-0003 §8.4): when it is full, `debug`
//! and `info` events go first (oldest first) and every drop is counted;
//! when only `notice` and above are queued, the caller waits for room.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use aep::Severity;
use tokio::sync::Notify;

/// One queued line and its severity.
#[derive(Debug, Clone)]
pub(crate) struct Queued {
    pub line: String,
    pub severity: Severity,
}

#[derive(Debug)]
struct Inner {
    items: VecDeque<Queued>,
    closed: bool,
}

/// A bounded, severity-aware queue shared by the caller and the
/// connection task.
#[derive(Debug, Clone)]
pub(crate) struct Outbox {
    inner: Arc<Mutex<Inner>>,
    capacity: usize,
    dropped: Arc<AtomicU64>,
    /// Signalled when an item is queued or the box closes.
    filled: Arc<Notify>,
    /// Signalled when an item is taken.
    drained: Arc<Notify>,
}

/// The outbox was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Closed;

/// Why [`Outbox::try_push`] did not queue a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TryPush {
    /// Full of `notice`-and-above lines.
    Full,
    /// Closed.
    Closed,
}

fn low(severity: Severity) -> bool {
    severity <= Severity::Info
}

impl Outbox {
    pub fn new(capacity: usize) -> Outbox {
        Outbox {
            inner: Arc::new(Mutex::new(Inner {
                items: VecDeque::new(),
                closed: false,
            })),
            capacity: capacity.max(1),
            dropped: Arc::new(AtomicU64::new(0)),
            filled: Arc::new(Notify::new()),
            drained: Arc::new(Notify::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `item`, dropping `debug`/`info` first when full; waits for
    /// room when everything queued (and `item`) is `notice` or above.
    pub async fn push(&self, mut item: Queued) -> Result<(), Closed> {
        loop {
            let drained = self.drained.notified();
            match self.offer(item) {
                Ok(()) => return Ok(()),
                Err((TryPush::Closed, _)) => return Err(Closed),
                Err((TryPush::Full, back)) => item = back,
            }
            drained.await;
        }
    }

    /// Queues `item` without waiting: as [`push`](Outbox::push), except
    /// that when the box is full of `notice`-and-above lines and `item` is
    /// one too, it is handed back (`Full`) instead of waiting for room.
    pub fn try_push(&self, item: Queued) -> Result<(), TryPush> {
        self.offer(item).map_err(|(why, _)| why)
    }

    /// One attempt of [`push`](Outbox::push): queued (or, when full, a
    /// `debug`/`info` line dropped to make room, or `item` itself dropped
    /// when it is one), else why not, with `item` handed back.
    fn offer(&self, item: Queued) -> Result<(), (TryPush, Queued)> {
        let mut inner = self.lock();
        if inner.closed {
            return Err((TryPush::Closed, item));
        }
        if inner.items.len() < self.capacity {
            inner.items.push_back(item);
            drop(inner);
            self.filled.notify_one();
            return Ok(());
        }
        if let Some(at) = inner.items.iter().position(|q| low(q.severity)) {
            inner.items.remove(at);
            inner.items.push_back(item);
            drop(inner);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            self.filled.notify_one();
            return Ok(());
        }
        if low(item.severity) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        Err((TryPush::Full, item))
    }

    /// The next item, waiting for one; `None` once closed and empty.
    pub async fn pop(&self) -> Option<Queued> {
        loop {
            let filled = self.filled.notified();
            {
                let mut inner = self.lock();
                if let Some(item) = inner.items.pop_front() {
                    drop(inner);
                    self.drained.notify_one();
                    return Some(item);
                }
                if inner.closed {
                    return None;
                }
            }
            filled.await;
        }
    }

    /// Puts items back at the front (a send that did not go through).
    pub fn unpop(&self, item: Queued) {
        self.lock().items.push_front(item);
        self.filled.notify_one();
    }

    /// No more pushes; `pop` drains what is left, then ends.
    pub fn close(&self) {
        self.lock().closed = true;
        self.filled.notify_waiters();
        self.drained.notify_waiters();
    }

    pub fn len(&self) -> usize {
        self.lock().items.len()
    }

    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn q(line: &str, severity: Severity) -> Queued {
        Queued {
            line: line.into(),
            severity,
        }
    }

    #[tokio::test]
    async fn full_box_drops_low_severity_first_and_counts() {
        let outbox = Outbox::new(2);
        outbox.push(q("a", Severity::Info)).await.unwrap();
        outbox.push(q("b", Severity::Error)).await.unwrap();
        outbox.push(q("c", Severity::Warning)).await.unwrap(); // drops "a"
        outbox.push(q("d", Severity::Debug)).await.unwrap(); // dropped itself
        assert_eq!(outbox.dropped(), 2);
        assert_eq!(outbox.pop().await.unwrap().line, "b");
        assert_eq!(outbox.pop().await.unwrap().line, "c");
    }

    #[tokio::test]
    async fn notice_and_above_wait_for_room() {
        let outbox = Outbox::new(1);
        outbox.push(q("a", Severity::Notice)).await.unwrap();
        let blocked = tokio::time::timeout(
            Duration::from_millis(50),
            outbox.push(q("b", Severity::Error)),
        )
        .await;
        assert!(
            blocked.is_err(),
            "a full box of notice+ makes the caller wait"
        );
        let other = outbox.clone();
        let pusher = tokio::spawn(async move { other.push(q("b", Severity::Error)).await });
        assert_eq!(outbox.pop().await.unwrap().line, "a");
        tokio::time::timeout(Duration::from_secs(5), pusher)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(outbox.pop().await.unwrap().line, "b");
        assert_eq!(outbox.dropped(), 0);
    }

    #[tokio::test]
    async fn try_push_hands_back_a_line_a_full_box_has_no_room_for() {
        let outbox = Outbox::new(1);
        outbox.try_push(q("a", Severity::Notice)).unwrap();
        assert_eq!(outbox.try_push(q("b", Severity::Error)), Err(TryPush::Full));
        assert_eq!(outbox.try_push(q("c", Severity::Info)), Ok(()));
        assert_eq!(outbox.dropped(), 1);
        assert_eq!(outbox.pop().await.unwrap().line, "a");
        outbox.try_push(q("d", Severity::Notice)).unwrap();
        outbox.close();
        assert_eq!(
            outbox.try_push(q("e", Severity::Notice)),
            Err(TryPush::Closed)
        );
    }

    #[tokio::test]
    async fn close_drains_then_ends() {
        let outbox = Outbox::new(4);
        outbox.push(q("a", Severity::Info)).await.unwrap();
        outbox.close();
        assert!(outbox.push(q("b", Severity::Info)).await.is_err());
        assert_eq!(outbox.pop().await.unwrap().line, "a");
        assert!(outbox.pop().await.is_none());
    }
}
