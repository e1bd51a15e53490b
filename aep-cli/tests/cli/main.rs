//! The `aep` binary's integration tests, one module per command or
//! concern, linked as one test binary (a link of the world per file cost
//! more than the tests). The browser tests are a binary of their own
//! (`tests/browser.rs`), run one at a time beside a headless Chromium.

mod common;

mod adapter;
mod cancel;
#[cfg(feature = "nats")]
mod cluster;
mod convert;
mod demo;
mod doctor;
mod emit;
mod escapes;
mod filter;
mod hook;
mod hook_live;
mod hostile;
mod jobs;
#[cfg(feature = "mcp")]
mod mcp_python;
mod pending;
mod post;
mod project;
mod readme;
mod redact_emit;
mod relay_limits;
mod relay_ui;
mod replay;
mod respond;
mod respond_pty;
mod respond_relay;
mod sink;
mod streaming;
mod tail;
mod timeline;
mod validate;
