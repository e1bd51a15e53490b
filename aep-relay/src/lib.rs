//! The Agent Event Protocol (AEP) collector/relay (AEP-0003) with command
//! routing (AEP-0004 §4), as a library: agents post events over HTTP or
//! a WebSocket, people and tools watch over SSE or a WebSocket, and
//! commands flow back to exactly one agent.
//!
//! - `POST /events`: one event or an NDJSON batch, refused whole at its
//!   first bad line; `GET /events` and `/.well-known/aep`: discovery.
//! - `GET /stream`: SSE with an `attr-match` filter, a capture ceiling and
//!   resume (`from`, `Last-Event-ID`, `live=0`).
//! - `/socket`: the WebSocket duplex: `hello`, subscriptions, `roster`,
//!   events in, commands routed to their one owner.
//! - `GET /healthz` and `GET /metrics` (Prometheus text).
//! - `GET /`: the browser UI (static files, see [`Config::ui`]), which
//!   uses only the surfaces above.
//!
//! Events are kept per session in bounded replay buffers and delivered
//! as the exact bytes they were posted as, unless a subscriber's capture
//! ceiling down-levels them. Every queue is bounded; what happens at each
//! bound is said on the wire (`replay-exhausted`, a `closing` frame, an
//! error status), never silently.
#![deny(missing_docs)]

mod budget;
mod buffer;
#[cfg(feature = "nats")]
mod cluster;
mod config;
mod directory;
mod fanout;
mod http;
mod hub;
mod ingest;
mod metrics;
#[cfg(feature = "nats")]
mod nats;
mod routing;
mod server;
mod sse;
mod stored;
mod subscribe;
#[cfg(feature = "tls")]
mod tls;
mod ui;
mod ws;
mod wsio;

pub use config::{
    Config, NatsServer, TlsFiles, Token, CONNECTION_BYTES, NATS_NODE_BYTES, TLS_CONNECTION_BYTES,
};
pub use server::{Drained, Relay, ShutdownHandle};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

// The relay's reference page has an embedding example; it is tested here.
#[cfg(doctest)]
#[doc = include_str!("../../docs/relay.md")]
struct RelayPageDoctests;
