//! `aep respond` against a relay: the requests come from what the relay
//! holds (its `live=0` history, the projection folded over it), and the
//! answer goes to the agent over the WebSocket ([`crate::live::send`]).

use aep::Event;

use crate::common::error::{Context, Result};

/// The events the relay holds of `session` (every session's are read by
/// [`crate::live::waiting::history`]).
pub async fn history(relay: &str, token: Option<String>, session: &str) -> Result<Vec<Event>> {
    let held = aep_client::history::history(relay, token.as_deref(), session, 256 << 20)
        .await
        .with_context(|| format!("cannot read the history of {session:?} from {relay}"))?;
    if !held.exhausted.is_empty() {
        crate::diag!(
            "aep respond: warning: the relay no longer holds the start of session {session:?}: \
                 a request made before what it holds cannot be answered from here"
        );
    }
    Ok(held
        .events
        .iter()
        .filter_map(|line| Event::from_json(line).ok())
        .collect())
}
