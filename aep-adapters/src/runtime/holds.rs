//! The hooks a runtime holds open on a request until a person answers,
//! the request times out, or the session shows it was settled without
//! them, as a state machine with no I/O: it is given the request a hook
//! call opened, the answers that arrive, and ticks with `now`, and it
//! says what each hook gets back and how each request ended. The caller
//! records the events, sends them and wakes the hook (its `W`, say a
//! channel's sender).
//!
//! Invariants:
//! - At most `limit` holds at once; past it a request is not held (the
//!   caller records it as answerable out of band).
//! - A hold ends exactly once: answered ([`Holds::release`] after the
//!   answer was recorded), closed by a later hook call
//!   ([`Holds::release`]), timed out or dismissed ([`Holds::tick`],
//!   [`Holds::drain`]). Each way hands its `W` back.
//! - An answer that breaks the request leaves the hold as it was: the
//!   person can answer again until the deadline.
//! - An answer is applied only to a hold of the session it came for.

use std::collections::HashMap;

use aep::form::{claude_code, mcp};
use aep::{Answer, Capture, Object};
use serde_json::{json, Value};

use super::decision::{self, Applied};
use super::HookAgent;

/// What a held hook asks, which decides how an answer applies.
#[derive(Debug, Clone)]
pub enum Asking {
    /// Allow or deny a tool call.
    Permission,
    /// Claude Code's AskUserQuestion: its `tool_input` and what it reads
    /// as.
    Questions {
        /// The tool's input, as the vendor sent it.
        input: Value,
        /// The questions it asks.
        call: claude_code::AskUserQuestion,
    },
    /// An MCP elicitation's form.
    Elicitation(Box<mcp::Elicitation>),
}

impl Asking {
    /// What a hook call of `agent` asks (`text`: its payload), when it is
    /// one a runtime can hold: a `PermissionRequest` (AskUserQuestion's
    /// included) or Claude Code's `Elicitation`.
    pub fn of(agent: HookAgent, text: &str) -> Option<Asking> {
        let payload: Value = serde_json::from_str(text).ok()?;
        let hook = payload.get("hook_event_name")?.as_str()?;
        match (agent, hook) {
            (HookAgent::ClaudeCode, "PermissionRequest")
                if payload.get("tool_name").and_then(Value::as_str) == Some("AskUserQuestion") =>
            {
                let input = payload.get("tool_input")?.clone();
                match serde_json::from_value(input.clone()) {
                    Ok(call) => Some(Asking::Questions { input, call }),
                    Err(_) => Some(Asking::Permission),
                }
            }
            (_, "PermissionRequest") => Some(Asking::Permission),
            (HookAgent::ClaudeCode, "Elicitation") => {
                let params = crate::elicitation_params(text).ok()??;
                let form = mcp::map(&params, agent.name(), Capture::Full).ok()?;
                Some(Asking::Elicitation(Box::new(form)))
            }
            _ => None,
        }
    }

    /// What `answer` applies: the hook's output and the answer to record
    /// (form values gated at `ceiling`), or why it breaks the request.
    pub fn apply(&self, answer: &Answer, ceiling: Capture) -> Result<Applied, String> {
        let (mut applied, fields) = match self {
            Asking::Permission => return decision::permission(answer),
            Asking::Questions { input, call } => (
                decision::questions(input, call, answer)?,
                claude_code::request(call, "agent", Capture::Full).fields,
            ),
            Asking::Elicitation(form) => (
                decision::elicitation(form, answer)?,
                form.request.fields.clone(),
            ),
        };
        if let (Some(values), Some(fields)) = (&applied.answer.values, &fields) {
            applied.answer.values = Some(aep::form::gate_values(fields, values, ceiling));
        }
        Ok(applied)
    }
}

/// A hook held open on a request.
#[derive(Debug)]
struct Hold<W> {
    session: String,
    agent: HookAgent,
    asking: Asking,
    since_ms: u64,
    deadline_ms: u64,
    waiter: W,
}

/// What an answer to a request does.
#[derive(Debug)]
pub enum Answering {
    /// It applies: record the answer (`applied.answer`), then
    /// [`Holds::release`] the hold and print `applied.stdout`.
    Applies(Applied),
    /// It breaks the request (nack `invalid` with this reason); the hold
    /// stays.
    Breaks(String),
    /// No hook of that session holds the request.
    NotHeld,
}

