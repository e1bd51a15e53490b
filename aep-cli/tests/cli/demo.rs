//! `aep demo` against an in-process `aep relay`: the demo's control
//! target behaviour through real commands over the WebSocket, its clean
//! end on SIGTERM, continuation under a new epoch, and the validity of
//! everything it emitted.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use aep::control::{Address, Identity, Sender};
use aep::stream::{validate_reader, Options};
use aep::{Answer, ControlPause, Event, Object, Payload};
use aep_relay::{Config, Relay, ShutdownHandle, Token};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::time::{timeout, Instant};
use tokio_tungstenite::tungstenite::Message;

const TOKEN: &str = "demo-test-token";
/// The bound on every wait in these tests.
const WAIT: Duration = Duration::from_secs(20);

struct Running {
    base: String,
    shutdown: ShutdownHandle,
}

async fn relay() -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let relay = Relay::new(Config::default().token(Token::new(TOKEN))).unwrap();
    let shutdown = relay.shutdown_handle();
    tokio::spawn(relay.serve(listener));
    Running { base, shutdown }
}

fn demo(base: &str, session: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_aep"))
        .args([
            "demo",
            "--relay",
            base,
            "--session",
            session,
            "--run",
            "r1",
            "--pace",
            "20",
        ])
        .env("AEP_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the aep binary runs")
}

/// SIGTERM, then the exit code within the bound.
fn stop(child: &mut Child) -> i32 {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "aep demo did not stop within {WAIT:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A consumer connection subscribed to `session`.
async fn watch(base: &str, session: &str) -> Ws {
    let url = format!(
        "{}/socket?access_token={TOKEN}",
        base.replace("http://", "ws://")
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    let hello = json!({"type": "hello", "versions": ["0.1"], "role": "consumer", "identity": {"agent": "demo-test"}});
    ws.send(Message::text(hello.to_string())).await.unwrap();
    let subscribe = json!({"type": "subscribe", "id": "s", "filter": {"session": session}, "from": [{"session": session, "epoch": 0, "seq": -1}]});
    ws.send(Message::text(subscribe.to_string())).await.unwrap();
    ws
}

/// The next frame or event matching `pick`, within the bound.
async fn next(ws: &mut Ws, mut pick: impl FnMut(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let message = timeout(deadline - Instant::now(), ws.next())
            .await
            .expect("the awaited frame arrived in time")
            .expect("the connection is open")
            .unwrap();
        if let Message::Text(text) = message {
            let value: Value = serde_json::from_str(&text).unwrap();
            if pick(&value) {
                return value;
            }
        }
    }
}

fn of_type<'a>(kind: &'a str) -> impl FnMut(&Value) -> bool + 'a {
    move |v| v["type"] == kind
}

async fn send(ws: &mut Ws, line: &str) {
    ws.send(Message::text(line.to_owned())).await.unwrap();
}

fn now() -> u64 {
    aep_client::session::now_ms()
}

