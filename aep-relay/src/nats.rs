//! Relay nodes sharing their history and their fan-out through NATS
//! JetStream ([`Config::nats`](crate::Config::nats)).
//!
//! Every node publishes what it admits into one JetStream stream,
//! [`STREAM`], a subject per session (a digest of the session id, so any
//! id is a safe subject), within `--max-buffered-bytes` in all, oldest
//! discarded first. A session's depth (`--buffer`) is each node's
//! buffers' bound, not the stream's: a subject the stream kept to
//! `--buffer` messages would discard what a node reading behind a flood of
//! one session has not read yet, and its subscribers would miss those
//! events; the stream keeps them until the bytes bound takes them, and the
//! node's buffers evict as one relay does (and say so on resume). Every
//! node records its `--buffer` in the stream's metadata, and a node
//! started with another is refused. Every node
//! follows the whole stream with one ordered consumer and buffers and fans
//! out what it reads exactly as it does a local ingest: each node's
//! buffers hold what the stream holds, and replay and live delivery on any
//! node serve the events posted to every node. A node reads what the
//! stream holds before it accepts a connection.
//!
//! - A `POST` is answered `202` only once the server has stored every
//!   event of it; an event is never half-stored (one over the server's
//!   `max_payload` refuses the batch before anything is published).
//! - `Nats-Msg-Id` is a digest of the event's `(source, id)`: the server
//!   drops a second copy within its duplicate window (two minutes) and
//!   says so, and the relay counts it in `duplicates` without delivering
//!   it again. A copy sent after the window is stored and delivered again,
//!   as AEP-0001 §7.4 allows (consumers dedupe on `(source, id)`).
//! - Live delivery keeps the stream's order; a subscriber that joins a
//!   node while events flow gets replay then live with no gap and no
//!   duplicate at the seam (the node's own buffers, as without NATS).
//! - Commands are routed to their one owner in the cluster, on whichever
//!   node it is connected to (`cluster`); a routed command is published
//!   like any event, so every node keeps it in the session's history.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use async_nats::HeaderMap;
use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::config::NatsServer;
use crate::hub::Hub;
use crate::ingest::{self, Admitted};

/// The stream every node publishes to and follows.
pub(crate) const STREAM: &str = "AEP_EVENTS";
/// The stream's subjects: `aep.events.s.<digest>` per session, and
/// `aep.events.none` for events without one.
const SUBJECTS: &str = "aep.events.>";
/// The subjects a node sends a copy the stream did not store again on
/// (`aep.redelivered.` and the rest of the event's subject), for every
/// node's live subscribers; not the stream's.
const REDELIVERED: &str = "aep.redelivered.>";
/// How long the server remembers a `Nats-Msg-Id` to drop a second copy.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);
/// The events a node buffers and fans out under one taking of its lock,
/// at most, when the stream hands it many at once.
const FOLLOW_BATCH: usize = 256;

/// The messages a node's consumer asks the server for at once.
const PULL_BATCH: i64 = 64;
// What a node holds of NATS is counted in the worst case: two pulls of
// the default `max_payload`, and the directory of the other nodes' claims.
const _: () = assert!(
    crate::config::NATS_NODE_BYTES
        >= 2 * PULL_BATCH as usize * (1 << 20) + crate::directory::MAX_BYTES
);

/// The stream metadata key that records the nodes' `--buffer`.
const BUFFER_KEY: &str = "aep-buffer";

/// How long a publish waits for the node to read back what it stored.
const APPLY_WAIT: Duration = Duration::from_secs(5);

/// The publishes of a node awaiting their acks at once, at most: under
/// the NATS client's own bound (5000), which waits for a free place
/// while holding the places already taken, so that a batch, or batches
/// together, over it would wait on each other for ever.
const ACK_WINDOW: usize = 1024;