/// How a hold ended without an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Its deadline passed (`attention.timeout`); the hook gets no
    /// decision, so the vendor asks in its own dialog.
    TimedOut {
        /// How long it waited.
        after_ms: u64,
    },
    /// Nobody can answer it any more: its hook is gone, or the runtime
    /// stops (`attention.resolved`, dismissed).
    Dismissed {
        /// How long it waited.
        latency_ms: u64,
    },
}

impl Ending {
    /// The type of the event that records it.
    pub fn event_type(self) -> &'static str {
        match self {
            Ending::TimedOut { .. } => "attention.timeout",
            Ending::Dismissed { .. } => "attention.resolved",
        }
    }

    /// The data of the event that records it.
    pub fn data(self) -> Object {
        let mut data = Object::new();
        match self {
            Ending::TimedOut { after_ms } => {
                data.insert("after_ms".into(), json!(after_ms));
            }
            Ending::Dismissed { latency_ms } => {
                data.insert("resolution".into(), json!("dismissed"));
                data.insert("latency_ms".into(), json!(latency_ms));
            }
        }
        data
    }
}

/// A hold that ended without an answer: record `ending` about request
/// `id` in `session`, then wake `waiter` with no decision.
#[derive(Debug)]
pub struct Settled<W> {
    /// The request's id (the `attention.requested` event's).
    pub id: String,
    /// Its session.
    pub session: String,
    /// The agent whose hook held it.
    pub agent: HookAgent,
    /// How it ended.
    pub ending: Ending,
    /// The held hook.
    pub waiter: W,
}

/// The hooks held open, by request id.
#[derive(Debug)]
pub struct Holds<W> {
    held: HashMap<String, Hold<W>>,
    limit: usize,
}

impl<W> Holds<W> {
    /// No holds; at most `limit` at once.
    pub fn new(limit: usize) -> Holds<W> {
        Holds {
            held: HashMap::new(),
            limit,
        }
    }

    /// How many hooks are held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Whether one more can be held.
    pub fn has_room(&self) -> bool {
        self.held.len() < self.limit
    }

    /// Whether a hook of `session` is held.
    pub fn holds_session(&self, session: &str) -> bool {
        self.held.values().any(|h| h.session == session)
    }

    /// Holds `waiter` on request `id` of `session` from `now_ms` until
    /// `now_ms + timeout_ms`. Refused (the waiter handed back) when full
    /// or when `id` is held already.
    #[allow(clippy::too_many_arguments)]
    pub fn hold(
        &mut self,
        id: &str,
        session: &str,
        agent: HookAgent,
        asking: Asking,
        now_ms: u64,
        timeout_ms: u64,
        waiter: W,
    ) -> Result<(), W> {
        if !self.has_room() || self.held.contains_key(id) {
            return Err(waiter);
        }
        self.held.insert(
            id.to_owned(),
            Hold {
                session: session.to_owned(),
                agent,
                asking,
                since_ms: now_ms,
                deadline_ms: now_ms.saturating_add(timeout_ms),
                waiter,
            },
        );
        Ok(())
    }

    /// What `answer`, routed to `session` for request `id` at `now_ms`,
    /// does. The hold stays until [`Holds::release`]. An answer at or past
    /// the deadline finds nothing held (the next tick times the hold out).
    pub fn answer(
        &self,
        session: &str,
        id: &str,
        answer: &Answer,
        ceiling: Capture,
        now_ms: u64,
    ) -> Answering {
        let held = self.held.get(id);
        match held.filter(|h| h.session == session && now_ms < h.deadline_ms) {
            None => Answering::NotHeld,
            Some(hold) => match hold.asking.apply(answer, ceiling) {
                Ok(applied) => Answering::Applies(applied),
                Err(why) => Answering::Breaks(why),
            },
        }
    }

    /// Ends the hold on `id` (answered, or closed by a later hook call),
    /// handing its waiter back.
    pub fn release(&mut self, id: &str) -> Option<W> {
        self.held.remove(id).map(|h| h.waiter)
    }