fn values(v: Value) -> Object {
    v.as_object().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_is_a_conformant_control_target() {
    let relay = relay().await;
    let session = "demo-control";
    let mut child = demo(&relay.base, session);
    let mut ws = watch(&relay.base, session).await;
    let mut sender = Sender::new(Identity::new("urn:aep:demo-test", "demo-test"));

    let form = next(&mut ws, |v| {
        v["type"] == "attention.requested" && v["data"]["kind"] == "form"
    })
    .await;
    let form = Event::from_json(&form.to_string()).unwrap();
    // Every field type is there.
    let Payload::AttentionRequested(request) = form.payload().unwrap() else {
        unreachable!()
    };
    let fields = request.fields.clone().unwrap();
    assert_eq!(fields.len(), 6);
    assert!(
        fields.iter().any(|f| f.multi == Some(true))
            && fields.iter().any(|f| f.other == Some(true))
    );

    // A form answer that breaks the form (required `branch` missing, a
    // choice that is not one): nacked `invalid`, the request stays open.
    let mut bad = Answer::new();
    bad.values = Some(values(json!({"target": "moon"})));
    let command = sender.respond(&form, bad, now()).unwrap();
    send(&mut ws, command.line()).await;
    let id = command.event().id.clone();
    let nack = next(&mut ws, |v| {
        v["cause"] == id.as_str()
            && v["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("control."))
    })
    .await;
    assert_eq!(nack["type"], "control.rejected");
    assert_eq!(nack["data"]["reason"], "invalid");

    // The right answer, with "Other" free text and a multi select.
    let entered = json!({"branch": "fix/build", "jobs": 4, "dry_run": true, "target": "staging", "checks": ["unit", "audit"], "notify": "the on-call person"});
    let mut good = Answer::new();
    good.values = Some(values(entered.clone()));
    let command = sender.respond(&form, good, now()).unwrap();
    send(&mut ws, command.line()).await;
    let id = command.event().id.clone();
    let ack = next(&mut ws, |v| {
        v["cause"] == id.as_str() && v["type"] == "control.accepted"
    })
    .await;
    let answered = next(&mut ws, |v| {
        v["cause"] == id.as_str() && v["type"] == "attention.answered"
    })
    .await;
    assert_eq!(answered["data"]["answer"]["values"], entered);
    assert_eq!(answered["subject"], form.id.as_str());
    let resolved = next(&mut ws, |v| {
        v["cause"] == id.as_str() && v["type"] == "attention.resolved"
    })
    .await;
    assert_eq!(resolved["data"]["resolution"], "answered");

    // The same command again: the recorded ack, byte for byte.
    send(&mut ws, command.line()).await;
    let again = next(&mut ws, |v| {
        v["cause"] == id.as_str() && v["type"] == "control.accepted"
    })
    .await;
    assert_eq!(again, ack);

    // A respond naming no pending request: one decision, not unsupported,
    // and no attention.answered.
    let mut stray = Answer::new();
    stray.option = Some("allow".into());
    let to = Address::session(session).subject("no-such-request");
    let command = sender
        .command(
            &to,
            &Payload::ControlAttentionRespond(aep::ControlAttentionRespond::new(stray)),
            now(),
        )
        .unwrap();
    send(&mut ws, command.line()).await;
    let id = command.event().id.clone();
    let decision = next(&mut ws, |v| {
        v["cause"] == id.as_str()
            && v["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("control."))
    })
    .await;
    assert_eq!(decision["type"], "control.rejected");
    assert_ne!(decision["data"]["reason"], "unsupported");

    // An undeclared command: refused on the target's behalf by the relay.
    let pause = sender
        .command(
            &Address::session(session),
            &Payload::ControlPause(ControlPause::new()),
            now(),
        )
        .unwrap();
    send(&mut ws, pause.line()).await;
    let id = pause.event().id.clone();
    let refused = next(&mut ws, |v| {
        v["type"] == "error" && v["cause"] == id.as_str()
    })
    .await;
    assert_eq!(refused["code"], "unsupported");

    // A cancel ends the run.
    let cancel = aep::ControlCancel::new(aep::control_cancel::Scope::Run);
    let command = sender
        .command(
            &Address::session(session).run("r1"),
            &Payload::ControlCancel(cancel),
            now(),
        )
        .unwrap();
    send(&mut ws, command.line()).await;
    let id = command.event().id.clone();
    next(&mut ws, |v| {
        v["cause"] == id.as_str() && v["type"] == "control.accepted"
    })
    .await;
    let cancelled = next(&mut ws, |v| {
        v["cause"] == id.as_str() && v["type"] == "run.cancelled"
    })
    .await;
    assert_eq!(cancelled["run"], "r1");

    // SIGTERM: a clean end, exit 0.
    assert_eq!(stop(&mut child), 0);
    next(&mut ws, of_type("session.ended")).await;

    // Everything the relay holds for the session passes the stream rules.
    let history = aep_client::history::history(&relay.base, Some(TOKEN), session, 1 << 20)
        .await
        .unwrap();
    assert!(history.events.len() > 10);
    let text = history.events.join("\n") + "\n";
    let mut findings = Vec::new();
    validate_reader(
        text.as_bytes(),
        Options::default(),
        |f| findings.push(f),
        |_| {},
    )
    .unwrap();
    // The one refused form answer is the only finding the rules allow.
    let rules: Vec<_> = findings.iter().map(|f| f.rule.name()).collect();
    assert!(
        rules.iter().all(|r| *r == "form-values"),
        "{rules:?}\n{findings:?}"
    );
    relay.shutdown.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_session_continues_under_a_new_epoch_and_an_ended_one_does_not() {
    let relay = relay().await;
    let session = "demo-epochs";
    let mut ws = watch(&relay.base, session).await;
    let mut child = demo(&relay.base, session);
    next(&mut ws, of_type("run.started")).await;
    child.kill().unwrap();
    child.wait().unwrap();

    let mut child = demo(&relay.base, session);
    let started = next(&mut ws, |v| v["type"] == "run.started" && v["epoch"] == 1).await;
    assert_eq!(started["seq"], 0);
    assert_eq!(stop(&mut child), 0);
    let ended = next(&mut ws, of_type("session.ended")).await;
    assert_eq!(ended["epoch"], 1);

    let refused = demo(&relay.base, session).wait_with_output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("has ended"));
    relay.shutdown.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_demo_on_a_session_with_a_live_writer_is_refused_naming_it() {
    let relay = relay().await;
    let session = "demo-twice";
    let mut ws = watch(&relay.base, session).await;
    let mut first = Killed(demo(&relay.base, session));
    next(&mut ws, of_type("run.started")).await;
    let second = finished(demo(&relay.base, session));
    let said = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{said}");
    assert!(
        said.contains("being written by a live connection"),
        "{said}"
    );
    assert!(
        said.contains("agent aep-demo"),
        "the owner is named: {said}"
    );
    // The first goes on undisturbed, says how to answer what it asks,
    // and ends its session cleanly.
    next(&mut ws, of_type("attention.requested")).await;
    assert_eq!(stop(&mut first.0), 0);
    let ended = next(&mut ws, of_type("session.ended")).await;
    assert_eq!(ended["epoch"], 0);
    let mut said = String::new();
    std::io::Read::read_to_string(&mut first.0.stderr.take().unwrap(), &mut said).unwrap();
    assert!(
        said.contains("answer it in the relay's page")
            && said.contains("aep respond --session demo-twice --request "),
        "{said}"
    );
    relay.shutdown.shutdown();
}

/// The output of `child` once it exits, within the bound (killed and
/// failed past it).
fn finished(mut child: Child) -> std::process::Output {
    let deadline = std::time::Instant::now() + WAIT;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("aep demo did not exit within {WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A child killed when the test ends, whichever way it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
