//! The AEP side of one MCP connection: a session on the relay, emitted
//! over an [`Agents`] connection that is also the control target its requests are
//! answered through. The connection is the session's own (stdio), or one
//! shared by every session of the process (`--http`), each session with
//! its own identity and commands.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use aep::attention_requested::{Kind, RespondVia};
use aep::attention_resolved::Resolution;
use aep::control::{Command, Identity, Target};
use aep::emit::Emitter;
use aep::{
    Answer, AttentionAnswered, AttentionRequested, AttentionResolved, AttentionTimeout, Capture,
    Choice, FieldSpec, NackReason, Payload, ProgressStatus, SessionEnded, SessionStarted, Severity,
};
use aep_client::session::{source_uri, Attrs, SessionEmitter};
use aep_client::target::{AgentConfig, Agents, Commands, Link as State, SessionHandle};
use tokio::sync::{oneshot, Mutex};

use crate::common::error::{Error, Result};
use crate::diag;

/// The commands this target takes.
const ACCEPTS: [&str; 2] = ["control.attention.respond", "control.cancel"];
/// The level it emits at: content goes through the redaction pipeline.
const CEILING: Capture = Capture::Redacted;
/// The categories it emits (its `hello`'s routing hint).
const EMITS: [&str; 4] = ["session", "progress", "attention", "control"];
/// A bound on the questions a session has waiting at once: each is a
/// request for the person, and a call each.
const MAX_WAITING: usize = 32;

/// Where and as what to connect.
pub struct Settings {
    pub relay: String,
    pub token: Option<String>,
    pub session: String,
    /// The agent name, when given; else the MCP client's.
    pub agent: Option<String>,
    /// Whether `ask_human` also asks through MCP elicitation, when the
    /// client can take it.
    pub elicit: bool,
    /// The relay connection shared by the process's sessions, if any;
    /// else the session opens its own.
    pub shared: Option<Agents>,
}

/// The relay connection every MCP session of an `aep mcp --http` shares:
/// its `hello` names `agent` (`--agent`, else `aep-mcp`) and declares the
/// commands each session takes.
pub fn shared(relay: &str, token: Option<String>, agent: &str, max_sessions: usize) -> Agents {
    let host = crate::live::hostname();
    let target = Target::new(
        Identity::new(source_uri(&host, agent, None), agent),
        ACCEPTS,
    )
    .expect("control.attention.respond is a command")
    .with_ceiling(CEILING);
    let mut config = config(relay, token, &host);
    config.max_sessions = max_sessions;
    Agents::open(config, agent, CEILING, target)
}

fn config(relay: &str, token: Option<String>, host: &str) -> AgentConfig {
    let mut config = AgentConfig::new(relay, token, format!("{host}/{}", std::process::id()));
    config.emits = EMITS.iter().map(|e| (*e).to_owned()).collect();
    config
}

/// A second way to the person (MCP elicitation): done with a valid
/// answer only; one that cannot come never finishes.
pub struct Elsewhere {
    pub answer: Pin<Box<dyn Future<Output = Answer> + Send>>,
    /// Who answered, said as `attention.answered`'s `by`.
    pub by: String,
}

/// A question for a person.
pub struct Question {
    pub prompt: String,
    pub options: Vec<String>,
    pub fields: Option<Vec<FieldSpec>>,
    pub timeout: Duration,
}

/// A question's answer.
pub struct Answered {
    /// The request's event id.
    pub request: String,
    pub answer: Answer,
    /// The agent (person, tool) that answered.
    pub by: String,
}

/// A request waiting for its answer.
struct Waiting {
    kind: Kind,
    options: Vec<String>,
    /// The answer and who gave it, or why there is none.
    settle: oneshot::Sender<Result<(Answer, String), String>>,
}

/// The requests waiting, and whether the person cancelled the session.
#[derive(Default)]
struct Book {
    waiting: HashMap<String, Waiting>,
    /// Why the session is over (a `control.cancel`), said for the agent.
    cancelled: Option<String>,
    /// The requests answered the other way (MCP elicitation).
    answered_elsewhere: HashSet<String>,
}