    /// The holds whose hook is `gone` (dismissed), then those past their
    /// deadline at `now_ms` (timed out), each oldest first.
    pub fn tick(&mut self, now_ms: u64, gone: impl Fn(&W) -> bool) -> Vec<Settled<W>> {
        let mut out: Vec<Settled<W>> = self
            .take(|h| gone(&h.waiter))
            .map(|(id, hold)| {
                let latency_ms = now_ms.saturating_sub(hold.since_ms);
                hold.settled(id, Ending::Dismissed { latency_ms })
            })
            .collect();
        out.extend(self.take(|h| h.deadline_ms <= now_ms).map(|(id, hold)| {
            let after_ms = now_ms.saturating_sub(hold.since_ms);
            hold.settled(id, Ending::TimedOut { after_ms })
        }));
        out
    }

    /// The holds of `session`, dismissed (nobody can answer them: say,
    /// their requests never reached the relay), oldest first.
    pub fn end_session(&mut self, session: &str, now_ms: u64) -> Vec<Settled<W>> {
        self.take(|h| h.session == session)
            .map(|(id, hold)| {
                let latency_ms = now_ms.saturating_sub(hold.since_ms);
                hold.settled(id, Ending::Dismissed { latency_ms })
            })
            .collect()
    }

    /// Every hold, dismissed (the runtime stops: nobody can answer them
    /// over control any more), oldest first.
    pub fn drain(&mut self, now_ms: u64) -> Vec<Settled<W>> {
        self.take(|_| true)
            .map(|(id, hold)| {
                let latency_ms = now_ms.saturating_sub(hold.since_ms);
                hold.settled(id, Ending::Dismissed { latency_ms })
            })
            .collect()
    }

    /// The earliest deadline held, to sleep until.
    pub fn next_deadline_ms(&self) -> Option<u64> {
        self.held.values().map(|h| h.deadline_ms).min()
    }

    /// Takes out the holds `which` picks, oldest first.
    fn take(
        &mut self,
        which: impl Fn(&Hold<W>) -> bool,
    ) -> impl Iterator<Item = (String, Hold<W>)> {
        let mut ids: Vec<(u64, String)> = self
            .held
            .iter()
            .filter(|(_, h)| which(h))
            .map(|(id, h)| (h.since_ms, id.clone()))
            .collect();
        ids.sort();
        let taken: Vec<(String, Hold<W>)> = ids
            .into_iter()
            .filter_map(|(_, id)| self.held.remove(&id).map(|h| (id, h)))
            .collect();
        taken.into_iter()
    }
}

impl<W> Hold<W> {
    fn settled(self, id: String, ending: Ending) -> Settled<W> {
        Settled {
            id,
            session: self.session,
            agent: self.agent,
            ending,
            waiter: self.waiter,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn permission() -> Asking {
        let text = r#"{"hook_event_name":"PermissionRequest","session_id":"s",
            "tool_name":"Bash","tool_input":{"command":"ls"}}"#;
        Asking::of(HookAgent::Codex, text).expect("a permission is held")
    }

    fn questions() -> Asking {
        let text = r#"{"hook_event_name":"PermissionRequest","session_id":"s",
            "tool_name":"AskUserQuestion","tool_input":{"questions":[
              {"question":"Which db?","header":"DB","multiSelect":false,
               "options":[{"label":"Postgres"},{"label":"SQLite"}]},
              {"question":"Which checks?","header":"CI","multiSelect":true,
               "options":[{"label":"fmt"},{"label":"clippy"}]}]}}"#;
        Asking::of(HookAgent::ClaudeCode, text).expect("questions are held")
    }

    fn option(option: &str) -> Answer {
        let mut answer = Answer::new();
        answer.option = Some(option.to_owned());
        answer
    }

    fn values(values: Value) -> Answer {
        let mut answer = Answer::new();
        answer.values = values.as_object().cloned();
        answer
    }

