//! The hook runtime as a library: what a program that serves an agent's
//! hooks needs besides the mappings, as pure functions and one sans-IO
//! state machine. `aep hook` and `aep adapter serve` are built on it; an
//! agent author embedding AEP in their own tool uses it the same way.
//!
//! - [`HookAgent`]: the vendors whose hooks a runtime serves, and what
//!   their hooks say about identity (which hooks exist, where their
//!   configuration lives, which payload member names the turn, the AEP
//!   run).
//! - [`pending`]: attention requests recorded and not yet closed, and
//!   which later hook call closes them.
//! - [`decision`]: a person's answer to a held request turned into the
//!   answer to record and the vendor's hook output (a permission's
//!   decision, AskUserQuestion's answers, an MCP elicitation's content).
//! - [`Holds`]: the hooks held open on a request, with their deadlines,
//!   fed hook calls, answers and ticks with `now` passed in, returning
//!   what to record and what to print. It does no I/O and reads no clock.
//!
//! ```
//! use aep::{Answer, Capture};
//! use aep_adapters::runtime::{Answering, Asking, Ending, HookAgent, Holds};
//!
//! // A hook call that asks a person is held; the waiter is whatever wakes
//! // the hook (here a name; a runtime uses a channel).
//! let call = r#"{"hook_event_name":"PermissionRequest","session_id":"s1",
//!   "tool_name":"Bash","tool_input":{"command":"rm -rf build"}}"#;
//! let asking = Asking::of(HookAgent::ClaudeCode, call).expect("a prompt is held");
//! let mut holds = Holds::new(64);
//! holds.hold("req-1", "s1", HookAgent::ClaudeCode, asking, 0, 55_000, "hook 1").unwrap();
//!
//! // A person's answer, routed to the session over control, applies: the
//! // runtime records `answer.answer`, then wakes the hook with the decision.
//! let mut answer = Answer::new();
//! answer.option = Some("allow".into());
//! let Answering::Applies(applied) = holds.answer("s1", "req-1", &answer, Capture::Metadata, 1_000)
//! else { panic!("req-1 is held") };
//! assert!(applied.stdout.contains(r#""behavior":"allow""#));
//! assert_eq!(holds.release("req-1"), Some("hook 1"));
//!
//! // An unanswered hold times out at its deadline: record
//! // `attention.timeout`, and the hook prints nothing (the vendor asks).
//! holds.hold("req-2", "s1", HookAgent::ClaudeCode, Asking::Permission, 0, 55_000, "hook 2")
//!     .unwrap();
//! let settled = holds.tick(55_000, |_| false);
//! assert_eq!(settled[0].ending, Ending::TimedOut { after_ms: 55_000 });
//! assert_eq!(settled[0].ending.event_type(), "attention.timeout");
//! assert_eq!(settled[0].waiter, "hook 2");
//! ```

mod agent;
pub mod decision;
mod holds;
pub mod pending;

pub use agent::{HookAgent, Turn};
pub use holds::{Answering, Asking, Ending, Holds, Settled};