impl Book {
    /// The session's cancellation, as an error for a new call.
    fn open(&self) -> Result<(), String> {
        match &self.cancelled {
            Some(why) => Err(format!("{why}; this session takes no more calls")),
            None => Ok(()),
        }
    }
}

type Pending = Arc<Mutex<Book>>;

/// One session on the relay.
pub struct Link {
    relay: String,
    session: String,
    /// The connection (the session's own, or shared).
    agent: Agents,
    /// Whether the connection is the session's own, to close at its end.
    own: bool,
    /// The session on it.
    handle: SessionHandle,
    pending: Pending,
}

impl Link {
    /// Connects (in the background) and emits `session.started`.
    pub async fn start(settings: &Settings, agent: &str) -> Link {
        let host = crate::live::hostname();
        let source = source_uri(&host, agent, Some(&settings.session));
        let session = || {
            SessionEmitter::new(source.clone(), agent, settings.session.clone(), 0)
                .with_ceiling(CEILING, Emitter::default())
        };
        let target = || {
            Target::new(Identity::new(source.clone(), agent), ACCEPTS)
                .expect("control.attention.respond is a command")
                .with_ceiling(CEILING)
        };
        let config = config(&settings.relay, settings.token.clone(), &host);
        let opened = match &settings.shared {
            Some(shared) => match shared.open_session_as(session(), target()) {
                Ok((handle, commands)) => Some((shared.clone(), false, handle, commands)),
                Err(e) => {
                    diag!(
                        "aep mcp: session {} on a connection of its own: {e}",
                        settings.session
                    );
                    None
                }
            },
            None => None,
        };
        let (agent_link, own, handle, commands) = match opened {
            Some(opened) => opened,
            None => {
                let own = Agents::open(config, agent, CEILING, target());
                let (handle, commands) = own
                    .open_session(session())
                    .expect("the first session of a new connection opens");
                (own, true, handle, commands)
            }
        };
        let pending: Pending = Arc::default();
        tokio::spawn(decide(commands, handle.clone(), pending.clone()));
        let link = Link {
            relay: settings.relay.clone(),
            session: settings.session.clone(),
            agent: agent_link,
            own,
            handle,
            pending,
        };
        let client = aep::session_started::Client::new(agent);
        let mut started = SessionStarted::new();
        started.client = Some(client);
        started.label = Some("aep mcp".to_owned());
        if let Err(e) = link
            .handle
            .emit_full(&Payload::SessionStarted(started), Attrs::default())
            .await
        {
            diag!("aep mcp: error: {e}");
        }
        diag!(
            "aep mcp: session {} as {agent} to {}",
            link.session,
            link.relay
        );
        link
    }

    /// The session's id.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Waits until the relay has taken the connection, at most `wait`;
    /// else what went wrong, said for the agent.
    async fn reach(&self, wait: Duration) -> Result<(), String> {
        match self.agent.connected(wait).await {
            Ok(_) => Ok(()),
            Err(aep_client::Error::Timeout) => {
                let why = match self.agent.link() {
                    State::Disconnected(why) => format!(": {why}"),
                    _ => String::new(),
                };
                Err(format!(
                    "cannot reach the AEP relay at {} (AEP_RELAY) within {:.0?}{why}",
                    self.relay, wait
                ))
            }
            Err(aep_client::Error::Refused { detail, .. }) => Err(format!(
                "the AEP relay at {} refused the connection (check AEP_TOKEN): {detail}",
                self.relay
            )),
            Err(e) => Err(format!("the AEP relay at {}: {e}", self.relay)),
        }
    }

