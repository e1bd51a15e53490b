//! `aep respond` against a relay: the requests come from what the relay
//! holds (its `live=0` history, the projection folded over it), and the
//! answer goes to the agent over the WebSocket ([`super::super::send`]).

use std::time::Duration;

use aep::Event;
use aep_client::consume::{Item, Notice, Subscribe};

/// How long reading the history may take.
const READ: Duration = Duration::from_secs(60);

/// The events the relay holds: of `session`, or of every session it holds
/// (`from=all`).
pub async fn history(
    relay: &str,
    token: Option<String>,
    session: Option<&str>,
) -> Result<Vec<Event>, String> {
    if let Some(session) = session {
        let held = aep_client::history::history(relay, token.as_deref(), session, 256 << 20)
            .await
            .map_err(|e| format!("cannot read the history of {session:?} from {relay}: {e}"))?;
        if !held.exhausted.is_empty() {
            crate::diag!(
                "aep respond: warning: the relay no longer holds the start of session {session:?}: \
                 a request made before what it holds cannot be answered from here"
            );
        }
        return Ok(held
            .events
            .iter()
            .filter_map(|line| Event::from_json(line).ok())
            .collect());
    }
    let mut sub = Subscribe::new(relay)
        .token_opt(token)
        .identity("aep-respond", format!("aep-respond/{}", std::process::id()))
        .replay_all()
        .history()
        .start();
    let mut events = Vec::new();
    let read = tokio::time::timeout(READ, async {
        while let Some(item) = sub.recv().await {
            match item {
                Ok(Item::Event(delivered)) => events.push(delivered.event),
                Ok(Item::Notice(Notice::ReplayComplete)) => return Ok(()),
                Ok(Item::Notice(Notice::Disconnected(e))) => return Err(e.to_string()),
                Ok(Item::Notice(Notice::Degraded(what))) => return Err(what),
                Ok(Item::Notice(_)) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(())
    })
    .await;
    match read {
        Ok(Ok(())) => Ok(events),
        Ok(Err(why)) => Err(format!(
            "cannot read the relay's history from {relay}: {why}"
        )),
        Err(_) => Err(format!(
            "reading the relay's history from {relay} took over {} s",
            READ.as_secs()
        )),
    }
}
