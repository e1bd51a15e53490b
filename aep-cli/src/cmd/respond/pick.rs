//! Which request is answered: the events of a capture or of a relay's
//! history, folded by the state projection; `--request`, or else the one
//! request still pending (with several, a person picks, or the command
//! stops and lists them).

use aep::projection::project;
use aep::{Event, Payload};

use super::{Args, Request, Stop};
use crate::common::input;
use crate::common::terminal::{escape, Newlines};
use crate::diag;
use crate::live::waiting::{shorten, Via, Waiting};

/// Reads the events of a capture.
pub fn read(args: &Args, path: &std::path::Path, name: &str) -> Result<Vec<Event>, Stop> {
    let input = input::open(path).map_err(|e| Stop::Failure(e.to_string()))?;
    let mut events = Vec::new();
    let reader = aep::aep_types::reader::EventReader::with_max_line_bytes(
        input.reader,
        args.limit.max_line_bytes,
    );
    for result in reader {
        match result {
            Ok(event) => events.push(event),
            Err(e) if e.is_io() => return Err(Stop::Failure(format!("{name}: {e}"))),
            Err(e) => diag!("aep respond: {name}: {e}; skipped"),
        }
    }
    Ok(events)
}

/// What the answer given on the command line fits, to tell pending
/// requests apart without guessing: an `--option` fits the requests that
/// offer it, `--values` the forms.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fits<'a> {
    /// The `--option` given.
    pub option: Option<&'a str>,
    /// Whether `--values` was given.
    pub values: bool,
}

impl Fits<'_> {
    fn takes(&self, waiting: &Waiting) -> bool {
        match (self.option, self.values) {
            (Some(option), _) => waiting.options.iter().any(|o| o == option),
            (None, true) => waiting.kind == "form",
            (None, false) => true,
        }
    }
}

/// Picks the request to answer among `events` (read from `name`, which
/// the answering lines name as `via`): the one named by `id`, else the one
/// still pending, or the one pending request the answer `fits` (the only
/// one offering the `--option` given, the only form for `--values`).
/// Otherwise, with several pending and none named, it does not guess:
/// `interactive`, a person picks one; otherwise the command stops,
/// listing them.
pub fn choose(
    events: &[Event],
    id: Option<&str>,
    fits: Fits<'_>,
    name: &str,
    via: &Via,
    interactive: bool,
) -> Result<Request, Stop> {
    let snapshot = project(events);
    let is_pending = |event: &Event| {
        snapshot.sessions.iter().any(|s| {
            s.source == event.source
                && Some(&s.session) == event.session.as_ref()
                && s.pending.iter().any(|p| p.id == event.id)
        })
    };
    // Newest first.
    let requests = || {
        events
            .iter()
            .rev()
            .filter(|e| e.type_ == "attention.requested")
    };
    let chosen = match id {
        None => {
            let waiting = crate::live::waiting::waiting(events);
            let fitting: Vec<&Waiting> = waiting.iter().filter(|w| fits.takes(w)).collect();
            let picked = match (waiting.as_slice(), fitting.as_slice()) {
                (several, [only]) if several.len() > 1 => {
                    // Said, so that a person sees which one was answered.
                    diag!(
                        "aep respond: {} requests are pending; answering the one this answer fits: \
                         request {} of session {} ({}: {})",
                        several.len(),
                        escape(&only.id, Newlines::Escape),
                        escape(&only.session, Newlines::Escape),
                        only.kind,
                        shorten(&only.prompt, 60)
                    );
                    (*only).clone()
                }
                (waiting, _) => match waiting {
                    [] => {
                        return Err(Stop::Refused(format!(
                            "{name}: no attention request is pending"
                        )))
                    }
                    [one] => one.clone(),
                    several if interactive => ask_which(several)?,
                    several => return Err(Stop::Failure(several_pending(name, several, via))),
                },
            };
            requests()
                .find(|e| {
                    e.id == picked.id
                        && e.source == picked.source
                        && e.session.as_deref() == Some(picked.session.as_str())
                })
                .ok_or_else(|| Stop::Bug(format!("the request `{}` went missing", picked.id)))?
        }
        Some(id) => {
            let mut named = requests().filter(|e| e.id == id).peekable();
            if named.peek().is_none() {
                return Err(Stop::Refused(format!(
                    "{name}: no attention.requested has the id `{id}`"
                )));
            }
            named.find(|e| is_pending(e)).ok_or_else(|| {
                Stop::Refused(format!(
                    "{name}: the request `{id}` is no longer pending (it was resolved or timed out)"
                ))
            })?
        }
    };
    if let Err(violations) = chosen.validate() {
        return Err(Stop::Refused(format!(
            "{name}: the request `{}` cannot be answered, it breaks its schema: {violations}",
            chosen.id
        )));
    }
    let payload = match chosen.payload() {
        Ok(Payload::AttentionRequested(payload)) => payload,
        Ok(other) => {
            return Err(Stop::Bug(format!(
                "`{}` decoded as {:?}, not as a request",
                chosen.id,
                other.event_type()
            )))
        }
        Err(e) => {
            return Err(Stop::Refused(format!(
                "{name}: the request `{}` cannot be answered: {e}",
                chosen.id
            )))
        }
    };
    let position = snapshot
        .sessions
        .iter()
        .find(|s| s.source == chosen.source && Some(&s.session) == chosen.session.as_ref())
        .and_then(|s| s.position)
        .map(|p| (p.epoch, p.seq));
    Ok(Request {
        event: chosen.clone(),
        payload,
        position,
    })
}

/// Why no request is picked when several wait: each one (session, id,
/// kind, prompt) and the line that answers it.
fn several_pending(name: &str, waiting: &[Waiting], via: &Via) -> String {
    let mut message = format!(
        "{name}: {} attention requests are pending; name one with --request ID (and --session S):",
        waiting.len()
    );
    for w in waiting {
        message.push_str(&format!(
            "\n  session {}  request {}  {}  {}\n    {}",
            shorten(&w.session, 40),
            shorten(&w.id, 40),
            shorten(&w.kind, 20),
            shorten(&w.prompt, 60),
            w.respond_line(via)
        ));
    }
    message
}

/// Asks a person which of several pending requests to answer.
fn ask_which(waiting: &[Waiting]) -> Result<Waiting, Stop> {
    let entries: Vec<Choice> = waiting.iter().cloned().map(Choice).collect();
    match inquire::Select::new("Several requests are pending; which one?", entries)
        .with_help_message("↑↓ to move, enter to pick, Ctrl-C or Esc to cancel")
        .prompt()
    {
        Ok(Choice(w)) => Ok(w),
        Err(
            inquire::InquireError::OperationCanceled | inquire::InquireError::OperationInterrupted,
        ) => Err(Stop::Cancelled),
        Err(e) => Err(Stop::Failure(format!("the terminal failed: {e}"))),
    }
}

/// A pending request as the choice list shows it.
struct Choice(Waiting);

impl std::fmt::Display for Choice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let w = &self.0;
        write!(
            f,
            "{} · {} · {} · {}",
            shorten(&w.session, 30),
            shorten(&w.kind, 20),
            shorten(&w.prompt, 50),
            shorten(&w.id, 30)
        )
    }
}