    /// Asks a person `question` and waits for a valid answer, at most its
    /// timeout (reaching the relay included).
    pub async fn ask(
        &self,
        question: Question,
        elsewhere: Option<Elsewhere>,
    ) -> Result<Answered, String> {
        let deadline = tokio::time::Instant::now() + question.timeout;
        self.reach(question.timeout).await?;
        let kind = if question.fields.is_some() {
            Kind::Form
        } else {
            Kind::Input
        };
        let mut request = AttentionRequested::new(kind, question.prompt);
        if !question.options.is_empty() {
            let choices = question
                .options
                .iter()
                .map(|o| Choice::new(o.clone(), o.clone()))
                .collect();
            request.options = Some(choices);
        }
        request.fields = question.fields;
        request.respond_via = Some(vec![RespondVia::Control]);
        let attrs = Attrs {
            severity: Some(Severity::Notice),
            ..Attrs::default()
        };
        let (settle, settled) = oneshot::channel();
        let id = {
            // Held while the request goes out: its answer cannot be
            // decided before it waits.
            let mut pending = self.pending.lock().await;
            pending.open()?;
            if pending.waiting.len() >= MAX_WAITING {
                return Err(format!(
                    "{MAX_WAITING} questions of this session wait for an answer at once \
                     already: wait for one before asking another"
                ));
            }
            let event = self
                .handle
                .emit_full(&Payload::AttentionRequested(request), attrs)
                .await
                .map_err(|e| format!("cannot ask: {e}"))?;
            pending.waiting.insert(
                event.id.clone(),
                Waiting {
                    kind,
                    options: question.options,
                    settle,
                },
            );
            event.id
        };
        diag!("aep mcp: asked (request {id})");
        let mut guard = Unsettled {
            link: self,
            id: Some(id.clone()),
        };
        let mut settled = std::pin::pin!(settled);
        // A drop since the relay was reached counts too: lost() starts from
        // the state now.
        let mut links = self.agent.links();
        let (mut other, other_by) = match elsewhere {
            Some(Elsewhere { answer, by }) => (answer, by),
            None => (
                Box::pin(std::future::pending()) as Pin<Box<dyn Future<Output = Answer> + Send>>,
                String::new(),
            ),
        };
        let outcome = tokio::select! {
            settled = &mut settled => Ok(settled),
            answer = &mut other => {
                guard.id = None;
                return self.answered_elsewhere(id, answer, other_by, settled).await;
            }
            _ = tokio::time::sleep_until(deadline) => Err(None),
            why = lost(&mut links) => Err(Some(why)),
        };
        let (answer, by) = match outcome {
            Ok(Ok(Ok(answered))) => answered,
            Ok(Ok(Err(why))) => {
                guard.id = None;
                return Err(why);
            }
            Ok(Err(_)) => {
                guard.id = None;
                return Err(match self.reach(Duration::ZERO).await {
                    Err(why) => why,
                    Ok(()) => "the AEP relay connection closed".to_owned(),
                });
            }
            Err(lost) => {
                guard.id = None;
                let taken = self.pending.lock().await.waiting.remove(&id).is_some();
                if !taken {
                    // Settled meanwhile: the outcome is on its way.
                    match tokio::time::timeout(Duration::from_secs(5), settled).await {
                        Ok(Ok(Ok((answer, by)))) => {
                            return Ok(Answered {
                                request: id,
                                answer,
                                by,
                            })
                        }
                        Ok(Ok(Err(why))) => return Err(why),
                        _ => {}
                    }
                }
                if let Some(why) = lost {
                    // Sent once the connection is back.
                    dismiss(&self.handle, id.clone(), None).await;
                    return Err(format!(
                        "the connection to the AEP relay at {} was lost while waiting \
                         for an answer ({why}); the request {id} is dismissed: ask again",
                        self.relay
                    ));
                }
                let mut timeout = AttentionTimeout::new();
                timeout.after_ms = Some(question.timeout.as_millis() as u64);
                let attrs = Attrs {
                    subject: Some(id.clone()),
                    cause: Some(id.clone()),
                    severity: Some(Severity::Notice),
                    ..Attrs::default()
                };
                if let Err(e) = self
                    .handle
                    .emit_full(&Payload::AttentionTimeout(timeout), attrs)
                    .await
                {
                    diag!("aep mcp: error: {e}");
                }
                return Err(format!(
                    "no answer from a person within {}s (request {id}, timed out)",
                    question.timeout.as_secs()
                ));
            }
        };
        guard.id = None;
        Ok(Answered {
            request: id,
            answer,
            by,
        })
    }

