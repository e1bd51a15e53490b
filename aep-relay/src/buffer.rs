//! The replay buffers (AEP-0003 §5): per session, ordered by
//! `(epoch, seq)`, admission deduplicated on `(source, id)`, at most
//! `depth` entries and `max_session_bytes` bytes (oldest position
//! evicted), at most `max_sessions` sessions and `max_total_bytes` bytes
//! over all of them (least recently written evicted).
//!
//! Eviction is never silent: each session remembers the highest key it
//! evicted, and a resume from a position below it is told
//! `replay-exhausted`. A session evicted whole leaves a tombstone (at
//! most `max_sessions` of them) with that key, so a resume into it is told
//! the same, with the first position the relay could still hold.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;

use crate::stored::{Key, Stored};

/// The earliest position a replay can still serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Earliest {
    pub epoch: u64,
    pub seq: u64,
}

/// What a replay from one position gives, read whole (tests read the
/// buffer so; the relay reads it through a [`Cursor`]).
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct Replay {
    /// Set when the position predates what is held.
    pub exhausted: Option<Earliest>,
    pub events: Vec<Arc<Stored>>,
}

/// Where a replay of one session stands: see [`Buffers::cursor`].
#[derive(Debug, Clone)]
pub(crate) struct Cursor {
    session: String,
    /// Served strictly after this key (`None`: from the start).
    after: Option<Key>,
    /// The last entry held when the replay began (`None`: none held):
    /// later ones are delivered live.
    until: Option<Key>,
    done: bool,
}

impl Cursor {
    /// The session this cursor reads.
    pub fn session(&self) -> &str {
        &self.session
    }
}

/// What one read of a [`Cursor`] gives.
#[derive(Debug, Default)]
pub(crate) struct Read {
    /// Set when entries between the cursor and what is held were evicted.
    pub exhausted: Option<Earliest>,
    pub events: Vec<Arc<Stored>>,
    /// Nothing more to read.
    pub done: bool,
}

#[derive(Debug, Default)]
struct Session {
    entries: VecDeque<(Key, Arc<Stored>)>,
    ids: HashSet<Arc<[u8]>>,
    evicted: Option<Key>,
    tick: u64,
    /// The bytes of `entries`.
    bytes: usize,
}

/// Outcome of offering an event to the buffers.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Kept for replay.
    Buffered,
    /// Already held under the same `(source, id)`: not kept twice.
    Duplicate,
    /// Not kept (no session, or `agent.*`): live only.
    LiveOnly,
}

#[derive(Debug)]
pub(crate) struct Buffers {
    depth: usize,
    max_sessions: usize,
    max_session_bytes: usize,
    max_total_bytes: usize,
    sessions: HashMap<Arc<str>, Session>,
    /// Write recency: tick → session.
    recency: BTreeMap<u64, Arc<str>>,
    /// Evicted sessions' last keys, by a keyed hash of the session id:
    /// a tombstone costs the same whatever the id's length, so ids of
    /// evicted sessions cannot hold memory the byte bounds do not count.
    tombstones: HashMap<u64, Key>,
    tombstone_order: VecDeque<u64>,
    tombstone_hasher: RandomState,
    tick: u64,
    bytes: usize,
    events: usize,
    /// Sessions evicted whole since [`Buffers::take_evicted`] last ran.
    evicted: Vec<Arc<str>>,
    /// See [`Buffers::unread_before_new`].
    #[cfg(feature = "nats")]
    unread_before_new: bool,
}

impl Buffers {
    pub fn new(depth: usize, max_sessions: usize) -> Buffers {
        Buffers {
            depth,
            max_sessions,
            max_session_bytes: usize::MAX,
            max_total_bytes: usize::MAX,
            sessions: HashMap::new(),
            recency: BTreeMap::new(),
            tombstones: HashMap::new(),
            tombstone_order: VecDeque::new(),
            tombstone_hasher: RandomState::new(),
            tick: 0,
            bytes: 0,
            events: 0,
            evicted: Vec::new(),
            #[cfg(feature = "nats")]
            unread_before_new: false,
        }
    }

