//! The sink's directory: one append-only file per `(source, session)`,
//! written in batches and synced before the resume position is committed,
//! rotated past a size, and read back after a stop (see [`recover`]).
//!
//! Which delivered events are new is decided against what the files hold,
//! so a restart that is replayed more than it lost writes nothing twice:
//!
//! - an event with a position is new when it is past the highest position
//!   of its `(source, session)`'s files;
//! - an event without one (a command, a relay's `attention.routed`) is new
//!   when its id is not among those of the files read back (the live file
//!   and the newest rotated one, which hold every write a crash can have
//!   cut short), unless the positioned event it was replayed after is
//!   older than everything read back: then it was written long ago.
//!
//! [`recover`]: super::recover

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::{File, OpenOptions};
use std::hash::BuildHasher;
use std::io::Write;
use std::path::{Path, PathBuf};

use aep::Event;
use serde_json::json;

use super::recover::{self, Pos};
use crate::common::error::{Context, Error, Result};
use crate::common::names::{self, Kind};
use crate::diag;
use crate::live::{replace_file, sync_dir};

/// The state file's name in the directory.
pub const STATE: &str = ".sink-state.json";
/// Ids without a position remembered (16 bytes each).
const SEQLESS_IDS: usize = 1 << 20;

type Key = (String, String);

/// One `(source, session)`'s live file.
struct Stream {
    name: String,
    file: Option<File>,
    size: u64,
    /// The highest position accepted (queued or written).
    tail: Option<Pos>,
    /// The highest position synced.
    durable: Option<Pos>,
    /// Positions below this were not read back at the start (older
    /// rotated files hold them).
    floor: Option<Pos>,
    pending: Vec<u8>,
}

/// The directory and what its files hold.
pub struct Store {
    dir: PathBuf,
    relay: String,
    rotate: Option<u64>,
    streams: HashMap<Key, Stream>,
    seqless: IdSet,
    /// Per session string, the last positioned event delivered: its key
    /// and position.
    cursor: HashMap<String, (Key, Pos)>,
    created: bool,
}

impl Store {
    /// Opens `dir` (created if missing), repairing and reading back every
    /// live file and the newest rotated file of each name.
    pub fn open(dir: &Path, relay: &str, rotate: Option<u64>) -> Result<Store> {
        if dir.exists() && !dir.is_dir() {
            return Err(Error::msg(format_args!(
                "--out {}: is a file; give a directory (it is created when missing)",
                dir.display()
            )));
        }
        std::fs::create_dir_all(dir).with_context(|| format!("--out {}", dir.display()))?;
        let mut live: HashSet<String> = HashSet::new();
        let mut rotated: HashMap<String, Vec<u64>> = HashMap::new();
        let entries = std::fs::read_dir(dir).with_context(|| dir.display().to_string())?;
        for entry in entries.flatten() {
            match entry.file_name().to_str().and_then(names::parse) {
                Some(Kind::Live(name)) => {
                    live.insert(name);
                }
                Some(Kind::Rotated(name, ts)) => rotated.entry(name).or_default().push(ts),
                None => {}
            }
        }
        let mut store = Store {
            dir: dir.to_owned(),
            relay: relay.to_owned(),
            rotate,
            streams: HashMap::new(),
            seqless: IdSet::new(SEQLESS_IDS),
            cursor: HashMap::new(),
            created: false,
        };
        let all: HashSet<&String> = live.iter().chain(rotated.keys()).collect();
        for name in all {
            let mut stamps = rotated.get(name).cloned().unwrap_or_default();
            stamps.sort_unstable();
            store.read_back(name, live.contains(name), &stamps)?;
        }
        Ok(store)
    }

