//! Sending one command to an agent through a relay (AEP-0004), for
//! `aep respond --relay` and `aep cancel`: over the WebSocket, subscribed
//! to the session's acks before the command leaves (so the ack cannot be
//! missed), retried with the same id, and settled by the target's ack or
//! nack, the relay's refusal on its behalf, or a timeout, which is called
//! only after one more look at the relay's history (`live=0`): a slow
//! live push is not a dead target.

use std::time::Duration;

use aep::control::{Identity, Outcome};
use aep::{Event, Payload};
use aep_client::control::{ControlClient, ControlConfig};

use crate::cmd::Status;
use crate::diag;

/// `--ack-window` and `--retries`.
#[derive(Debug, Clone, clap::Args)]
pub struct AckArgs {
    /// How long to wait for the ack after each attempt, in milliseconds.
    #[arg(long, default_value_t = 10_000, value_name = "MS",
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub ack_window: u64,

    /// How many times to send the command again (the same id) when no
    /// ack came within the window.
    #[arg(long, default_value_t = 2, value_name = "N",
          value_parser = clap::value_parser!(u32).range(0..=100))]
    pub retries: u32,
}

/// How a command ended.
#[derive(Debug)]
pub enum Sent {
    /// `control.accepted`.
    Accepted(Box<Event>),
    /// Nacked; why, in words.
    Nacked(String),
    /// No ack, live or in the history.
    Timeout,
    /// It could not be sent (a relay that cannot be reached, a refused
    /// token); why.
    Failed(String),
}

impl Sent {
    /// Says how it ended on standard error, and the exit code.
    pub fn report(&self, command: &str, id: &str) -> Status {
        match self {
            Sent::Accepted(ack) => {
                diag!(
                    "aep {command}: {id} accepted by {} ({})",
                    ack.agent,
                    ack.source
                );
                Status::Clean
            }
            Sent::Nacked(why) => {
                diag!("aep {command}: {id} {why}");
                Status::Nacked
            }
            Sent::Timeout => {
                diag!("aep {command}: {id}: no ack within the window after the last attempt (timeout); the target may be gone or silent");
                Status::TimedOut
            }
            Sent::Failed(why) => {
                diag!("aep {command}: error: {why}");
                Status::Failure
            }
        }
    }
}

/// Sends `command` (a command event, `session` set) and waits for its
/// outcome.
pub async fn send(relay: &str, token: Option<String>, command: Event, acks: &AckArgs) -> Sent {
    let identity = Identity::new(command.source.clone(), command.agent.clone());
    let mut config = ControlConfig::new(relay, token.clone(), identity);
    config.window_ms = acks.ack_window;
    config.retries = (acks.ack_window, acks.retries);
    let client = match ControlClient::connect_with(config).await {
        Ok(client) => client,
        Err(e) => {
            return Sent::Failed(format!("cannot open the relay's WebSocket at {relay}: {e}"))
        }
    };
    let id = command.id.clone();
    let session = command.session.clone().unwrap_or_default();
    let settled = client.send_event(command).await;
    client.close();
    match settled {
        Ok(settled) => match settled.outcome {
            Outcome::Accepted(ack) => Sent::Accepted(Box::new(ack)),
            Outcome::Rejected { reason, detail, .. } => Sent::Nacked(format!(
                "rejected by the target: {}{}",
                reason.map_or("(a reason this version does not know)", |r| r.as_str()),
                detail.map(|d| format!(": {d}")).unwrap_or_default()
            )),
            Outcome::Refused { code, detail } => Sent::Nacked(format!(
                "refused by the relay on the target's behalf: {code}{}",
                detail.map(|d| format!(": {d}")).unwrap_or_default()
            )),
            Outcome::Timeout => look_again(relay, token.as_deref(), &session, &id).await,
        },
        Err(aep_client::Error::Refused { code, detail }) => Sent::Failed(format!(
            "the relay refused to follow the session's acks: {code}: {detail}"
        )),
        Err(e) => Sent::Failed(format!("the command could not be sent: {e}")),
    }
}

/// The ack of `id` in the session's history, if the live push missed it.
async fn look_again(relay: &str, token: Option<&str>, session: &str, id: &str) -> Sent {
    let read = tokio::time::timeout(
        Duration::from_secs(30),
        aep_client::history::history(relay, token, session, 256 << 20),
    )
    .await;
    let Ok(Ok(held)) = read else {
        return Sent::Timeout;
    };
    for line in &held.events {
        let Ok(event) = Event::from_json(line) else {
            continue;
        };
        if event.cause.as_deref() != Some(id) {
            continue;
        }
        match event.type_.as_str() {
            "control.accepted" => return Sent::Accepted(Box::new(event)),
            "control.rejected" => {
                let why = match event.payload() {
                    Ok(Payload::ControlRejected(nack)) => format!(
                        "{}{}",
                        nack.reason.as_str(),
                        nack.detail.map(|d| format!(": {d}")).unwrap_or_default()
                    ),
                    _ => "(a nack this version cannot read)".to_owned(),
                };
                return Sent::Nacked(format!("rejected by the target: {why}"));
            }
            _ => {}
        }
    }
    Sent::Timeout
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(kind: &str, id: &str, cause: &str, seq: u64, data: &str) -> String {
        format!(
            r#"{{"aep":"0.1","id":"{id}","type":"{kind}","time":"2026-11-30T09:00:00Z","source":"urn:aep:t","agent":"t","session":"s","seq":{seq},"cause":"{cause}","subject":"{cause}","data":{data}}}"#
        )
    }

    /// The history is read once more before a timeout is called: an ack
    /// the live push missed still settles the command.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_history_settles_what_the_live_push_missed() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let relay = aep_relay::Relay::new(aep_relay::Config::default()).unwrap();
        let shutdown = relay.shutdown_handle();
        tokio::spawn(relay.serve(listener));
        let poster =
            aep_client::http::BatchPoster::new(&base, None, Duration::from_secs(10)).unwrap();
        let lines = [
            ack("control.accepted", "a1", "cmd-1", 1, "{}"),
            ack(
                "control.rejected",
                "a2",
                "cmd-2",
                2,
                r#"{"reason":"refused","detail":"not now"}"#,
            ),
        ];
        assert_eq!(
            poster.post(&lines).await,
            aep_client::http::BatchAnswer::Accepted
        );
        assert!(
            matches!(look_again(&base, None, "s", "cmd-1").await, Sent::Accepted(a) if a.id == "a1")
        );
        assert!(
            matches!(look_again(&base, None, "s", "cmd-2").await, Sent::Nacked(why) if why.contains("refused: not now"))
        );
        assert!(matches!(
            look_again(&base, None, "s", "cmd-3").await,
            Sent::Timeout
        ));
        shutdown.shutdown();
    }
}
