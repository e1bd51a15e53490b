//! The relay's shared state: buffers, subscriptions and routes behind one
//! lock, taken per chunk of a batch (whoever waits goes first between two
//! chunks) and never held across an await. A replay's cursors are placed
//! under the lock in the same critical section that registers the
//! subscription, so replay then live has no gap and no duplicate at the
//! seam; the replay then reads the buffer a chunk at a time, and filters
//! and encodes outside the lock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use aep::filter::Filter;
use aep::{Capture, EventRef};
use bytes::Bytes;
use tokio::sync::mpsc;

use crate::budget::Budget;
use crate::buffer::{Admission, Buffers, Cursor, Earliest};
use crate::config::Config;
use crate::fanout::{self, Forms, Outbox, Subscriber};
use crate::ingest::Admitted;
use crate::metrics::Metrics;
use crate::routing::{Claiming, Command, Declared, Refused, Roster, Routed, Routes};
use crate::stored::{Key, Stored};

/// The events of a batch buffered and fanned out under one taking of the
/// lock.
pub(crate) const INGEST_CHUNK: usize = 256;

/// The events a replay reads from the buffer under one taking of the
/// lock, and the most it holds for a consumer that does not read.
pub(crate) const REPLAY_CHUNK: usize = 64;

/// The bytes of events a replay reads under one taking of the lock, at
/// most (always one event: a larger one is read alone, and its writer
/// counts it while it is written).
pub(crate) const REPLAY_BYTES: usize = 32 * 1024;

/// The most times a batch yields between two chunks to let the threads
/// waiting for the lock in.
const HANDOFF_YIELDS: usize = 1000;

/// Where a replay starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum From {
    /// Explicit positions: `(session, epoch, seq)`, `seq` -1 for the start.
    Positions(Vec<(String, u64, i128)>),
    /// Every held session from its earliest held position.
    All,
}

/// A subscription request.
pub(crate) struct Request {
    pub filter: Filter,
    pub ceiling: Option<Capture>,
    pub from: Option<From>,
    /// Replay this session's whole buffer too (SSE `live=0` history reads).
    pub history: Option<String>,
    /// Register for live delivery under this id, into this queue.
    pub live: Option<(u64, Outbox)>,
}

/// One item of a replay, in delivery order.
pub(crate) enum ReplayItem {
    /// The asked position predates what the session holds.
    Exhausted {
        session: String,
        earliest: Earliest,
    },
    Event(Arc<Stored>),
}

/// A subscription's replay, read through a cursor per session into the
/// live buffers, [`REPLAY_CHUNK`] events at a time under the lock: a
/// consumer that does not read holds at most one chunk of events, and
/// one evicted before its cursor reached it is said (`Exhausted`, with
/// the earliest position still held), never skipped in silence. Each
/// event is filtered and down-levelled only when the consumer is ready
/// for it.
pub(crate) struct Replay {
    hub: Arc<Hub>,
    cursors: std::collections::VecDeque<Cursor>,
    current: std::vec::IntoIter<Arc<Stored>>,
    filter: Filter,
    ceiling: Option<Capture>,
}

impl Replay {
    /// The events this replay holds now, read from the buffer and not yet
    /// delivered: at most one chunk.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.current.len()
    }
}

impl Iterator for Replay {
    type Item = ReplayItem;

    fn next(&mut self) -> Option<ReplayItem> {
        loop {
            for stored in self.current.by_ref() {
                if let Some(form) = replay_form(&stored, &self.filter, self.ceiling) {
                    return Some(ReplayItem::Event(form));
                }
            }
            let cursor = self.cursors.front_mut()?;
            let read = self
                .hub
                .lock()
                .buffers
                .read_within(cursor, REPLAY_CHUNK, REPLAY_BYTES);
            let session = cursor.session().to_owned();
            if read.done {
                self.cursors.pop_front();
            }
            self.current = read.events.into_iter();
            if let Some(earliest) = read.exhausted {
                return Some(ReplayItem::Exhausted { session, earliest });
            }
        }
    }
}