    /// Reads back one name's live file (repaired) and newest rotated file.
    fn read_back(&mut self, name: &str, live: bool, stamps: &[u64]) -> Result<()> {
        let mut scans = Vec::new();
        if let Some(ts) = stamps.last() {
            let path = self.dir.join(format!("{name}.{ts}.jsonl"));
            scans.push(recover::scan(&path, false).with_context(|| path.display().to_string())?);
        }
        let mut size = 0;
        if live {
            let path = self.live_path(name);
            let scan = recover::scan(&path, true).with_context(|| path.display().to_string())?;
            size = scan.size;
            scans.push(scan);
        }
        let Some(key) = scans.iter().rev().find_map(|s| s.key.clone()) else {
            return Ok(());
        };
        if names::encode(&key.0, &key.1) != name {
            diag!("aep sink: warning: {name}: its events are of ({:?}, {:?}), whose files have another name; left alone", key.0, key.1);
            return Ok(());
        }
        let tail = scans.iter().filter_map(|s| s.max).max();
        let floor = if stamps.len() > 1 {
            scans.iter().filter_map(|s| s.min).min()
        } else {
            None
        };
        for scan in &scans {
            for (source, id) in &scan.seqless {
                self.seqless.insert(source, id);
            }
        }
        self.streams.insert(
            key,
            Stream {
                name: name.to_owned(),
                file: None,
                size,
                tail,
                durable: tail,
                floor,
                pending: Vec::new(),
            },
        );
        Ok(())
    }

