//! Command routing across the nodes of a cluster ([`Config::nats`]):
//! each node's claims in a JetStream key-value bucket, commands to the
//! owning node by request and reply.
//!
//! - **Claims.** A node puts what it holds of each session's claims
//!   ([`Held`]) in the bucket [`BUCKET`] under `<session digest>.<node>`,
//!   when they change (within [`PUBLISH_EVERY`]) and again every
//!   [`REFRESH`]; it deletes the key when it holds none any more, and
//!   every key at shutdown. The bucket keeps a key [`TTL`], and every node
//!   watches the bucket into its [`Directory`], which drops an entry not
//!   put again within [`TTL`]: the claims of a node that died are gone
//!   within it.
//! - **Commands.** A node routes a command over its own claims and the
//!   directory's (`routing`). One live claim on another node: it sends the
//!   command's exact bytes to that node alone, as a request on
//!   `aep.node.<node>.command` (never a queue group, never a broadcast,
//!   AEP-0004 §4.5), and that node hands them, byte for byte, to its
//!   connection that owns the session, or refuses as it would its own
//!   (`no-route`, `ambiguous` when it knows of a claim the first node did
//!   not see yet, `unsupported`, `busy`; it never routes it onward), and the first node answers the
//!   sender so. A node that does not answer within [`FORWARD_WAIT`] is
//!   `no-route`. The first node then publishes the command to the stream,
//!   so every node keeps it in the session's history.
//! - **Acks and roster.** An ack is believed, and `roster` answered, over
//!   the same union: the cluster is one endpoint to its clients
//!   (AEP-0003 §4.1).
//!
//! [`Config::nats`]: crate::Config::nats

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use aep::frame::ErrorCode;
use async_nats::jetstream::{self, kv};
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::directory::{MAX_ENTRY_BYTES, REFRESH, TTL};
use crate::hub::Hub;
use crate::ingest;
use crate::routing::Refused;

pub(crate) use crate::directory::Held;

/// The bucket of the nodes' claims.
pub(crate) const BUCKET: &str = "AEP_CLAIMS";
/// How soon a change of a node's claims is put in the bucket, at most.
const PUBLISH_EVERY: Duration = Duration::from_millis(100);
/// How long a node waits for the owning node's answer to a command.
const FORWARD_WAIT: Duration = Duration::from_secs(5);
/// Every key of the bucket.
const ALL_KEYS: &str = ">";

/// This node's place in the cluster's command routing.
pub(crate) struct Cluster {
    client: async_nats::Client,
    node: Arc<str>,
    max_payload: usize,
    /// Cancelled once this node's entries are deleted after `shutdown`.
    left: CancellationToken,
}

/// A node's name in the cluster: random, new at each start.
fn node_name() -> Arc<str> {
    let mut seed = Sha256::new();
    seed.update(format!("{:?}", SystemTime::now()));
    seed.update(std::process::id().to_le_bytes());
    let state = std::collections::hash_map::RandomState::new();
    seed.update(std::hash::BuildHasher::hash_one(&state, 0u8).to_le_bytes());
    Arc::from(&crate::nats::hex(&seed.finalize())[..16])
}

/// The key of `session`'s claims on `node`.
fn key(session: &str, node: &str) -> String {
    format!("{}.{node}", crate::nats::digest(session))
}

/// The subject a node takes the commands routed to it on.
fn commands_subject(node: &str) -> String {
    format!("aep.node.{node}.command")
}

fn failed(what: &str, e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(format!("{what}: {e}"))
}