struct State {
    buffers: Buffers,
    subscribers: Vec<Subscriber>,
    routes: Routes,
}

pub(crate) struct Hub {
    pub config: Config,
    pub metrics: Metrics,
    state: Mutex<State>,
    /// Threads waiting for `state` other than a batch's chunks.
    waiting: AtomicUsize,
    ids: AtomicU64,
}

impl Hub {
    pub fn new(config: Config) -> Hub {
        let commands = Budget::new(config.max_command_bytes);
        let mut metrics = Metrics::default();
        metrics.queued = Budget::new(config.max_queued_bytes);
        metrics.commands = commands.clone();
        metrics.state = Budget::new(config.max_state_bytes);
        Hub {
            state: Mutex::new(State {
                buffers: Buffers::new(config.buffer, config.max_sessions)
                    .with_bytes(config.max_buffer_bytes, config.max_buffered_bytes),
                subscribers: Vec::new(),
                routes: Routes::new(config.claim_grace).with_budget(commands.clone()),
            }),
            metrics,
            config,
            waiting: AtomicUsize::new(0),
            ids: AtomicU64::new(1),
        }
    }

    /// A fresh id for a connection or subscription.
    pub fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    /// The state, for anything but a batch's chunks: counted as waiting
    /// while it waits, so that an ingest lets it in between two chunks.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.waiting.fetch_add(1, Ordering::AcqRel);
        let state = self.lock_own();
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        state
    }

    /// The state, for a batch's chunk.
    fn lock_own(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock would be a bug; the state is
        // still consistent between statements, so keep serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Buffers and fans out `batch`, in order; `from` is the emitting
    /// WebSocket connection, whose positioned events claim their session.
    ///
    /// The lock is taken per chunk of [`INGEST_CHUNK`] events, and whoever
    /// waits for it goes first between two chunks: a subscription, an
    /// unsubscription or a shutdown never waits for a whole batch. Each
    /// queue is judged by its depth when the batch began (or when its
    /// subscription joined, mid-batch), as for a batch fanned out whole;
    /// a subscription registered between two chunks replays the first
    /// and takes the rest live, so there is no gap and no duplicate.
    pub fn ingest(&self, batch: &[Admitted], from: Option<u64>) -> usize {
        let mut duplicates = 0;
        let mut judged: HashMap<u64, usize> = HashMap::new();
        for (i, chunk) in batch.chunks(INGEST_CHUNK).enumerate() {
            if i > 0 {
                self.let_waiters_in();
            }
            let mut state = self.lock_own();
            let state = &mut *state;
            let depths: Vec<usize> = if batch.len() <= INGEST_CHUNK {
                fanout::depths(&state.subscribers)
            } else {
                state
                    .subscribers
                    .iter()
                    .map(|s| *judged.entry(s.id).or_insert_with(|| s.outbox.depth()))
                    .collect()
            };
            let mut cut = 0;
            for admitted in chunk {
                self.metrics.events_in.inc();
                let duplicate = state.buffers.admit(&admitted.stored) == Admission::Duplicate;
                if duplicate {
                    self.metrics.duplicates.inc();
                    duplicates += 1;
                }
                forget_evicted(state);
                if let Some(conn) = from {
                    claim(state, admitted, conn, duplicate);
                }
                cut += fanout::fan_out(
                    &state.subscribers,
                    &depths,
                    &admitted.event,
                    &admitted.stored,
                    &self.metrics,
                );
            }
            self.remove_cut(state, cut);
            self.update_gauges(state);
        }
        duplicates
    }

    /// The claim of a positioned event sent over connection `conn` (see
    /// [`claim`]), for a node of a cluster, whose ingest is the stream's:
    /// `duplicate` when the stream already held it.
    #[cfg(feature = "nats")]
    pub fn claim(&self, admitted: &Admitted, conn: u64, duplicate: bool) {
        claim(&mut self.lock(), admitted, conn, duplicate);
    }

    /// Forwards to the live subscribers the events of `batch` the buffers
    /// hold: copies the NATS server did not store again (within its
    /// duplicate window), sent to one node of a cluster. A live
    /// subscription forwards a redelivery as received (AEP-0003 §5), as
    /// one relay does; an event this node does not hold yet comes through
    /// the stream.
    #[cfg(feature = "nats")]
    pub fn redeliver(&self, batch: &[Admitted]) {
        let mut state = self.lock();
        let state = &mut *state;
        let depths = fanout::depths(&state.subscribers);
        let mut cut = 0;
        for admitted in batch {
            if state.buffers.holds(&admitted.stored) {
                cut += fanout::fan_out(
                    &state.subscribers,
                    &depths,
                    &admitted.event,
                    &admitted.stored,
                    &self.metrics,
                );
            }
        }
        self.remove_cut(state, cut);
        self.update_gauges(state);
    }

    /// See [`Buffers::assume_evicted_before_held`]: a node of a cluster
    /// that read a stream which discarded events.
    #[cfg(feature = "nats")]
    pub fn assume_evicted_before_held(&self) {
        self.lock().buffers.assume_evicted_before_held();
    }

    /// See [`Buffers::unread_before_new`].
    #[cfg(feature = "nats")]
    pub fn unread_before_new(&self, on: bool) {
        self.lock().buffers.unread_before_new(on);
    }

    /// Between two chunks of a batch: lets the threads waiting for the
    /// lock take it first (a bounded number of yields; a `std` mutex
    /// would otherwise let the batch take it straight back).
    fn let_waiters_in(&self) {
        for _ in 0..HANDOFF_YIELDS {
            if self.waiting.load(Ordering::Acquire) == 0 {
                return;
            }
            std::thread::yield_now();
        }
    }

    /// Ends the subscriptions whose consumer is gone or was cut off, when
    /// the fan-out just done found any (`cut`).
    fn remove_cut(&self, state: &mut State, cut: usize) {
        if cut > 0 {
            fanout::remove_cut(&mut state.subscribers);
            self.metrics
                .subscriptions
                .set(state.subscribers.len() as u64);
        }
    }

    fn update_gauges(&self, state: &State) {
        let m = &self.metrics;
        m.sessions.set(state.buffers.sessions() as u64);
        m.buffered_events.set(state.buffers.events() as u64);
        m.buffered_bytes.set(state.buffers.bytes() as u64);
    }

    /// Registers a subscription (when live) and places its replay's
    /// cursors, in the same critical section: the replay serves what is
    /// held now, live delivery what arrives next, with no gap and no
    /// duplicate at the seam.
    pub fn subscribe(self: &Arc<Self>, request: Request) -> Replay {
        let mut cursors = std::collections::VecDeque::new();
        {
            let mut state = self.lock();
            let mut seen = std::collections::HashSet::new();
            match &request.from {
                Some(From::All) => {
                    for name in state.buffers.names() {
                        cursors.push_back(state.buffers.cursor_held(&name));
                    }
                }
                Some(From::Positions(positions)) => {
                    for (session, epoch, seq) in positions {
                        if seen.insert(session.clone()) {
                            let after = Key::after(*epoch, *seq);
                            cursors.push_back(state.buffers.cursor(session, Some(after)));
                        }
                    }
                }
                None => {}
            }
            if let Some(session) = &request.history {
                if request.from != Some(From::All) && seen.insert(session.clone()) {
                    cursors.push_back(state.buffers.cursor(session, None));
                }
            }
            if let Some((id, outbox)) = request.live.clone() {
                state.subscribers.push(Subscriber {
                    id,
                    filter: request.filter.clone(),
                    ceiling: request.ceiling,
                    outbox,
                });
                self.metrics
                    .subscriptions
                    .set(state.subscribers.len() as u64);
            }
        }
        Replay {
            hub: self.clone(),
            cursors,
            current: Vec::new().into_iter(),
            filter: request.filter,
            ceiling: request.ceiling,
        }
    }

    /// Ends subscriptions.
    pub fn unsubscribe(&self, ids: &[u64]) {
        let mut state = self.lock();
        state.subscribers.retain(|s| !ids.contains(&s.id));
        self.metrics
            .subscriptions
            .set(state.subscribers.len() as u64);
    }

    /// Ends every subscription feeding `outbox`.
    pub fn unsubscribe_outbox(&self, outbox: &Outbox) {
        let mut state = self.lock();
        state.subscribers.retain(|s| !s.outbox.same(outbox));
        self.metrics
            .subscriptions
            .set(state.subscribers.len() as u64);
    }

    /// Registers a WebSocket connection's declarations and command queue.
    pub fn connect(&self, conn: u64, declared: Declared, commands: mpsc::Sender<Command>) {
        self.lock().routes.connect(conn, declared, commands);
    }

    /// Forgets a connection; its claims are held for the claim grace.
    pub fn disconnect(&self, conn: u64) {
        self.lock().routes.disconnect(conn, Instant::now());
    }

    /// Whether connection `conn` may send this acknowledgement: only the
    /// connection its command was routed to may (says why not).
    pub fn check_ack(&self, conn: u64, ack: &Admitted) -> Result<(), String> {
        let event = &ack.event;
        self.lock()
            .routes
            .check_ack(conn, event.session(), event.source(), Instant::now())
    }

    /// Whether `session` has an owner (a live claim, or one held for its
    /// return): acks of its commands then come over the owner's
    /// connection, never a `POST`.
    pub fn owned(&self, session: Option<&str>) -> bool {
        session.is_some_and(|s| self.lock().routes.owned(s, Instant::now()))
    }

    /// Routes a command (its exact frame text) to its one owner, then
    /// keeps it in the session's history and fans it out (`keep`; a node
    /// of a cluster publishes it instead, and the stream delivers it).
    /// An owner on another node of the cluster is named, for the caller
    /// to forward the command to; `here_only` routes to this node's
    /// connections alone (a command another node forwarded).
    pub fn route(
        &self,
        command: &Admitted,
        frame: Bytes,
        keep: bool,
        here_only: bool,
    ) -> Result<Routed, Refused> {
        if !self.config.authenticated() {
            return Err(Refused::Unauthorized);
        }
        let session = command.event.session().unwrap_or_default();
        let mut state = self.lock();
        let event = &command.event;
        let routed =
            state
                .routes
                .route(session, event.type_(), frame, Instant::now(), here_only)?;
        if routed != Routed::Here {
            return Ok(routed);
        }
        self.metrics.commands_routed.inc();
        if !keep {
            return Ok(routed);
        }
        self.metrics.events_in.inc();
        let state = &mut *state;
        state.buffers.admit(&command.stored);
        forget_evicted(state);
        let depths = fanout::depths(&state.subscribers);
        let cut = fanout::fan_out(
            &state.subscribers,
            &depths,
            &command.event,
            &command.stored,
            &self.metrics,
        );
        self.remove_cut(state, cut);
        self.update_gauges(state);
        Ok(routed)
    }

    /// The live claims, one entry per (connection, session), then those
    /// of the cluster's other nodes, within `budget` bytes; the reply is
    /// assembled outside the lock.
    pub fn roster(&self, budget: usize) -> Roster {
        self.lock().routes.roster(budget, Instant::now())
    }

    /// Runs `f` on the routes (a node of a cluster publishing its claims
    /// and taking the other nodes').
    #[cfg(feature = "nats")]
    pub fn with_routes<T>(&self, f: impl FnOnce(&mut Routes) -> T) -> T {
        f(&mut self.lock().routes)
    }
}

