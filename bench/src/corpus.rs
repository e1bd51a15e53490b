//! A deterministic, realistic AEP stream: sessions of runs where tool and
//! progress events dominate, with agent heartbeats, forms, retrievals,
//! extension attributes and unknown members mixed in. Every event is valid,
//! and so is the stream (what `aep validate` checks): ids are unique, `seq`
//! rises within each session, every run has its own id and one terminal,
//! every form request is answered through a command that is acknowledged
//! once, and resolved (the lifecycle events name it in `subject`) before its
//! session ends.

use serde_json::{json, Value};

/// xorshift64*: the same seed gives the same corpus on every machine.
pub struct Rng(pub u64);

impl Rng {
    /// The next pseudo-random number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

const TOOLS: &[&str] = &[
    "Bash",
    "Read",
    "Edit",
    "Grep",
    "WebFetch",
    "mcp__github__create_pr",
];

/// Writes JSONL events until the text is at least `bytes` long.
pub fn generate(bytes: usize, seed: u64) -> String {
    let mut rng = Rng(seed | 1);
    let mut out = String::with_capacity(bytes + 4096);
    let mut session = 0u64;
    let mut id = 0u64;
    while out.len() < bytes {
        session += 1;
        let mut stream = Stream {
            rng: &mut rng,
            out: &mut out,
            session,
            seq: 0,
            run: None,
            runs: 0,
            id: &mut id,
        };
        stream.session();
    }
    out
}

struct Stream<'a> {
    rng: &'a mut Rng,
    out: &'a mut String,
    session: u64,
    seq: u64,
    /// The run the next session-scoped events belong to.
    run: Option<String>,
    runs: u64,
    id: &'a mut u64,
}

/// The emitter of every event but the commands.
const SOURCE: &str = "urn:aep:agent:claude-code";
/// The sender of the commands, a chat front end answering for a person.
const SENDER: &str = "urn:aep:sink:chat";