    /// Settles request `id` with `answer`, given the other way (MCP
    /// elicitation) by `by`: `attention.answered` (`via: "oob"`) and
    /// `attention.resolved`; an answer through the relay after it is
    /// rejected. One through the relay that came first wins.
    async fn answered_elsewhere(
        &self,
        id: String,
        answer: Answer,
        by: String,
        settled: Pin<&mut oneshot::Receiver<Result<(Answer, String), String>>>,
    ) -> Result<Answered, String> {
        let mut book = self.pending.lock().await;
        if book.waiting.remove(&id).is_none() {
            // Settled through the relay meanwhile: that outcome stands.
            drop(book);
            return match tokio::time::timeout(Duration::from_secs(5), settled).await {
                Ok(Ok(Ok((answer, by)))) => Ok(Answered {
                    request: id,
                    answer,
                    by,
                }),
                Ok(Ok(Err(why))) => Err(why),
                _ => Err(format!("the request {id} was settled meanwhile")),
            };
        }
        book.answered_elsewhere.insert(id.clone());
        let attrs = || Attrs {
            subject: Some(id.clone()),
            cause: Some(id.clone()),
            ..Attrs::default()
        };
        let mut answered = AttentionAnswered::new(answer.clone());
        answered.by = Some(by.clone());
        answered.via = Some(aep::attention_answered::Via::Oob);
        let resolved = AttentionResolved::new(Resolution::Answered);
        for payload in [
            Payload::AttentionAnswered(answered),
            Payload::AttentionResolved(resolved),
        ] {
            if let Err(e) = self.handle.emit_full(&payload, attrs()).await {
                diag!("aep mcp: error: {e}");
            }
        }
        drop(book);
        diag!("aep mcp: request {id} answered through MCP elicitation");
        Ok(Answered {
            request: id,
            answer,
            by,
        })
    }

    /// Tells the person `message` (a `progress.status`), without waiting
    /// for anything but the relay's connection (at most `wait`).
    pub async fn notify(&self, message: String, wait: Duration) -> Result<String, String> {
        self.reach(wait).await?;
        // Held while the notice goes out: it cannot follow a cancel's
        // session.ended.
        let pending = self.pending.lock().await;
        pending.open()?;
        let mut status = ProgressStatus::new();
        status.message = Some(message);
        let attrs = Attrs {
            severity: Some(Severity::Notice),
            ..Attrs::default()
        };
        let event = self
            .handle
            .emit_full(&Payload::ProgressStatus(status), attrs)
            .await
            .map_err(|e| format!("cannot notify: {e}"))?;
        drop(pending);
        Ok(event.id)
    }

    /// Ends the session: what is pending dismissed, `session.ended`, the
    /// outbox flushed (at most a few seconds).
    pub async fn end(&self) {
        let mut pending = self.pending.lock().await;
        let ids: Vec<String> = pending.waiting.drain().map(|(id, _)| id).collect();
        for id in ids {
            dismiss(&self.handle, id, None).await;
        }
        if pending.cancelled.is_some() {
            // Ended already, by the cancel.
            drop(pending);
            self.finish().await;
            diag!("aep mcp: session {} ended", self.session);
            return;
        }
        pending.cancelled = Some("the MCP connection is closing".to_owned());
        drop(pending);
        let mut ended = SessionEnded::new();
        ended.reason = Some(aep::session_ended::Reason::Normal);
        if let Err(e) = self
            .handle
            .emit_full(&Payload::SessionEnded(ended), Attrs::default())
            .await
        {
            diag!("aep mcp: error: {e}");
        }
        self.finish().await;
        diag!("aep mcp: session {} ended", self.session);
    }
}

