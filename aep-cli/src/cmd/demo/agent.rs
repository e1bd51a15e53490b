//! The demo agent's loop: steps at a pace, commands as they come, a
//! clean end on a signal.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use aep::attention_requested::Kind;
use aep::attention_resolved::Resolution;
use aep::control::{Command, Identity, Target};
use aep::emit::Emitter;
use aep::run_cancelled::By;
use aep::{
    AgentHeartbeat, AttentionResolved, Capture, Event, NackReason, Payload, RunCancelled,
    SessionEnded, Severity,
};
use aep_client::session::{source_uri, Attrs, SessionEmitter};
use aep_client::target::{Agent, AgentConfig, Commands, Link};

use super::script::{self, Step};
use crate::cmd::Status;
use crate::common::error::{Error, Result};
use crate::diag;

/// The commands the demo takes.
const ACCEPTS: [&str; 2] = ["control.attention.respond", "control.cancel"];
/// The level the demo emits at: its content goes through the pipeline.
const CEILING: Capture = Capture::Redacted;
/// The categories it emits (its `hello`'s routing hint).
const EMITS: [&str; 7] = [
    "session",
    "run",
    "tool",
    "progress",
    "attention",
    "control",
    "agent",
];

pub struct Settings {
    pub relay: String,
    pub token: Option<String>,
    pub agent: String,
    pub session: String,
    pub epoch: u64,
    pub fresh: bool,
    pub run: String,
    pub pace: Duration,
}

/// A request waiting for a person.
struct Pending {
    kind: Kind,
    options: Vec<String>,
}

/// The demo: a scripted agent on [`aep_client::target::Agent`], which
/// holds the connection, the session's positions and the control target
/// (nacks and redelivered acks are its own; the demo decides the rest).
pub struct Demo {
    settings: Settings,
    agent: Agent,
    commands: Commands,
    /// The current run and how many runs there were.
    run: Option<String>,
    runs: u64,
    tick: u64,
    /// Steps to wait before the next run starts.
    idle: u64,
    pending: HashMap<String, Pending>,
    heartbeats: u64,
    ended: bool,
}

impl Demo {
    pub fn new(settings: Settings) -> Result<Demo> {
        let host = crate::live::hostname();
        let source = source_uri(&host, &settings.agent, Some(&settings.session));
        let session = SessionEmitter::new(
            source.clone(),
            settings.agent.clone(),
            settings.session.clone(),
            settings.epoch,
        )
        .with_ceiling(CEILING, Emitter::default());
        let target = Target::new(Identity::new(source, settings.agent.clone()), ACCEPTS)
            .map_err(Error::from_source)?
            .with_ceiling(CEILING);
        let mut config = AgentConfig::new(
            settings.relay.clone(),
            settings.token.clone(),
            format!("{host}/{}", std::process::id()),
        );
        config.emits = EMITS.iter().map(|e| (*e).to_owned()).collect();
        let (agent, commands) = Agent::connect(config, session, target);
        Ok(Demo {
            agent,
            commands,
            run: None,
            runs: 0,
            tick: 0,
            idle: 0,
            pending: HashMap::new(),
            heartbeats: 0,
            ended: false,
            settings,
        })
    }

