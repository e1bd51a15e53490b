//! `aep mcp` driven as an MCP client drives it (rmcp's client over the
//! child's standard input and output) against an in-process relay, with
//! a person played by a control connection that answers its requests.
#![cfg(feature = "mcp")]

use std::time::Duration;

use aep::control::{Identity, Sender};
use aep::stream::{validate_reader, Options};
use aep::{Answer, Event, Object};
use aep_relay::{Config, Relay, ShutdownHandle, Token};
use futures_util::{SinkExt, StreamExt};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest,
    Implementation, ProgressNotificationParam, Request, ServerResult,
};
use rmcp::model::{
    CancelledNotificationParam, ElicitRequestParams, ElicitResult, ElicitationAction, RequestId,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{timeout, Instant};
use tokio_tungstenite::tungstenite::Message;

const TOKEN: &str = "mcp-test-token";
/// The bound on every wait in these tests (the machine may be loaded).
const WAIT: Duration = Duration::from_secs(60);

struct Running {
    base: String,
    _shutdown: ShutdownHandle,
}

async fn relay() -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let relay = Relay::new(Config::default().token(Token::new(TOKEN))).unwrap();
    let shutdown = relay.shutdown_handle();
    tokio::spawn(relay.serve(listener));
    Running {
        base,
        _shutdown: shutdown,
    }
}

type Client = RunningService<RoleClient, ClientConfig>;

/// `aep mcp` as a child, initialized as MCP client `mcp-test`.
async fn mcp(base: &str, token: Option<&str>, session: &str) -> Client {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_aep"));
    command
        .args(["mcp", "--session", session])
        .env("AEP_RELAY", base)
        .env_remove("AEP_TOKEN");
    if let Some(token) = token {
        command.env("AEP_TOKEN", token);
    }
    let transport = TokioChildProcess::new(command).expect("the aep binary runs");
    let config = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("mcp-test", "0.0.1"),
    );
    timeout(WAIT, config.serve(transport))
        .await
        .expect("initialize in time")
        .expect("initialize")
}

/// Calls `tool` in the background, so the person can answer meanwhile.
fn call(
    client: &Client,
    tool: &'static str,
    arguments: Value,
) -> tokio::task::JoinHandle<CallToolResult> {
    call_on(client.peer(), tool, arguments)
}

/// Calls `tool` through `peer` in the background.
fn call_on(
    peer: &rmcp::Peer<RoleClient>,
    tool: &'static str,
    arguments: Value,
) -> tokio::task::JoinHandle<CallToolResult> {
    let peer = peer.clone();
    let Value::Object(arguments) = arguments else {
        unreachable!()
    };
    tokio::spawn(async move {
        let params = CallToolRequestParams::new(tool).with_arguments(arguments);
        timeout(WAIT * 2, peer.call_tool(params))
            .await
            .expect("the tool returned in time")
            .expect("the tool call went through")
    })
}