/// A node's link to the cluster's stream.
pub(crate) struct Nats {
    /// The node's place in routing commands across the cluster.
    cluster: crate::cluster::Cluster,
    js: jetstream::Context,
    /// The stream sequence of the last message the node buffered and fanned
    /// out: a publish is answered once the node holds what it published.
    applied: tokio::sync::watch::Receiver<u64>,
    /// Whether the node still follows the stream (its task runs).
    following: Arc<std::sync::atomic::AtomicBool>,
    max_payload: usize,
    /// [`ACK_WINDOW`] places, taken a window of a batch at a time.
    window: tokio::sync::Semaphore,
}

/// An event to publish: its subject, its dedupe id and its exact bytes.
pub(crate) struct Outgoing {
    subject: String,
    msg_id: String,
    bytes: Bytes,
}

/// Publishes one event and waits until the server stored it (or already
/// held it).
pub(crate) async fn publish_one(
    js: &jetstream::Context,
    event: Outgoing,
) -> Result<(), async_nats::Error> {
    let mut headers = HeaderMap::new();
    headers.insert("Nats-Msg-Id", event.msg_id.as_str());
    js.publish_with_headers(event.subject, headers, event.bytes)
        .await?
        .await?;
    Ok(())
}

impl Outgoing {
    /// What `admitted` is published as.
    pub(crate) fn of(admitted: &Admitted<'_>) -> Outgoing {
        let stored = &admitted.stored;
        Outgoing {
            subject: subject(stored.session.as_deref()),
            msg_id: hex(&Sha256::digest(&stored.dedupe)),
            bytes: stored.json(),
        }
    }
}

/// Why a publish failed, with what to answer.
#[derive(Debug)]
pub(crate) enum Failed {
    /// An event is larger than the server takes (`max_payload`).
    TooLarge { size: usize, max: usize },
    /// The server did not store it (unreachable, timed out, refused).
    Unavailable(String),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::TooLarge { size, max } => write!(
                f,
                "an event of {size} bytes is over the NATS server's max_payload ({max} bytes); nothing of the batch was stored"
            ),
            Failed::Unavailable(why) => write!(
                f,
                "NATS JetStream did not store the events ({why}); send them again (a copy already stored is a duplicate)"
            ),
        }
    }
}

/// The subject of a session's events.
fn subject(session: Option<&str>) -> String {
    match session {
        Some(session) => format!("aep.events.s.{}", digest(session)),
        None => "aep.events.none".to_owned(),
    }
}

/// Whether a nats-server of `version` can hold a cluster: 2.10 or newer
/// (the stream's metadata records the nodes' `--buffer`; an older server
/// drops it, and its per-subject limits are slow); else why not.
fn supported(version: &str) -> Result<(), String> {
    let mut parts = version.trim_start_matches('v').split(['.', '-', '+']);
    let mut number = || parts.next().and_then(|p| p.parse::<u64>().ok());
    match (number(), number()) {
        (Some(major), Some(minor)) if (major, minor) >= (2, 10) => Ok(()),
        (Some(_), Some(_)) => Err(format!(
            "nats-server {version}; a cluster of relay nodes needs 2.10 or newer (stream metadata, per-subject limits that perform)"
        )),
        _ => Err(format!(
            "of an unknown version ({version:?}); a cluster of relay nodes needs nats-server 2.10 or newer"
        )),
    }
}

/// A session's name in subjects and keys: 32 hex digits of its SHA-256.
pub(crate) fn digest(session: &str) -> String {
    let mut digest = hex(&Sha256::digest(session.as_bytes()));
    digest.truncate(32);
    digest
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn failed(what: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("{what}: {e}"))
}

/// The stream every node makes sure of, with this node's limits.
fn stream_config(config: &crate::Config) -> stream::Config {
    stream::Config {
        name: STREAM.to_owned(),
        subjects: vec![SUBJECTS.to_owned()],
        max_messages_per_subject: -1,
        metadata: [(BUFFER_KEY.to_owned(), config.buffer.to_string())].into(),
        max_bytes: i64::try_from(config.max_buffered_bytes).unwrap_or(i64::MAX),
        discard: stream::DiscardPolicy::Old,
        duplicate_window: DUPLICATE_WINDOW,
        storage: stream::StorageType::File,
        ..Default::default()
    }
}