    fn live_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.jsonl"))
    }

    /// Where each session stands, for the state file and for checks.
    pub fn positions(&self) -> Vec<(Key, String, Pos)> {
        let mut all: Vec<_> = self
            .streams
            .iter()
            .filter_map(|(key, s)| Some((key.clone(), s.name.clone(), s.durable?)))
            .collect();
        all.sort();
        all
    }

    /// Whether `event` is new to the files (and so to be written).
    pub fn is_new(&mut self, event: &Event) -> bool {
        let Some(session) = &event.session else {
            return false;
        };
        let key = (event.source.clone(), session.clone());
        match event.seq {
            Some(seq) => {
                let pos = (event.epoch_or_default(), seq);
                self.cursor.insert(session.clone(), (key.clone(), pos));
                self.streams
                    .get(&key)
                    .and_then(|s| s.tail)
                    .is_none_or(|tail| pos > tail)
            }
            None => {
                if self.seqless.contains(&event.source, &event.id) {
                    return false;
                }
                // Replayed after an event older than all that was read back.
                let old = self.cursor.get(session).is_some_and(|(k, pos)| {
                    self.streams
                        .get(k)
                        .is_some_and(|s| s.floor.is_some_and(|floor| *pos < floor))
                });
                !old
            }
        }
    }

    /// Queues `line` (the event's JSON) for the event's file: its own
    /// `(source, session)`'s, but for an unpositioned event (a command
    /// addressed to the session, sent by whoever answers it) of a source
    /// with no file of its own in a session that has exactly one, which
    /// goes with that one, so the session's file holds its answers.
    pub fn push(&mut self, event: &Event, line: &str) {
        let session = event.session.clone().unwrap_or_default();
        let mut key = (event.source.clone(), session);
        if event.seq.is_none() && !key.1.is_empty() && !self.streams.contains_key(&key) {
            let mut writers = self.streams.keys().filter(|(_, s)| *s == key.1);
            if let (Some(writer), None) = (writers.next(), writers.next()) {
                key = writer.clone();
            }
        }
        let stream = self
            .streams
            .entry(key)
            .or_insert_with_key(|(source, session)| Stream {
                name: names::encode(source, session),
                file: None,
                size: 0,
                tail: None,
                durable: None,
                floor: None,
                pending: Vec::new(),
            });
        match event.seq {
            Some(seq) => stream.tail = stream.tail.max(Some((event.epoch_or_default(), seq))),
            None => self.seqless.insert(&event.source, &event.id),
        }
        stream.pending.extend_from_slice(line.as_bytes());
        stream.pending.push(b'\n');
    }

    /// Writes and syncs every queued line, then commits the positions to
    /// the state file, then rotates the files past the size.
    pub fn flush(&mut self) -> Result<()> {
        let mut wrote = false;
        for stream in self.streams.values_mut() {
            if stream.pending.is_empty() {
                continue;
            }
            let path = self.dir.join(format!("{}.jsonl", stream.name));
            if stream.file.is_none() {
                self.created |= !path.exists();
                let file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .with_context(|| path.display().to_string())?;
                stream.file = Some(file);
            }
            if let Some(file) = &mut stream.file {
                file.write_all(&stream.pending)
                    .and_then(|()| file.sync_data())
                    .with_context(|| path.display().to_string())?;
            }
            stream.size += stream.pending.len() as u64;
            stream.pending.clear();
            stream.durable = stream.tail;
            wrote = true;
        }
        if !wrote {
            return Ok(());
        }
        if std::mem::take(&mut self.created) {
            sync_dir(&self.dir).with_context(|| self.dir.display().to_string())?;
        }
        self.commit()?;
        self.rotate_full()
    }

    /// Writes the state file (atomically).
    fn commit(&self) -> Result<()> {
        let sessions: Vec<_> = self
            .positions()
            .into_iter()
            .map(|((source, session), name, (epoch, seq))| {
                json!({"source": source, "session": session, "file": format!("{name}.jsonl"), "epoch": epoch, "seq": seq})
            })
            .collect();
        let state = json!({"version": 1, "relay": self.relay, "sessions": sessions});
        let mut bytes = serde_json::to_vec_pretty(&state)?;
        bytes.push(b'\n');
        let path = self.dir.join(STATE);
        replace_file(&path, &bytes).with_context(|| path.display().to_string())
    }

    /// Renames each live file past the rotation size to
    /// `<name>.<unix-ts>.jsonl` (a later second when that name is taken).
    fn rotate_full(&mut self) -> Result<()> {
        let Some(limit) = self.rotate else {
            return Ok(());
        };
        let mut rotated = false;
        for stream in self.streams.values_mut() {
            if stream.size == 0 || stream.size < limit {
                continue;
            }
            let from = self.dir.join(format!("{}.jsonl", stream.name));
            let mut ts = aep_client::session::now_ms() / 1000;
            let mut to = self.dir.join(format!("{}.{ts}.jsonl", stream.name));
            while to.exists() {
                ts += 1;
                to = self.dir.join(format!("{}.{ts}.jsonl", stream.name));
            }
            stream.file = None;
            std::fs::rename(&from, &to).with_context(|| from.display().to_string())?;
            stream.size = 0;
            rotated = true;
        }
        if rotated {
            sync_dir(&self.dir).with_context(|| self.dir.display().to_string())?;
        }
        Ok(())
    }

    /// Says where the state file and the files disagree (the files win).
    pub fn check_state(&self) {
        let path = self.dir.join(STATE);
        let Ok(text) = std::fs::read_to_string(&path) else {
            return;
        };
        let Ok(state) = serde_json::from_str::<serde_json::Value>(&text) else {
            diag!(
                "aep sink: warning: {} does not read; the files decide",
                path.display()
            );
            return;
        };
        for entry in state["sessions"].as_array().into_iter().flatten() {
            let (Some(source), Some(session)) =
                (entry["source"].as_str(), entry["session"].as_str())
            else {
                continue;
            };
            let committed = (
                entry["epoch"].as_u64().unwrap_or(0),
                entry["seq"].as_u64().unwrap_or(0),
            );
            let held = self
                .streams
                .get(&(source.to_owned(), session.to_owned()))
                .and_then(|s| s.durable);
            if held.is_none_or(|held| held < committed) {
                diag!(
                    "aep sink: warning: the state file has session {session:?} of {source:?} at {}:{}, its files only up to {}; the files decide (were they cut or moved?)",
                    committed.0,
                    committed.1,
                    held.map_or("nothing".to_owned(), |(e, s)| format!("{e}:{s}"))
                );
            }
        }
    }
}

/// A bounded set of `(source, id)`, each kept as a 128-bit keyed hash,
/// the oldest forgotten first.
struct IdSet {
    seen: HashSet<u128>,
    order: VecDeque<u128>,
    capacity: usize,
    keys: (RandomState, RandomState),
}

impl IdSet {
    fn new(capacity: usize) -> IdSet {
        IdSet {
            seen: HashSet::new(),
            order: VecDeque::new(),
            capacity,
            keys: (RandomState::new(), RandomState::new()),
        }
    }

    fn key(&self, source: &str, id: &str) -> u128 {
        let half = |state: &RandomState| state.hash_one((source, id));
        (u128::from(half(&self.keys.0)) << 64) | u128::from(half(&self.keys.1))
    }

    fn contains(&self, source: &str, id: &str) -> bool {
        self.seen.contains(&self.key(source, id))
    }

    fn insert(&mut self, source: &str, id: &str) {
        let key = self.key(source, id);
        if self.seen.insert(key) {
            self.order.push_back(key);
            if self.order.len() > self.capacity {
                if let Some(old) = self.order.pop_front() {
                    self.seen.remove(&old);
                }
            }
        }
    }
}