/// A positioned event claims its session under its `source`; a re-sent
/// one (a duplicate) only while nobody holds the session live: an agent
/// back on a new connection re-sends what it is not sure arrived and owns
/// its session again by it, but an impostor re-sending the owner's events
/// while the owner is connected claims nothing.
fn claim(state: &mut State, admitted: &Admitted, conn: u64, duplicate: bool) {
    if let (Some(session), Some(_)) = (&admitted.stored.session, admitted.stored.seq) {
        let source = admitted.event.source();
        let claim = if duplicate {
            Claiming::Resent
        } else {
            Claiming::Fresh
        };
        state
            .routes
            .claim(conn, session, source, claim, Instant::now());
    }
}

/// Drops the claims of the sessions the buffer just evicted.
fn forget_evicted(state: &mut State) {
    for session in state.buffers.take_evicted() {
        state.routes.forget_session(&session);
    }
}

/// The form of a buffered event a replay delivers: `None` when the filter
/// does not take it.
fn replay_form(
    stored: &Arc<Stored>,
    filter: &Filter,
    ceiling: Option<Capture>,
) -> Option<Arc<Stored>> {
    let json = stored.json();
    let event = EventRef::from_slice(&json).ok()?;
    if !filter.matches(&event) {
        return None;
    }
    Some(Forms::new(&event, stored).at(ceiling))
}

