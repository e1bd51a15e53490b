//! The control client against a target built on the WebSocket handler
//! (`target::Agent`), through an in-process relay: accepted, rejected,
//! refused by the relay, timed out; the roster; a redelivered command.

use std::time::Duration;

use crate::common::*;
use aep::control::{Address, Identity, Outcome, Target};
use aep::control_cancel::Scope;
use aep::frame::{ErrorCode, Frame, Role};
use aep::{
    ControlAttentionRespond, ControlCancel, ControlPause, ControlResume, NackReason, Payload,
    SessionStarted,
};
use aep_client::control::{ControlClient, ControlConfig};
use aep_client::session::{Attrs, SessionEmitter};
use aep_client::target::{Agent, AgentConfig};

const SOURCE: &str = "urn:aep:agent:ctl";

/// An agent for `session` that accepts cancels, refuses pauses and never
/// answers resumes.
async fn agent(relay: &TestRelay, session: &str) -> Agent {
    let emitter = SessionEmitter::new(SOURCE, "ctl", session, 0);
    let target = Target::new(
        Identity::new(SOURCE, "ctl"),
        ["control.cancel", "control.pause", "control.resume"],
    )
    .unwrap();
    let config = AgentConfig::new(&relay.base, Some(TOKEN.into()), "test/1");
    let (agent, mut commands) = Agent::connect(config, emitter, target);
    agent.connected(Duration::from_secs(10)).await.unwrap();
    agent
        .emit(
            &Payload::SessionStarted(SessionStarted::new()),
            Attrs::default(),
        )
        .await
        .unwrap();
    let decider = agent.clone();
    tokio::spawn(async move {
        while let Some(command) = commands.recv().await {
            match command.payload() {
                Payload::ControlCancel(_) => {
                    decider.accept(&command).await.unwrap();
                }
                Payload::ControlPause(_) => {
                    decider
                        .reject(&command, NackReason::Refused, Some("not now"))
                        .await
                        .unwrap();
                }
                _ => {} // silence: the sender times out
            }
        }
    });
    agent
}

async fn client(relay: &TestRelay, window_ms: u64) -> ControlClient {
    let mut config = ControlConfig::new(
        &relay.base,
        Some(TOKEN.into()),
        Identity::new("urn:aep:console", "console"),
    );
    config.window_ms = window_ms;
    config.retries = (window_ms / 3, 1);
    ControlClient::connect_with(config).await.unwrap()
}

