//! Many sessions on one `target::Agents` connection, through an in-process
//! relay: each command reaches only its session's handle and is acked in
//! its session; a closed or dropped handle stops receiving (its late
//! commands are refused); the bounds on open sessions and on each command
//! queue; both claims taken back after a reconnect.

use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use aep::control::{Address, Identity, Outcome, Target};
use aep::control_cancel::Scope;
use aep::{Capture, ControlCancel, ControlPause, NackReason, Payload, SessionStarted};
use aep_client::control::{ControlClient, ControlConfig};
use aep_client::session::{Attrs, SessionEmitter};
use aep_client::target::{AgentConfig, Agents, Commands, Link, SessionHandle};

const SOURCE: &str = "urn:aep:agent:many";

fn open(base: &str, tune: impl FnOnce(&mut AgentConfig)) -> Agents {
    let target = Target::new(
        Identity::new(SOURCE, "many"),
        ["control.cancel", "control.pause"],
    )
    .unwrap();
    let mut config = AgentConfig::new(base, Some(TOKEN.into()), "test/1");
    tune(&mut config);
    Agents::open(config, "many", Capture::Metadata, target)
}

/// Opens `session` on `agent` and claims it with `session.started`.
async fn session(agent: &Agents, session: &str) -> (SessionHandle, Commands) {
    let emitter = SessionEmitter::new(SOURCE, "many", session, 0);
    let (handle, commands) = agent.open_session(emitter).unwrap();
    handle
        .emit(
            &Payload::SessionStarted(SessionStarted::new()),
            Attrs::default(),
        )
        .await
        .unwrap();
    (handle, commands)
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

async fn claimed(client: &ControlClient, sessions: &[&str]) {
    within(10, "the claims", async {
        loop {
            let roster = client.roster().await.unwrap();
            if sessions
                .iter()
                .all(|s| roster.iter().any(|e| e.session == *s))
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

/// Whether no command comes within a moment.
async fn nothing(commands: &mut Commands) -> bool {
    tokio::time::timeout(Duration::from_millis(200), commands.recv())
        .await
        .is_err()
}

fn cancel() -> Payload {
    Payload::ControlCancel(ControlCancel::new(Scope::Session))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_command_reaches_its_own_session_and_is_acked_there() {
    let relay = TestRelay::start(config()).await;
    let agent = open(&relay.base, |_| {});
    agent.connected(Duration::from_secs(10)).await.unwrap();
    let (a, mut commands_a) = session(&agent, "s-a").await;
    let (b, mut commands_b) = session(&agent, "s-b").await;
    let mut open = agent.sessions();
    open.sort();
    assert_eq!(open, ["s-a", "s-b"]);
    let client = Arc::new(client(&relay, 3000).await);
    claimed(&client, &["s-a", "s-b"]).await;

    // A cancel to s-a: only a's queue has it; a accepts in s-a.
    let sending = {
        let client = client.clone();
        tokio::spawn(async move { client.send(&Address::session("s-a"), &cancel()).await })
    };
    let command = within(10, "a's command", commands_a.recv()).await.unwrap();
    assert_eq!(command.session(), "s-a");
    let ack = a.accept(&command).await.unwrap();
    assert_eq!(ack.session.as_deref(), Some("s-a"));
    assert_eq!(ack.seq, Some(1), "s-a's own counter: session.started was 0");
    let settled = within(10, "a's outcome", sending).await.unwrap().unwrap();
    let Outcome::Accepted(seen) = &settled.outcome else {
        panic!("{settled:?}")
    };
    assert_eq!(seen.session.as_deref(), Some("s-a"));
    assert_eq!(seen.cause.as_deref(), Some(settled.command.as_str()));
    assert_eq!(seen.id, ack.id);

    // A pause to s-b: only b's queue has it; b refuses in s-b.
    let sending = {
        let client = client.clone();
        tokio::spawn(async move {
            let pause = Payload::ControlPause(ControlPause::new());
            client.send(&Address::session("s-b"), &pause).await
        })
    };
    let command = within(10, "b's command", commands_b.recv()).await.unwrap();
    assert_eq!(command.session(), "s-b");
    assert!(matches!(command.payload(), Payload::ControlPause(_)));
    let nack = b
        .reject(&command, NackReason::Refused, Some("not now"))
        .await
        .unwrap();
    assert_eq!(nack.session.as_deref(), Some("s-b"));
    assert_eq!(nack.seq, Some(1), "s-b's own counter");
    let settled = within(10, "b's outcome", sending).await.unwrap().unwrap();
    let Outcome::Rejected { reason, ack, .. } = &settled.outcome else {
        panic!("{settled:?}")
    };
    assert_eq!(*reason, Some(NackReason::Refused));
    assert_eq!(ack.session.as_deref(), Some("s-b"));
    assert_eq!(ack.cause.as_deref(), Some(settled.command.as_str()));

    // Neither queue holds the other's command.
    assert!(nothing(&mut commands_a).await);
    assert!(nothing(&mut commands_b).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_or_dropped_session_stops_receiving() {
    let relay = TestRelay::start(config()).await;
    let agent = open(&relay.base, |_| {});
    agent.connected(Duration::from_secs(10)).await.unwrap();
    let (closed, mut commands_closed) = session(&agent, "s-closed").await;
    let (dropped, mut commands_dropped) = session(&agent, "s-dropped").await;
    let (kept, mut commands_kept) = session(&agent, "s-kept").await;
    let client = client(&relay, 1000).await;
    claimed(&client, &["s-closed", "s-dropped", "s-kept"]).await;

    let other = closed.clone();
    other.close();
    drop(dropped);
    assert_eq!(agent.sessions(), ["s-kept"]);
    assert!(within(10, "the end", commands_closed.recv())
        .await
        .is_none());
    assert!(within(10, "the end", commands_dropped.recv())
        .await
        .is_none());
    assert!(matches!(
        closed
            .emit(
                &Payload::SessionStarted(SessionStarted::new()),
                Attrs::default()
            )
            .await,
        Err(aep_client::Error::Closed)
    ));

    // The connection still holds the claims: the late commands are
    // refused, in their sessions, by the agent.
    for id in ["s-closed", "s-dropped"] {
        let settled = within(
            10,
            "the refusal",
            client.send(&Address::session(id), &cancel()),
        )
        .await
        .unwrap();
        let Outcome::Rejected { reason, ack, .. } = &settled.outcome else {
            panic!("{settled:?}")
        };
        assert_eq!(*reason, Some(NackReason::Refused), "{id}");
        assert_eq!(ack.session.as_deref(), Some(id));
        assert_eq!(ack.seq, Some(1), "{id}: its own next position");
    }

    // The open one still serves.
    let decider = kept.clone();
    tokio::spawn(async move {
        while let Some(command) = commands_kept.recv().await {
            decider.accept(&command).await.unwrap();
        }
    });
    let settled = within(
        10,
        "the accept",
        client.send(&Address::session("s-kept"), &cancel()),
    )
    .await
    .unwrap();
    assert!(
        matches!(settled.outcome, Outcome::Accepted(_)),
        "{settled:?}"
    );

    // Opened again: served again.
    let (_again, mut commands_again) = agent
        .open_session(SessionEmitter::new(SOURCE, "many", "s-closed", 0).starting_at(10))
        .unwrap();
    let sending =
        tokio::spawn(async move { client.send(&Address::session("s-closed"), &cancel()).await });
    let command = within(10, "the command", commands_again.recv())
        .await
        .unwrap();
    assert_eq!(command.session(), "s-closed");
    drop(sending);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_sessions_are_bounded() {
    let relay = TestRelay::start(config()).await;
    let agent = open(&relay.base, |c| c.max_sessions = 2);
    let emitter = |id: &str| SessionEmitter::new(SOURCE, "many", id, 0);
    let (first, _c1) = agent.open_session(emitter("s-1")).unwrap();
    let (_second, _c2) = agent.open_session(emitter("s-2")).unwrap();
    let Err(aep_client::Error::Invalid(why)) = agent.open_session(emitter("s-3")) else {
        panic!("a third session opened past the bound")
    };
    assert!(why.contains("2 sessions"), "{why}");
    let Err(aep_client::Error::Invalid(why)) = agent.open_session(emitter("s-2")) else {
        panic!("a session opened twice")
    };
    assert!(why.contains("already"), "{why}");
    drop(first);
    let (_third, _c3) = agent.open_session(emitter("s-3")).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_command_queue_is_nacked_busy() {
    let relay = TestRelay::start(config()).await;
    let agent = open(&relay.base, |c| c.command_queue = 1);
    agent.connected(Duration::from_secs(10)).await.unwrap();
    let (_handle, mut commands) = session(&agent, "s-q").await;
    let client = Arc::new(client(&relay, 1000).await);
    claimed(&client, &["s-q"]).await;

    // The first waits undecided in the queue (its sender times out)...
    let first = {
        let client = client.clone();
        tokio::spawn(async move { client.send(&Address::session("s-q"), &cancel()).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    // ...the second finds it full.
    let settled = within(
        10,
        "the busy",
        client.send(&Address::session("s-q"), &cancel()),
    )
    .await
    .unwrap();
    let Outcome::Rejected { reason, ack, .. } = &settled.outcome else {
        panic!("{settled:?}")
    };
    assert_eq!(*reason, Some(NackReason::Busy));
    assert_eq!(ack.session.as_deref(), Some("s-q"));
    let settled = within(10, "the first", first).await.unwrap().unwrap();
    assert_eq!(settled.outcome, Outcome::Timeout);
    let queued = within(10, "the queued one", commands.recv()).await.unwrap();
    assert_eq!(queued.key().id, settled.command);
    assert!(nothing(&mut commands).await, "the busy one was not queued");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_takes_back_every_sessions_claim() {
    let relay = TestRelay::start(config()).await;
    let proxy = Proxy::start(relay.addr).await;
    let agent = open(&proxy.base, |_| {});
    agent.connected(Duration::from_secs(10)).await.unwrap();
    let (quiet, commands_quiet) = session(&agent, "s-quiet").await;
    let (busy, commands_busy) = session(&agent, "s-busy").await;
    // More events of s-busy than the socket sends again after a drop:
    // s-quiet's claim is not among them.
    for _ in 0..80 {
        busy.emit(
            &Payload::SessionStarted(SessionStarted::new()),
            Attrs::default(),
        )
        .await
        .unwrap();
    }
    let client = client(&relay, 1000).await;
    claimed(&client, &["s-quiet", "s-busy"]).await;
    for (handle, mut commands) in [(quiet, commands_quiet), (busy, commands_busy)] {
        tokio::spawn(async move {
            while let Some(command) = commands.recv().await {
                handle.accept(&command).await.unwrap();
            }
        });
    }

    let mut links = agent.links();
    proxy.cut();
    within(10, "the reconnect", async {
        let mut dropped = false;
        loop {
            links.changed().await.unwrap();
            match &*links.borrow_and_update() {
                Link::Disconnected(_) => dropped = true,
                Link::Connected(_) if dropped => return,
                _ => {}
            }
        }
    })
    .await;

    for id in ["s-quiet", "s-busy"] {
        within(10, "an accept after the reconnect", async {
            loop {
                let settled = client.send(&Address::session(id), &cancel()).await.unwrap();
                match settled.outcome {
                    Outcome::Accepted(ack) => {
                        assert_eq!(ack.session.as_deref(), Some(id));
                        return;
                    }
                    // The old connection's claim in its grace.
                    Outcome::Refused { .. } => tokio::time::sleep(Duration::from_millis(100)).await,
                    other => panic!("{id}: {other:?}"),
                }
            }
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_with_its_own_target_acks_as_its_own_source() {
    let relay = TestRelay::start(config()).await;
    let agent = open(&relay.base, |_| {});
    agent.connected(Duration::from_secs(10)).await.unwrap();
    let source = "urn:aep:agent:other";
    let target = Target::new(Identity::new(source, "other"), ["control.cancel"]).unwrap();
    let emitter = SessionEmitter::new(source, "other", "s-own", 0);
    let (own, mut commands) = agent.open_session_as(emitter, target).unwrap();
    own.emit(
        &Payload::SessionStarted(SessionStarted::new()),
        Attrs::default(),
    )
    .await
    .unwrap();
    let client = client(&relay, 3000).await;
    claimed(&client, &["s-own"]).await;
    tokio::spawn(async move {
        while let Some(command) = commands.recv().await {
            own.accept(&command).await.unwrap();
        }
    });
    let settled = within(
        10,
        "the accept",
        client.send(&Address::session("s-own"), &cancel()),
    )
    .await
    .unwrap();
    let Outcome::Accepted(ack) = &settled.outcome else {
        panic!("{settled:?}")
    };
    assert_eq!(ack.source, source);
    assert_eq!(ack.agent, "other");
    assert_eq!(ack.session.as_deref(), Some("s-own"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_with_a_target_of_its_own_is_not_opened_again() {
    let relay = TestRelay::start(config()).await;
    let agent = open(&relay.base, |_| {});
    agent.connected(Duration::from_secs(10)).await.unwrap();
    let own = || Target::new(Identity::new(SOURCE, "own"), ["control.cancel"]).unwrap();
    let emitter = |id: &str| SessionEmitter::new(SOURCE, "many", id, 0);
    // Served by its own target, closed: its target's memory of the
    // commands it decided goes with it, so it is not opened again.
    let (handle, _commands) = agent.open_session_as(emitter("s-own"), own()).unwrap();
    handle.close();
    for again in [
        agent.open_session_as(emitter("s-own"), own()).map(|_| ()),
        agent.open_session(emitter("s-own")).map(|_| ()),
    ] {
        let Err(aep_client::Error::Invalid(why)) = again else {
            panic!("a session of its own target opened again")
        };
        assert!(why.contains("acknowledged twice"), "{why}");
    }
    // Served by the connection's target, opened again under a target of
    // its own: refused too; under the connection's: served.
    let (handle, _commands) = agent.open_session(emitter("s-conn")).unwrap();
    handle.close();
    assert!(agent.open_session_as(emitter("s-conn"), own()).is_err());
    assert!(agent.open_session(emitter("s-conn")).is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_opened_again_never_reuses_a_position() {
    let relay = TestRelay::start(config()).await;
    let agent = open(&relay.base, |_| {});
    agent.connected(Duration::from_secs(10)).await.unwrap();
    let (handle, _commands) = session(&agent, "s-re").await;
    let client = client(&relay, 1000).await;
    claimed(&client, &["s-re"]).await;
    handle.close();
    // A late command takes the closed session's next position (seq 1)
    // for its refusal, unseen by the caller.
    let settled = within(
        10,
        "the refusal",
        client.send(&Address::session("s-re"), &cancel()),
    )
    .await
    .unwrap();
    let Outcome::Rejected { ack, .. } = &settled.outcome else {
        panic!("{settled:?}")
    };
    assert_eq!((ack.epoch, ack.seq), (Some(0), Some(1)));

    // Opened again from the last position its caller saw (or from the
    // start): its events come after the refusal, never on it.
    for emitter in [
        SessionEmitter::new(SOURCE, "many", "s-re", 0).starting_at(1),
        SessionEmitter::new(SOURCE, "many", "s-re", 0),
    ] {
        let (again, _commands) = agent.open_session(emitter).unwrap();
        let event = again
            .emit(
                &Payload::SessionStarted(SessionStarted::new()),
                Attrs::default(),
            )
            .await
            .unwrap();
        assert_eq!(event.epoch, Some(0));
        assert!(event.seq > Some(1), "{:?} repeats a position", event.seq);
        again.close();
    }
    // An earlier epoch would go back: refused.
    let (late, _commands) = agent
        .open_session(SessionEmitter::new(SOURCE, "many", "s-re", 1))
        .unwrap();
    drop(late);
    let Err(aep_client::Error::Invalid(why)) =
        agent.open_session(SessionEmitter::new(SOURCE, "many", "s-re", 0))
    else {
        panic!("a session opened again at an earlier epoch")
    };
    assert!(why.contains("epoch"), "{why}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_left_in_a_dropped_queue_are_refused() {
    let relay = TestRelay::start(config()).await;
    let agent = open(&relay.base, |_| {});
    agent.connected(Duration::from_secs(10)).await.unwrap();
    let (_handle, commands) = session(&agent, "s-left").await;
    let client = Arc::new(client(&relay, 2000).await);
    claimed(&client, &["s-left"]).await;
    let sent = {
        let client = client.clone();
        tokio::spawn(async move { client.send(&Address::session("s-left"), &cancel()).await })
    };
    // Queued, undecided; then nobody will ever take it.
    tokio::time::sleep(Duration::from_millis(400)).await;
    drop(commands);
    let settled = within(10, "the refusal", sent).await.unwrap().unwrap();
    let Outcome::Rejected { reason, ack, .. } = &settled.outcome else {
        panic!("the queued command was never answered: {settled:?}")
    };
    assert_eq!(*reason, Some(NackReason::Refused));
    assert_eq!(ack.session.as_deref(), Some("s-left"));
    assert_eq!(ack.seq, Some(1));
}