impl Link {
    /// Lets the session go: its own connection flushed and closed (at
    /// most a few seconds), or its place on the shared one.
    async fn finish(&self) {
        match self.own {
            true => {
                self.agent.close(Duration::from_secs(3)).await;
            }
            false => self.handle.close(),
        }
    }
}

impl Drop for Link {
    /// A link let go without [`Link::end`] (its HTTP client gone while
    /// the session started) still gives back its place on the shared
    /// connection: the task deciding its commands holds a clone of its
    /// handle, which would keep the session open for good.
    fn drop(&mut self) {
        if !self.own {
            self.handle.close();
        }
    }
}

/// A request whose tool call went away unanswered (the MCP client
/// cancelled it): dismissed.
struct Unsettled<'a> {
    link: &'a Link,
    id: Option<String>,
}

impl Drop for Unsettled<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let pending = self.link.pending.clone();
            let agent = self.link.handle.clone();
            tokio::spawn(async move {
                if pending.lock().await.waiting.remove(&id).is_some() {
                    dismiss(&agent, id, None).await;
                }
            });
        }
    }
}

/// Waits until the connection drops (or is refused for good), and says
/// why; never when the link's state can no longer change.
async fn lost(links: &mut tokio::sync::watch::Receiver<State>) -> String {
    loop {
        match &*links.borrow_and_update() {
            State::Disconnected(why) | State::Failed(why) => return why.clone(),
            State::Connecting | State::Connected(_) => {}
        }
        if links.changed().await.is_err() {
            return std::future::pending().await;
        }
    }
}

/// Settles request `id` as dismissed, caused by `cause` (a command) or
/// by the request itself.
async fn dismiss(agent: &SessionHandle, id: String, cause: Option<&str>) {
    let attrs = Attrs {
        cause: Some(cause.map_or_else(|| id.clone(), str::to_owned)),
        subject: Some(id),
        ..Attrs::default()
    };
    let resolved = Payload::AttentionResolved(AttentionResolved::new(Resolution::Dismissed));
    if let Err(e) = agent.emit_full(&resolved, attrs).await {
        diag!("aep mcp: error: {e}");
    }
}

/// Decides the commands routed to the session (form `values` were checked
/// by the target already): a respond to a waiting request that names one
/// of its options or gives text, or to a form with `values`, settles it;
/// anything else is rejected.
async fn decide(mut commands: Commands, agent: SessionHandle, pending: Pending) {
    while let Some(command) = commands.recv().await {
        if let Err(e) = respond(&command, &agent, &pending).await {
            diag!("aep mcp: error while answering {}: {e}", command.key());
        }
    }
    // Refused for good or closed: the waiting calls learn it.
    pending.lock().await.waiting.clear();
}

async fn respond(command: &Command, agent: &SessionHandle, pending: &Pending) -> Result<()> {
    let respond = match command.payload() {
        Payload::ControlAttentionRespond(respond) => respond,
        Payload::ControlCancel(cancel) => {
            return self::cancel(command, cancel, agent, pending).await
        }
        _ => {
            agent
                .reject(
                    command,
                    NackReason::Unsupported,
                    Some("not a command aep mcp handles"),
                )
                .await
                .map_err(Error::from_source)?;
            return Ok(());
        }
    };
    let answer = &respond.answer;
    let subject = command.event().subject.clone().unwrap_or_default();
    let mut book = pending.lock().await;
    let problem = match book.waiting.get(&subject) {
        None if book.answered_elsewhere.contains(&subject) => Some(format!(
            "the request {subject:?} is already answered (through MCP elicitation)"
        )),
        None => Some(format!("no pending request {subject:?} in this session")),
        Some(request) if request.kind != Kind::Form => match (&answer.option, &answer.text) {
            _ if answer.values.is_some() => {
                Some("`values` answers a form, and this request is not one".to_owned())
            }
            (Some(option), _) if !request.options.contains(option) => Some(format!(
                "option {option:?} is not one of {:?}",
                request.options
            )),
            (None, None) => Some("the answer names no option and has no text".to_owned()),
            _ => None,
        },
        // The target checked `values` against the form, but lets an
        // `option` or `text` alone through to a one-field form unchecked.
        Some(_) if answer.values.is_none() => {
            Some("a form is answered with `values`, by field id".to_owned())
        }
        Some(_) => None,
    };
    if let Some(detail) = problem {
        drop(book);
        agent
            .reject(command, NackReason::Invalid, Some(&detail))
            .await
            .map_err(Error::from_source)?;
        diag!("aep mcp: rejected an answer to {subject}: {detail}");
        return Ok(());
    }
    let request = book.waiting.remove(&subject).expect("checked above");
    drop(book);
    let answer = applied(&request, answer);
    agent.accept(command).await.map_err(Error::from_source)?;
    agent
        .answered(command, &answer)
        .await
        .map_err(Error::from_source)?;
    let by = command.event().agent.clone();
    diag!("aep mcp: request {subject} answered by {by}");
    let _ = request.settle.send(Ok((answer, by)));
    Ok(())
}