async fn result(call: tokio::task::JoinHandle<CallToolResult>) -> CallToolResult {
    timeout(WAIT * 3, call).await.expect("in time").unwrap()
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A consumer connection subscribed to `session`, from its start.
async fn watch(base: &str, session: &str) -> Ws {
    let url = format!(
        "{}/socket?access_token={TOKEN}",
        base.replace("http://", "ws://")
    );
    let (mut ws, _) = timeout(WAIT, tokio_tungstenite::connect_async(url))
        .await
        .unwrap()
        .unwrap();
    let hello = json!({"type": "hello", "versions": ["0.1"], "role": "consumer", "identity": {"agent": "mcp-test-person"}});
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

/// Sends `answer` to `request` and returns the target's decision.
async fn answer(ws: &mut Ws, sender: &mut Sender, request: &Event, answer: Answer) -> Value {
    let command = sender
        .respond(request, answer, aep_client::session::now_ms())
        .unwrap();
    decided(ws, command).await
}

/// Sends `command` and returns the target's decision.
async fn decided(ws: &mut Ws, command: aep::control::Outgoing) -> Value {
    ws.send(Message::text(command.line().to_owned()))
        .await
        .unwrap();
    let id = command.event().id.clone();
    next(ws, |v| {
        v["cause"] == id.as_str()
            && v["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("control."))
    })
    .await
}

fn option(option: &str) -> Answer {
    let mut answer = Answer::new();
    answer.option = Some(option.to_owned());
    answer
}

fn values(values: Value) -> Answer {
    let Value::Object(values) = values else {
        unreachable!()
    };
    let mut answer = Answer::new();
    answer.values = Some(Object::from_iter(values));
    answer
}

async fn requested(ws: &mut Ws) -> Event {
    let request = next(ws, |v| v["type"] == "attention.requested").await;
    Event::from_json(&request.to_string()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_answers_a_choice_and_a_form_and_a_question_times_out() {
    let relay = relay().await;
    let session = "mcp-answers";
    let mut ws = watch(&relay.base, session).await;
    let client = mcp(&relay.base, Some(TOKEN), session).await;
    let mut sender = Sender::new(Identity::new("urn:aep:mcp-test:person", "mcp-test-person"));

    let started = next(&mut ws, |v| v["type"] == "session.started").await;
    assert_eq!(started["agent"], "mcp-test");
    let tools = timeout(WAIT, client.list_all_tools())
        .await
        .unwrap()
        .unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["ask_human", "notify"]);
    let ask = &tools[0];
    assert_eq!(ask.input_schema["required"], json!(["prompt"]));
    let output = ask
        .output_schema
        .clone()
        .expect("ask_human declares its result");
    assert_eq!(
        output["required"],
        json!(["request", "session", "answered_by"])
    );

    // (1) A choice: an option that is not one is rejected, the wait goes
    // on; a right one is the tool's result.
    let pending = call(
        &client,
        "ask_human",
        json!({"prompt": "Deploy now?", "options": ["yes", "no"], "timeout_s": 600}),
    );
    let request = requested(&mut ws).await;
    assert_eq!(request.subject, None);
    let nack = answer(&mut ws, &mut sender, &request, option("maybe")).await;
    assert_eq!(nack["type"], "control.rejected");
    assert_eq!(nack["data"]["reason"], "invalid");
    let ack = answer(&mut ws, &mut sender, &request, option("yes")).await;
    assert_eq!(ack["type"], "control.accepted");
    let chose = result(pending).await;
    assert_eq!(chose.is_error, Some(false), "{}", text(&chose));
    let structured = chose.structured_content.clone().unwrap();
    assert_eq!(structured["option"], "yes");
    assert_eq!(structured["request"], request.id.as_str());
    assert_eq!(structured["answered_by"], "mcp-test-person");
    assert!(text(&chose).contains("yes"));

    // (2) A form answered wrongly (a required field missing, a choice
    // that is none), then rightly.
    let fields = json!([
        {"id": "branch", "type": "string", "label": "Branch", "required": true},
        {"id": "target", "type": "select", "label": "Target", "required": true,
         "choices": [{"id": "staging", "label": "Staging"}, {"id": "production", "label": "Production"}]},
        {"id": "jobs", "type": "number", "label": "Jobs", "min": 1, "max": 16}
    ]);
    let pending = call(
        &client,
        "ask_human",
        json!({"prompt": "How should the release go?", "fields": fields}),
    );
    let request = requested(&mut ws).await;
    let nack = answer(
        &mut ws,
        &mut sender,
        &request,
        values(json!({"target": "moon"})),
    )
    .await;
    assert_eq!(nack["type"], "control.rejected");
    assert_eq!(nack["data"]["reason"], "invalid");
    let entered = json!({"branch": "fix/build", "target": "staging", "jobs": 4});
    let ack = answer(&mut ws, &mut sender, &request, values(entered.clone())).await;
    assert_eq!(ack["type"], "control.accepted");
    let filled = result(pending).await;
    assert_eq!(filled.is_error, Some(false), "{}", text(&filled));
    assert_eq!(filled.structured_content.unwrap()["values"], entered);

    // A notice, without waiting.
    let sent = result(call(
        &client,
        "notify",
        json!({"message": "Release started"}),
    ))
    .await;
    assert_eq!(sent.is_error, Some(false), "{}", text(&sent));
    let status = next(&mut ws, |v| v["type"] == "progress.status").await;
    assert_eq!(status["data"]["message"], "Release started");

    // (3) No answer in time: a tool error that says so, attention.timeout.
    let pending = call(
        &client,
        "ask_human",
        json!({"prompt": "Anything else?", "timeout_s": 2}),
    );
    let request = requested(&mut ws).await;
    let timed_out = next(&mut ws, |v| v["type"] == "attention.timeout").await;
    assert_eq!(timed_out["subject"], request.id.as_str());
    let failed = result(pending).await;
    assert_eq!(failed.is_error, Some(true));
    assert!(text(&failed).contains("no answer"), "{}", text(&failed));
    // An answer now is too late: rejected.
    let late = answer(&mut ws, &mut sender, &request, {
        let mut a = Answer::new();
        a.text = Some("late".into());
        a
    })
    .await;
    assert_eq!(late["type"], "control.rejected");

    // A call the client gives up on: its request is dismissed.
    let pending = call(
        &client,
        "ask_human",
        json!({"prompt": "Still there?", "timeout_s": 600}),
    );
    let request = requested(&mut ws).await;
    pending.abort();
    let dismissed = next(&mut ws, |v| {
        v["type"] == "attention.resolved" && v["subject"] == request.id.as_str()
    })
    .await;
    assert_eq!(dismissed["data"]["resolution"], "dismissed");

    // The MCP connection closes: the session ends.
    timeout(WAIT, client.cancel()).await.unwrap().unwrap();
    let ended = next(&mut ws, |v| v["type"] == "session.ended").await;
    assert_eq!(ended["data"]["reason"], "normal");

    // Everything the relay holds for the session passes the stream rules
    // but the refused form answer.
    let history = timeout(
        WAIT,
        aep_client::history::history(&relay.base, Some(TOKEN), session, 1 << 20),
    )
    .await
    .unwrap()
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
    let rules: Vec<_> = findings.iter().map(|f| f.rule.name()).collect();
    assert!(
        rules.iter().all(|r| *r == "form-values"),
        "{rules:?}\n{findings:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_a_tool_error() {
    let relay = relay().await;
    let client = mcp(&relay.base, Some("not-the-token"), "mcp-refused").await;
    let failed = result(call(
        &client,
        "ask_human",
        json!({"prompt": "Deploy?", "timeout_s": 3600}),
    ))
    .await;
    assert_eq!(failed.is_error, Some(true));
    assert!(text(&failed).contains("refused"), "{}", text(&failed));
    let _ = timeout(WAIT, client.cancel()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_relay_is_a_tool_error_within_the_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let client = mcp(&base, Some(TOKEN), "mcp-unreached").await;
    let failed = result(call(
        &client,
        "ask_human",
        json!({"prompt": "Deploy?", "timeout_s": 2}),
    ))
    .await;
    assert_eq!(failed.is_error, Some(true));
    assert!(text(&failed).contains("cannot reach"), "{}", text(&failed));
    let bad = result(call(&client, "ask_human", json!({"options": ["a"]}))).await;
    assert_eq!(bad.is_error, Some(true));
    assert!(text(&bad).contains("prompt"), "{}", text(&bad));
    // An empty notice is refused as an empty question is.
    for blank in ["", " \n"] {
        let bad = result(call(&client, "notify", json!({"message": blank}))).await;
        assert_eq!(bad.is_error, Some(true));
        assert!(text(&bad).contains("`message`"), "{}", text(&bad));
    }
    let _ = timeout(WAIT, client.cancel()).await;
}

fn free_text(text: &str) -> Answer {
    let mut answer = Answer::new();
    answer.text = Some(text.to_owned());
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_questions_at_once_answered_out_of_order() {
    let relay = relay().await;
    let session = "mcp-concurrent";
    let mut ws = watch(&relay.base, session).await;
    let client = mcp(&relay.base, Some(TOKEN), session).await;
    let mut sender = Sender::new(Identity::new("urn:aep:mcp-test:person", "mcp-test-person"));

    let first = call(
        &client,
        "ask_human",
        json!({"prompt": "Which region?", "options": ["eu", "us"], "timeout_s": 600}),
    );
    let second = call(
        &client,
        "ask_human",
        json!({"prompt": "Why now?", "timeout_s": 600}),
    );
    // Both wait at once: the person sees both before answering either.
    let mut seen: Vec<Value> = Vec::new();
    while seen.len() < 2 {
        seen.push(next(&mut ws, |v| v["type"] == "attention.requested").await);
    }
    let by_prompt = |prompt: &str| {
        let request = seen
            .iter()
            .find(|v| v["data"]["prompt"] == prompt)
            .expect("asked");
        Event::from_json(&request.to_string()).unwrap()
    };
    let (region, why) = (by_prompt("Which region?"), by_prompt("Why now?"));
    assert_ne!(region.id, why.id);

    // The first's option is no answer to the second: each request keeps
    // its own options.
    let nack = answer(&mut ws, &mut sender, &why, option("eu")).await;
    assert_eq!(nack["type"], "control.rejected");
    let ack = answer(&mut ws, &mut sender, &why, free_text("the window closes")).await;
    assert_eq!(ack["type"], "control.accepted");
    let answered = result(second).await;
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    let structured = answered.structured_content.clone().unwrap();
    assert_eq!(structured["request"], why.id.as_str());
    assert_eq!(structured["text"], "the window closes");
    assert!(!first.is_finished(), "the first call still waits");

    let ack = answer(&mut ws, &mut sender, &region, option("us")).await;
    assert_eq!(ack["type"], "control.accepted");
    let chose = result(first).await;
    assert_eq!(chose.is_error, Some(false), "{}", text(&chose));
    let structured = chose.structured_content.clone().unwrap();
    assert_eq!(structured["request"], region.id.as_str());
    assert_eq!(structured["option"], "us");

    timeout(WAIT, client.cancel()).await.unwrap().unwrap();
    next(&mut ws, |v| v["type"] == "session.ended").await;
}

/// An answer must fit its question: a form is answered with `values`
/// that keep its rules (not with `text` or an `option`, which the target
/// lets through to a one-field form unchecked), and only a form takes
/// `values`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_does_not_fit_its_question_is_rejected() {
    let relay = relay().await;
    let session = "mcp-fit";
    let mut ws = watch(&relay.base, session).await;
    let client = mcp(&relay.base, Some(TOKEN), session).await;
    let mut sender = Sender::new(Identity::new("urn:aep:mcp-test:person", "mcp-test-person"));

    let fields = json!([
        {"id": "jobs", "type": "number", "label": "Jobs", "required": true, "min": 1, "max": 16}
    ]);
    let pending = call(
        &client,
        "ask_human",
        json!({"prompt": "How many jobs?", "fields": fields, "timeout_s": 600}),
    );
    let request = requested(&mut ws).await;
    for wrong in [free_text("9999"), option("many")] {
        let nack = answer(&mut ws, &mut sender, &request, wrong).await;
        assert_eq!(nack["type"], "control.rejected", "{nack}");
        assert_eq!(nack["data"]["reason"], "invalid");
    }
    let ack = answer(&mut ws, &mut sender, &request, values(json!({"jobs": 4}))).await;
    assert_eq!(ack["type"], "control.accepted", "{ack}");
    let filled = result(pending).await;
    assert_eq!(filled.is_error, Some(false), "{}", text(&filled));
    let structured = filled.structured_content.unwrap();
    assert_eq!(structured["values"], json!({"jobs": 4}));
    assert!(structured.get("text").is_none(), "{structured}");

    let pending = call(
        &client,
        "ask_human",
        json!({"prompt": "Ship it?", "options": ["yes", "no"], "timeout_s": 600}),
    );
    let request = requested(&mut ws).await;
    let mut smuggled = option("yes");
    smuggled.values = values(json!({"note": "not a form"})).values;
    let nack = answer(&mut ws, &mut sender, &request, smuggled).await;
    assert_eq!(nack["type"], "control.rejected", "{nack}");
    let ack = answer(&mut ws, &mut sender, &request, option("no")).await;
    assert_eq!(ack["type"], "control.accepted", "{ack}");
    let chose = result(pending).await;
    let structured = chose.structured_content.unwrap();
    assert_eq!(structured["option"], "no");
    assert!(structured.get("values").is_none(), "{structured}");

    timeout(WAIT, client.cancel()).await.unwrap().unwrap();
    next(&mut ws, |v| v["type"] == "session.ended").await;
}

/// Text that names an option (trimmed, in any case) answers a choice as
/// that option (AEP-0002 §5.3): the agent reads `option`, as the tool
/// says; other text stays text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_that_names_an_option_is_that_option() {
    let relay = relay().await;
    let session = "mcp-text-option";
    let mut ws = watch(&relay.base, session).await;
    let client = mcp(&relay.base, Some(TOKEN), session).await;
    let mut sender = Sender::new(Identity::new("urn:aep:mcp-test:person", "mcp-test-person"));

    let pending = call(
        &client,
        "ask_human",
        json!({"prompt": "Deploy?", "options": ["Yes", "No"], "timeout_s": 600}),
    );
    let request = requested(&mut ws).await;
    let ack = answer(&mut ws, &mut sender, &request, free_text("  yes ")).await;
    assert_eq!(ack["type"], "control.accepted", "{ack}");
    let answered = next(&mut ws, |v| v["type"] == "attention.answered").await;
    assert_eq!(answered["data"]["answer"], json!({"option": "Yes"}));
    let chose = result(pending).await;
    let structured = chose.structured_content.unwrap();
    assert_eq!(structured["option"], "Yes", "{structured}");
    assert!(structured.get("text").is_none(), "{structured}");

    let pending = call(
        &client,
        "ask_human",
        json!({"prompt": "Deploy again?", "options": ["Yes", "No"], "timeout_s": 600}),
    );
    let request = requested_for(&mut ws, "Deploy again?").await;
    let ack = answer(&mut ws, &mut sender, &request, free_text("after lunch")).await;
    assert_eq!(ack["type"], "control.accepted", "{ack}");
    let said = result(pending).await;
    let structured = said.structured_content.unwrap();
    assert_eq!(structured["text"], "after lunch", "{structured}");
    assert!(structured.get("option").is_none(), "{structured}");

    timeout(WAIT, client.cancel()).await.unwrap().unwrap();
    next(&mut ws, |v| v["type"] == "session.ended").await;
}

/// A question too big for the relay (its frames are at most 4 MiB by
/// default) is a tool error at once, and the session goes on: it does
/// not cost the session its connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_too_big_for_the_relay_is_refused_and_the_session_goes_on() {
    let relay = relay().await;
    let session = "mcp-big";
    let mut ws = watch(&relay.base, session).await;
    let client = mcp(&relay.base, Some(TOKEN), session).await;
    next(&mut ws, |v| v["type"] == "session.started").await;

    let big = "a".repeat(5 << 20);
    let refused = result(call(
        &client,
        "ask_human",
        json!({"prompt": big, "timeout_s": 600}),
    ))
    .await;
    assert_eq!(refused.is_error, Some(true));
    assert!(text(&refused).contains("prompt"), "{}", text(&refused));

    let sent = result(call(&client, "notify", json!({"message": "still here"}))).await;
    assert_eq!(sent.is_error, Some(false), "{}", text(&sent));
    let status = next(&mut ws, |v| v["type"] == "progress.status").await;
    assert_eq!(status["data"]["message"], "still here");

    timeout(WAIT, client.cancel()).await.unwrap().unwrap();
    next(&mut ws, |v| v["type"] == "session.ended").await;
}

/// The questions one session has waiting at once are bounded (32): the
/// next is a tool error, not another request for the person, until one
/// is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_questions_waiting_at_once_are_bounded() {
    let relay = relay().await;
    let session = "mcp-many";
    let mut ws = watch(&relay.base, session).await;
    let client = mcp(&relay.base, Some(TOKEN), session).await;
    let mut sender = Sender::new(Identity::new("urn:aep:mcp-test:person", "mcp-test-person"));

    let _waiting: Vec<_> = (0..32)
        .map(|i| {
            call(
                &client,
                "ask_human",
                json!({"prompt": format!("Question {i}?"), "timeout_s": 600}),
            )
        })
        .collect();
    let mut asked = Vec::new();
    while asked.len() < 32 {
        asked.push(requested(&mut ws).await);
    }
    let refused = result(call(
        &client,
        "ask_human",
        json!({"prompt": "One more?", "timeout_s": 600}),
    ))
    .await;
    assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
    assert!(text(&refused).contains("at once"), "{}", text(&refused));

    // One answered, there is room for the next.
    let ack = answer(&mut ws, &mut sender, &asked[0], free_text("done")).await;
    assert_eq!(ack["type"], "control.accepted", "{ack}");
    // (The answer left the waiting requests before the target accepted it.)
    let next_one = call(
        &client,
        "ask_human",
        json!({"prompt": "Now?", "timeout_s": 600}),
    );
    let request = requested_for(&mut ws, "Now?").await;
    let ack = answer(&mut ws, &mut sender, &request, free_text("yes")).await;
    assert_eq!(ack["type"], "control.accepted", "{ack}");
    let said = result(next_one).await;
    assert_eq!(said.is_error, Some(false), "{}", text(&said));

    timeout(WAIT, client.cancel()).await.unwrap().unwrap();
    next(&mut ws, |v| v["type"] == "session.ended").await;
}

/// A `control.cancel` of `session` (scope `session`), or of run `run`.
async fn cancel(ws: &mut Ws, sender: &mut Sender, session: &str, run: Option<&str>) -> Value {
    use aep::control::Address;
    use aep::control_cancel::Scope;
    let mut to = Address::session(session);
    let scope = match run {
        Some(run) => {
            to = to.run(run);
            Scope::Run
        }
        None => Scope::Session,
    };
    let mut payload = aep::ControlCancel::new(scope);
    payload.reason = Some("wrong branch".to_owned());
    let command = sender
        .command(
            &to,
            &aep::Payload::ControlCancel(payload),
            aep_client::session::now_ms(),
        )
        .unwrap();
    decided(ws, command).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_fails_the_waiting_calls_and_ends_the_session() {
    let relay = relay().await;
    let session = "mcp-cancel";
    let mut ws = watch(&relay.base, session).await;
    let client = mcp(&relay.base, Some(TOKEN), session).await;
    let mut sender = Sender::new(Identity::new("urn:aep:mcp-test:person", "mcp-test-person"));

    let first = call(
        &client,
        "ask_human",
        json!({"prompt": "Merge?", "options": ["yes", "no"], "timeout_s": 600}),
    );
    let second = call(
        &client,
        "ask_human",
        json!({"prompt": "Which tests?", "timeout_s": 600}),
    );
    let mut asked = Vec::new();
    while asked.len() < 2 {
        let request = next(&mut ws, |v| v["type"] == "attention.requested").await;
        asked.push(request["id"].as_str().unwrap().to_owned());
    }

    // The session has no runs: a run's cancel is refused, the calls wait on.
    let nack = cancel(&mut ws, &mut sender, session, Some("r1")).await;
    assert_eq!(nack["type"], "control.rejected");
    assert_eq!(nack["data"]["reason"], "invalid");
    assert!(!first.is_finished() && !second.is_finished());

    let ack = cancel(&mut ws, &mut sender, session, None).await;
    assert_eq!(ack["type"], "control.accepted");
    let command = ack["cause"].as_str().unwrap().to_owned();
    for call in [first, second] {
        let failed = result(call).await;
        assert_eq!(failed.is_error, Some(true));
        let said = text(&failed);
        assert!(said.contains("cancelled the session"), "{said}");
        assert!(said.contains("wrong branch"), "{said}");
    }
    let mut dismissed = Vec::new();
    while dismissed.len() < 2 {
        let resolved = next(&mut ws, |v| v["type"] == "attention.resolved").await;
        assert_eq!(resolved["data"]["resolution"], "dismissed");
        assert_eq!(resolved["cause"], command.as_str());
        dismissed.push(resolved["subject"].as_str().unwrap().to_owned());
    }
    dismissed.sort();
    asked.sort();
    assert_eq!(dismissed, asked);
    let ended = next(&mut ws, |v| v["type"] == "session.ended").await;
    assert_eq!(ended["data"]["reason"], "killed");
    assert_eq!(ended["cause"], command.as_str());

    // After it, the tools say the session was cancelled, and so does a
    // second cancel.
    for (tool, arguments) in [
        ("ask_human", json!({"prompt": "Again?", "timeout_s": 600})),
        ("notify", json!({"message": "Still here"})),
    ] {
        let failed = result(call(&client, tool, arguments)).await;
        assert_eq!(failed.is_error, Some(true), "{tool}");
        assert!(text(&failed).contains("cancelled"), "{}", text(&failed));
    }
    let nack = cancel(&mut ws, &mut sender, session, None).await;
    assert_eq!(nack["type"], "control.rejected");

    timeout(WAIT, client.cancel()).await.unwrap().unwrap();
    let history = timeout(
        WAIT,
        aep_client::history::history(&relay.base, Some(TOKEN), session, 1 << 20),
    )
    .await
    .unwrap()
    .unwrap();
    let types: Vec<String> = history
        .events
        .iter()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["type"].to_string())
        .collect();
    assert_eq!(
        types.iter().filter(|t| *t == "\"session.ended\"").count(),
        1,
        "{types:?}"
    );
    assert!(!types.iter().any(|t| t == "\"progress.status\""));
    let text = history.events.join("\n") + "\n";
    let mut findings = Vec::new();
    validate_reader(
        text.as_bytes(),
        Options::default(),
        |f| findings.push(f),
        |_| {},
    )
    .unwrap();
    assert!(findings.is_empty(), "{findings:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_relay_connection_fails_the_waiting_call() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let base = format!("http://{address}");
    let first = Relay::new(Config::default().token(Token::new(TOKEN))).unwrap();
    let shutdown = first.shutdown_handle();
    let serving = tokio::spawn(first.serve(listener));
    let session = "mcp-lost";
    let mut ws = watch(&base, session).await;
    let client = mcp(&base, Some(TOKEN), session).await;

    let pending = call(
        &client,
        "ask_human",
        json!({"prompt": "Ship it?", "options": ["yes", "no"], "timeout_s": 600}),
    );
    let request = requested(&mut ws).await;
    drop(ws);

    // The relay goes away mid-wait and another takes its place.
    shutdown.shutdown();
    timeout(WAIT, serving)
        .await
        .expect("the relay drained in time")
        .unwrap()
        .unwrap();
    let failed = result(pending).await;
    assert_eq!(failed.is_error, Some(true));
    let said = text(&failed);
    assert!(said.contains("was lost"), "{said}");
    assert!(said.contains(request.id.as_str()), "{said}");

    let listener = timeout(WAIT, async {
        loop {
            match TcpListener::bind(address).await {
                Ok(listener) => return listener,
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    })
    .await
    .expect("the address is free again");
    let second = Relay::new(Config::default().token(Token::new(TOKEN))).unwrap();
    let _shutdown = second.shutdown_handle();
    tokio::spawn(second.serve(listener));
    let mut ws = watch(&base, session).await;

    // Once reconnected, the request's dismissal reaches the relay, and a
    // new question is answered through it.
    let dismissed = next(&mut ws, |v| {
        v["type"] == "attention.resolved" && v["subject"] == request.id.as_str()
    })
    .await;
    assert_eq!(dismissed["data"]["resolution"], "dismissed");
    let pending = call(
        &client,
        "ask_human",
        json!({"prompt": "Ship it now?", "options": ["yes", "no"], "timeout_s": 600}),
    );
    let again = requested_for(&mut ws, "Ship it now?").await;
    let mut sender = Sender::new(Identity::new("urn:aep:mcp-test:person", "mcp-test-person"));
    let ack = answer(&mut ws, &mut sender, &again, option("yes")).await;
    assert_eq!(ack["type"], "control.accepted");
    let chose = result(pending).await;
    assert_eq!(chose.is_error, Some(false), "{}", text(&chose));
    assert_eq!(chose.structured_content.unwrap()["option"], "yes");

    timeout(WAIT, client.cancel()).await.unwrap().unwrap();
    next(&mut ws, |v| v["type"] == "session.ended").await;
}

/// The next `attention.requested` whose prompt is `prompt`.
async fn requested_for(ws: &mut Ws, prompt: &str) -> Event {
    let request = next(ws, |v| {
        v["type"] == "attention.requested" && v["data"]["prompt"] == prompt
    })
    .await;
    Event::from_json(&request.to_string()).unwrap()
}

// `aep mcp --http`: MCP over streamable HTTP, one AEP session per MCP
// session.

/// The token MCP clients present to `aep mcp --http` (not the relay's).
const HTTP_TOKEN: &str = "mcp-http-test-token";

/// `aep mcp --http 127.0.0.1:0` as a child, its standard error read line
/// by line in the background.
struct HttpServer {
    child: tokio::process::Child,
    url: String,
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
    /// Every line read so far.
    seen: Vec<String>,
}

fn http_command(base: &str, token: Option<&str>, args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_aep"));
    command
        .arg("mcp")
        .args(args)
        .env("AEP_RELAY", base)
        .env("AEP_TOKEN", TOKEN)
        .env_remove("AEP_MCP_TOKEN")
        .env_remove("AEP_MCP_TOKEN_FILE")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    if let Some(token) = token {
        command.env("AEP_MCP_TOKEN", token);
    }
    command
}

async fn mcp_http(base: &str, token: Option<&str>, args: &[&str]) -> HttpServer {
    mcp_http_at(base, token, "127.0.0.1:0", args).await
}

/// `aep mcp --http <listen>`, as [`mcp_http`].
async fn mcp_http_at(base: &str, token: Option<&str>, listen: &str, args: &[&str]) -> HttpServer {
    let mut command = http_command(base, token, &["--http", listen]);
    command.args(args);
    let mut child = command.spawn().expect("the aep binary runs");
    let stderr = child.stderr.take().unwrap();
    let (tx, lines) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        use tokio::io::AsyncBufReadExt;
        let mut reader = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            eprintln!("[aep mcp] {line}");
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut server = HttpServer {
        child,
        url: String::new(),
        lines,
        seen: Vec::new(),
    };
    let listening = server.line_with("listening on").await;
    server.url = listening
        .split_whitespace()
        .find(|word| word.starts_with("http://"))
        .expect("the address")
        .to_owned();
    assert!(server.url.ends_with("/mcp"), "{listening}");
    server
}

impl HttpServer {
    /// The next line of standard error holding `needle`.
    async fn line_with(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let line = timeout(deadline - Instant::now(), self.lines.recv())
                .await
                .unwrap_or_else(|_| panic!("no line with {needle:?} in time"))
                .unwrap_or_else(|| panic!("aep mcp exited before a line with {needle:?}"));
            self.seen.push(line.clone());
            if line.contains(needle) {
                return line;
            }
        }
    }

    /// The id of the next session started.
    async fn session(&mut self) -> String {
        let line = self.line_with("aep mcp: session ").await;
        line.split_whitespace().nth(3).expect("an id").to_owned()
    }

    /// SIGTERM, then the exit; returns every line of standard error.
    async fn stop(mut self) -> Vec<String> {
        let pid = self.child.id().expect("running") as libc::pid_t;
        // SAFETY: a signal to the child this test started and still holds.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let status = timeout(WAIT, self.child.wait())
            .await
            .expect("aep mcp exited in time")
            .unwrap();
        assert!(status.success(), "{status:?}");
        while let Ok(Some(line)) = timeout(WAIT, self.lines.recv()).await {
            self.seen.push(line);
        }
        self.seen
    }
}

/// An MCP client over streamable HTTP, initialized as `name`.
async fn http_client(
    url: &str,
    token: Option<&str>,
    name: &str,
) -> Result<Client, rmcp::service::ClientInitializeError> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
    let info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new(name, "0.0.1"),
    );
    timeout(WAIT, info.serve(transport))
        .await
        .expect("initialize in time")
}

/// A raw `initialize` POST, with `authorization` when given.
async fn initialize(url: &str, authorization: Option<&str>) -> reqwest::Response {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}
        }
    });
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(authorization) = authorization {
        request = request.header("authorization", authorization);
    }
    timeout(WAIT, request.send())
        .await
        .expect("answered in time")
        .expect("answered")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_a_person_answers_and_a_stop_ends_the_session() {
    let relay = relay().await;
    let mut server = mcp_http(&relay.base, Some(HTTP_TOKEN), &["--session", "h"]).await;
    let client = http_client(&server.url, Some(HTTP_TOKEN), "mcp-http-test")
        .await
        .expect("initialize");
    let session = server.session().await;
    assert!(session.starts_with("h-"), "{session}");
    let mut ws = watch(&relay.base, &session).await;
    let started = next(&mut ws, |v| v["type"] == "session.started").await;
    assert_eq!(started["agent"], "mcp-http-test");

    let asked = call(
        &client,
        "ask_human",
        json!({"prompt": "Ship it?", "options": ["yes", "no"]}),
    );
    let request = requested(&mut ws).await;
    let mut sender = Sender::new(Identity::new("urn:aep:mcp-test:person", "mcp-test-person"));
    let decision = answer(&mut ws, &mut sender, &request, option("yes")).await;
    assert_eq!(decision["type"], "control.accepted", "{decision}");
    let answered = result(asked).await;
    assert_ne!(answered.is_error, Some(true), "{}", text(&answered));
    let structured = answered.structured_content.expect("structured");
    assert_eq!(structured["option"], "yes");
    assert_eq!(structured["session"], session.as_str());

    let lines = server.stop().await;
    let ended = next(&mut ws, |v| v["type"] == "session.ended").await;
    assert_eq!(ended["session"], session.as_str());
    assert!(
        !lines.iter().any(|line| line.contains(HTTP_TOKEN)),
        "{lines:?}"
    );
    drop(client);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_two_clients_are_two_sessions() {
    let relay = relay().await;
    let mut server = mcp_http(&relay.base, None, &[]).await;
    let first = http_client(&server.url, None, "mcp-first")
        .await
        .expect("initialize");
    let one = server.session().await;
    let second = http_client(&server.url, None, "mcp-second")
        .await
        .expect("initialize");
    let two = server.session().await;
    assert_ne!(one, two);
    assert!(
        one.starts_with("mcp-") && two.starts_with("mcp-"),
        "{one} {two}"
    );
    let mut ws_one = watch(&relay.base, &one).await;
    let mut ws_two = watch(&relay.base, &two).await;
    let started = next(&mut ws_one, |v| v["type"] == "session.started").await;
    assert_eq!(started["agent"], "mcp-first");
    let started = next(&mut ws_two, |v| v["type"] == "session.started").await;
    assert_eq!(started["agent"], "mcp-second");

    // One relay connection serves both: each roster entry names that
    // connection's hello agent, not its session's client.
    let console = aep_client::control::ControlClient::connect(
        &relay.base,
        Some(TOKEN),
        Identity::new("urn:aep:mcp-test:console", "console"),
    )
    .await
    .unwrap();
    let roster = console.roster().await.unwrap();
    for session in [&one, &two] {
        let entry = roster
            .iter()
            .find(|e| &e.session == session)
            .expect("claimed");
        assert_eq!(entry.agent, Some(json!("aep-mcp")), "{session}");
    }
    drop(console);

    for (client, ws, said) in [
        (&first, &mut ws_one, "from the first"),
        (&second, &mut ws_two, "from the second"),
    ] {
        let sent = result(call(client, "notify", json!({"message": said}))).await;
        assert_ne!(sent.is_error, Some(true), "{}", text(&sent));
        let status = next(ws, |v| v["type"] == "progress.status").await;
        assert_eq!(status["data"]["message"], said, "{status}");
    }

    // The first client goes away: its session ends, the second's goes on.
    timeout(WAIT, first.cancel()).await.unwrap().unwrap();
    next(&mut ws_one, |v| v["type"] == "session.ended").await;
    let sent = result(call(&second, "notify", json!({"message": "still here"}))).await;
    assert_ne!(sent.is_error, Some(true), "{}", text(&sent));
    let status = next(&mut ws_two, |v| v["type"] == "progress.status").await;
    assert_eq!(status["data"]["message"], "still here");

    server.stop().await;
    next(&mut ws_two, |v| v["type"] == "session.ended").await;
    drop(second);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_a_missing_or_wrong_token_is_refused_and_sessions_are_bounded() {
    let relay = relay().await;
    let server = mcp_http(&relay.base, Some(HTTP_TOKEN), &["--max-sessions", "1"]).await;
    for authorization in [
        None,
        Some("Bearer not-the-token".to_owned()),
        Some(format!("Bearer {HTTP_TOKEN}x")),
        Some(format!("Basic {HTTP_TOKEN}")),
    ] {
        let response = initialize(&server.url, authorization.as_deref()).await;
        assert_eq!(response.status(), 401, "{authorization:?}");
        let body = timeout(WAIT, response.text()).await.unwrap().unwrap();
        assert!(body.contains("Authorization: Bearer"), "{body}");
    }
    let refused = http_client(&server.url, Some("not-the-token"), "mcp-refused").await;
    assert!(refused.is_err());

    let bearer = format!("Bearer {HTTP_TOKEN}");
    let opened = initialize(&server.url, Some(&bearer)).await;
    assert_eq!(opened.status(), 200);
    assert!(opened.headers().contains_key("mcp-session-id"));
    let full = initialize(&server.url, Some(&bearer)).await;
    assert_eq!(full.status(), 503);
    let body = timeout(WAIT, full.text()).await.unwrap().unwrap();
    assert!(body.contains("--max-sessions"), "{body}");
    drop(opened);
    server.stop().await;
}

/// An `Mcp-Session-Id` that is not text names no session to rmcp, which
/// opens one: it counts against --max-sessions like any other opening.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_a_session_id_that_is_not_text_does_not_pass_the_bound() {
    let relay = relay().await;
    let server = mcp_http(&relay.base, Some(HTTP_TOKEN), &["--max-sessions", "1"]).await;
    let bearer = format!("Bearer {HTTP_TOKEN}");
    let opened = initialize(&server.url, Some(&bearer)).await;
    assert_eq!(opened.status(), 200);
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}
        }
    });
    let opaque = reqwest::header::HeaderValue::from_bytes(b"\xff\xfe").unwrap();
    let request = reqwest::Client::new()
        .post(&server.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", &bearer)
        .header("mcp-session-id", opaque)
        .body(body.to_string());
    let response = timeout(WAIT, request.send()).await.unwrap().unwrap();
    assert_ne!(response.status(), 200, "{:?}", response.headers());
    assert!(!response.headers().contains_key("mcp-session-id"));
    drop(opened);
    server.stop().await;
}

