//! The Agent Event Protocol's source-vocabulary mappings (AEP-0002
//! Annex A): vendor hook, bus, stream and telemetry payloads to AEP
//! events, at a capture [`Posture`], as pure functions.
//!
//! A [`Mapper`] runs one [`Vocabulary`] (and one of its [`Surface`]s) on
//! JSON inputs, one at a time; each input gives the [`MappedEvent`]s it
//! means, in emission order: none where the mapping deliberately emits
//! nothing, several where one vendor moment is several AEP facts.
//!
//! - Every core event is built through the generated payload types of
//!   `aep-types` with its full content, then gated to the ceiling of its
//!   type by [`aep::emit::Emitter`]: digests of the original content
//!   ([`aep::digest`]), redaction at `redacted` ([`aep::redact`]), the
//!   structural synthesis of prompts and labels below it
//!   ([`aep::Event::down_level`]).
//! - Vendor `x.*` events have no schema: each mapping names which members
//!   are structural and which are content, and content rides only from
//!   `redacted` up.
//! - Every event is checked against the schemas at the ceiling it was
//!   made for before it is returned; a mapping that would produce an
//!   invalid event returns a [`MapError`] instead.
//! - Unknown hooks and events take the vendor-extension fallback of their
//!   vocabulary, never an error.
//! - No state is kept between inputs by the mappings: what a runtime remembers (an open
//!   run, a tool-name join, the previous todo list, the previous status)
//!   is carried in the input, or left to the runtime; [`runtime`] is
//!   that runtime for command hooks, as pure functions and a sans-IO
//!   state machine.
#![deny(missing_docs)]

mod acp;
mod agui;
mod antigravity;
mod build;
mod claude_code;
mod cline;
mod codex;
mod error;
mod event;
mod gemini_cli;
mod hermes;
mod hooks;
mod json;
mod kimi_code;
mod names;
mod opencode;
mod openhands;
mod otel;
mod pi;
mod posture;
mod qwen_code;
pub mod runtime;
mod vocabulary;
mod vscode;

pub use claude_code::elicitation_params;
pub use error::MapError;
pub use event::MappedEvent;
pub use posture::{Mode, Posture};
pub use vocabulary::{Mapper, Surface, UnknownSurface, Vocabulary};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