/// Connects to the server, makes sure the stream is there with this
/// node's limits, reads what it holds into `hub`, and follows it until
/// `shutdown`.
pub(crate) async fn start(
    server: &NatsServer,
    hub: Arc<Hub>,
    shutdown: CancellationToken,
) -> io::Result<Nats> {
    // Told when the client connects again: the server may have lost the
    // consumer this node reads (a restart), which the consumer itself only
    // finds after missing heartbeats for some ten seconds.
    // Only a connection after a disconnection tells (not the first).
    let connected = Arc::new(tokio::sync::Notify::new());
    let told = connected.clone();
    let down = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut options = async_nats::ConnectOptions::new()
        .name("aep-relay")
        .event_callback(move |event| {
            let (told, down) = (told.clone(), down.clone());
            async move {
                use std::sync::atomic::Ordering;
                match event {
                    async_nats::Event::Disconnected => down.store(true, Ordering::Release),
                    async_nats::Event::Connected if down.swap(false, Ordering::AcqRel) => {
                        told.notify_one();
                    }
                    _ => {}
                }
            }
        });
    if let Some(creds) = &server.creds {
        options = options.credentials_file(creds).await.map_err(|e| {
            failed(
                &format!("cannot read the NATS credentials {}", creds.display()),
                e,
            )
        })?;
    }
    let client = options
        .connect(server.url.as_str())
        .await
        .map_err(|e| failed(&format!("cannot connect to NATS at {}", server.url), e))?;
    let version = client.server_info().version;
    if let Err(why) = supported(&version) {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("the NATS server at {} is {why}", server.url),
        ));
    }
    let max_payload = client.max_payload();
    let js = jetstream::new(client);
    let config = &hub.config;
    let mut stream = js
        .get_or_create_stream(stream_config(config))
        .await
        .map_err(|e| {
            failed(
                &format!("cannot create the JetStream stream {STREAM} (is JetStream enabled: nats-server -js?)"),
                e,
            )
        })?;
    let info = stream
        .info()
        .await
        .map_err(|e| failed(&format!("cannot read the stream {STREAM}"), e))?
        .clone();
    let kept = info.config.metadata.get(BUFFER_KEY).map(String::as_str);
    if kept != Some(config.buffer.to_string().as_str()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the stream {STREAM} was made for nodes keeping {} events per session and this node was started with --buffer {}: every node of a cluster takes the same --buffer",
                kept.unwrap_or("an unknown number of"),
                config.buffer
            ),
        ));
    }
    let held = info.state.messages;
    // Fewer messages than were ever stored: the stream discarded some, of
    // sessions this node is about to hold the rest of.
    let discarded = info.state.last_sequence > held;
    let mut messages = read_from(&stream, 0)
        .await
        .map_err(|e| failed(&format!("cannot follow the stream {STREAM}"), e))?;
    // What the stream holds, read before any connection is accepted.
    let mut caught_up = held == 0;
    // The stream sequence of the last message read.
    let mut last = if held == 0 {
        info.state.last_sequence
    } else {
        0
    };
    while !caught_up {
        let first = tokio::select! {
            _ = shutdown.cancelled() => break,
            next = messages.next() => next,
        };
        let Some(first) = first else {
            return Err(io::Error::other(format!(
                "the stream {STREAM} ended while it was read"
            )));
        };
        let (batch, pending, read) = gather(&hub, last, first, &mut messages);
        last = read.unwrap_or(last);
        caught_up = pending == Some(0);
        apply(&hub, &batch);
        if caught_up {
            hub.unread_before_new(false);
        }
    }
    if discarded {
        hub.assume_evicted_before_held();
    }
    let cluster = crate::cluster::join(&js, hub.clone(), shutdown.clone()).await?;
    let mut redelivered = js
        .client()
        .subscribe(REDELIVERED)
        .await
        .map_err(|e| failed("cannot take the cluster's redeliveries", e))?;
    let (live, stop) = (hub.clone(), shutdown.clone());
    tokio::spawn(async move {
        loop {
            let message = tokio::select! {
                _ = stop.cancelled() => return,
                message = redelivered.next() => message,
            };
            let Some(message) = message else { return };
            if let Ok(admitted) = ingest::admit(&message.payload) {
                live.redeliver(std::slice::from_ref(&admitted));
            }
        }
    });
    let (applied, applied_rx) = tokio::sync::watch::channel(last);
    let following = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let ended = Following(following.clone());
    let followed = js.clone();
    tokio::spawn(async move {
        let _ended = ended;
        follow(
            messages,
            hub,
            shutdown,
            followed,
            info.created.unix_timestamp_nanos(),
            connected,
            last,
            applied,
        )
        .await
    });
    Ok(Nats {
        cluster,
        js,
        following,
        applied: applied_rx,
        max_payload,
        window: tokio::sync::Semaphore::new(ACK_WINDOW),
    })
}