/// Waits until the relay routes to `session` (the agent's first event
/// claimed it).
async fn claimed(client: &ControlClient, session: &str) {
    within(10, "the claim", async {
        loop {
            let roster = client.roster().await.unwrap();
            if roster.iter().any(|e| e.session == session) {
                return roster;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_outcome_a_command_can_have() {
    let relay = TestRelay::start(config()).await;
    let _agent = agent(&relay, "s-ctl").await;
    let client = client(&relay, 600).await;
    claimed(&client, "s-ctl").await;
    let to = Address::session("s-ctl");

    let cancel = Payload::ControlCancel(ControlCancel::new(Scope::Session));
    let settled = within(10, "the cancel", client.send(&to, &cancel))
        .await
        .unwrap();
    let Outcome::Accepted(ack) = &settled.outcome else {
        panic!("{settled:?}")
    };
    assert_eq!(ack.cause.as_deref(), Some(settled.command.as_str()));
    assert_eq!(ack.source, SOURCE);

    let pause = Payload::ControlPause(ControlPause::new());
    let settled = within(10, "the pause", client.send(&to, &pause))
        .await
        .unwrap();
    assert!(
        matches!(
            settled.outcome,
            Outcome::Rejected {
                reason: Some(NackReason::Refused),
                ..
            }
        ),
        "{settled:?}"
    );

    let resume = Payload::ControlResume(ControlResume::new());
    let settled = within(10, "the resume", client.send(&to, &resume))
        .await
        .unwrap();
    assert_eq!(settled.outcome, Outcome::Timeout);

    // Not declared: the relay refuses it on the target's behalf.
    let respond =
        Payload::ControlAttentionRespond(ControlAttentionRespond::new(Default::default()));
    let settled = within(
        10,
        "the respond",
        client.send(&to.clone().subject("q1"), &respond),
    )
    .await
    .unwrap();
    assert!(
        matches!(
            &settled.outcome,
            Outcome::Refused {
                code: ErrorCode::Unsupported,
                ..
            }
        ),
        "{settled:?}"
    );

    let settled = within(
        10,
        "no route",
        client.send(&Address::session("nobody"), &cancel),
    )
    .await
    .unwrap();
    assert!(
        matches!(
            &settled.outcome,
            Outcome::Refused {
                code: ErrorCode::NoRoute,
                ..
            }
        ),
        "{settled:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_roster_shows_the_declared_accepts() {
    let relay = TestRelay::start(config()).await;
    let _agent = agent(&relay, "s-roster").await;
    let client = client(&relay, 1000).await;
    claimed(&client, "s-roster").await;
    let roster = client.roster().await.unwrap();
    let entry = roster.iter().find(|e| e.session == "s-roster").unwrap();
    assert_eq!(entry.agent, Some(serde_json::json!("ctl")));
    assert_eq!(
        entry.control.as_ref().unwrap()["accepts"],
        serde_json::json!(["control.cancel", "control.pause", "control.resume"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_only_relay_refuses_commands() {
    let relay = TestRelay::start(config().token(None)).await;
    let client = ControlClient::connect(
        &relay.base,
        None,
        Identity::new("urn:aep:console", "console"),
    )
    .await
    .unwrap();
    let cancel = Payload::ControlCancel(ControlCancel::new(Scope::Session));
    let settled = within(
        10,
        "the refusal",
        client.send(&Address::session("s"), &cancel),
    )
    .await
    .unwrap();
    assert!(
        matches!(
            &settled.outcome,
            Outcome::Refused {
                code: ErrorCode::Unauthorized,
                ..
            }
        ),
        "{settled:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivered_command_gets_the_recorded_ack() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    let relay = TestRelay::start(config()).await;
    let _agent = agent(&relay, "s-again").await;
    let client = client(&relay, 1000).await;
    claimed(&client, "s-again").await;
    // A raw sender: the same command twice, the acks compared.
    let url = format!("ws://{}/socket?access_token={TOKEN}", relay.addr);
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    let hello = aep_client::socket::hello(Role::Consumer, "raw", "raw/1", serde_json::json!({}));
    ws.send(Message::text(Frame::Hello(hello).encode()))
        .await
        .unwrap();
    let sub =
        serde_json::json!({"type": "subscribe", "id": "a", "filter": {"type": "control.accepted"}});
    ws.send(Message::text(sub.to_string())).await.unwrap();
    let command = serde_json::json!({
        "aep": "0.1", "id": "cmd-1", "type": "control.cancel", "time": "2026-12-01T10:00:00Z",
        "source": "urn:aep:raw", "agent": "raw", "session": "s-again", "data": {"scope": "session"},
    })
    .to_string();
    let mut acks = Vec::new();
    within(10, "two acks", async {
        let mut sent = 0;
        while acks.len() < 2 {
            let Some(Ok(Message::Text(text))) = ws.next().await else {
                panic!("the socket closed")
            };
            if text.contains("\"subscribed\"") || (sent == 1 && text.contains("control.accepted")) {
                if text.contains("control.accepted") {
                    acks.push(text.to_string());
                }
                ws.send(Message::text(command.clone())).await.unwrap();
                sent += 1;
            } else if text.contains("control.accepted") {
                acks.push(text.to_string());
            }
        }
    })
    .await;
    assert_eq!(acks[0], acks[1], "the same ack, byte for byte");
}