/// Joins the cluster's command routing: makes sure of the bucket, reads
/// the other nodes' claims, then keeps this node's in it and takes the
/// commands routed here, until `shutdown`.
pub(crate) async fn join(
    js: &jetstream::Context,
    hub: Arc<Hub>,
    shutdown: CancellationToken,
) -> std::io::Result<Cluster> {
    let client = js.client();
    let node = node_name();
    let store = match js
        .create_key_value(kv::Config {
            bucket: BUCKET.to_owned(),
            history: 1,
            max_age: TTL,
            max_value_size: i32::try_from(MAX_ENTRY_BYTES).unwrap_or(i32::MAX),
            storage: jetstream::stream::StorageType::Memory,
            ..Default::default()
        })
        .await
    {
        Ok(store) => store,
        Err(created) => js.get_key_value(BUCKET).await.map_err(|e| {
            failed(
                &format!("cannot make the key-value bucket {BUCKET} ({created})"),
                e,
            )
        })?,
    };
    let mut commands = client
        .subscribe(commands_subject(&node))
        .await
        .map_err(|e| failed("cannot take commands from the cluster", e))?;
    hub.with_routes(|routes| routes.track_changes());
    // What the bucket holds, then every change: the other nodes' claims
    // are weighed before this node serves, not at their next refresh
    // (`watch_all` alone delivers only what is put from now on).
    let mut watch = store
        .watch_with_history(ALL_KEYS)
        .await
        .map_err(|e| failed(&format!("cannot watch the bucket {BUCKET}"), e))?;
    let held = store
        .status()
        .await
        .map_err(|e| failed(&format!("cannot read the bucket {BUCKET}"), e))?
        .values();
    if held > 0 {
        let read = async {
            while let Some(entry) = watch.next().await {
                match entry {
                    Ok(entry) => {
                        take(&hub, &node, &entry);
                        if entry.delta == 0 {
                            return;
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "reading the cluster's claims"),
                }
            }
        };
        if tokio::time::timeout(FORWARD_WAIT, read).await.is_err() {
            tracing::warn!("the cluster's claims were not all read in time: commands are refused ambiguous until they are put again");
            hub.with_routes(|routes| routes.remote.blind(Instant::now()));
        }
    }
    tokio::spawn(watch_claims(
        watch,
        store.clone(),
        node.clone(),
        hub.clone(),
        shutdown.clone(),
    ));
    let left = CancellationToken::new();
    tokio::spawn(put_claims(
        store,
        node.clone(),
        hub.clone(),
        shutdown.clone(),
        left.clone(),
    ));
    let (replies, serving, stream) = (client.clone(), hub, js.clone());
    tokio::spawn(async move {
        loop {
            let message = tokio::select! {
                _ = shutdown.cancelled() => return,
                message = commands.next() => message,
            };
            let Some(message) = message else {
                tracing::error!("the subscription for commands from other nodes ended: commands to this node's connections from other nodes are refused");
                return;
            };
            let Some(reply) = message.reply else {
                continue;
            };
            let (answer, keep) = deliver(&serving, &message.payload);
            if let Some(command) = keep {
                let kept = crate::nats::publish_one(&stream, command);
                match tokio::time::timeout(FORWARD_WAIT, kept).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        tracing::warn!(error = %e, "a routed command was not kept in the stream")
                    }
                    Err(_) => tracing::warn!("a routed command was not kept in the stream in time"),
                }
            }
            if let Err(e) = replies.publish(reply, answer).await {
                tracing::warn!(error = %e, "cannot answer a command routed from another node");
            }
        }
    });
    tracing::info!(node = %node, "routing commands across the cluster");
    Ok(Cluster {
        max_payload: client.max_payload(),
        client,
        node,
        left,
    })
}

/// Hands a command another node routed here to this node's connection
/// that owns its session; the answer for that node, and when delivered,
/// the command to keep in the stream (this node, which delivered it,
/// keeps it: the history holds what reached the owner).
fn deliver(hub: &Hub, frame: &Bytes) -> (Bytes, Option<crate::nats::Outgoing>) {
    let refused = match ingest::admit(frame) {
        Ok(admitted) if admitted.is_command() => {
            match hub.route(&admitted, frame.clone(), false, true) {
                Ok(_) => {
                    return (
                        Bytes::from_static(b"{}"),
                        Some(crate::nats::Outgoing::of(&admitted)),
                    )
                }
                Err(refused) => {
                    let session = admitted.event.session().unwrap_or_default();
                    let detail = refused.detail(session, admitted.event.type_());
                    (refused.code(), detail)
                }
            }
        }
        Ok(_) => (
            ErrorCode::BadFrame,
            "only commands are routed between nodes".to_owned(),
        ),
        Err(e) => (e.code(), e.detail().to_owned()),
    };
    let answer = json!({"code": refused.0.as_str(), "detail": refused.1});
    (Bytes::from(answer.to_string()), None)
}

impl Cluster {
    /// Sends a command's exact bytes to `node`, the owner's, and says
    /// whether it delivered them.
    pub(crate) async fn forward(&self, node: &str, frame: Bytes) -> Result<(), Refused> {
        if frame.len() + 256 > self.max_payload {
            return Err(Refused::ByNode(
                ErrorCode::LimitExceeded,
                format!(
                    "the command's {} bytes are over what the cluster carries (the NATS server's max_payload, {} bytes)",
                    frame.len(),
                    self.max_payload
                ),
            ));
        }
        let asked = self.client.request(commands_subject(node), frame);
        let answer = match tokio::time::timeout(FORWARD_WAIT, asked).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => {
                tracing::debug!(node, error = %e, "the owner's node did not take a command");
                return Err(Refused::NodeGone);
            }
            Err(_) => return Err(Refused::NodeSilent(FORWARD_WAIT)),
        };
        if answer.payload.as_ref() == b"{}" {
            return Ok(());
        }
        let refusal: serde_json::Value =
            serde_json::from_slice(&answer.payload).unwrap_or_default();
        let code = refusal["code"]
            .as_str()
            .map_or(ErrorCode::NoRoute, ErrorCode::parse);
        let detail = refusal["detail"]
            .as_str()
            .unwrap_or("the owner's node refused the command")
            .to_owned();
        Err(Refused::ByNode(code, detail))
    }

    /// This node's name in the cluster.
    pub(crate) fn node(&self) -> &str {
        &self.node
    }

    /// Returns once this node's entries are deleted from the bucket,
    /// after `shutdown` (the deletions take 2 s at most).
    pub(crate) async fn left(&self) {
        self.left.cancelled().await;
    }
}

