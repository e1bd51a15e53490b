//! Async clients for the Agent Event Protocol (AEP), on tokio: the other
//! end of each of `aep-relay`'s bindings.
//!
//! - [`session`]: a session's events stamped with ids, positions and the
//!   session's identity, ready to send.
//! - [`socket`]: a managed WebSocket connection to a relay: `hello`,
//!   keep-alive, reconnect with backoff, a bounded outbox that drops
//!   `debug`/`info` first (AEP-0003 §8.4), inbound events and frames.
//! - [`history`]: a session's buffered history (`live=0`).
//!
//! Errors are typed ([`Error`]); nothing a peer sends makes a client
//! panic.
#![deny(missing_docs)]

mod error;
pub mod history;
mod outbox;
pub mod session;
pub mod socket;

pub use error::Error;
