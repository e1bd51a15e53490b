//! What the demo agent does, step by step: payloads with full content,
//! which the agent sends through the emitter at its ceiling.

use aep::attention_requested::{Kind, RespondVia};
use aep::run_started::Trigger;
use aep::{
    AttentionRequested, Choice, FieldSpec, FieldSpecType, Object, Payload, ProgressStatus,
    RunStarted, SessionStarted, ToolCompleted, ToolRef, ToolRequested,
};
use serde_json::json;

/// One step of the loop.
pub enum Step {
    /// A payload of the current run.
    Run(Payload),
    /// A request for a person; the agent waits for nothing, it goes on.
    Ask(Payload),
    /// A heartbeat (agent-scoped, live only).
    Heartbeat,
}

/// The session's first payload.
pub fn session_started(agent: &str) -> Payload {
    let mut client = aep::session_started::Client::new(agent);
    client.version = Some(env!("CARGO_PKG_VERSION").to_owned());
    let mut started = SessionStarted::new();
    started.client = Some(client);
    started.label = Some("aep demo".to_owned());
    Payload::SessionStarted(started)
}

/// A run's first payload.
pub fn run_started(n: u64) -> Payload {
    let mut run = RunStarted::new();
    run.trigger = Some(if n == 1 {
        Trigger::User
    } else {
        Trigger::Agent
    });
    run.prompt = Some(format!("Tidy the build scripts (pass {n})"));
    Payload::RunStarted(run)
}

const TOOLS: [(&str, &str); 4] = [
    ("Read", "build.rs"),
    ("Bash", "cargo test --workspace"),
    ("Edit", "scripts/release.sh"),
    ("Grep", "TODO"),
];

/// The `tick`-th step of a run's loop.
pub fn step(tick: u64) -> Step {
    match tick {
        3 => Step::Ask(permission()),
        6 => Step::Ask(form()),
        t if t % 5 == 4 => Step::Heartbeat,
        t if t % 3 == 2 => {
            let mut status = ProgressStatus::new();
            status.message = Some(format!("step {t}"));
            status.phase = Some("working".into());
            status.percent = Some(((t * 7) % 100) as f64);
            Step::Run(Payload::ProgressStatus(status))
        }
        t if t % 2 == 0 => Step::Run(tool_requested(t)),
        t => Step::Run(tool_completed(t - 1)),
    }
}

fn tool_ref(tick: u64) -> ToolRef {
    let (name, _) = TOOLS[(tick / 2 % TOOLS.len() as u64) as usize];
    let mut tool = ToolRef::new(name);
    tool.call_id = Some(format!("call-{tick}"));
    tool
}

fn tool_requested(tick: u64) -> Payload {
    let (_, target) = TOOLS[(tick / 2 % TOOLS.len() as u64) as usize];
    let mut requested = ToolRequested::new(tool_ref(tick));
    let mut args = Object::new();
    args.insert("target".into(), json!(target));
    requested.args = Some(args);
    Payload::ToolRequested(requested)
}

fn tool_completed(tick: u64) -> Payload {
    let mut completed = ToolCompleted::new(tool_ref(tick));
    completed.status = Some("success".into());
    completed.duration_ms = Some(40 + tick % 17 * 13);
    Payload::ToolCompleted(completed)
}

fn choice(id: &str, label: &str) -> Choice {
    Choice::new(id, label)
}

/// A yes/no permission request.
pub fn permission() -> Payload {
    let mut ask = AttentionRequested::new(
        Kind::Permission,
        "Allow `rm -rf target/` to free disk space?",
    );
    ask.options = Some(vec![choice("allow", "Allow"), choice("deny", "Deny")]);
    ask.respond_via = Some(vec![RespondVia::Control]);
    Payload::AttentionRequested(ask)
}

/// A form with every field type (AEP-0006): text, number, boolean, a
/// single select, a multi select and a select with "Other".
pub fn form() -> Payload {
    let mut name = FieldSpec::new("branch", FieldSpecType::String, "Branch name for the fix");
    name.required = Some(true);
    let mut jobs = FieldSpec::new("jobs", FieldSpecType::Number, "Parallel build jobs");
    jobs.min = Some(1.0);
    jobs.max = Some(16.0);
    let dry = FieldSpec::new("dry_run", FieldSpecType::Boolean, "Dry run first");
    let mut target = FieldSpec::new("target", FieldSpecType::Select, "Release target");
    target.required = Some(true);
    target.choices = Some(vec![
        choice("staging", "Staging"),
        choice("production", "Production"),
    ]);
    let mut checks = FieldSpec::new("checks", FieldSpecType::Select, "Checks to run");
    checks.multi = Some(true);
    checks.choices = Some(vec![
        choice("unit", "Unit tests"),
        choice("lint", "Lints"),
        choice("audit", "Dependency audit"),
    ]);
    let mut notify = FieldSpec::new("notify", FieldSpecType::Select, "Who to notify");
    notify.other = Some(true);
    notify.choices = Some(vec![
        choice("team", "The team channel"),
        choice("nobody", "Nobody"),
    ]);
    let mut ask = AttentionRequested::new(Kind::Form, "How should the release go?");
    ask.fields = Some(vec![name, jobs, dry, target, checks, notify]);
    ask.respond_via = Some(vec![RespondVia::Control]);
    Payload::AttentionRequested(ask)
}