    /// Bounds the bytes held: `per_session` for each session (its
    /// oldest entries evicted past it), `total` over all of them (the
    /// least recently written sessions evicted past it).
    pub fn with_bytes(mut self, per_session: usize, total: usize) -> Buffers {
        self.max_session_bytes = per_session;
        self.max_total_bytes = total.max(per_session);
        self
    }

    /// Whether the buffer holds `stored` (the same `source` and `id`):
    /// a redelivery another node of a cluster was sent.
    #[cfg(feature = "nats")]
    pub fn holds(&self, stored: &Stored) -> bool {
        stored
            .session
            .as_ref()
            .and_then(|name| self.sessions.get(name))
            .is_some_and(|session| session.ids.contains(&stored.dedupe))
    }

    /// Offers `stored` for replay.
    pub fn admit(&mut self, stored: &Arc<Stored>) -> Admission {
        let Some(name) = stored.session.clone() else {
            return Admission::LiveOnly;
        };
        if stored.agent_scoped {
            return Admission::LiveOnly;
        }
        // Hashing the session once on the common path: a new session at
        // the cap first makes room.
        if self.sessions.len() >= self.max_sessions && !self.sessions.contains_key(&name) {
            self.make_room();
        }
        let tomb = self.tombstone_hasher.hash_one(&*name);
        let session = self.sessions.entry(name.clone()).or_insert_with(|| {
            let evicted = self.tombstones.remove(&tomb);
            if evicted.is_some() {
                self.tombstone_order.retain(|t| *t != tomb);
            }
            Session {
                evicted,
                ..Session::default()
            }
        });
        // Only a write to another session than the last one changes the
        // recency order (tick 0: not in it yet).
        if session.tick == 0 || session.tick != self.tick {
            self.tick += 1;
            self.recency.remove(&session.tick);
            session.tick = self.tick;
            self.recency.insert(self.tick, name.clone());
        }

        if session.ids.contains(&stored.dedupe) {
            return Admission::Duplicate;
        }
        let key = stored.key().unwrap_or_else(|| after_last(session));
        #[cfg(feature = "nats")]
        if self.unread_before_new && session.entries.is_empty() && session.evicted.is_none() {
            session.evicted = Some(before(&key));
        }
        let size = stored.size();
        if size > self.max_session_bytes {
            // Larger than a session may hold: delivered live only, and
            // counted as evicted so that a resume across it is told
            // `replay-exhausted` rather than silently skipping it.
            session.evicted = session.evicted.max(Some(key));
            return Admission::LiveOnly;
        }
        session.ids.insert(stored.dedupe.clone());
        let at = session
            .entries
            .iter()
            .rposition(|(k, _)| *k <= key)
            .map_or(0, |i| i + 1);
        if at == session.entries.len() {
            session.entries.push_back((key, stored.clone()));
        } else {
            session.entries.insert(at, (key, stored.clone()));
        }
        session.bytes += size;
        self.bytes += size;
        self.events += 1;
        while session.entries.len() > self.depth || session.bytes > self.max_session_bytes {
            let Some((key, gone)) = session.entries.pop_front() else {
                break;
            };
            session.ids.remove(&gone.dedupe);
            session.evicted = session.evicted.max(Some(key));
            session.bytes -= gone.size();
            self.bytes -= gone.size();
            self.events -= 1;
        }
        // Over the bound on all sessions: the least recently written go
        // first (never this one, which is within its own bound, itself
        // at most the global one).
        while self.bytes > self.max_total_bytes {
            match self.recency.first_key_value() {
                Some((_, oldest)) if *oldest != name => {
                    self.evict_oldest();
                }
                _ => break,
            }
        }
        Admission::Buffered
    }

    /// The sessions evicted whole since the last call (their claims go
    /// with them).
    pub fn take_evicted(&mut self) -> Vec<Arc<str>> {
        std::mem::take(&mut self.evicted)
    }

    /// Takes every held session to have lost what came before its
    /// earliest entry, unless an eviction already says more: what a node
    /// of a cluster read from a stream that discarded events, so that a
    /// resume from before what it holds is told `replay-exhausted`, as on
    /// a node that saw them evicted.
    #[cfg(feature = "nats")]
    pub fn assume_evicted_before_held(&mut self) {
        for session in self.sessions.values_mut() {
            let Some((first, _)) = session.entries.front() else {
                continue;
            };
            if session.evicted.is_none() {
                session.evicted = Some(before(first));
            }
        }
    }