#[cfg(test)]
mod tests {
    use std::sync::Weak;

    use super::*;
    use crate::fanout::{queue, Delivery};
    use crate::ingest;

    /// NDJSON lines of `count` events of `session`, seq from `first`.
    fn lines(session: &str, first: u64, count: u64) -> Vec<String> {
        (first..first + count)
            .map(|seq| {
                format!(
                    r#"{{"aep":"0.1","id":"{session}-{seq}","type":"progress.status","time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a","session":"{session}","seq":{seq},"severity":"notice"}}"#
                )
            })
            .collect()
    }

    fn admitted(lines: &[String]) -> Vec<Admitted<'_>> {
        lines
            .iter()
            .map(|l| ingest::admit(l.as_bytes()).expect("a valid event"))
            .collect()
    }

    fn seq(item: &ReplayItem) -> u64 {
        match item {
            ReplayItem::Event(stored) => stored.seq.expect("positioned"),
            ReplayItem::Exhausted { .. } => panic!("exhausted where an event was expected"),
        }
    }

    fn request(from: Option<From>, live: Option<(u64, Outbox)>) -> Request {
        Request {
            filter: Filter::all(),
            ceiling: None,
            from,
            history: None,
            live,
        }
    }

    #[test]
    fn a_slow_replay_holds_one_chunk_and_says_what_was_overwritten() {
        let depth = 100;
        let hub = Arc::new(Hub::new(Config::default().buffer(depth)));
        let first = lines("s", 0, depth as u64);
        let weak: Vec<Weak<Stored>> = {
            let batch = admitted(&first);
            hub.ingest(&batch, None);
            batch.iter().map(|a| Arc::downgrade(&a.stored)).collect()
        };
        let mut replay = hub.subscribe(request(Some(From::All), None));
        // The reader takes one event, then stalls while the buffer is
        // overwritten six times over.
        assert_eq!(seq(&replay.next().expect("an event")), 0);
        let more = lines("s", depth as u64, 6 * depth as u64);
        hub.ingest(&admitted(&more), None);
        let alive = weak.iter().filter(|w| w.strong_count() > 0).count();
        assert_eq!(alive, REPLAY_CHUNK - 1, "only the chunk read stays pinned");
        assert_eq!(replay.held(), REPLAY_CHUNK - 1);
        // The rest of its chunk, then the truth: the events after it were
        // overwritten, and the earliest still held is said.
        let rest: Vec<u64> = replay
            .by_ref()
            .take(REPLAY_CHUNK - 1)
            .map(|i| seq(&i))
            .collect();
        assert_eq!(rest, (1..REPLAY_CHUNK as u64).collect::<Vec<_>>());
        match replay.next() {
            Some(ReplayItem::Exhausted { session, earliest }) => {
                assert_eq!(session, "s");
                assert_eq!((earliest.epoch, earliest.seq), (0, 6 * depth as u64));
            }
            _ => panic!("replay-exhausted expected"),
        }
        // What came after the subscription is live's, not the replay's.
        assert!(replay.next().is_none());
    }

    #[test]
    fn a_replay_that_says_exhausted_holds_no_event_while_it_is_said() {
        // A large event right after the evicted head: the writer awaits
        // the `replay-exhausted` it was handed (a stalled consumer may
        // keep it waiting), and meanwhile the buffer lets the event go.
        let hub = Arc::new(Hub::new(Config::default().buffer(4)));
        let pad = "x".repeat(1 << 20);
        let line = |seq: u64, pad: &str| {
            format!(
                r#"{{"aep":"0.1","id":"s-{seq}","type":"progress.status","time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a","session":"s","seq":{seq},"severity":"notice","data":{{"pad":"{pad}"}}}}"#
            )
        };
        let mut first: Vec<String> = (0..4).map(|s| line(s, "")).collect();
        first.push(line(4, &pad));
        first.extend((5..8).map(|s| line(s, "")));
        let weak = {
            let batch = admitted(&first);
            hub.ingest(&batch, None);
            Arc::downgrade(&batch[4].stored)
        };
        let mut replay = hub.subscribe(request(
            Some(From::Positions(vec![("s".into(), 0, 1)])),
            None,
        ));
        assert!(matches!(replay.next(), Some(ReplayItem::Exhausted { .. })));
        assert_eq!(replay.held(), 0, "said alone");
        hub.ingest(&admitted(&lines("s", 8, 8)), None);
        assert_eq!(
            weak.strong_count(),
            0,
            "nothing keeps the large event alive"
        );
    }

    #[test]
    fn a_subscription_waiting_mid_batch_gets_in_and_misses_nothing() {
        let total = 40 * INGEST_CHUNK;
        let hub = Arc::new(Hub::new(Config::default().buffer(total)));
        // Consumers that keep the batch busy.
        let mut inboxes = Vec::new();
        for _ in 0..50 {
            let (outbox, inbox) = queue(total, total, total);
            inboxes.push(inbox);
            hub.subscribe(request(None, Some((hub.next_id(), outbox))));
        }
        let batch_lines = lines("s", 0, total as u64);
        let ingesting = {
            let hub = hub.clone();
            std::thread::spawn(move || hub.ingest(&admitted(&batch_lines), None))
        };
        // Once the batch is under way (bounded look), subscribe: this
        // waits for the lock while the batch holds it.
        for _ in 0..10_000_000 {
            if hub.metrics.events_in.get() > 0 {
                break;
            }
            std::hint::spin_loop();
        }
        let (outbox, mut inbox) = queue(total, total, total);
        let replay = hub.subscribe(request(Some(From::All), Some((hub.next_id(), outbox))));
        let when = hub.metrics.events_in.get() as usize;
        ingesting.join().expect("the batch ends");
        assert!(
            when < total,
            "the subscription waited for the whole batch ({when} of {total})"
        );
        // Replay then live: every event once, in order.
        let mut seqs: Vec<u64> = replay.map(|i| seq(&i)).collect();
        assert_eq!(seqs.len(), when, "the replay is what was in when it joined");
        let mut live: Vec<Delivery> = Vec::new();
        while let Some(taken) = inbox.try_recv() {
            live.push((taken.sub, taken.stored));
        }
        seqs.extend(live.iter().map(|(_, s)| s.seq.expect("positioned")));
        assert_eq!(seqs, (0..total as u64).collect::<Vec<_>>());
    }
}