    pub async fn run(mut self, stop: impl Future<Output = ()>) -> Status {
        let mut stop = std::pin::pin!(stop);
        diag!(
            "aep demo: session {} (epoch {}) as {} to {}",
            self.settings.session,
            self.settings.epoch,
            self.settings.agent,
            self.settings.relay
        );
        if self.settings.fresh {
            let started = script::session_started(&self.settings.agent);
            if let Err(e) = self.emit(&started, Attrs::default()).await {
                diag!("aep demo: error: {e}");
                return Status::Failure;
            }
        }
        let mut pace = tokio::time::interval(self.settings.pace);
        pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut reach = crate::live::reach::Reach::new("demo", &self.settings.relay);
        let mut links = self.agent.links();
        loop {
            tokio::select! {
                _ = &mut stop => break,
                command = self.commands.recv() => match command {
                    Some(command) => self.decide(command).await,
                    None => break,
                },
                changed = links.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    let link = links.borrow_and_update().clone();
                    match link {
                        Link::Connected(_) => {
                            reach.connected();
                            diag!("aep demo: connected to {}", self.settings.relay);
                        }
                        Link::Disconnected(why) => {
                            if reach.lost(&why) {
                                return Status::Failure;
                            }
                        }
                        Link::Failed(why) => {
                            diag!("aep demo: error: the relay at {} refused the connection: {why}", self.settings.relay);
                            return Status::Failure;
                        }
                        Link::Connecting => {}
                    }
                }
                _ = pace.tick() => self.step().await,
            }
            if self.ended {
                break;
            }
        }
        self.finish().await;
        Status::Clean
    }

    /// One step: start a run when none is going, else the run's next step.
    async fn step(&mut self) {
        let result = match &self.run {
            None if self.idle > 0 => {
                self.idle -= 1;
                return;
            }
            None => self.start_run().await,
            Some(_) => {
                self.tick += 1;
                match script::step(self.tick) {
                    Step::Run(payload) => self.emit_in_run(&payload).await,
                    Step::Ask(payload) => self.ask(&payload).await,
                    Step::Heartbeat => self.heartbeat().await,
                }
            }
        };
        if let Err(e) = result {
            diag!("aep demo: error: {e}");
        }
    }

    async fn start_run(&mut self) -> Result<()> {
        self.runs += 1;
        let run = if self.runs == 1 {
            self.settings.run.clone()
        } else {
            format!("run-{}", self.runs)
        };
        self.run = Some(run);
        self.tick = 0;
        self.emit_in_run(&script::run_started(self.runs)).await
    }

    async fn emit_in_run(&mut self, payload: &Payload) -> Result<()> {
        let attrs = Attrs {
            run: self.run.clone(),
            ..Attrs::default()
        };
        self.emit(payload, attrs).await.map(drop)
    }

    async fn ask(&mut self, payload: &Payload) -> Result<()> {
        let attrs = Attrs {
            run: self.run.clone(),
            severity: Some(Severity::Notice),
            ..Attrs::default()
        };
        let event = self.emit(payload, attrs).await?;
        if let Payload::AttentionRequested(request) = payload {
            let options = request
                .options
                .iter()
                .flatten()
                .map(|c| c.id.clone())
                .collect();
            self.pending.insert(
                event.id.clone(),
                Pending {
                    kind: request.kind,
                    options,
                },
            );
            diag!(
                "aep demo: asked {:?} (request {})",
                request.prompt,
                event.id
            );
            let how = match request.kind {
                Kind::Form => "`aep pending` prints its `aep respond --values` line".to_owned(),
                _ => format!(
                    "aep respond --session {} --request {} --option allow",
                    self.settings.session, event.id
                ),
            };
            diag!(
                "aep demo:   answer it in the relay's page (aep relay --print-ui-url), or: {how}"
            );
        }
        Ok(())
    }

    async fn heartbeat(&mut self) -> Result<()> {
        self.heartbeats += 1;
        let mut beat = AgentHeartbeat::new();
        beat.tick = Some(self.heartbeats);
        beat.interval_ms = Some(self.settings.pace.as_millis() as u64 * 5);
        self.agent
            .emit_agent(&Payload::AgentHeartbeat(beat), Severity::Debug)
            .await
            .map_err(Error::from_source)?;
        Ok(())
    }

    /// Stamps `payload` as the session's next event from full content,
    /// made honest at the demo's ceiling by the session's emitter, and
    /// sends it.
    async fn emit(&mut self, payload: &Payload, attrs: Attrs) -> Result<Event> {
        self.agent
            .emit_full(payload, attrs)
            .await
            .map_err(Error::from_source)
    }

    async fn decide(&mut self, command: Command) {
        let result = match command.payload() {
            Payload::ControlAttentionRespond(respond) => {
                self.respond(&command, &respond.answer).await
            }
            Payload::ControlCancel(cancel) => self.cancel(&command, cancel).await,
            _ => {
                self.reject(
                    &command,
                    NackReason::Unsupported,
                    "not a command this demo handles",
                )
                .await
            }
        };
        if let Err(e) = result {
            diag!("aep demo: error while answering {}: {e}", command.key());
        }
    }

    async fn reject(&mut self, command: &Command, reason: NackReason, detail: &str) -> Result<()> {
        self.agent
            .reject(command, reason, Some(detail))
            .await
            .map_err(Error::from_source)?;
        diag!(
            "aep demo: rejected {} ({}): {detail}",
            command.event().id,
            reason.as_str()
        );
        Ok(())
    }

    async fn respond(&mut self, command: &Command, answer: &aep::Answer) -> Result<()> {
        let subject = command.event().subject.clone().unwrap_or_default();
        let Some(pending) = self.pending.get(&subject) else {
            let detail = format!("no pending request {subject:?} in this session");
            return self.reject(command, NackReason::Invalid, &detail).await;
        };
        if pending.kind != Kind::Form {
            let picked = answer.option.as_ref();
            if picked.is_some_and(|o| !pending.options.contains(o)) {
                let detail = format!(
                    "option {:?} is not one of {:?}",
                    picked.unwrap_or(&String::new()),
                    pending.options
                );
                return self.reject(command, NackReason::Invalid, &detail).await;
            }
            if picked.is_none() && answer.text.is_none() {
                return self
                    .reject(
                        command,
                        NackReason::Invalid,
                        "the answer names no option and has no text",
                    )
                    .await;
            }
        }
        self.agent
            .accept(command)
            .await
            .map_err(Error::from_source)?;
        self.agent
            .answered(command, answer)
            .await
            .map_err(Error::from_source)?;
        self.pending.remove(&subject);
        diag!(
            "aep demo: request {subject} answered by {}",
            command.event().agent
        );
        Ok(())
    }

    async fn cancel(&mut self, command: &Command, cancel: &aep::ControlCancel) -> Result<()> {
        let whole_session = cancel.scope == aep::control_cancel::Scope::Session;
        let named = command.event().run.clone();
        let current = self.run.clone();
        if !whole_session && (current.is_none() || (named.is_some() && named != current)) {
            let detail = format!("run {:?} is not running", named.unwrap_or_default());
            return self.reject(command, NackReason::Invalid, &detail).await;
        }
        self.agent
            .accept(command)
            .await
            .map_err(Error::from_source)?;
        self.dismiss_pending().await;
        if let Some(run) = self.run.take() {
            let mut cancelled = RunCancelled::new();
            cancelled.by = Some(By::Control);
            cancelled.reason = cancel.reason.clone();
            let attrs = Attrs {
                run: Some(run.clone()),
                cause: Some(command.event().id.clone()),
                ..Attrs::default()
            };
            self.emit(&Payload::RunCancelled(cancelled), attrs).await?;
            diag!("aep demo: run {run} cancelled by {}", command.event().agent);
        }
        if whole_session {
            let mut ended = SessionEnded::new();
            ended.reason = Some(aep::session_ended::Reason::Killed);
            let attrs = Attrs {
                cause: Some(command.event().id.clone()),
                ..Attrs::default()
            };
            self.emit(&Payload::SessionEnded(ended), attrs).await?;
            self.ended = true;
        } else {
            self.idle = 3;
        }
        Ok(())
    }

    /// Settles every pending request as dismissed.
    async fn dismiss_pending(&mut self) {
        let ids: Vec<String> = self.pending.drain().map(|(id, _)| id).collect();
        for id in ids {
            let attrs = Attrs {
                subject: Some(id.clone()),
                cause: Some(id),
                run: self.run.clone(),
                ..Attrs::default()
            };
            let resolved =
                Payload::AttentionResolved(AttentionResolved::new(Resolution::Dismissed));
            if let Err(e) = self.emit(&resolved, attrs).await {
                diag!("aep demo: error: {e}");
            }
        }
    }

    /// The clean end: pending requests dismissed, the run and the session
    /// ended, the outbox flushed.
    async fn finish(mut self) {
        if !self.ended {
            self.dismiss_pending().await;
            if let Some(run) = self.run.take() {
                let mut cancelled = RunCancelled::new();
                cancelled.by = Some(By::Shutdown);
                let attrs = Attrs {
                    run: Some(run),
                    ..Attrs::default()
                };
                if let Err(e) = self.emit(&Payload::RunCancelled(cancelled), attrs).await {
                    diag!("aep demo: error: {e}");
                }
            }
            let mut ended = SessionEnded::new();
            ended.reason = Some(aep::session_ended::Reason::Normal);
            if let Err(e) = self
                .emit(&Payload::SessionEnded(ended), Attrs::default())
                .await
            {
                diag!("aep demo: error: {e}");
            }
        }
        let session = self.settings.session.clone();
        self.agent.close(Duration::from_secs(3)).await;
        diag!("aep demo: session {session} ended");
    }
}