/// What the stream holds after its sequence `last` (all of it for 0) and
/// whatever comes after, in order.
async fn read_from(stream: &stream::Stream, last: u64) -> Result<Messages, async_nats::Error> {
    let deliver_policy = match last {
        0 => consumer::DeliverPolicy::All,
        last => consumer::DeliverPolicy::ByStartSequence {
            start_sequence: last + 1,
        },
    };
    let consumer = stream
        .create_consumer(consumer::pull::OrderedConfig {
            deliver_policy,
            // The messages one pull asks for, which the client holds until
            // they are read: at most this many times the server's
            // `max_payload` (the client's default, 500, would be 500 MiB
            // of large events).
            max_batch: PULL_BATCH,
            ..Default::default()
        })
        .await?;
    Ok(consumer.messages().await?)
}

/// The stream's messages one node reads.
type Messages = consumer::pull::Ordered;
type Message = Result<jetstream::Message, consumer::pull::OrderedError>;

/// `first` and whatever else is ready now (at most [`FOLLOW_BATCH`]), as
/// payloads, with the count the server says is still to come and the
/// stream sequence of the last.
/// `hub` is told when a message was discarded before this node read it
/// (a gap after `after`, the sequence of the last message read).
fn gather(
    hub: &Hub,
    after: u64,
    first: Message,
    messages: &mut Messages,
) -> (Vec<Bytes>, Option<u64>, Option<u64>) {
    let mut batch = Vec::new();
    let mut pending = None;
    let mut last = None;
    let mut gap = false;
    let mut next = Some(first);
    while let Some(message) = next.take() {
        match message {
            Ok(message) => {
                if let Ok(info) = message.info() {
                    gap |= info.stream_sequence > last.unwrap_or(after) + 1;
                    pending = Some(info.pending);
                    last = Some(info.stream_sequence);
                }
                batch.push(message.payload.clone());
            }
            Err(e) => tracing::warn!(
                error = %e,
                "reading the NATS stream (the consumer resumes by itself)"
            ),
        }
        if batch.len() < FOLLOW_BATCH {
            next = messages.next().now_or_never().flatten();
        }
    }
    if gap {
        // Only the bytes bound discards, so the node read a whole stream's
        // worth behind: its subscribers missed what it never read.
        tracing::error!(
            "this node read too far behind the NATS stream: messages were discarded (--max-buffered-bytes) before it read them, and its subscribers missed them; sessions it first sees now are taken to have lost their start"
        );
        hub.unread_before_new(true);
    }
    (batch, pending, last)
}

/// Buffers and fans out what the stream delivered, as a local ingest.
fn apply(hub: &Hub, payloads: &[Bytes]) {
    let admitted: Vec<Admitted<'_>> = payloads
        .iter()
        .filter_map(|payload| match ingest::admit(payload) {
            Ok(admitted) => Some(admitted),
            Err(e) => {
                tracing::warn!(error = %e, "a message on the NATS stream is not an AEP event: skipped");
                None
            }
        })
        .collect();
    hub.ingest(&admitted, None);
}

/// Says the node no longer follows the stream when its task ends.
struct Following(Arc<std::sync::atomic::AtomicBool>);

impl Drop for Following {
    fn drop(&mut self) {
        self.0.store(false, std::sync::atomic::Ordering::Release);
    }
}

/// How often a node makes sure the stream it follows is still the one
/// the server holds.
const STREAM_CHECK: Duration = Duration::from_secs(1);

