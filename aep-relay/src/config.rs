//! What an operator sets: limits, auth, TLS, timers.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// A bearer token. Its `Debug` and `Display` never show the secret, so a
/// config can be logged whole.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    /// A token; `None` for an empty string (an empty token would accept an
    /// empty `Authorization: Bearer ` header).
    pub fn new(secret: impl Into<String>) -> Option<Token> {
        let secret = secret.into();
        (!secret.is_empty()).then_some(Token(secret))
    }

    /// Whether `presented` is this token, compared in constant time
    /// whatever either length: the SHA-256 digests of both are compared,
    /// so neither the token's length nor a common prefix shows in timing.
    pub fn matches(&self, presented: &str) -> bool {
        let ours = Sha256::digest(self.0.as_bytes());
        let theirs = Sha256::digest(presented.as_bytes());
        ours.as_slice().ct_eq(theirs.as_slice()).into()
    }

    /// The secret itself, for a client that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

/// What one connection may hold that no budget counts, at most: its read
/// and write buffers (an HTTP connection's 64 KiB each way and a 16 KiB
/// chunk of its SSE stream; a WebSocket's 16 KiB reads and two 16 KiB
/// fragments written), the replay events it has read and not yet
/// written (32 KiB), the first 8 KiB of what it keeps about itself, and
/// its task and tables.
pub const CONNECTION_BYTES: usize = 192 * 1024;

/// What TLS adds to [`CONNECTION_BYTES`] per connection, at most: the
/// TLS layer's 64 KiB of records waiting to be written, the record being
/// read and the session.
pub const TLS_CONNECTION_BYTES: usize = 96 * 1024;

/// What a node of a cluster ([`Config::nats`]) holds besides one relay,
/// at most: its NATS client's messages not yet read (two pulls of 64
/// messages of the server's `max_payload`, counted at its default of
/// 1 MiB: a server with a larger `max_payload` adds in proportion) and
/// the other nodes' claims (16 MiB).
pub const NATS_NODE_BYTES: usize = 2 * 64 * (1 << 20) + (16 << 20);

/// A PEM certificate chain and private key for TLS.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate chain, leaf first.
    pub cert: PathBuf,
    /// The private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// A NATS server whose JetStream several relay nodes share
/// ([`Config::nats`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatsServer {
    /// The server's URL (`nats://host:4222`).
    pub url: String,
    /// A credentials file (`.creds`: a user JWT and its NKey seed).
    pub creds: Option<PathBuf>,
}

/// The relay's configuration. Every limit has the published reference
/// relay's default where it has one; the rest are documented here.
///
/// ```
/// let config = aep_relay::Config::default().buffer(64).max_sessions(10);
/// assert_eq!(config.buffer_limit(), 64);
/// ```
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) token: Option<Token>,
    pub(crate) buffer: usize,
    pub(crate) max_buffer_bytes: usize,
    pub(crate) max_buffered_bytes: usize,
    pub(crate) max_inflight_bytes: usize,
    pub(crate) max_sessions: usize,
    pub(crate) max_body: usize,
    pub(crate) max_batch: usize,
    pub(crate) max_from: Option<usize>,
    pub(crate) max_frame: usize,
    pub(crate) queue_soft: usize,
    pub(crate) queue_hard: usize,
    pub(crate) queue_bytes: usize,
    pub(crate) max_queued_bytes: usize,
    pub(crate) max_command_bytes: usize,
    pub(crate) max_state_bytes: usize,
    pub(crate) max_subscriptions: usize,
    pub(crate) max_connections: usize,
    pub(crate) ping_interval: Duration,
    pub(crate) ping_timeout: Duration,
    pub(crate) grace: Duration,
    pub(crate) write_timeout: Duration,
    pub(crate) head_timeout: Duration,
    pub(crate) message_timeout: Duration,
    pub(crate) tls: Option<TlsFiles>,
    pub(crate) ui: bool,
    pub(crate) claim_grace: Duration,
    pub(crate) nats: Option<NatsServer>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            token: None,
            buffer: 10_000,
            max_buffer_bytes: 32 << 20,
            max_buffered_bytes: 256 << 20,
            max_inflight_bytes: 64 << 20,
            max_sessions: 500,
            max_body: 16 << 20,
            max_batch: 10_000,
            max_from: None,
            max_frame: 4 << 20,
            queue_soft: 1_024,
            queue_hard: 4_096,
            queue_bytes: 32 << 20,
            max_queued_bytes: 128 << 20,
            max_command_bytes: 32 << 20,
            max_state_bytes: 32 << 20,
            max_subscriptions: 64,
            max_connections: 1_024,
            ping_interval: Duration::from_secs(15),
            ping_timeout: Duration::from_secs(90),
            grace: Duration::from_secs(4),
            write_timeout: Duration::from_secs(30),
            head_timeout: Duration::from_secs(10),
            message_timeout: Duration::from_secs(30),
            tls: None,
            ui: true,
            claim_grace: Duration::from_secs(5),
            nats: None,
        }
    }
}