/// The answer as applied (and recorded): text alone that names exactly
/// one of a choice's options, trimmed and in any case, is that option
/// (AEP-0002 §5.3); any other answer stands as given.
fn applied(request: &Waiting, answer: &Answer) -> Answer {
    let mut applied = answer.clone();
    if let (None, Some(text)) = (&answer.option, &answer.text) {
        let text = text.trim().to_lowercase();
        let mut named = request.options.iter().filter(|o| o.to_lowercase() == text);
        if let (Some(option), None) = (named.next(), named.next()) {
            applied.option = Some(option.clone());
            applied.text = None;
        }
    }
    applied
}

/// A `control.cancel`: the session has no runs, so only the whole session
/// can be cancelled. Accepted, its waiting requests are dismissed (their
/// calls fail saying the person cancelled) and the session ends
/// (`session.ended`, `killed`); the calls after it fail the same way.
async fn cancel(
    command: &Command,
    cancel: &aep::ControlCancel,
    agent: &SessionHandle,
    pending: &Pending,
) -> Result<()> {
    let mut book = pending.lock().await;
    let refusal = if cancel.scope != aep::control_cancel::Scope::Session {
        let run = command.event().run.clone().unwrap_or_default();
        Some(format!(
            "run {run:?} is not running: aep mcp runs no runs (cancel the session)"
        ))
    } else if book.cancelled.is_some() {
        Some("the session has ended".to_owned())
    } else {
        None
    };
    if let Some(detail) = refusal {
        drop(book);
        agent
            .reject(command, NackReason::Invalid, Some(&detail))
            .await
            .map_err(Error::from_source)?;
        diag!("aep mcp: rejected a cancel: {detail}");
        return Ok(());
    }
    let by = command.event().agent.clone();
    let mut why = format!("the person ({by}) cancelled the session");
    if let Some(reason) = cancel.reason.as_deref().filter(|r| !r.trim().is_empty()) {
        why.push_str(&format!(": {reason}"));
    }
    book.cancelled = Some(why.clone());
    let waiting: Vec<(String, Waiting)> = book.waiting.drain().collect();
    // Held until the session has ended: no call emits after it.
    agent.accept(command).await.map_err(Error::from_source)?;
    let cause = command.event().id.clone();
    for (id, request) in waiting {
        dismiss(agent, id.clone(), Some(&cause)).await;
        let _ = request
            .settle
            .send(Err(format!("{why} (request {id}, dismissed)")));
    }
    let mut ended = SessionEnded::new();
    ended.reason = Some(aep::session_ended::Reason::Killed);
    let attrs = Attrs {
        cause: Some(cause),
        ..Attrs::default()
    };
    agent
        .emit_full(&Payload::SessionEnded(ended), attrs)
        .await
        .map_err(Error::from_source)?;
    drop(book);
    diag!("aep mcp: session cancelled by {by}");
    Ok(())
}