impl Stream<'_> {
    /// Writes one event.
    fn emit(&mut self, event_type: &str, data: Value, scope: Scope) {
        self.emit_linked(event_type, data, scope, &[]);
    }

    /// Writes one event with extra envelope attributes (`subject`,
    /// `cause`); returns its id.
    fn emit_linked(
        &mut self,
        event_type: &str,
        data: Value,
        scope: Scope,
        links: &[(&str, &str)],
    ) -> String {
        *self.id += 1;
        let n = *self.id;
        let id = format!("evt_{n:08}");
        let (source, agent) = match scope {
            Scope::Command => (SENDER, "chat"),
            _ => (SOURCE, "claude-code"),
        };
        let mut event = json!({
            "aep": "0.1",
            "id": id,
            "type": event_type,
            "time": format!("2026-11-30T{:02}:{:02}:{:02}.{:03}Z", (n / 3600) % 24, (n / 60) % 60, n % 60, n % 1000),
            "source": source,
            "agent": agent,
            "capture": "full",
        });
        match scope {
            Scope::Agent => {}
            Scope::Command => event["session"] = json!(format!("ses_{}", self.session)),
            Scope::Session => {
                event["session"] = json!(format!("ses_{}", self.session));
                if let Some(run) = &self.run {
                    event["run"] = json!(run);
                }
                event["seq"] = json!(self.seq);
                self.seq += 1;
            }
        }
        for (name, value) in links {
            event[*name] = json!(value);
        }
        if self.rng.chance(30) {
            event["region"] = json!("eu-west-1");
            event["host"] = json!(format!("devbox-{}", self.rng.below(16)));
        }
        if self.rng.chance(10) {
            event["attempt"] = json!(self.rng.below(4));
        }
        event["data"] = data;
        // Capture honesty: some hops forward at metadata.
        let text = if self.rng.chance(40) {
            let full: aep_types::Event =
                serde_json::from_value(event).expect("the corpus is valid");
            serde_json::to_string(&full.down_level(aep_types::Capture::Metadata)).expect("encodes")
        } else {
            event.to_string()
        };
        self.out.push_str(&text);
        self.out.push('\n');
        id
    }

    fn session(&mut self) {
        self.emit(
            "session.started",
            json!({"label": "fix the flaky test", "client": {"name": "claude-code", "version": "2.1.0"},
                   "gen_ai.request.model": "model-x", "cwd": "/home/dev/project"}),
            Scope::Session,
        );
        for _ in 0..1 + self.rng.below(3) {
            self.run();
        }
        self.emit(
            "agent.heartbeat",
            json!({"tick": self.session, "interval_ms": 30000}),
            Scope::Agent,
        );
        let duration = 1000 + self.rng.below(100_000);
        self.emit(
            "session.ended",
            json!({"reason": "normal", "duration_ms": duration, "runs": self.runs}),
            Scope::Session,
        );
    }

    fn run(&mut self) {
        self.runs += 1;
        self.run = Some(format!("run_{}_{}", self.session, self.runs));
        self.emit(
            "run.started",
            json!({"trigger": "user", "prompt": "make the tests pass"}),
            Scope::Session,
        );
        for step in 0..10 + self.rng.below(30) {
            match self.rng.below(100) {
                0..=59 => self.tool_call(),
                60..=79 => self.emit(
                    "progress.status",
                    json!({"message": "running the test suite", "phase": "test", "percent": (step * 3) % 100}),
                    Scope::Session,
                ),
                80..=84 => self.form(),
                85..=89 => self.emit(
                    "resource.retrieval.returned",
                    json!({"documents": [
                        {"id": "doc-1", "score": 0.91, "content_redacted": "[redacted] build steps", "metadata": {"page": 3}},
                        {"id": "doc-2", "score": 0.42, "content": "raw text of the second document"}],
                        "count": 2, "corpus": "handbook", "duration_ms": 18}),
                    Scope::Session,
                ),
                90..=94 => self.emit(
                    "state.delta",
                    json!({"delta": [{"op": "replace", "path": "/step", "value": step}], "key": "plan", "rev": step}),
                    Scope::Session,
                ),
                95..=97 => self.emit("agent.heartbeat", json!({"tick": step, "interval_ms": 30000}), Scope::Agent),
                _ => self.emit(
                    "error.raised",
                    json!({"error": {"type": "RateLimit", "message": "429 from upstream"}, "code": "E429", "fatal": false}),
                    Scope::Session,
                ),
            }
        }
        self.emit(
            "run.finished",
            json!({"duration_ms": 52_000, "summary": "all tests pass", "gen_ai.usage.input_tokens": 18_204,
                   "gen_ai.usage.output_tokens": 2_311, "cost": {"currency": "USD", "total": 0.42, "prompt": 0.3, "completion": 0.12}}),
            Scope::Session,
        );
        self.run = None;
    }

    fn tool_call(&mut self) {
        let tool = TOOLS[self.rng.below(TOOLS.len() as u64) as usize];
        let call = format!("toolu_{:x}", self.rng.next_u64() & 0xffff_ffff);
        let mut requested = json!({"tool": {"name": tool, "call_id": call}, "args_digest": "sha256:4f2a9c",
                                   "args": {"command": "cargo test --workspace", "timeout": 120000}});
        if self.rng.chance(10) {
            requested["vendor_hint"] = json!({"sandbox": true});
        }
        self.emit("tool.requested", requested, Scope::Session);
        if self.rng.chance(90) {
            let duration = self.rng.below(5000);
            self.emit(
                "tool.completed",
                json!({"tool": {"name": tool, "call_id": call}, "duration_ms": duration, "status": "0",
                       "result_digest": "sha256:9be1", "result": "test result: ok. 42 passed; 0 failed",
                       "gen_ai.usage.input_tokens": 120, "cost": {"currency": "USD", "total": 0.002}}),
                Scope::Session,
            );
        } else {
            self.emit(
                "tool.failed",
                json!({"tool": {"name": tool, "call_id": call}, "error": {"type": "ExitStatus", "message": "exit 101"},
                       "duration_ms": 812}),
                Scope::Session,
            );
        }
    }

    fn form(&mut self) {
        let request = self.emit_linked(
            "attention.requested",
            json!({"kind": "form", "prompt": "claude-code asks 2 questions", "respond_via": ["control"],
                   "fields": [
                       {"id": "1", "type": "select", "label": "Storage: Which database?", "required": true, "other": true,
                        "choices": [{"id": "1", "label": "PostgreSQL"}, {"id": "2", "label": "SQLite"}]},
                       {"id": "2", "type": "number", "label": "Port", "min": 1, "max": 65535},
                       {"id": "3", "type": "boolean", "label": "Use TLS"},
                       {"id": "4", "type": "string", "label": "Anything else?"}]}),
            Scope::Session,
            &[],
        );
        let command = self.emit_linked(
            "control.attention.respond",
            json!({"answer": {"values": {"1": "2", "2": 5432, "3": true, "4": "no"}}}),
            Scope::Command,
            &[("subject", &request)],
        );
        self.emit_linked(
            "control.accepted",
            json!({}),
            Scope::Session,
            &[("cause", &command)],
        );
        let links = [("subject", request.as_str()), ("cause", command.as_str())];
        self.emit_linked(
            "attention.answered",
            json!({"answer": {"values": {"1": "2", "2": 5432, "3": true, "4": "no"}}, "by": "user:7", "via": "control"}),
            Scope::Session,
            &links,
        );
        self.emit_linked(
            "attention.resolved",
            json!({"resolution": "answered", "latency_ms": 9000}),
            Scope::Session,
            &links,
        );
    }
}

#[derive(Clone, Copy)]
enum Scope {
    Session,
    Agent,
    Command,
}