/// A loopback address other than 127.0.0.1 (all of 127.0.0.0/8 is
/// loopback) is reached by that address: its own Host is allowed, as the
/// URL aep mcp prints says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_any_loopback_address_is_reached_by_its_own_host() {
    let relay = relay().await;
    let server = mcp_http_at(&relay.base, None, "127.0.0.2:0", &[]).await;
    assert!(
        server.url.starts_with("http://127.0.0.2:"),
        "{}",
        server.url
    );
    let response = initialize(&server.url, None).await;
    let status = response.status();
    let body = timeout(WAIT, response.text()).await.unwrap().unwrap();
    assert_eq!(status, 200, "{body}");
    server.stop().await;
}

/// The authentication scheme is case-insensitive (RFC 9110 §11.1): a
/// client that writes `bearer` or `BEARER` with the right token gets in;
/// the token itself is compared exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_the_bearer_scheme_is_case_insensitive() {
    let relay = relay().await;
    let server = mcp_http(&relay.base, Some(HTTP_TOKEN), &[]).await;
    for scheme in ["bearer", "BEARER", "Bearer"] {
        let authorization = format!("{scheme} {HTTP_TOKEN}");
        let response = initialize(&server.url, Some(&authorization)).await;
        assert_eq!(response.status(), 200, "{scheme}");
    }
    let upper = format!("bearer {}", HTTP_TOKEN.to_uppercase());
    let response = initialize(&server.url, Some(&upper)).await;
    assert_eq!(response.status(), 401);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_a_web_page_of_another_host_is_refused() {
    let relay = relay().await;
    let server = mcp_http(&relay.base, None, &[]).await;
    let with_origin = |origin: &'static str| {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "page", "version": "0"}}
        });
        reqwest::Client::new()
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("origin", origin)
            .body(body.to_string())
            .send()
    };
    let refused = timeout(WAIT, with_origin("http://evil.example"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(refused.status(), 403);
    let local = timeout(WAIT, with_origin("http://localhost:6274"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(local.status(), 200);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_a_non_loopback_address_needs_a_token() {
    let output = http_command("http://127.0.0.1:9", None, &["--http", "0.0.0.0:0"]).output();
    let output = timeout(WAIT, output)
        .await
        .expect("exited in time")
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("without a token") && stderr.contains("AEP_MCP_TOKEN"),
        "{stderr}"
    );
    // A blank token is none.
    let output = http_command("http://127.0.0.1:9", Some(" "), &["--http", "0.0.0.0:0"]).output();
    let output = timeout(WAIT, output)
        .await
        .expect("exited in time")
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("without a token"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_that_is_not_mcp_is_a_failure() {
    use std::process::Stdio;
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_aep"))
        .args(["mcp", "--session", "mcp-not-mcp"])
        .env("AEP_RELAY", "http://127.0.0.1:9")
        .env_remove("AEP_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the aep binary runs");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hello\n").await.unwrap();
    drop(stdin);
    let output = timeout(WAIT, child.wait_with_output())
        .await
        .expect("aep mcp exits in time")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("did not start"), "{stderr}");
    assert!(output.stdout.is_empty(), "{:?}", output.stdout);
}

/// An MCP client that hands over the progress notifications it gets.
#[derive(Clone)]
struct Watching {
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
}

impl ClientHandler for Watching {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("mcp-watching", "0.0.1"),
        )
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }
}

/// `aep mcp` as a child, served by `handler`.
async fn mcp_with<H: ClientHandler>(
    base: &str,
    session: &str,
    extra: &[&str],
    handler: H,
) -> RunningService<RoleClient, H> {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_aep"));
    command
        .args(["mcp", "--session", session])
        .args(extra)
        .env("AEP_RELAY", base)
        .env("AEP_TOKEN", TOKEN);
    let transport = TokioChildProcess::new(command).expect("the aep binary runs");
    timeout(WAIT, handler.serve(transport))
        .await
        .expect("initialize in time")
        .expect("initialize")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_call_with_a_progress_token_reports_progress() {
    let relay = relay().await;
    let session = "mcp-progress";
    let mut ws = watch(&relay.base, session).await;
    let (progress, mut reported) = mpsc::unbounded_channel();
    let client = mcp_with(&relay.base, session, &[], Watching { progress }).await;
    let mut sender = Sender::new(Identity::new("urn:aep:mcp-test:person", "mcp-test-person"));

    // rmcp's client gives every request a progress token: the call's is
    // the one the progress must name.
    let params = CallToolRequestParams::new("ask_human").with_arguments(
        serde_json::from_value(
            json!({"prompt": "Keep going?", "options": ["yes", "no"], "timeout_s": 600}),
        )
        .unwrap(),
    );
    let handle = timeout(
        WAIT,
        client.peer().send_request_with_option(
            ClientRequest::CallToolRequest(Request::new(params)),
            PeerRequestOptions::no_options(),
        ),
    )
    .await
    .unwrap()
    .unwrap();
    let token = handle.progress_token.clone();
    let pending = tokio::spawn(async move {
        match timeout(WAIT * 2, handle.await_response()).await {
            Ok(Ok(ServerResult::CallToolResult(result))) => result,
            other => panic!("not a tool result: {other:?}"),
        }
    });
    let request = requested(&mut ws).await;
    // The wait is told at once, before anyone answers.
    let first = timeout(WAIT, reported.recv())
        .await
        .expect("progress in time")
        .expect("a progress notification");
    assert_eq!(first.progress_token, token);
    assert!(first.progress > 0.0);
    assert!(first.message.unwrap_or_default().contains("waiting"));
    assert!(!pending.is_finished());

    let ack = answer(&mut ws, &mut sender, &request, option("yes")).await;
    assert_eq!(ack["type"], "control.accepted");
    let chose = result(pending).await;
    assert_eq!(chose.is_error, Some(false), "{}", text(&chose));
    assert_eq!(chose.structured_content.unwrap()["option"], "yes");

    // A call without a token gets none.
    let pending = call_on(client.peer(), "notify", json!({"message": "done"}));
    assert_eq!(result(pending).await.is_error, Some(false));
    timeout(WAIT, client.cancel()).await.unwrap().unwrap();
    while let Some(more) = reported.recv().await {
        assert_eq!(more.progress_token, token);
    }
}

/// An elicitation request the client got: its id, the message and
/// schema, and where the test's reply goes.
struct Elicited {
    id: RequestId,
    message: String,
    schema: Value,
    reply: oneshot::Sender<ElicitResult>,
}

/// An MCP client that declares elicitation and hands each request over to
/// the test, which replies; it tells the cancellations it gets.
#[derive(Clone)]
struct Eliciting {
    asked: mpsc::UnboundedSender<Elicited>,
    cancelled: mpsc::UnboundedSender<CancelledNotificationParam>,
}

impl ClientHandler for Eliciting {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {}})).unwrap();
        ClientConfig::new(capabilities, Implementation::new("mcp-eliciting", "0.0.1"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let request = serde_json::to_value(&request).unwrap();
        let (reply, replied) = oneshot::channel();
        let _ = self.asked.send(Elicited {
            id: context.id.clone(),
            message: request["message"].as_str().unwrap_or_default().to_owned(),
            schema: request["requestedSchema"].clone(),
            reply,
        });
        replied
            .await
            .map_err(|_| rmcp::ErrorData::internal_error("no reply", None))
    }

    async fn on_cancelled(
        &self,
        params: CancelledNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.cancelled.send(params);
    }
}

type Elicitations = (
    mpsc::UnboundedReceiver<Elicited>,
    mpsc::UnboundedReceiver<CancelledNotificationParam>,
);

async fn eliciting(
    base: &str,
    session: &str,
) -> (RunningService<RoleClient, Eliciting>, Elicitations) {
    let (asked, asks) = mpsc::unbounded_channel();
    let (cancelled, cancels) = mpsc::unbounded_channel();
    let client = mcp_with(base, session, &["--elicit"], Eliciting { asked, cancelled }).await;
    (client, (asks, cancels))
}

async fn elicited(asks: &mut mpsc::UnboundedReceiver<Elicited>) -> Elicited {
    timeout(WAIT, asks.recv())
        .await
        .expect("an elicitation in time")
        .expect("an elicitation")
}

fn accept(content: Value) -> ElicitResult {
    ElicitResult::new(ElicitationAction::Accept).with_content(content)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_answers_through_elicitation_or_the_relay() {
    let relay = relay().await;
    let session = "mcp-elicit";
    let mut ws = watch(&relay.base, session).await;
    let (client, (mut asks, _cancels)) = eliciting(&relay.base, session).await;
    let mut sender = Sender::new(Identity::new("urn:aep:mcp-test:person", "mcp-test-person"));

    // (1) A choice answered through elicitation: the tool's result, said
    // as answered out of band; the relay's answer after it is rejected.
    let pending = call_on(
        client.peer(),
        "ask_human",
        json!({"prompt": "Deploy now?", "options": ["yes", "no"], "timeout_s": 600}),
    );
    let request = requested(&mut ws).await;
    let asked = elicited(&mut asks).await;
    assert_eq!(asked.message, "Deploy now?");
    assert_eq!(
        asked.schema["properties"]["option"]["enum"],
        json!(["yes", "no"])
    );
    assert_eq!(asked.schema["required"], json!(["option"]));
    asked.reply.send(accept(json!({"option": "no"}))).unwrap();
    let chose = result(pending).await;
    assert_eq!(chose.is_error, Some(false), "{}", text(&chose));
    let structured = chose.structured_content.clone().unwrap();
    assert_eq!(structured["option"], "no");
    assert_eq!(structured["request"], request.id.as_str());
    assert!(
        structured["answered_by"]
            .as_str()
            .unwrap()
            .contains("elicitation"),
        "{structured}"
    );
    let answered = next(&mut ws, |v| {
        v["type"] == "attention.answered" && v["subject"] == request.id.as_str()
    })
    .await;
    assert_eq!(answered["data"]["via"], "oob");
    assert_eq!(answered["data"]["answer"]["option"], "no");
    let resolved = next(&mut ws, |v| {
        v["type"] == "attention.resolved" && v["subject"] == request.id.as_str()
    })
    .await;
    assert_eq!(resolved["data"]["resolution"], "answered");
    let late = answer(&mut ws, &mut sender, &request, option("yes")).await;
    assert_eq!(late["type"], "control.rejected");
    assert!(
        late["data"]["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("already answered"),
        "{late}"
    );

    // (2) A form whose elicitation answer breaks it: the relay's answer
    // is still awaited, and taken.
    let fields = json!([
        {"id": "branch", "type": "string", "label": "Branch", "required": true},
        {"id": "target", "type": "select", "label": "Target", "required": true,
         "choices": [{"id": "staging", "label": "Staging"}, {"id": "production", "label": "Production"}]},
        {"id": "jobs", "type": "number", "label": "Jobs", "min": 1, "max": 16}
    ]);
    let pending = call_on(
        client.peer(),
        "ask_human",
        json!({"prompt": "How should the release go?", "fields": fields, "timeout_s": 600}),
    );
    let request = requested(&mut ws).await;
    let asked = elicited(&mut asks).await;
    let properties = &asked.schema["properties"];
    assert_eq!(properties["branch"]["type"], "string");
    assert_eq!(
        properties["target"]["enum"],
        json!(["staging", "production"])
    );
    assert_eq!(properties["jobs"]["maximum"], 16.0);
    assert_eq!(asked.schema["required"], json!(["branch", "target"]));
    asked
        .reply
        .send(accept(json!({"target": "moon", "jobs": 99})))
        .unwrap();
    let entered = json!({"branch": "fix/build", "target": "staging", "jobs": 4});
    let ack = answer(&mut ws, &mut sender, &request, values(entered.clone())).await;
    assert_eq!(ack["type"], "control.accepted");
    let filled = result(pending).await;
    assert_eq!(filled.is_error, Some(false), "{}", text(&filled));
    let structured = filled.structured_content.unwrap();
    assert_eq!(structured["values"], entered);
    assert_eq!(structured["answered_by"], "mcp-test-person");

    // (3) Declined through elicitation: the relay's answer is awaited.
    let pending = call_on(
        client.peer(),
        "ask_human",
        json!({"prompt": "Why now?", "timeout_s": 600}),
    );
    let request = requested(&mut ws).await;
    let asked = elicited(&mut asks).await;
    assert_eq!(asked.schema["properties"]["text"]["type"], "string");
    asked
        .reply
        .send(ElicitResult::new(ElicitationAction::Decline))
        .unwrap();
    let ack = answer(
        &mut ws,
        &mut sender,
        &request,
        free_text("the window closes"),
    )
    .await;
    assert_eq!(ack["type"], "control.accepted");
    let said = result(pending).await;
    assert_eq!(said.is_error, Some(false), "{}", text(&said));
    assert_eq!(
        said.structured_content.unwrap()["text"],
        "the window closes"
    );

    timeout(WAIT, client.cancel()).await.unwrap().unwrap();
    next(&mut ws, |v| v["type"] == "session.ended").await;
    let history = timeout(
        WAIT,
        aep_client::history::history(&relay.base, Some(TOKEN), session, 1 << 20),
    )
    .await
    .unwrap()
    .unwrap();
    let text = history.events.join("\n") + "\n";
    let mut findings = Vec::new();
    validate_reader(
        text.as_bytes(),
        Options::default(),
        |f| findings.push(f),
        |_| {},
    )
    .unwrap();
    assert!(findings.is_empty(), "{findings:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_answer_first_cancels_the_elicitation() {
    let relay = relay().await;
    let session = "mcp-elicit-relay-first";
    let mut ws = watch(&relay.base, session).await;
    let (client, (mut asks, mut cancels)) = eliciting(&relay.base, session).await;
    let mut sender = Sender::new(Identity::new("urn:aep:mcp-test:person", "mcp-test-person"));

    let pending = call_on(
        client.peer(),
        "ask_human",
        json!({"prompt": "Ship it?", "options": ["yes", "no"], "timeout_s": 600}),
    );
    let request = requested(&mut ws).await;
    let asked = elicited(&mut asks).await;
    let ack = answer(&mut ws, &mut sender, &request, option("yes")).await;
    assert_eq!(ack["type"], "control.accepted");
    let chose = result(pending).await;
    assert_eq!(chose.is_error, Some(false), "{}", text(&chose));
    let structured = chose.structured_content.unwrap();
    assert_eq!(structured["option"], "yes");
    assert_eq!(structured["answered_by"], "mcp-test-person");
    // The elicitation still open is cancelled.
    let cancelled = timeout(WAIT, cancels.recv())
        .await
        .expect("the elicitation is cancelled in time")
        .expect("a cancellation");
    assert_eq!(cancelled.request_id, Some(asked.id.clone()));
    // Answering it now changes nothing: the request stays answered once.
    let _ = asked.reply.send(accept(json!({"option": "no"})));

    timeout(WAIT, client.cancel()).await.unwrap().unwrap();
    next(&mut ws, |v| v["type"] == "session.ended").await;
    let history = timeout(
        WAIT,
        aep_client::history::history(&relay.base, Some(TOKEN), session, 1 << 20),
    )
    .await
    .unwrap()
    .unwrap();
    let answers = history
        .events
        .iter()
        .filter(|line| line.contains("\"attention.answered\""))
        .count();
    assert_eq!(answers, 1, "{:?}", history.events);
}
