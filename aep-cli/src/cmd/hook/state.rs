//! A session's durable counter: its `epoch`, the next `seq` and the open
//! run, in `<dir>/<name>.json`, read and replaced under an exclusive lock
//! on `<dir>/<name>.lock`. Hook processes of one session run at once (the
//! vendors start matching hooks concurrently), so every position is taken
//! under that lock, one process at a time.
//!
//! A missing or unreadable state starts a new `epoch` (AEP-0001 §7 rule
//! 1): the current Unix time in milliseconds, a monotonic seed, raised
//! above any epoch the unreadable file still names.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::live::replace_file;

/// What one session's file holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    /// The session's `epoch`.
    pub epoch: u64,
    /// The `seq` the next event takes.
    pub next_seq: u64,
    /// The run a prompt opened and its turn's end has not closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The attention requests recorded and not yet closed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<aep_adapters::runtime::pending::Pending>,
    /// The ids of the last calls recorded (at most [`RECENT_CALLS`],
    /// oldest first): a call handed to the daemon and then recorded by
    /// its hook as well, or the other way round, is written once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<String>,
}

/// How many call ids a session remembers.
pub const RECENT_CALLS: usize = 64;

impl SessionState {
    /// Notes call `id` as recorded; whether it was new.
    pub fn first_record_of(&mut self, id: &str) -> bool {
        if self.calls.iter().any(|c| c == id) {
            return false;
        }
        if self.calls.len() >= RECENT_CALLS {
            self.calls.remove(0);
        }
        self.calls.push(id.to_owned());
        true
    }
}

/// A session's state, held under its lock until dropped.
#[derive(Debug)]
pub struct Held {
    _lock: File,
    path: PathBuf,
    /// The state as read (or started afresh).
    pub state: SessionState,
    /// Why a new epoch was started, when one was.
    pub fresh: Option<String>,
}

/// How long to wait for another hook process of the session.
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

impl Held {
    /// Takes the lock of session `name` in `dir` (created if missing),
    /// waiting at most `wait`, and reads its state.
    pub fn acquire(dir: &Path, name: &str, wait: Duration) -> io::Result<Held> {
        super::record::private_dir(dir)?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(format!("{name}.lock")))?;
        let deadline = Instant::now() + wait;
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("the session's lock is still held after {wait:?}"),
                    ))
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(e),
            }
        }
        let path = dir.join(format!("{name}.json"));
        let (state, fresh) = read(&path);
        Ok(Held {
            _lock: lock,
            path,
            state,
            fresh,
        })
    }

    /// Writes the state back (atomically), still under the lock.
    pub fn save(&self) -> io::Result<()> {
        let mut bytes = serde_json::to_vec(&self.state).map_err(io::Error::other)?;
        bytes.push(b'\n');
        replace_file(&self.path, &bytes)
    }
}

/// The state in `path`, or a new epoch and why.
fn read(path: &Path) -> (SessionState, Option<String>) {
    let now = aep_client::session::now_ms();
    let start = |floor: u64, why: String| {
        let state = SessionState {
            epoch: now.max(floor.saturating_add(1)),
            next_seq: 0,
            run: None,
            pending: Vec::new(),
            calls: Vec::new(),
        };
        (state, Some(why))
    };
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return start(0, "no state yet".into()),
        Err(e) => return start(0, format!("the state cannot be read: {e}")),
    };
    match serde_json::from_slice::<SessionState>(&bytes) {
        Ok(state) => (state, None),
        Err(e) => {
            // Keep epochs rising past whatever a damaged file still says.
            let floor = serde_json::from_slice::<serde_json::Value>(&bytes)
                .ok()
                .and_then(|v| v.get("epoch").and_then(serde_json::Value::as_u64))
                .unwrap_or(0);
            start(floor, format!("the state is corrupt ({e})"))
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_session_remembers_its_last_calls_only() {
        let mut state = read(Path::new("/nonexistent/state.json")).0;
        assert!(state.first_record_of("c0"));
        assert!(!state.first_record_of("c0"));
        for n in 1..=RECENT_CALLS {
            assert!(state.first_record_of(&format!("c{n}")));
        }
        assert_eq!(state.calls.len(), RECENT_CALLS);
        // The oldest went to make room: it would be new again.
        assert!(state.first_record_of("c0"));
        assert!(!state.first_record_of(&format!("c{RECENT_CALLS}")));
    }

    use super::*;

    #[test]
    fn a_missing_or_corrupt_state_starts_a_later_epoch() {
        let dir = tempfile::tempdir().unwrap();
        let held = Held::acquire(dir.path(), "s", LOCK_WAIT).unwrap();
        assert_eq!(held.state.next_seq, 0);
        assert!(held.fresh.is_some());
        let first = held.state.epoch;
        let mut held = held;
        held.state.next_seq = 7;
        held.save().unwrap();
        drop(held);

        let held = Held::acquire(dir.path(), "s", LOCK_WAIT).unwrap();
        assert_eq!((held.state.epoch, held.state.next_seq), (first, 7));
        assert!(held.fresh.is_none());
        drop(held);

        let far = u64::MAX / 2;
        std::fs::write(dir.path().join("s.json"), format!("{{\"epoch\":{far}")).unwrap();
        let held = Held::acquire(dir.path(), "s", LOCK_WAIT).unwrap();
        assert!(held.fresh.as_deref().unwrap().contains("corrupt"));
        assert!(held.state.epoch >= first && held.state.next_seq == 0);
        drop(held);

        std::fs::write(
            dir.path().join("s.json"),
            format!("{{\"epoch\":{far},\"next_seq\":\"x\"}}"),
        )
        .unwrap();
        let held = Held::acquire(dir.path(), "s", LOCK_WAIT).unwrap();
        assert_eq!(held.state.epoch, far + 1);
    }

    #[test]
    fn a_held_lock_makes_the_next_taker_wait_then_give_up() {
        let dir = tempfile::tempdir().unwrap();
        let held = Held::acquire(dir.path(), "s", LOCK_WAIT).unwrap();
        let again = Held::acquire(dir.path(), "s", Duration::from_millis(50));
        assert_eq!(again.unwrap_err().kind(), io::ErrorKind::TimedOut);
        drop(held);
        assert!(Held::acquire(dir.path(), "s", Duration::from_millis(50)).is_ok());
    }
}
