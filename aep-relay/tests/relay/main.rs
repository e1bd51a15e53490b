//! The relay's integration tests (ingest, fan-out, replay, routing, budgets,
//! shutdown, TLS, the page and its modules), one module each, linked as one
//! test binary.

mod common;

mod auth;
mod backpressure;
mod budget;
mod identity;
mod ingest;
mod liveness;
#[cfg(feature = "nats")]
mod nats;
mod replay;
mod routing;
mod shutdown;
mod sse;
mod tls;
mod ui_js;
mod ui_serving;
mod websocket;