    /// While `on`, a session made anew is taken to have lost what came
    /// before its first entry: a node of a cluster that found messages of
    /// the stream discarded before it read them.
    #[cfg(feature = "nats")]
    pub fn unread_before_new(&mut self, on: bool) {
        self.unread_before_new = on;
    }

    /// Evicts the least recently written session while at the cap.
    fn make_room(&mut self) {
        while self.sessions.len() >= self.max_sessions {
            if !self.evict_oldest() {
                return;
            }
        }
    }

    /// Evicts the least recently written session whole, leaving a
    /// tombstone; `false` when there is none.
    fn evict_oldest(&mut self) -> bool {
        let Some((_, name)) = self.recency.pop_first() else {
            return false;
        };
        let Some(session) = self.sessions.remove(&name) else {
            return true;
        };
        self.evicted.push(name.clone());
        self.bytes -= session.bytes;
        self.events -= session.entries.len();
        let last = session.entries.back().map(|(k, _)| *k).max(session.evicted);
        if let Some(last) = last {
            let tomb = self.tombstone_hasher.hash_one(&*name);
            self.tombstones.insert(tomb, last);
            self.tombstone_order.push_back(tomb);
            while self.tombstone_order.len() > self.max_sessions {
                if let Some(old) = self.tombstone_order.pop_front() {
                    self.tombstones.remove(&old);
                }
            }
        }
        true
    }

    /// The entries of `session` strictly after `after` (`None`: all that
    /// is held, asked from the session's start), and whether that
    /// predates what is held: a [`Cursor`] read whole.
    #[cfg(test)]
    pub fn replay(&self, session: &str, after: Option<Key>) -> Replay {
        let mut cursor = self.cursor(session, after);
        let mut replay = Replay {
            exhausted: None,
            events: Vec::new(),
        };
        loop {
            let read = self.read(&mut cursor, usize::MAX);
            replay.exhausted = replay.exhausted.or(read.exhausted);
            replay.events.extend(read.events);
            if read.done {
                return replay;
            }
        }
    }

    /// A replay of `session` strictly after `after` (`None`: from the
    /// session's start), up to the last entry held now: what arrives
    /// later is the live subscription's. It holds no event; each
    /// [`read`](Buffers::read) takes the next ones from the buffer as it
    /// is then. (An event that arrives later with a position below the
    /// last one held, before the cursor passes it, is read by the cursor
    /// as well as delivered live: a duplicate, which AEP-0003 allows,
    /// never a gap.)
    pub fn cursor(&self, session: &str, after: Option<Key>) -> Cursor {
        Cursor {
            session: session.to_owned(),
            after,
            until: self
                .sessions
                .get(session)
                .and_then(|held| held.entries.back().map(|(k, _)| *k)),
            done: false,
        }
    }

    /// A replay of everything `session` holds now (`from: "all"`): from
    /// its earliest held entry, so what was evicted before it began is
    /// not said, while what is evicted before the cursor reaches it is.
    pub fn cursor_held(&self, session: &str) -> Cursor {
        let evicted = self.sessions.get(session).and_then(|held| held.evicted);
        let mut cursor = self.cursor(session, evicted);
        if evicted.is_none() {
            cursor.after = None;
        }
        cursor
    }

    /// Up to `max` events of `cursor` from the buffer as it is now, moving
    /// the cursor past them. Entries evicted before the cursor reached
    /// them are said (`exhausted`, with the earliest position still held),
    /// once, and the cursor goes on from what is held: never a silent
    /// skip.
    #[cfg(test)]
    pub fn read(&self, cursor: &mut Cursor, max: usize) -> Read {
        self.read_within(cursor, max, usize::MAX)
    }

