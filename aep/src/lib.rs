//! The Agent Event Protocol (AEP) above single events.
//!
//! [`aep_types`] decodes, validates and encodes one event; this crate
//! works on streams of them and on what surrounds them:
//!
//! - [`frame`]: the WebSocket binding's frames (AEP-0003 §2), typed, and
//!   told from events.
//! - [`filter`]: the `attr-match` filter dialect (AEP-0003 §6): which
//!   events a relay or subscriber passes on, decided on the envelope.
//! - [`projection`]: the state projection, a fold of events into
//!   per-session state (runs, pending attention, position) plus the
//!   protocol violations the fold surfaces, with the same rules and JSON
//!   shape as the published AEP SDKs' projection.
//! - [`redact`]: the AEP-0003 §9.4 redaction pipeline for text and JSON.
//! - [`emit`]: the emitter's side of capture, from full content to the
//!   event at a ceiling, with [`digest`]s of the original content.
//! - [`stream`]: the stream validator, every per-event check plus the
//!   stream rules (dedupe, ordering, terminals, attention, acknowledgements,
//!   form answers, capture honesty) over a JSONL input, in constant memory.
//! - [`control`]: the AEP-0004 control profile without I/O: the target
//!   that gates, dedupes and acknowledges commands (re-emitting a recorded
//!   ack byte for byte), and the sender that builds commands and settles
//!   each with exactly one outcome, retries and timeout included.
//! - [`bridge`]: the AEP-0005 bridges: CloudEvents 1.0 both ways, OTLP log
//!   records, OCSF 1.8.0 findings (with the optional `cloudevents` and
//!   `otlp-proto` features, the official crates' types).
//!
//! The crate re-exports [`aep_types`] (and its root items), so `aep::Event`
//! is the event type and one dependency is enough.
#![deny(missing_docs)]

pub use aep_types;
pub use aep_types::*;

pub mod bridge;
pub mod control;
pub mod digest;
pub mod emit;
pub mod filter;
mod fingerprint;
pub mod frame;
pub mod projection;
pub mod redact;
pub mod stream;

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

// The project README's and reference pages' examples use both crates, so
// they are doctested here.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ProjectReadmeDoctests;

#[cfg(doctest)]
#[doc = include_str!("../../docs/types.md")]
struct TypesGuideDoctests;

#[cfg(doctest)]
#[doc = include_str!("../../docs/capture.md")]
struct CaptureGuideDoctests;

#[cfg(doctest)]
#[doc = include_str!("../../docs/bridges.md")]
struct BridgesGuideDoctests;
