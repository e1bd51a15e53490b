//! The Agent Event Protocol (AEP) above single events.
//!
//! [`aep_types`] decodes, validates and encodes one event; this crate
//! works on streams of them:
//!
//! - [`filter`]: the `attr-match` filter dialect (AEP-0003 §6): which
//!   events a relay or subscriber passes on, decided on the envelope.
//! - [`projection`]: the state projection, a fold of events into
//!   per-session state (runs, pending attention, position) plus the
//!   protocol violations the fold surfaces, with the same rules and JSON
//!   shape as the published AEP SDKs' projection.
//! - [`stream`]: the stream validator, every per-event check plus the
//!   stream rules (dedupe, ordering, terminals, attention, acknowledgements,
//!   form answers, capture honesty) over a JSONL input, in constant memory.
//!
//! The crate re-exports [`aep_types`] (and its root items), so `aep::Event`
//! is the event type and one dependency is enough.
#![deny(missing_docs)]

pub use aep_types;
pub use aep_types::*;

pub mod filter;
mod fingerprint;
pub mod projection;
pub mod stream;

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