    #[test]
    fn what_a_call_asks_is_read_from_its_payload() {
        assert!(matches!(permission(), Asking::Permission));
        assert!(matches!(questions(), Asking::Questions { .. }));
        // Codex has no AskUserQuestion: its PermissionRequest is a permission.
        let codex_ask = r#"{"hook_event_name":"PermissionRequest","tool_name":"AskUserQuestion",
            "tool_input":{"questions":[]}}"#;
        assert!(matches!(
            Asking::of(HookAgent::Codex, codex_ask),
            Some(Asking::Permission)
        ));
        let elicitation = r#"{"hook_event_name":"Elicitation","session_id":"s",
            "mcp_server_name":"db","message":"Connect",
            "requested_schema":{"type":"object","properties":{"host":{"type":"string"}}}}"#;
        assert!(matches!(
            Asking::of(HookAgent::ClaudeCode, elicitation),
            Some(Asking::Elicitation(_))
        ));
        for text in [
            r#"{"hook_event_name":"PreToolUse","tool_name":"Bash"}"#,
            r#"{"hook_event_name":"Elicitation"}"#,
            "not json",
        ] {
            assert!(Asking::of(HookAgent::ClaudeCode, text).is_none(), "{text}");
        }
    }

    #[test]
    fn the_deadline_times_a_hold_out_with_the_time_it_waited() {
        let mut holds = Holds::new(4);
        holds
            .hold("r1", "s", HookAgent::Codex, permission(), 1_000, 500, 'a')
            .unwrap();
        assert_eq!(holds.next_deadline_ms(), Some(1_500));
        assert!(holds.tick(1_499, |_| false).is_empty());
        let settled = holds.tick(1_500, |_| false);
        assert_eq!(settled.len(), 1);
        assert_eq!(settled[0].id, "r1");
        assert_eq!(settled[0].session, "s");
        assert_eq!(settled[0].waiter, 'a');
        assert_eq!(settled[0].ending, Ending::TimedOut { after_ms: 500 });
        assert_eq!(settled[0].ending.event_type(), "attention.timeout");
        assert_eq!(settled[0].ending.data()["after_ms"], 500);
        assert!(holds.is_empty());
        assert!(holds.tick(9_999, |_| false).is_empty(), "a hold ends once");
    }

    #[test]
    fn a_gone_hook_is_dismissed_before_any_timeout() {
        let mut holds = Holds::new(4);
        holds
            .hold("old", "s", HookAgent::Codex, permission(), 0, 100, 1)
            .unwrap();
        holds
            .hold("gone", "s", HookAgent::Codex, permission(), 10, 10_000, 2)
            .unwrap();
        let settled = holds.tick(200, |w| *w == 2);
        let ends: Vec<_> = settled.iter().map(|s| (s.id.as_str(), s.ending)).collect();
        assert_eq!(
            ends,
            [
                ("gone", Ending::Dismissed { latency_ms: 190 }),
                ("old", Ending::TimedOut { after_ms: 200 }),
            ]
        );
        let data = settled[0].ending.data();
        assert_eq!(data["resolution"], "dismissed");
        assert_eq!(settled[0].ending.event_type(), "attention.resolved");
    }

    #[test]
    fn the_limit_refuses_a_hold_and_hands_the_waiter_back() {
        let mut holds = Holds::new(2);
        holds
            .hold("a", "s", HookAgent::Codex, permission(), 0, 10, 'a')
            .unwrap();
        assert_eq!(
            holds.hold("a", "s", HookAgent::Codex, permission(), 0, 10, 'x'),
            Err('x'),
            "an id held already"
        );
        holds
            .hold("b", "s", HookAgent::Codex, permission(), 0, 10, 'b')
            .unwrap();
        assert!(!holds.has_room());
        assert_eq!(
            holds.hold("c", "s", HookAgent::Codex, permission(), 0, 10, 'c'),
            Err('c')
        );
        assert_eq!(holds.release("a"), Some('a'));
        assert!(holds.has_room());
        assert_eq!(holds.release("a"), None);
    }

    #[test]
    fn two_prompts_at_once_are_answered_each_by_its_own_id() {
        let mut holds = Holds::new(4);
        holds
            .hold("r1", "s", HookAgent::Codex, permission(), 0, 1_000, 1)
            .unwrap();
        holds
            .hold("r2", "s", HookAgent::Codex, permission(), 5, 1_000, 2)
            .unwrap();
        let Answering::Applies(applied) =
            holds.answer("s", "r2", &option("deny"), Capture::Metadata, 10)
        else {
            panic!("r2 is held")
        };
        assert!(
            applied.stdout.contains(r#""behavior":"deny""#),
            "{}",
            applied.stdout
        );
        assert_eq!(holds.release("r2"), Some(2));
        assert!(holds.holds_session("s"));
        let Answering::Applies(applied) =
            holds.answer("s", "r1", &option("allow"), Capture::Metadata, 10)
        else {
            panic!("r1 is held")
        };
        assert!(applied.stdout.contains(r#""behavior":"allow""#));
        assert_eq!(holds.release("r1"), Some(1));
        assert!(!holds.holds_session("s"));
    }

    #[test]
    fn an_answer_for_another_session_or_no_hold_applies_nothing() {
        let mut holds = Holds::new(4);
        holds
            .hold("r1", "s", HookAgent::Codex, permission(), 0, 1_000, ())
            .unwrap();
        assert!(matches!(
            holds.answer("t", "r1", &option("allow"), Capture::Metadata, 10),
            Answering::NotHeld
        ));
        assert!(matches!(
            holds.answer("s", "r9", &option("allow"), Capture::Metadata, 10),
            Answering::NotHeld
        ));
        assert_eq!(holds.len(), 1);
    }

    #[test]
    fn a_form_answered_wrongly_then_rightly_is_held_until_the_right_answer() {
        let mut holds = Holds::new(4);
        holds
            .hold("q", "s", HookAgent::ClaudeCode, questions(), 0, 1_000, 'q')
            .unwrap();
        // The second question is required: left out, the form breaks.
        let wrong = holds.answer("s", "q", &values(json!({"1": "2"})), Capture::Full, 10);
        let Answering::Breaks(why) = wrong else {
            panic!("a broken form is refused: {wrong:?}")
        };
        assert!(why.contains("`2`"), "{why}");
        assert_eq!(holds.len(), 1, "the hold stays");
        // An option no question has is refused as well.
        let several = holds.answer("s", "q", &option("1"), Capture::Full, 10);
        assert!(matches!(several, Answering::Breaks(_)), "{several:?}");
        let right = holds.answer(
            "s",
            "q",
            &values(json!({"1": "Use DuckDB", "2": ["1", "2"]})),
            Capture::Metadata,
            10,
        );
        let Answering::Applies(applied) = right else {
            panic!("a good form applies: {right:?}")
        };
        let out: Value = serde_json::from_str(&applied.stdout).unwrap();
        assert_eq!(
            out["hookSpecificOutput"]["decision"]["updatedInput"]["answers"],
            json!({"Which db?": "Use DuckDB", "Which checks?": "fmt, clippy"})
        );
        // Recorded at metadata: the typed text is gated out, the choices stay.
        assert_eq!(
            applied.answer.values,
            json!({"2": ["1", "2"]}).as_object().cloned()
        );
        assert_eq!(holds.release("q"), Some('q'));
    }

    #[test]
    fn stopping_dismisses_every_hold_oldest_first() {
        let mut holds = Holds::new(4);
        holds
            .hold("b", "s", HookAgent::Codex, permission(), 20, 1_000, 'b')
            .unwrap();
        holds
            .hold("a", "t", HookAgent::Codex, permission(), 10, 1_000, 'a')
            .unwrap();
        let settled = holds.drain(30);
        let ends: Vec<_> = settled.iter().map(|s| (s.waiter, s.ending)).collect();
        assert_eq!(
            ends,
            [
                ('a', Ending::Dismissed { latency_ms: 20 }),
                ('b', Ending::Dismissed { latency_ms: 10 }),
            ]
        );
        assert!(holds.is_empty());
    }

    #[test]
    fn an_answer_at_the_deadline_finds_nothing_held() {
        let mut holds = Holds::new(4);
        holds
            .hold("r", "s", HookAgent::Codex, permission(), 100, 50, ())
            .unwrap();
        let before = holds.answer("s", "r", &option("allow"), Capture::Metadata, 149);
        assert!(matches!(before, Answering::Applies(_)));
        let late = holds.answer("s", "r", &option("allow"), Capture::Metadata, 150);
        assert!(matches!(late, Answering::NotHeld));
    }

    #[test]
    fn a_sessions_holds_end_together_and_the_others_stay() {
        let mut holds = Holds::new(4);
        holds
            .hold("a", "s", HookAgent::Codex, permission(), 0, 1_000, 'a')
            .unwrap();
        holds
            .hold("b", "t", HookAgent::Codex, permission(), 0, 1_000, 'b')
            .unwrap();
        holds
            .hold("c", "s", HookAgent::Codex, permission(), 5, 1_000, 'c')
            .unwrap();
        let ended = holds.end_session("s", 10);
        let ends: Vec<_> = ended.iter().map(|s| (s.waiter, s.ending)).collect();
        assert_eq!(
            ends,
            [
                ('a', Ending::Dismissed { latency_ms: 10 }),
                ('c', Ending::Dismissed { latency_ms: 5 }),
            ]
        );
        assert_eq!(holds.len(), 1);
        assert!(holds.holds_session("t"));
    }
}