impl Config {
    /// Require this bearer token on every surface but `/healthz`, and
    /// route commands (without a token the relay is watch-only: commands
    /// are refused `unauthorized`, AEP-0004 §4.1).
    pub fn token(mut self, token: Option<Token>) -> Self {
        self.token = token;
        self
    }

    /// Events kept per session for replay (default 10 000); the oldest
    /// position is evicted first.
    pub fn buffer(mut self, events: usize) -> Self {
        self.buffer = events.max(1);
        self
    }

    /// Bytes of delivered frames kept per session for replay (default
    /// 32 MiB): past it the session's oldest events are evicted, and a
    /// resume from before them is told `replay-exhausted`. An event larger
    /// than this is delivered live only (a resume across it is told
    /// `replay-exhausted` too).
    pub fn max_buffer_bytes(mut self, bytes: usize) -> Self {
        self.max_buffer_bytes = bytes;
        self
    }

    /// Bytes kept for replay over all sessions (default 256 MiB): past
    /// it the least recently written sessions are evicted first.
    pub fn max_buffered_bytes(mut self, bytes: usize) -> Self {
        self.max_buffered_bytes = bytes;
        self
    }

    /// Bytes of `POST /events` bodies read and ingested at once, over all
    /// connections (default 64 MiB), each body counted as its bytes
    /// arrive: a POST that would take more is answered
    /// `503 {"error":"busy"}` with `Retry-After`. At least `--max-body`.
    pub fn max_inflight_bytes(mut self, bytes: usize) -> Self {
        self.max_inflight_bytes = bytes;
        self
    }

