//! The claims the other nodes of a cluster hold ([`Config::nats`]).
//!
//! Every node of a cluster publishes, for each session it holds claims
//! on, what it holds ([`Held`]): each claim's `source`, and whether its
//! connection is live (with what that connection declared in its
//! `hello`, for the roster) or for how long more the claim is held for
//! its owner's return. Every node keeps the latest of each other node's
//! in its [`Directory`], and routes commands, believes acks and answers
//! `roster` over the union of its own claims and the directory's
//! (`routing`): zero claims in the cluster is `no-route`, several
//! `ambiguous`, one live claim on another node is that node's to deliver.
//!
//! - **Expiry.** A node publishes each of its entries again every
//!   [`REFRESH`]; an entry not published again within [`TTL`] is dropped,
//!   so the claims of a node that died are gone within [`TTL`] (and a
//!   command routed to a node that no longer answers is `no-route`
//!   meanwhile).
//! - **Bounds.** At most [`MAX_ENTRIES`] entries of at most
//!   [`MAX_ENTRY_BYTES`] each, [`MAX_BYTES`] in all (their JSON), are
//!   kept; past them an entry is not taken (and logged), and for a [`TTL`]
//!   every session counts as crowded (`ambiguous`): a command is refused
//!   rather than diverted while a claim may be unseen.
//!
//! Nothing here does I/O; `now` is passed in.
//!
//! [`Config::nats`]: crate::Config::nats

// A relay of one node only reads its (empty) directory; a node of a
// cluster (the `nats` feature) fills it.
#![cfg_attr(not(feature = "nats"), allow(dead_code))]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How long an entry lives without being published again.
pub(crate) const TTL: Duration = Duration::from_secs(15);
/// How often a node publishes its entries again.
pub(crate) const REFRESH: Duration = Duration::from_secs(5);
/// Entries (session, node) one node keeps of the others'.
pub(crate) const MAX_ENTRIES: usize = 1 << 16;
/// The largest entry taken, in bytes of its JSON.
pub(crate) const MAX_ENTRY_BYTES: usize = 64 << 10;
/// Bytes of entries (their JSON) one node keeps of the others', at most.
pub(crate) const MAX_BYTES: usize = 16 << 20;

/// What one node holds of one session's claims, as published.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Held {
    /// The session, verbatim.
    pub session: String,
    /// Its claims on the node.
    pub claims: Vec<HeldClaim>,
    /// More claimants came than the node records: `ambiguous`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub crowded: bool,
}

/// One claim of a [`Held`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct HeldClaim {
    /// The `source` the claim is tied to.
    pub source: String,
    /// A live connection holds it: what that connection declared (its
    /// `agent`, `instance`, `control` and `emits`, each when declared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<Map<String, Value>>,
    /// Nobody holds it since its connection left: it is held for its
    /// owner's return this many milliseconds more (from publication).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub away_ms: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A claim another node holds, as routing weighs it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Remote {
    /// The node holding it.
    pub node: Arc<str>,
    pub source: Arc<str>,
    /// Held for its owner's return until then; `None` while live.
    pub away_until: Option<Instant>,
}

struct Entry {
    /// The key it was published under.
    key: String,
    held: Held,
    /// The roster members of each live claim (`,"agent":…`), in order.
    members: Vec<Arc<str>>,
    seen: Instant,
    size: usize,
}

/// The other nodes' claims, by session then node.
#[derive(Default)]
pub(crate) struct Directory {
    sessions: HashMap<Arc<str>, HashMap<Arc<str>, Entry>>,
    /// Each published key's (session, node), to take deletions.
    keys: HashMap<String, (Arc<str>, Arc<str>)>,
    bytes: usize,
    /// An entry was not taken: claims may be unseen until then.
    blind_until: Option<Instant>,
}

/// Why an entry was not taken.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Over [`MAX_ENTRY_BYTES`].
    TooLarge(usize),
    /// [`MAX_ENTRIES`] entries, or [`MAX_BYTES`], are held.
    Full,
    /// Not a [`Held`].
    Malformed(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::TooLarge(n) => write!(
                f,
                "an entry of {n} bytes is over the {MAX_ENTRY_BYTES} bytes taken"
            ),
            Refused::Full => write!(
                f,
                "the other nodes' claims fill this node's directory ({MAX_ENTRIES} entries or {MAX_BYTES} bytes)"
            ),
            Refused::Malformed(why) => write!(f, "not a claims entry: {why}"),
        }
    }
}

/// The names of the declarations a roster entry carries, in its order.
pub(crate) const DECLARATIONS: [&str; 4] = ["agent", "instance", "control", "emits"];