/// Keeps the other nodes' claims in the hub's directory, until
/// `shutdown`: every put and deletion in the bucket, and every
/// [`REFRESH`] the entries not put again within [`TTL`] dropped.
async fn watch_claims(
    mut watch: kv::Watch,
    store: kv::Store,
    node: Arc<str>,
    hub: Arc<Hub>,
    shutdown: CancellationToken,
) {
    let mut sweep = tokio::time::interval(REFRESH);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let entry = tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = sweep.tick() => {
                hub.with_routes(|routes| routes.remote.sweep(Instant::now()));
                continue;
            }
            entry = watch.next() => entry,
        };
        let entry = match entry {
            Some(Ok(entry)) => entry,
            Some(Err(e)) => {
                tracing::warn!(error = %e, "watching the cluster's claims (the watch resumes by itself)");
                continue;
            }
            None => {
                tracing::warn!("the watch of the cluster's claims ended: watching anew");
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
                match store.watch_with_history(ALL_KEYS).await {
                    Ok(again) => watch = again,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot watch the cluster's claims anew yet")
                    }
                }
                continue;
            }
        };
        take(&hub, &node, &entry);
    }
}

/// Takes a put or deletion of another node's entry into the directory.
fn take(hub: &Hub, node: &str, entry: &kv::Entry) {
    let Some((_, of)) = entry.key.rsplit_once('.') else {
        return;
    };
    if of == node {
        return;
    }
    // Seen when it arrives, not when the server says it was put: the
    // server's clock and this node's may differ, and a claim read as
    // older than it is would be dropped while it holds (a command then
    // diverted); read as newer, an entry of a node that died is held up
    // to a TTL more (the bucket keeps none longer), which only refuses.
    let now = Instant::now();
    hub.with_routes(|routes| match entry.operation {
        kv::Operation::Put => {
            if let Err(e) = routes.remote.put(&entry.key, of, &entry.value, now) {
                tracing::warn!(key = %entry.key, error = %e, "a node's claims were not taken: commands to its sessions are refused");
            }
        }
        kv::Operation::Delete | kv::Operation::Purge => routes.remote.remove(&entry.key),
    });
}

/// Keeps this node's claims in the bucket until `shutdown`, then deletes
/// them, and says so on `left`.
async fn put_claims(
    store: kv::Store,
    node: Arc<str>,
    hub: Arc<Hub>,
    shutdown: CancellationToken,
    left: CancellationToken,
) {
    let mut tick = tokio::time::interval(PUBLISH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut refreshed = Instant::now();
    // The sessions this node has an entry for in the bucket.
    let mut put: HashSet<Arc<str>> = HashSet::new();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tick.tick() => {}
        }
        let now = Instant::now();
        let refresh = now.duration_since(refreshed) >= REFRESH;
        // Each session's claims are written out as they are read: their
        // declarations, read back from text as `Value`s (many times their
        // JSON), are then held for one session at a time, not for every
        // session this node claims at once.
        let entries: Vec<(Arc<str>, Option<Bytes>)> = hub.with_routes(|routes| {
            let mut sessions = routes.take_changed();
            if refresh {
                sessions.extend(routes.claimed());
                sessions.extend(put.iter().cloned());
                sessions.sort();
                sessions.dedup();
            }
            sessions
                .into_iter()
                .map(|session| {
                    let held = routes.held(&session, now).map(|held| value_of(&held));
                    (session, held)
                })
                .collect()
        });
        if refresh {
            refreshed = now;
        }
        for (session, held) in entries {
            let key = key(&session, &node);
            match held {
                Some(value) => match store.put(&key, value).await {
                    Ok(_) => {
                        put.insert(session);
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot put this node's claims in the cluster's bucket (put again within {}s)", REFRESH.as_secs())
                    }
                },
                None if put.remove(&session) => {
                    if let Err(e) = store.delete(&key).await {
                        tracing::warn!(error = %e, "cannot delete this node's claims from the cluster's bucket (they expire)");
                    }
                }
                None => {}
            }
        }
    }
    // Gone: the other nodes need not wait for the entries to expire.
    let deletes = async {
        for session in &put {
            let _ = store.delete(key(session, &node)).await;
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), deletes).await;
    left.cancel();
}

/// What this node publishes of a session's claims: `held`'s JSON.
fn value_of(held: &Held) -> Bytes {
    Bytes::from(serde_json::to_vec(held).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_subjects_are_safe_tokens() {
        let node = node_name();
        assert_eq!(node.len(), 16);
        assert_ne!(node, node_name());
        let key = key("a.b *>", &node);
        let (digest, of) = key.rsplit_once('.').unwrap();
        assert_eq!(of, &*node);
        assert!(digest.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(commands_subject("n1"), "aep.node.n1.command");
    }
}