    /// [`Buffers::read`], and events of at most `max_bytes` together (by
    /// [`Stored::size`]), though always one: an event larger than that is
    /// read alone. A read that says `exhausted` holds no events.
    pub fn read_within(&self, cursor: &mut Cursor, max: usize, max_bytes: usize) -> Read {
        let mut read = Read::default();
        if cursor.done {
            read.done = true;
            return read;
        }
        let Some(held) = self.sessions.get(cursor.session.as_str()) else {
            let tomb = self.tombstone_hasher.hash_one(cursor.session.as_str());
            read.exhausted = match self.tombstones.get(&tomb) {
                Some(last) if cursor.after.is_none_or(|after| *last > after) => Some(Earliest {
                    epoch: last.epoch,
                    seq: u64::try_from(last.seq + 1).unwrap_or(0),
                }),
                _ => None,
            };
            cursor.done = true;
            read.done = true;
            return read;
        };
        if let Some(evicted) = held.evicted {
            if cursor.after.is_none_or(|after| evicted > after) {
                read.exhausted = Some(earliest(held).unwrap_or(Earliest {
                    epoch: evicted.epoch,
                    seq: u64::try_from(evicted.seq + 1).unwrap_or(0),
                }));
                cursor.after = Some(evicted);
                // Said alone: the events after it come with the next
                // read, so a reader that stalls on writing the comment
                // holds none of them.
                return read;
            }
        }
        let start = match cursor.after {
            Some(after) => held.entries.partition_point(|(k, _)| *k <= after),
            None => 0,
        };
        let (mut bytes, mut full) = (0usize, false);
        for (key, stored) in held.entries.range(start..) {
            if cursor.until.is_none_or(|until| *key > until) {
                break;
            }
            bytes = bytes.saturating_add(stored.size());
            if read.events.len() == max || (!read.events.is_empty() && bytes > max_bytes) {
                full = true;
                break;
            }
            read.events.push(stored.clone());
            cursor.after = Some(*key);
        }
        if !full {
            cursor.done = true;
        }
        read.done = cursor.done;
        read
    }

    /// The sessions held, most recently written last.
    pub fn names(&self) -> Vec<Arc<str>> {
        self.recency.values().cloned().collect()
    }

    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn events(&self) -> usize {
        self.events
    }
}

/// The key for an event without `seq`: right after the last held entry.
fn after_last(session: &Session) -> Key {
    match session.entries.back() {
        Some((last, _)) => Key {
            minor: last.minor + 1,
            ..*last
        },
        None => {
            let base = session.evicted.unwrap_or(Key::after(0, -1));
            Key {
                minor: base.minor + 1,
                ..base
            }
        }
    }
}

/// The first positioned entry of a session.
/// The key just before `key`.
#[cfg(feature = "nats")]
fn before(key: &Key) -> Key {
    if key.minor > 0 {
        Key {
            minor: key.minor - 1,
            ..*key
        }
    } else {
        Key::after(key.epoch, key.seq - 1)
    }
}

