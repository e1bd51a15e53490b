//! Async clients for the Agent Event Protocol (AEP), on tokio: the other
//! end of each of `aep-relay`'s bindings.
//!
//! Emitting (an agent, an adapter):
//!
//! - [`session`]: a session's events stamped with ids, positions and the
//!   session's identity, with capture made honest by construction
//!   ([`SessionEmitter::full`](session::SessionEmitter::full)).
//! - [`transport`]: the [`Transport`](transport::Transport) trait the
//!   three emitter bindings share, and the
//!   [`Publisher`](transport::Publisher) that feeds one from a session.
//! - [`jsonl`]: an append-only JSONL file, one atomic write per line.
//! - [`http`]: `POST /events` in NDJSON batches with retries, bad-line
//!   handling and a bounded outbox.
//! - [`socket`]: a managed WebSocket: `hello`, keep-alive, reconnect with
//!   backoff, a bounded outbox that drops `debug`/`info` first (AEP-0003
//!   §8.4), inbound events and frames.
//! - [`target`]: an emitter's WebSocket that is also a control target
//!   (AEP-0004): acks, nacks and re-acks are written for it; the caller
//!   only decides. One connection serves one session or many, each with
//!   its own positions and commands.
//!
//! Consuming (a dashboard, a sink, `aep tail`):
//!
//! - [`consume`]: SSE and WebSocket subscriptions as one `Stream` of
//!   events and notices, with resume, dedupe and reconnects.
//! - [`history`]: a session's buffered history (`live=0`).
//!
//! Commanding:
//!
//! - [`control`]: a control sender over the WebSocket: `send` a command,
//!   get its one outcome; `roster`.
//!
//! Errors are typed ([`Error`]); nothing a peer sends makes a client
//! panic, and every queue is bounded.
#![deny(missing_docs)]

mod backoff;
pub mod consume;
pub mod control;
mod error;
pub mod history;
pub mod http;
pub mod jsonl;
mod outbox;
pub mod session;
pub mod socket;
pub mod target;
pub mod transport;

pub use backoff::Backoff;
pub use error::{Cause, Error};