    /// Sessions held at once (default 500); the least recently written is
    /// evicted first.
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions.max(1);
        self
    }

    /// Largest `POST /events` body in bytes (default 16 MiB).
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes.max(1);
        self
    }

    /// Most events in one NDJSON batch (default 10 000).
    pub fn max_batch(mut self, events: usize) -> Self {
        self.max_batch = events.max(1);
        self
    }

    /// Most resume positions in one `from` (default: the session cap).
    pub fn max_from(mut self, positions: usize) -> Self {
        self.max_from = Some(positions);
        self
    }

    /// Largest WebSocket message in bytes (default 4 MiB).
    pub fn max_frame(mut self, bytes: usize) -> Self {
        self.max_frame = bytes.max(1024);
        self
    }

    /// A subscriber's queue bounds, in events (defaults 1 024 and 4 096):
    /// past `soft` queued events, `debug` and `info` events toward it are
    /// dropped and counted; at `hard` it is disconnected (AEP-0003 §8.4).
    pub fn queue(mut self, soft: usize, hard: usize) -> Self {
        self.queue_hard = hard.max(2);
        self.queue_soft = soft.clamp(1, self.queue_hard - 1);
        self
    }

    /// Bytes a consumer's queue may hold (default 32 MiB), each delivery
    /// counted as its event's buffered size: a delivery that would take
    /// it past this cuts the consumer off, as the hard bound does (one
    /// delivery of any size fits into an empty queue). Events a queue
    /// holds outlive their eviction from the buffer; this bounds what a
    /// consumer that stopped reading keeps alive.
    pub fn queue_bytes(mut self, bytes: usize) -> Self {
        self.queue_bytes = bytes;
        self
    }

    /// Bytes of events queued toward all consumers together, and being
    /// written to them (default 128 MiB), each event counted once however
    /// many queues hold it: a delivery that would take them past this
    /// cuts off the consumer it is for, as its own `queue_bytes` would.
    /// A consumer that keeps up (its queue empty when the batch began)
    /// may take them up to twice this, so one batch does not cut it off
    /// for what others left unread. With `queue_bytes`, this bounds what
    /// consumers that stopped reading keep alive, however many connect.
    pub fn max_queued_bytes(mut self, bytes: usize) -> Self {
        self.max_queued_bytes = bytes;
        self
    }

    /// Bytes of commands waiting in all emitters' command queues together
    /// (default 32 MiB; each connection's own queue holds at most 256
    /// commands and 16 MiB): a command that would take them past this is
    /// refused `busy` to its sender, as at a full queue (one command of
    /// any size fits when none is waiting).
    pub fn max_command_bytes(mut self, bytes: usize) -> Self {
        self.max_command_bytes = bytes;
        self
    }

    /// Bytes of what WebSocket connections keep about themselves, over
    /// all of them (default 32 MiB): each one's `hello` (its
    /// declarations), subscriptions (ids and filters) and remembered
    /// positions, beyond the first 8 KiB of hello and subscriptions each
    /// connection has of its own. Past it a `hello` is refused `busy` (close 1013), a
    /// `subscribe` is refused `limit-exceeded`, and the oldest positions
    /// are forgotten (the `closing` frame counts them in `omitted`).
    pub fn max_state_bytes(mut self, bytes: usize) -> Self {
        self.max_state_bytes = bytes;
        self
    }

    /// Subscriptions one WebSocket connection may hold (default 64).
    pub fn max_subscriptions(mut self, subscriptions: usize) -> Self {
        self.max_subscriptions = subscriptions.max(1);
        self
    }

    /// Connections served at once (default 1 024); more are closed on
    /// accept. Each may hold up to [`CONNECTION_BYTES`] that no budget
    /// counts (see [`Config::worst_case_bytes`]).
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// How often the relay sends `: ping` on SSE and a `ping` frame on
    /// WebSockets (default 15 s), and how long a silent WebSocket peer is
    /// kept (default 90 s, AEP-0003 §3.5).
    pub fn ping(mut self, interval: Duration, timeout: Duration) -> Self {
        self.ping_interval = interval.max(Duration::from_millis(10));
        self.ping_timeout = timeout.max(self.ping_interval);
        self
    }

    /// How long a shutdown waits for connections to drain (default 4 s).
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// How long one write to a peer may stay blocked (default 30 s): a
    /// consumer that stops reading is disconnected after it.
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.write_timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// How long a new connection may take to send a complete request
    /// head (default 10 s), the token included: a connection that sends
    /// nothing, or never finishes its head, is closed after it and frees
    /// its slot under `--max-connections`.
    pub fn head_timeout(mut self, timeout: Duration) -> Self {
        self.head_timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// How long a WebSocket message may take to arrive whole once its
    /// first byte has (default 30 s), waiting for room under
    /// `--max-inflight-bytes` included: past it the connection is closed
    /// (1008 `message-stalled`, or 1013 `busy` when the budget stayed
    /// spent), and the bytes it held are given back.
    pub fn message_timeout(mut self, timeout: Duration) -> Self {
        self.message_timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// Serve TLS with this certificate and key.
    pub fn tls(mut self, files: Option<TlsFiles>) -> Self {
        self.tls = files;
        self
    }

    /// Share history and fan-out with the other relay nodes on this NATS
    /// server's JetStream (the `nats` feature): every node publishes what
    /// it admits to one stream and delivers what the stream holds, so an
    /// event posted to any node reaches the subscribers of every node and
    /// survives a node's restart. Every node of a cluster takes the same
    /// `--buffer`. Commands are routed only to an owner connected to the
    /// node that received them.
    pub fn nats(mut self, server: Option<NatsServer>) -> Self {
        self.nats = server;
        self
    }

    /// Serve the browser UI at `/` (default on). Its files are static and
    /// hold no data, so they are served without auth; the page reads and
    /// answers through `/stream` and `/socket` with the token.
    pub fn ui(mut self, on: bool) -> Self {
        self.ui = on;
        self
    }

    /// How long a session's claim outlives its owner's connection
    /// (default 5 s): meanwhile commands to the session are refused
    /// `no-route`, and only a connection emitting the session's events
    /// under the same `source` takes the claim over.
    pub fn claim_grace(mut self, grace: Duration) -> Self {
        self.claim_grace = grace;
        self
    }

    /// Whether the browser UI is served at `/`.
    pub fn serves_ui(&self) -> bool {
        self.ui
    }

    /// The per-session replay depth advertised in discovery.
    pub fn buffer_limit(&self) -> usize {
        self.buffer
    }

    /// Whether a token is set (commands are routed only then).
    pub fn authenticated(&self) -> bool {
        self.token.is_some()
    }

    /// Checks every limit against its sane range; the error names the
    /// command-line flag, the value and the range. `Relay::new` refuses a
    /// config that fails it.
    ///
    /// ```
    /// let config = aep_relay::Config::default().max_batch(1 << 62);
    /// assert!(config.validate().unwrap_err().contains("--max-batch"));
    /// ```
    pub fn validate(&self) -> Result<(), String> {
        const GIB: usize = 1 << 30;
        let max_total = if cfg!(target_pointer_width = "64") {
            64 * GIB
        } else {
            GIB
        };
        let ranges: [(&str, usize, usize, usize, &str); 16] = [
            ("--buffer", self.buffer, 1, 1_000_000, ""),
            ("--max-sessions", self.max_sessions, 1, 1_000_000, ""),
            ("--max-body", self.max_body, 1024, GIB, " bytes"),
            ("--max-batch", self.max_batch, 1, 1_000_000, ""),
            ("--max-from", self.max_positions(), 1, 1_000_000, ""),
            ("--max-frame", self.max_frame, 1024, GIB, " bytes"),
            ("--queue-hard", self.queue_hard, 2, 1_000_000, ""),
            (
                "--queue-bytes",
                self.queue_bytes,
                64 * 1024,
                max_total,
                " bytes",
            ),
            (
                "--max-queued-bytes",
                self.max_queued_bytes,
                64 * 1024,
                max_total,
                " bytes",
            ),
            (
                "--max-command-bytes",
                self.max_command_bytes,
                64 * 1024,
                max_total,
                " bytes",
            ),
            (
                "--max-state-bytes",
                self.max_state_bytes,
                64 * 1024,
                max_total,
                " bytes",
            ),
            ("--max-subscriptions", self.max_subscriptions, 1, 65_536, ""),
            ("--max-connections", self.max_connections, 1, 1_000_000, ""),
            (
                "--max-buffered-bytes",
                self.max_buffered_bytes,
                1024,
                max_total,
                " bytes",
            ),
            (
                "--max-inflight-bytes",
                self.max_inflight_bytes,
                self.max_body.max(self.max_frame + 64 * 1024),
                max_total,
                " bytes (at least --max-body, and --max-frame plus 64 KiB)",
            ),
            (
                "--max-buffer-bytes",
                self.max_buffer_bytes,
                1024,
                self.max_buffered_bytes.max(1024),
                " bytes (at most --max-buffered-bytes)",
            ),
        ];
        for (flag, value, low, high, unit) in ranges {
            if !(low..=high).contains(&value) {
                return Err(format!(
                    "{flag} {value} is out of range: use {low} to {high}{unit}"
                ));
            }
        }
        Ok(())
    }

    /// The most memory clients holding the token can make the relay hold
    /// with these limits, by the formula of the relay's documentation:
    ///
    /// ```text
    /// max-buffered-bytes + 3 × max-inflight-bytes + 2 × max-queued-bytes
    ///   + max-command-bytes + max-state-bytes + max-connections × 192 KiB
    /// ```
    ///
    /// With TLS, each connection adds [`TLS_CONNECTION_BYTES`]; a node of
    /// a cluster ([`Config::nats`]) adds [`NATS_NODE_BYTES`]. The
    /// process's own code, runtime and allocator come on top.
    ///
    /// ```
    /// let worst = aep_relay::Config::default().worst_case_bytes();
    /// assert!(worst < 1 << 30, "under 1 GiB with the defaults");
    /// let node = aep_relay::Config::default().nats(Some(aep_relay::NatsServer {
    ///     url: "nats://127.0.0.1:4222".into(),
    ///     creds: None,
    /// }));
    /// assert_eq!(node.worst_case_bytes(), worst + aep_relay::NATS_NODE_BYTES as u64);
    /// ```
    pub fn worst_case_bytes(&self) -> u64 {
        let bytes = |n: usize| n as u64;
        bytes(self.max_buffered_bytes)
            + 3 * bytes(self.max_inflight_bytes)
            + 2 * bytes(self.max_queued_bytes)
            + bytes(self.max_command_bytes)
            + bytes(self.max_state_bytes)
            + bytes(self.max_connections) * bytes(self.connection_bytes())
            + self.nats.as_ref().map_or(0, |_| bytes(NATS_NODE_BYTES))
    }

    /// What one connection may hold that no budget counts.
    fn connection_bytes(&self) -> usize {
        match self.tls {
            Some(_) => CONNECTION_BYTES + TLS_CONNECTION_BYTES,
            None => CONNECTION_BYTES,
        }
    }

    pub(crate) fn max_positions(&self) -> usize {
        self.max_from.unwrap_or(self.max_sessions)
    }

    /// One line for a start-up log: posture and limits, never the token.
    pub fn summary(&self) -> String {
        format!(
            "auth {}, tls {}, buffer {}/session ({} B/session, {} B in all), max-sessions {}, max-body {} B, max-batch {}, max-from {}, max-frame {} B, queue {}/{} ({} B/consumer, {} B in all), commands {} B in all, max-connections {}; at most {} MiB held under attack",
            if self.token.is_some() {
                "on (commands routed)"
            } else {
                "off (watch-only: commands refused)"
            },
            if self.tls.is_some() { "on" } else { "off" },
            self.buffer,
            self.max_buffer_bytes,
            self.max_buffered_bytes,
            self.max_sessions,
            self.max_body,
            self.max_batch,
            self.max_positions(),
            self.max_frame,
            self.queue_soft,
            self.queue_hard,
            self.queue_bytes,
            self.max_queued_bytes,
            self.max_command_bytes,
            self.max_connections,
            self.worst_case_bytes() >> 20,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_never_prints() {
        let token = Token::new("s3cret-value").unwrap();
        let config = Config::default().token(Some(token.clone()));
        assert!(!format!("{config:?}").contains("s3cret"));
        assert!(!config.summary().contains("s3cret"));
        assert!(token.matches("s3cret-value"));
        assert!(!token.matches("s3cret-valuf"));
        assert!(!token.matches("s3cret"));
        assert!(Token::new("").is_none());
    }

    #[test]
    fn absurd_limits_are_refused_naming_the_flag_and_range() {
        assert_eq!(Config::default().validate(), Ok(()));
        let err = Config::default()
            .max_batch(4_611_686_018_427_387_904)
            .validate()
            .unwrap_err();
        assert!(err.contains("--max-batch 4611686018427387904"), "{err}");
        assert!(err.contains("1 to 1000000"), "{err}");
        let err = Config::default()
            .max_buffer_bytes(1 << 30)
            .max_buffered_bytes(1 << 20)
            .validate()
            .unwrap_err();
        assert!(err.contains("--max-buffer-bytes"), "{err}");
        assert!(Config::default().max_from(0).validate().is_err());
        assert!(Config::default()
            .max_queued_bytes(1024)
            .validate()
            .unwrap_err()
            .contains("--max-queued-bytes"));
        assert!(Config::default()
            .max_command_bytes(0)
            .validate()
            .unwrap_err()
            .contains("--max-command-bytes"));
        assert!(Config::default()
            .queue(1, usize::MAX)
            .validate()
            .unwrap_err()
            .contains("--queue-hard"));
    }

    #[test]
    fn queue_bounds_stay_ordered() {
        let config = Config::default().queue(10, 5);
        assert!(config.queue_soft < config.queue_hard);
    }
}