/// The roster members of a live claim's declarations: `,"agent":…` and
/// so on, each present only when declared (as a local connection's).
pub(crate) fn members_text(declared: &Map<String, Value>) -> Arc<str> {
    members_of(DECLARATIONS.map(|name| declared.get(name)))
}

/// [`members_text`] of the declarations named by [`DECLARATIONS`], each
/// `None` when not declared.
pub(crate) fn members_of(declared: [Option<&Value>; 4]) -> Arc<str> {
    use std::fmt::Write;
    let mut text = String::new();
    for (name, value) in DECLARATIONS.into_iter().zip(declared) {
        if let Some(value) = value {
            let _ = write!(text, ",\"{name}\":{value}");
        }
    }
    Arc::from(text)
}

impl Directory {
    /// Takes `value`, published under `key` by `node`, seen at `now`
    /// (replacing what `key` held).
    pub fn put(
        &mut self,
        key: &str,
        node: &str,
        value: &[u8],
        now: Instant,
    ) -> Result<(), Refused> {
        if value.len() > MAX_ENTRY_BYTES {
            self.remove(key);
            self.blind_until = Some(now + TTL);
            return Err(Refused::TooLarge(value.len()));
        }
        let mut held: Held = serde_json::from_slice(value).map_err(|e| {
            // What the key held before is no longer what its node holds.
            self.remove(key);
            self.blind_until = Some(now + TTL);
            Refused::Malformed(e.to_string())
        })?;
        self.remove(key);
        // The declarations are kept as their roster members' text only:
        // as parsed `Value`s they would take many times their JSON.
        let members: Vec<Arc<str>> = held
            .claims
            .iter_mut()
            .filter_map(|c| {
                c.live
                    .as_mut()
                    .map(|live| members_text(&std::mem::take(live)))
            })
            .collect();
        // Counted as its JSON, or as the text kept when more (a number
        // written back longer than sent: `1e15` as `1000000000000000.0`).
        let size = value
            .len()
            .max(members.iter().map(|m| m.len()).sum::<usize>());
        let full = |dir: &Directory| dir.keys.len() >= MAX_ENTRIES || dir.bytes + size > MAX_BYTES;
        if full(self) {
            self.sweep(now);
            if full(self) {
                self.blind_until = Some(now + TTL);
                return Err(Refused::Full);
            }
        }
        let session: Arc<str> = Arc::from(held.session.as_str());
        let node: Arc<str> = Arc::from(node);
        self.bytes += size;
        self.keys
            .insert(key.to_owned(), (session.clone(), node.clone()));
        let replaced = self.sessions.entry(session).or_default().insert(
            node,
            Entry {
                key: key.to_owned(),
                held,
                members,
                seen: now,
                size,
            },
        );
        // Another key named the same session of the same node: it holds
        // nothing any more (its bytes are freed, its deletion is a no-op).
        if let Some(old) = replaced {
            self.bytes -= old.size;
            self.keys.remove(&old.key);
        }
        Ok(())
    }

    /// Claims may be unseen (the bucket was not all read): every session
    /// counts as crowded for a [`TTL`] from `now`.
    pub fn blind(&mut self, now: Instant) {
        self.blind_until = Some(now + TTL);
    }

    /// Forgets what `key` held (deleted, or purged).
    pub fn remove(&mut self, key: &str) {
        let Some((session, node)) = self.keys.remove(key) else {
            return;
        };
        if let Some(nodes) = self.sessions.get_mut(&session) {
            if nodes.get(&node).is_some_and(|e| e.key == key) {
                if let Some(gone) = nodes.remove(&node) {
                    self.bytes -= gone.size;
                }
            }
            if nodes.is_empty() {
                self.sessions.remove(&session);
            }
        }
    }

    /// Drops every entry not published again within [`TTL`] of `now`.
    pub fn sweep(&mut self, now: Instant) {
        let stale: Vec<String> = self
            .keys
            .iter()
            .filter(|(_, (session, node))| {
                self.sessions
                    .get(session)
                    .and_then(|nodes| nodes.get(node))
                    .is_none_or(|e| e.seen + TTL <= now)
            })
            .map(|(key, _)| key.clone())
            .collect();
        for key in stale {
            self.remove(&key);
        }
    }

    /// The claims other nodes hold on `session` at `now` (their entries
    /// in time, their held claims not yet expired), and whether any node
    /// says it is crowded.
    pub fn claims(&self, session: &str, now: Instant) -> (Vec<Remote>, bool) {
        let mut claims = Vec::new();
        let mut crowded = self.blind_until.is_some_and(|until| now < until);
        for (node, entry) in self.live_entries(session, now) {
            crowded |= entry.held.crowded;
            for claim in &entry.held.claims {
                let away_until = match claim.live {
                    Some(_) => None,
                    None => {
                        let until = entry.seen + Duration::from_millis(claim.away_ms);
                        if until <= now {
                            continue;
                        }
                        Some(until)
                    }
                };
                claims.push(Remote {
                    node: node.clone(),
                    source: Arc::from(claim.source.as_str()),
                    away_until,
                });
            }
        }
        claims.sort_by(|a, b| a.node.cmp(&b.node));
        (claims, crowded)
    }

