//! The local protocol between `aep hook` and the adapter daemon, over a
//! Unix socket in `$AEP_HOME/run/` (a directory only the user can enter):
//! one request line from the hook, then two reply lines from the daemon,
//! `recorded` as soon as the call's events are in the log, and `done`
//! with the hook's standard output once there is a decision (at once for
//! a hook that takes none). A hook that never sees `recorded` records the
//! call itself; one that sees `recorded` and no `done` leaves the
//! decision to the vendor.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::record::Home;

/// The longest line either side reads.
pub const MAX_LINE: usize = (16 << 20) + 4096;

/// A hook call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The agent (`claude-code`, `codex`).
    pub agent: String,
    /// The hook's payload as read.
    pub payload: String,
    /// How long a person has to answer, should the call be held: the
    /// hook's own `AEP_ATTENTION_TIMEOUT_MS` (none: the daemon's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The call's id, unique per hook process: whoever records the call
    /// first (the daemon, or the hook giving up on it) records it alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// The relay, token and posture the hook was given, as
    /// [`Serves::digest`] digests them: a daemon serving others refuses
    /// the call and retires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serves: Option<String>,
}

/// What a daemon is started with and serves: the relay, its token and
/// the capture posture (`AEP_CAPTURE` as given). A hook hands a started
/// daemon these in its environment, never on its command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Serves {
    /// The relay URL, checked.
    pub relay: Option<String>,
    /// The relay's bearer token.
    pub token: Option<String>,
    /// The capture posture's spec, as `AEP_CAPTURE` gave it.
    pub capture: Option<String>,
}

impl Serves {
    /// A digest of the three, so a hook and the daemon can tell whether
    /// they mean the same relay, token and posture without the token
    /// travelling or being written anywhere.
    pub fn digest(&self) -> String {
        aep::digest::digest(&serde_json::json!([self.relay, self.token, self.capture]))
    }
}

/// A reply line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "lowercase")]
pub enum Reply {
    /// The call's events are in the log.
    Recorded,
    /// The hook's standard output (empty: no decision).
    Done {
        /// What to print.
        stdout: String,
    },
    /// The call could not be recorded; why.
    Failed {
        /// The problem.
        error: String,
    },
}

/// The daemon's directory.
pub fn run_dir(home: &Home) -> PathBuf {
    home.0.join("run")
}

/// The daemon's socket.
pub fn socket_path(home: &Home) -> PathBuf {
    run_dir(home).join("adapter.sock")
}

/// The daemon's process id while it runs (for `kill` and for tests that
/// end it).
pub fn pid_path(home: &Home) -> PathBuf {
    run_dir(home).join("adapter.pid")
}

/// The mark of a daemon start that failed: the failure's Unix time in
/// milliseconds. While it is recent, hooks record their calls themselves
/// rather than start the daemon again; a daemon that starts listening
/// removes it.
pub fn failed_path(home: &Home) -> PathBuf {
    run_dir(home).join("adapter.failed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_tells_relays_tokens_and_postures_apart() {
        let serves = |relay: &str, token: Option<&str>, capture: Option<&str>| {
            Serves {
                relay: Some(relay.to_owned()),
                token: token.map(str::to_owned),
                capture: capture.map(str::to_owned),
            }
            .digest()
        };
        let ours = serves("http://127.0.0.1:8787", Some("t1"), None);
        assert_eq!(ours, serves("http://127.0.0.1:8787", Some("t1"), None));
        assert_ne!(ours, serves("http://127.0.0.1:8787", Some("t2"), None));
        assert_ne!(ours, serves("http://127.0.0.1:8788", Some("t1"), None));
        assert_ne!(ours, serves("http://127.0.0.1:8787", None, None));
        assert_ne!(
            ours,
            serves("http://127.0.0.1:8787", Some("t1"), Some("full"))
        );
        assert!(!ours.contains("t1"));
    }

    #[test]
    fn replies_are_tagged_lines() {
        let done = Reply::Done {
            stdout: "{}".into(),
        };
        assert_eq!(
            serde_json::to_string(&done).unwrap(),
            r#"{"reply":"done","stdout":"{}"}"#
        );
        let back: Reply = serde_json::from_str(r#"{"reply":"recorded"}"#).unwrap();
        assert_eq!(back, Reply::Recorded);
    }
}