fn earliest(session: &Session) -> Option<Earliest> {
    session.entries.iter().find_map(|(k, s)| {
        s.seq.map(|seq| Earliest {
            epoch: k.epoch,
            seq,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use aep::Event;

    fn stored(session: &str, id: &str, epoch: u64, seq: Option<u64>) -> Arc<Stored> {
        let mut json = format!(
            r#"{{"aep":"0.1","id":"{id}","type":"progress.status","time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a","session":"{session}","epoch":{epoch}"#
        );
        if let Some(seq) = seq {
            json.push_str(&format!(r#","seq":{seq}"#));
        }
        json.push('}');
        Arc::new(Stored::new(
            &Event::from_json(&json).unwrap(),
            json.as_bytes(),
        ))
    }

    fn seqs(replay: &Replay) -> Vec<Option<u64>> {
        replay.events.iter().map(|s| s.seq).collect()
    }

    #[test]
    fn orders_dedupes_and_replays_strictly_after() {
        let mut b = Buffers::new(10, 10);
        assert_eq!(b.admit(&stored("s", "a", 0, Some(2))), Admission::Buffered);
        assert_eq!(b.admit(&stored("s", "b", 0, Some(0))), Admission::Buffered);
        assert_eq!(b.admit(&stored("s", "c", 0, Some(1))), Admission::Buffered);
        assert_eq!(b.admit(&stored("s", "a", 0, Some(2))), Admission::Duplicate);
        assert_eq!(seqs(&b.replay("s", None)), [Some(0), Some(1), Some(2)]);
        let r = b.replay("s", Some(Key::after(0, 0)));
        assert_eq!(seqs(&r), [Some(1), Some(2)]);
        assert!(r.exhausted.is_none());
        assert_eq!(b.events(), 3);
    }

    #[test]
    fn eviction_is_reported_with_the_earliest_held() {
        let mut b = Buffers::new(3, 10);
        for seq in 0..5 {
            b.admit(&stored("s", &format!("e{seq}"), 1, Some(seq)));
        }
        let r = b.replay("s", Some(Key::after(1, 0)));
        assert_eq!(r.exhausted, Some(Earliest { epoch: 1, seq: 2 }));
        assert_eq!(seqs(&r), [Some(2), Some(3), Some(4)]);
        // From the last evicted position on, nothing is missing.
        let r = b.replay("s", Some(Key::after(1, 1)));
        assert!(r.exhausted.is_none());
        // From the start: events were evicted, so that is said too.
        assert!(b.replay("s", Some(Key::after(0, -1))).exhausted.is_some());
        // Everything held, with no position asked, is asked from the
        // start: a history read learns that its start is gone.
        assert_eq!(
            b.replay("s", None).exhausted,
            Some(Earliest { epoch: 1, seq: 2 })
        );
        // An evicted event redelivered is not re-admitted into the middle.
        b.admit(&stored("s", "e0", 1, Some(0)));
        assert_eq!(seqs(&b.replay("s", None)), [Some(2), Some(3), Some(4)]);
    }

    #[cfg(feature = "nats")]
    #[test]
    fn a_session_made_after_unread_messages_says_its_start_may_be_gone() {
        let mut b = Buffers::new(10, 10);
        b.admit(&stored("known", "k0", 1, Some(0)));
        b.unread_before_new(true);
        b.admit(&stored("known", "k1", 1, Some(1)));
        b.admit(&stored("late", "l8", 1, Some(8)));
        b.unread_before_new(false);
        b.admit(&stored("fresh", "f0", 1, Some(0)));
        // A session held before, and one made once caught up: as ever.
        assert!(b
            .replay("known", Some(Key::after(0, -1)))
            .exhausted
            .is_none());
        assert!(b
            .replay("fresh", Some(Key::after(0, -1)))
            .exhausted
            .is_none());
        // One first read after the gap: what came before it is said gone,
        // from its previous position on nothing is missing.
        let r = b.replay("late", Some(Key::after(1, 0)));
        assert_eq!(r.exhausted, Some(Earliest { epoch: 1, seq: 8 }));
        assert!(b.replay("late", Some(Key::after(1, 7))).exhausted.is_none());
    }

    #[test]
    fn least_recently_written_session_goes_and_leaves_a_tombstone() {
        let mut b = Buffers::new(10, 2);
        b.admit(&stored("old", "o1", 0, Some(0)));
        b.admit(&stored("new", "n1", 0, Some(0)));
        b.admit(&stored("old", "o2", 0, Some(1))); // refreshes `old`
        b.admit(&stored("third", "t1", 0, Some(0))); // evicts `new`
        assert_eq!(b.sessions(), 2);
        assert_eq!(b.replay("old", None).events.len(), 2);
        let gone = b.replay("new", Some(Key::after(0, -1)));
        assert!(gone.events.is_empty());
        assert_eq!(gone.exhausted, Some(Earliest { epoch: 0, seq: 1 }));
        assert_eq!(
            b.replay("new", None).exhausted,
            Some(Earliest { epoch: 0, seq: 1 })
        );
        assert!(b
            .replay("never", Some(Key::after(0, -1)))
            .exhausted
            .is_none());
        assert_eq!(b.events(), 3);
    }

    #[test]
    fn a_tombstone_keeps_no_copy_of_the_session_id() {
        let mut b = Buffers::new(10, 1);
        let long = "s".repeat(64 * 1024);
        let first = stored(&long, "e0", 0, Some(0));
        let name = first.session.clone().unwrap();
        b.admit(&first);
        drop(first);
        b.admit(&stored("t", "e1", 0, Some(0))); // evicts the long one
        b.take_evicted();
        assert_eq!(Arc::strong_count(&name), 1, "the evicted id is still held");
        // The tombstone still tells a resume into it what was lost.
        assert_eq!(
            b.replay(&long, Some(Key::after(0, -1))).exhausted,
            Some(Earliest { epoch: 0, seq: 1 })
        );
    }

    #[test]
    fn repeated_writes_keep_a_session_most_recent() {
        let mut b = Buffers::new(10, 2);
        b.admit(&stored("a", "a1", 0, Some(0)));
        b.admit(&stored("b", "b1", 0, Some(0)));
        b.admit(&stored("a", "a2", 0, Some(1)));
        b.admit(&stored("a", "a3", 0, Some(2)));
        b.admit(&stored("a", "a2", 0, Some(1))); // a duplicate refreshes too
        b.admit(&stored("c", "c1", 0, Some(0))); // evicts `b`
        assert_eq!(b.replay("a", None).events.len(), 3);
        assert!(b.replay("b", None).events.is_empty());
        b.admit(&stored("c", "c2", 0, Some(1)));
        b.admit(&stored("d", "d1", 0, Some(0))); // evicts `a`, not `c`
        assert!(b.replay("a", None).events.is_empty());
        assert_eq!(b.replay("c", None).events.len(), 2);
        assert_eq!((b.sessions(), b.events()), (2, 3));
    }

    #[test]
    fn the_first_session_is_evicted_like_any() {
        let mut b = Buffers::new(10, 1);
        b.admit(&stored("a", "a1", 0, Some(0)));
        b.admit(&stored("a", "a2", 0, Some(1)));
        b.admit(&stored("b", "b1", 0, Some(0)));
        assert_eq!(b.sessions(), 1);
        assert!(b.replay("a", None).events.is_empty());
        assert_eq!(b.events(), 1);
    }

    #[test]
    fn seqless_entries_follow_the_last_position() {
        let mut b = Buffers::new(10, 10);
        b.admit(&stored("s", "a", 0, Some(0)));
        b.admit(&stored("s", "cmd", 0, None));
        b.admit(&stored("s", "b", 0, Some(1)));
        assert_eq!(seqs(&b.replay("s", None)), [Some(0), None, Some(1)]);
        // Resuming after seq 0 includes what arrived after it.
        assert_eq!(
            seqs(&b.replay("s", Some(Key::after(0, 0)))),
            [None, Some(1)]
        );
    }

    #[test]
    fn a_cursor_reads_within_a_byte_bound_and_always_one_event() {
        let mut b = Buffers::new(10, 10);
        for seq in 0..5 {
            b.admit(&stored("s", &format!("e{seq}"), 0, Some(seq)));
        }
        let size = b.replay("s", None).events[0].size();
        let mut cursor = b.cursor("s", None);
        let read = b.read_within(&mut cursor, 64, 2 * size + size / 2);
        assert_eq!(read.events.len(), 2);
        assert!(!read.done);
        // A bound below one event still reads one.
        let read = b.read_within(&mut cursor, 64, 1);
        assert_eq!(
            read.events.iter().map(|s| s.seq).collect::<Vec<_>>(),
            [Some(2)]
        );
        assert!(!read.done);
        let read = b.read_within(&mut cursor, 64, usize::MAX);
        assert_eq!(read.events.len(), 2);
        assert!(read.done);
    }

    #[test]
    fn a_cursor_reads_what_was_held_in_chunks_and_says_what_went_before_it() {
        let mut b = Buffers::new(4, 10);
        for seq in 0..4 {
            b.admit(&stored("s", &format!("e{seq}"), 0, Some(seq)));
        }
        let mut cursor = b.cursor("s", None);
        let read = b.read(&mut cursor, 2);
        assert_eq!(
            read.events.iter().map(|s| s.seq).collect::<Vec<_>>(),
            [Some(0), Some(1)]
        );
        assert!(read.exhausted.is_none() && !read.done);
        // Two more arrive (live's, not the cursor's) and push 0 and 1 out:
        // nothing the cursor still owed was evicted.
        b.admit(&stored("s", "e4", 0, Some(4)));
        b.admit(&stored("s", "e5", 0, Some(5)));
        let read = b.read(&mut cursor, 2);
        assert!(read.exhausted.is_none());
        assert_eq!(
            read.events.iter().map(|s| s.seq).collect::<Vec<_>>(),
            [Some(2), Some(3)]
        );
        let read = b.read(&mut cursor, 2);
        assert!(
            read.events.is_empty() && read.done,
            "seq 4 and 5 are live's"
        );

        // A cursor overtaken by eviction says so, once, with the earliest
        // held, and owes nothing past what was held when it began.
        let mut cursor = b.cursor_held("s");
        assert_eq!(b.read(&mut cursor, 1).events[0].seq, Some(2));
        for seq in 6..12 {
            b.admit(&stored("s", &format!("e{seq}"), 0, Some(seq)));
        }
        let read = b.read(&mut cursor, 1);
        assert_eq!(read.exhausted, Some(Earliest { epoch: 0, seq: 8 }));
        assert!(read.events.is_empty(), "said alone");
        let read = b.read(&mut cursor, 1);
        assert!(read.exhausted.is_none());
        assert!(read.events.is_empty() && read.done);

        // A session evicted whole while its cursor waited: said too.
        let mut b = Buffers::new(4, 1);
        b.admit(&stored("s", "e0", 0, Some(0)));
        b.admit(&stored("s", "e1", 0, Some(1)));
        let mut cursor = b.cursor("s", None);
        assert_eq!(b.read(&mut cursor, 1).events.len(), 1);
        b.admit(&stored("t", "t0", 0, Some(0)));
        let read = b.read(&mut cursor, 1);
        assert_eq!(read.exhausted, Some(Earliest { epoch: 0, seq: 2 }));
        assert!(read.done);
    }

    #[test]
    fn agent_events_are_live_only() {
        let mut b = Buffers::new(10, 10);
        let json = r#"{"aep":"0.1","id":"h","type":"agent.heartbeat","time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a"}"#;
        let s = Arc::new(Stored::new(
            &Event::from_json(json).unwrap(),
            json.as_bytes(),
        ));
        assert_eq!(b.admit(&s), Admission::LiveOnly);
        assert_eq!(b.sessions(), 0);
    }

    #[test]
    fn a_session_holds_at_most_its_bytes_and_says_what_it_evicted() {
        let one = stored("s", "e0", 0, Some(0)).size();
        let mut b = Buffers::new(100, 10).with_bytes(3 * one + one / 2, usize::MAX);
        for seq in 0..6 {
            b.admit(&stored("s", &format!("e{seq}"), 0, Some(seq)));
        }
        assert_eq!(b.events(), 3);
        assert!(b.bytes() <= 3 * one + one / 2);
        let r = b.replay("s", Some(Key::after(0, 0)));
        assert_eq!(r.exhausted, Some(Earliest { epoch: 0, seq: 3 }));
        assert_eq!(seqs(&r), [Some(3), Some(4), Some(5)]);
    }

    #[test]
    fn an_event_larger_than_a_session_may_hold_is_live_only_and_said() {
        let one = stored("s", "e0", 0, Some(0)).size();
        let mut b = Buffers::new(100, 10).with_bytes(one - 1, usize::MAX);
        assert_eq!(b.admit(&stored("s", "e0", 0, Some(0))), Admission::LiveOnly);
        assert_eq!((b.events(), b.bytes()), (0, 0));
        let r = b.replay("s", Some(Key::after(0, -1)));
        assert!(r.exhausted.is_some(), "a resume across it is told");
    }

    #[test]
    fn past_the_global_bytes_the_least_recently_written_go_first() {
        let one = stored("a", "a0", 0, Some(0)).size();
        let mut b = Buffers::new(100, 100).with_bytes(4 * one, 4 * one + one / 2);
        b.admit(&stored("a", "a0", 0, Some(0)));
        b.admit(&stored("a", "a1", 0, Some(1)));
        b.admit(&stored("b", "b0", 0, Some(0)));
        b.admit(&stored("c", "c0", 0, Some(0)));
        b.admit(&stored("b", "b1", 0, Some(1))); // `a` is now the oldest
        assert_eq!(b.sessions(), 2);
        assert!(b.bytes() <= 4 * one + one / 2);
        assert!(b.replay("a", None).events.is_empty());
        assert_eq!(
            b.replay("a", Some(Key::after(0, -1))).exhausted,
            Some(Earliest { epoch: 0, seq: 2 })
        );
        assert_eq!(b.replay("b", None).events.len(), 2);
        assert_eq!(b.replay("c", None).events.len(), 1);
    }
}