/// Follows the stream until `shutdown`.
///
/// A server that lost the stream (its store wiped, or the stream deleted)
/// holds a new one once any node makes sure of it, numbered from 1 again:
/// the ordered consumer would resume after the last number it saw and
/// miss what the new stream holds up to it, for ever and silently. So
/// every [`STREAM_CHECK`] the node makes sure of the stream itself (a node
/// alone could not publish otherwise) and, when it is another than the one
/// it follows (`created`), follows the new one from its start. And when
/// the client connects again (`connected`), the node reads on from the
/// last message it read on a consumer made anew: after a server restart
/// the old one is gone, which it would find only by missed heartbeats.
#[allow(clippy::too_many_arguments)]
async fn follow(
    mut messages: Messages,
    hub: Arc<Hub>,
    shutdown: CancellationToken,
    js: jetstream::Context,
    // When the stream followed was created (Unix nanoseconds).
    mut created: i128,
    connected: Arc<tokio::sync::Notify>,
    // The stream sequence of the last message read.
    mut last: u64,
    applied: tokio::sync::watch::Sender<u64>,
) {
    let mut check = tokio::time::interval(STREAM_CHECK);
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let next = tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = check.tick() => {
                let replaced = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    replaced = replaced(&js, &hub.config, created) => replaced,
                };
                if let Some((stream, now)) = replaced {
                    match read_from(&stream, 0).await {
                        Ok(new) => {
                            tracing::error!("the NATS stream {STREAM} was replaced (the server lost it): following the new one from its start");
                            messages = new;
                            created = now;
                            last = 0;
                        }
                        Err(e) => tracing::warn!(error = %e, "cannot follow the new NATS stream {STREAM} yet"),
                    }
                }
                continue;
            }
            _ = connected.notified() => {
                // Read on from the last message read, on a consumer made anew.
                let again = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    again = async {
                        let stream = js.get_stream(STREAM).await?;
                        read_from(&stream, last).await
                    } => again,
                };
                match again {
                    Ok(again) => messages = again,
                    Err(e) => tracing::warn!(error = %e, "cannot follow the NATS stream {STREAM} anew (its consumer makes itself anew later)"),
                }
                continue;
            }
            next = messages.next() => next,
        };
        let Some(first) = next else {
            tracing::error!("the NATS stream's consumer ended: this node no longer receives other nodes' events");
            return;
        };
        let (batch, pending, read) = gather(&hub, last, first, &mut messages);
        last = read.unwrap_or(last);
        apply(&hub, &batch);
        if pending == Some(0) {
            hub.unread_before_new(false);
        }
        applied.send_replace(last);
    }
}

/// The stream, made sure of, when it is another than the one created at
/// `created`, with its creation time.
async fn replaced(
    js: &jetstream::Context,
    config: &crate::Config,
    created: i128,
) -> Option<(stream::Stream, i128)> {
    let mut stream = match js.get_or_create_stream(stream_config(config)).await {
        Ok(stream) => stream,
        Err(e) => {
            tracing::debug!(error = %e, "cannot check the NATS stream {STREAM}");
            return None;
        }
    };
    let now = stream.info().await.ok()?.created.unix_timestamp_nanos();
    (now != created).then_some((stream, now))
}

impl Nats {
    /// Sends a command's exact bytes to `node`, which holds its session's
    /// owner, and says whether that node delivered them.
    pub(crate) async fn forward(
        &self,
        node: &str,
        frame: Bytes,
    ) -> Result<(), crate::routing::Refused> {
        self.cluster.forward(node, frame).await
    }

    /// Returns once this node's claims are deleted from the cluster's
    /// bucket, after the shutdown.
    pub(crate) async fn left(&self) {
        self.cluster.left().await;
    }

    /// This node's name in the cluster (new at each start).
    pub(crate) fn node(&self) -> &str {
        self.cluster.node()
    }

