//! Which request is answered: the events of a capture or of a relay's
//! history, folded by the state projection; `--id`, or else the last
//! request still pending.

use aep::projection::project;
use aep::{Event, Payload};

use super::{Args, Request, Stop};
use crate::diag;
use crate::input;

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

/// Picks the request to answer among `events` (read from `name`).
pub fn choose(events: &[Event], id: Option<&str>, name: &str) -> Result<Request, Stop> {
    let snapshot = project(events);
    let is_pending = |event: &Event| {
        snapshot.sessions.iter().any(|s| {
            s.source == event.source
                && Some(&s.session) == event.session.as_ref()
                && s.pending.iter().any(|p| p.id == event.id)
        })
    };
    // Newest first: the last request still pending wins.
    let requests = || {
        events
            .iter()
            .rev()
            .filter(|e| e.type_ == "attention.requested")
    };
    let chosen = match id {
        None => requests()
            .find(|e| is_pending(e))
            .ok_or_else(|| Stop::Refused(format!("{name}: no attention request is pending")))?,
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