    fn live_entries<'a>(
        &'a self,
        session: &str,
        now: Instant,
    ) -> impl Iterator<Item = (&'a Arc<str>, &'a Entry)> + 'a {
        self.sessions
            .get(session)
            .into_iter()
            .flatten()
            .filter(move |(_, e)| e.seen + TTL > now)
    }

    /// The live claims of other nodes, for a roster: `(session, members)`
    /// in node then session order.
    pub fn roster(&self, now: Instant) -> Vec<(Arc<str>, Arc<str>)> {
        let mut entries: Vec<(&Arc<str>, &Arc<str>, &Entry)> = self
            .sessions
            .iter()
            .flat_map(|(session, nodes)| nodes.iter().map(move |(node, e)| (node, session, e)))
            .filter(|(_, _, e)| e.seen + TTL > now)
            .collect();
        entries.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        entries
            .into_iter()
            .flat_map(|(_, session, e)| e.members.iter().map(|m| (session.clone(), m.clone())))
            .collect()
    }

    /// Bytes of the entries held (their JSON).
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn live(source: &str) -> Value {
        json!({"source": source, "live": {"agent": "a", "control": {"accepts": ["control.cancel"]}}})
    }

    fn held(session: &str, claims: Vec<Value>) -> Vec<u8> {
        json!({"session": session, "claims": claims})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn an_entry_lives_until_its_ttl_and_is_replaced_by_the_next() {
        let t0 = Instant::now();
        let mut dir = Directory::default();
        dir.put("k1.n1", "n1", &held("s", vec![live("urn:a")]), t0)
            .unwrap();
        let (claims, crowded) = dir.claims("s", t0);
        assert_eq!(claims.len(), 1);
        assert!(!crowded);
        assert_eq!(&*claims[0].node, "n1");
        assert_eq!(claims[0].away_until, None);
        // Published again: replaced, not added.
        let later = t0 + REFRESH;
        dir.put("k1.n1", "n1", &held("s", vec![live("urn:a")]), later)
            .unwrap();
        assert_eq!(dir.claims("s", later + TTL - REFRESH).0.len(), 1);
        // Not published again within the TTL: gone.
        assert!(dir.claims("s", later + TTL).0.is_empty());
        dir.sweep(later + TTL);
        assert_eq!(dir.bytes(), 0);
        assert!(dir.keys.is_empty() && dir.sessions.is_empty());
    }

    #[test]
    fn a_held_claim_expires_with_its_owners_grace() {
        let t0 = Instant::now();
        let mut dir = Directory::default();
        let away = json!({"source": "urn:a", "away_ms": 2000});
        dir.put("k.n", "n", &held("s", vec![away]), t0).unwrap();
        let (claims, _) = dir.claims("s", t0 + Duration::from_secs(1));
        assert_eq!(claims[0].away_until, Some(t0 + Duration::from_secs(2)));
        assert!(dir.claims("s", t0 + Duration::from_secs(2)).0.is_empty());
    }

    #[test]
    fn a_deletion_forgets_the_entry_and_its_bytes() {
        let t0 = Instant::now();
        let mut dir = Directory::default();
        dir.put("k.n1", "n1", &held("s", vec![live("urn:a")]), t0)
            .unwrap();
        dir.put("k.n2", "n2", &held("s", vec![live("urn:b")]), t0)
            .unwrap();
        assert_eq!(dir.claims("s", t0).0.len(), 2);
        dir.remove("k.n1");
        let (claims, _) = dir.claims("s", t0);
        assert_eq!(claims.len(), 1);
        assert_eq!(&*claims[0].node, "n2");
        dir.remove("k.n2");
        dir.remove("k.unknown");
        assert_eq!(dir.bytes(), 0);
    }

    #[test]
    fn two_keys_naming_one_session_of_one_node_keep_the_books_straight() {
        let t0 = Instant::now();
        let mut dir = Directory::default();
        let first = held("s", vec![live("urn:a")]);
        let second = held("s", vec![live("urn:b")]);
        dir.put("k1.n", "n", &first, t0).unwrap();
        dir.put("k2.n", "n", &second, t0).unwrap();
        assert_eq!(dir.bytes(), second.len());
        // Deleting the key it replaced leaves the newer entry alone.
        dir.remove("k1.n");
        assert_eq!(&*dir.claims("s", t0).0[0].source, "urn:b");
        dir.remove("k2.n");
        assert_eq!(dir.bytes(), 0);
        assert!(dir.keys.is_empty() && dir.sessions.is_empty());
        // A key whose value turns malformed no longer holds its claims.
        dir.put("k1.n", "n", &first, t0).unwrap();
        assert!(dir.put("k1.n", "n", b"{", t0).is_err());
        assert!(dir.claims("s", t0).0.is_empty());
        assert_eq!(dir.bytes(), 0);
    }

    #[test]
    fn the_text_kept_of_declarations_is_counted_when_more_than_their_json() {
        // Another node's numbers, written back longer than it sent them.
        let t0 = Instant::now();
        let mut dir = Directory::default();
        let emits = format!("[{}1]", "1e15,".repeat(10_000));
        let value = format!(
            r#"{{"session":"s","claims":[{{"source":"urn:a","live":{{"emits":{emits}}}}}]}}"#
        );
        assert!(value.len() <= MAX_ENTRY_BYTES);
        dir.put("k.n", "n", value.as_bytes(), t0).unwrap();
        let kept: usize = dir.sessions["s"]["n"].members.iter().map(|m| m.len()).sum();
        assert!(kept > value.len());
        assert!(dir.bytes() >= kept, "{} counted, {kept} kept", dir.bytes());
        dir.remove("k.n");
        assert_eq!(dir.bytes(), 0);
    }

    #[test]
    fn the_roster_lists_live_claims_with_their_declarations() {
        let t0 = Instant::now();
        let mut dir = Directory::default();
        let away = json!({"source": "urn:b", "away_ms": 2000});
        dir.put("k.n", "n", &held("s", vec![live("urn:a"), away]), t0)
            .unwrap();
        let roster = dir.roster(t0);
        assert_eq!(roster.len(), 1);
        assert_eq!(&*roster[0].0, "s");
        let entry: Value =
            serde_json::from_str(&format!("{{\"session\":\"s\"{}}}", roster[0].1)).unwrap();
        assert_eq!(entry["agent"], "a");
        assert_eq!(entry["control"]["accepts"][0], "control.cancel");
        // The declarations are kept as that text only, not also parsed
        // (as `Value`s, many times their JSON).
        let kept = &dir.sessions["s"]["n"].held.claims;
        assert!(kept
            .iter()
            .all(|c| c.live.as_ref().is_none_or(Map::is_empty)));
        assert_eq!(
            dir.claims("s", t0)
                .0
                .iter()
                .filter(|c| c.away_until.is_none())
                .count(),
            1
        );
        assert!(dir.roster(t0 + TTL).is_empty());
    }

    #[test]
    fn entries_past_the_bounds_are_not_taken() {
        let t0 = Instant::now();
        let mut dir = Directory::default();
        let big = held("s", vec![json!({"source": "x".repeat(MAX_ENTRY_BYTES)})]);
        assert_eq!(
            dir.put("k.n", "n", &big, t0),
            Err(Refused::TooLarge(big.len()))
        );
        assert!(matches!(
            dir.put("k.n", "n", b"[1]", t0),
            Err(Refused::Malformed(_))
        ));
        for n in 0..MAX_ENTRIES {
            dir.put(&format!("k{n}.n"), "n", &held(&format!("s{n}"), vec![]), t0)
                .unwrap();
        }
        let one_more = held("t", vec![live("urn:a")]);
        assert_eq!(dir.put("t.n", "n", &one_more, t0), Err(Refused::Full));
        // Meanwhile a claim may be unseen: every session is crowded.
        assert!(dir.claims("k1", t0).1);
        assert!(!dir.claims("k1", t0 + TTL).1);
        // A known key is still replaced, and stale entries make room.
        dir.put("k0.n", "n", &held("s0", vec![live("urn:a")]), t0)
            .unwrap();
        dir.put("t.n", "n", &one_more, t0 + TTL).unwrap();
        assert_eq!(dir.keys.len(), 1);
    }

    #[test]
    fn entries_past_the_bytes_bound_are_not_taken() {
        let t0 = Instant::now();
        let mut dir = Directory::default();
        let filler = "x".repeat(MAX_ENTRY_BYTES - 100);
        let entry = |n: usize| held(&format!("s{n}"), vec![json!({"source": filler})]);
        let fit = MAX_BYTES / entry(0).len();
        for n in 0..fit {
            dir.put(&format!("k{n}.n"), "n", &entry(n), t0).unwrap();
        }
        assert!(dir.bytes() <= MAX_BYTES);
        assert_eq!(dir.put("z.n", "n", &entry(fit), t0), Err(Refused::Full));
        // Replacing a key frees its bytes first.
        dir.put("k0.n", "n", &entry(0), t0).unwrap();
        dir.remove("k1.n");
        dir.put("z.n", "n", &entry(fit), t0).unwrap();
    }
}