    /// The node's link to the stream, for `/healthz`: `connected`, or
    /// `disconnected` (nothing can be stored, other nodes' events do not
    /// arrive), or `not-following` (the node no longer reads the stream).
    pub(crate) fn health(&self) -> &'static str {
        if !self.following.load(std::sync::atomic::Ordering::Acquire) {
            "not-following"
        } else if self.js.client().connection_state() == async_nats::connection::State::Connected {
            "connected"
        } else {
            "disconnected"
        }
    }

    /// Publishes `events` in order and waits until the server stored each;
    /// how many it already held (duplicates).
    pub(crate) async fn publish(&self, events: Vec<Outgoing>) -> Result<usize, Failed> {
        // Checked whole first: nothing is published of a batch with an
        // event the server refuses by size.
        if let Some(big) = events
            .iter()
            .find(|e| e.bytes.len() + e.msg_id.len() + 64 > self.max_payload)
        {
            return Err(Failed::TooLarge {
                size: big.bytes.len(),
                max: self.max_payload,
            });
        }
        let mut duplicates = 0;
        // What the server already held, for the live subscribers.
        let mut again = Vec::new();
        // The stream sequence of the last event stored.
        let mut through = 0;
        let mut events = events.into_iter().peekable();
        // A window at a time, its places taken whole before it is sent and
        // given back once its acks came: every publish's ack has a place.
        while events.peek().is_some() {
            let window: Vec<Outgoing> = events.by_ref().take(ACK_WINDOW).collect();
            let _places = self
                .window
                .acquire_many(u32::try_from(window.len()).unwrap_or(u32::MAX))
                .await
                .map_err(|e| Failed::Unavailable(e.to_string()))?;
            let mut acks = Vec::with_capacity(window.len());
            for event in window {
                let mut headers = HeaderMap::new();
                headers.insert("Nats-Msg-Id", event.msg_id.as_str());
                let ack = self
                    .js
                    .publish_with_headers(event.subject.clone(), headers, event.bytes.clone())
                    .await
                    .map_err(|e| Failed::Unavailable(e.to_string()))?;
                acks.push((ack, event));
            }
            for (ack, event) in acks {
                let ack = ack.await.map_err(|e| Failed::Unavailable(e.to_string()))?;
                duplicates += usize::from(ack.duplicate);
                through = through.max(ack.sequence);
                if ack.duplicate {
                    again.push(event);
                }
            }
        }
        // A redelivery is forwarded live by every node (best effort: core
        // NATS; the event itself is in the stream).
        for event in again {
            let subject = event.subject.replacen("aep.events.", "aep.redelivered.", 1);
            if let Err(e) = self.js.client().publish(subject, event.bytes).await {
                tracing::debug!(error = %e, "a redelivery was not forwarded to the cluster");
            }
        }
        // Answered once this node holds what it stored, as one relay is: a
        // read right after the answer finds it (bounded: it is stored
        // whatever this node's consumer is doing).
        let mut applied = self.applied.clone();
        let held = applied.wait_for(|last| *last >= through);
        if tokio::time::timeout(APPLY_WAIT, held).await.is_err() {
            tracing::debug!("published events not yet read back from the stream");
        }
        Ok(duplicates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_older_than_2_10_are_refused_by_name() {
        for ok in ["2.10.0", "2.14.0", "v2.11.3", "3.0.0", "2.10.0-beta.1"] {
            assert_eq!(supported(ok), Ok(()), "{ok}");
        }
        let old = supported("2.9.10").unwrap_err();
        assert!(
            old.contains("nats-server 2.9.10") && old.contains("2.10 or newer"),
            "{old}"
        );
        assert!(supported("1.4.1").is_err());
        assert!(supported("").unwrap_err().contains("unknown version"));
        assert!(supported("two.ten").is_err());
    }

    #[test]
    fn any_session_is_a_safe_subject_token() {
        for session in ["s", "a.b", "*", ">", "x y", "ü", ""] {
            let subject = subject(Some(session));
            let token = subject.strip_prefix("aep.events.s.").unwrap();
            assert_eq!(token.len(), 32);
            assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{subject}");
        }
        assert_ne!(subject(Some("a")), subject(Some("b")));
        assert_eq!(subject(None), "aep.events.none");
    }
}
