//! Relay nodes on one NATS JetStream (`Config::nats`): a nats-server of
//! its own per test, on a free loopback port with a temporary store.
//!
//! The server is `AEP_NATS_SERVER`, else `nats-server` on the `PATH`
//! (`.ci/run` installs one). Without it these tests fail, saying so,
//! unless `AEP_SKIP_NATS_TESTS=1` opts out.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use aep_relay::{Config, NatsServer, Relay};
use serde_json::{json, Value};
use tokio::time::timeout;

use crate::common::{self, json_body, seqs, status, SseItem, TestRelay, WAIT};

/// A nats-server with JetStream, killed when dropped.
struct Server {
    url: String,
    child: Child,
    binary: String,
    config: std::path::PathBuf,
    port: u16,
    _store: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A nats-server on a free port whose messages are at most
/// `max_payload` bytes; `None` when the tests are opted out of.
async fn server(max_payload: usize) -> Option<Server> {
    if std::env::var("AEP_SKIP_NATS_TESTS").as_deref() == Ok("1") {
        eprintln!("SKIPPED: AEP_SKIP_NATS_TESTS=1 opts out of the NATS cluster tests");
        return None;
    }
    let binary = std::env::var("AEP_NATS_SERVER").unwrap_or_else(|_| "nats-server".into());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let store = tempfile::tempdir().expect("a temporary store");
    let config = store.path().join("nats.conf");
    std::fs::write(
        &config,
        format!(
            "listen: \"127.0.0.1:{port}\"\nmax_payload: {max_payload}\njetstream {{ store_dir: \"{}\" }}\n",
            store.path().join("js").display()
        ),
    )
    .unwrap();
    let child = spawn(&binary, &config);
    let server = Server {
        url: format!("nats://127.0.0.1:{port}"),
        child,
        binary,
        config,
        port,
        _store: store,
    };
    server.listening().await;
    Some(server)
}

fn spawn(binary: &str, config: &std::path::Path) -> Child {
    Command::new(binary)
        .arg("-c")
        .arg(config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "the NATS cluster tests need a nats-server with JetStream ({binary}: {e}); \
                 set AEP_NATS_SERVER=/path/to/nats-server (.ci/run installs one), \
                 or AEP_SKIP_NATS_TESTS=1 to skip them"
            )
        })
}

impl Server {
    /// Waits until the server listens (bounded).
    async fn listening(&self) {
        for _ in 0..400 {
            if tokio::net::TcpStream::connect(("127.0.0.1", self.port))
                .await
                .is_ok()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("nats-server did not listen on {} within 10 s", self.port);
    }

    /// Stops the server (its store is kept).
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the server again on its port, on its store or (`wipe`) on
    /// an empty one.
    async fn restart(&mut self, wipe: bool) {
        self.stop();
        if wipe {
            std::fs::remove_dir_all(self._store.path().join("js")).unwrap();
        }
        self.child = spawn(&self.binary, &self.config);
        self.listening().await;
    }
}

/// POSTs `events` as an NDJSON batch to `node`.
async fn post(node: &TestRelay, events: &[Value]) -> reqwest::Response {
    let lines: Vec<String> = events.iter().map(Value::to_string).collect();
    node.post_lines(&lines).await
}

fn node_config(server: &Server) -> Config {
    Config::default().buffer(64).nats(Some(NatsServer {
        url: server.url.clone(),
        creds: None,
    }))
}

/// A relay node of the cluster on `server`.
async fn node(server: &Server) -> TestRelay {
    common::start(node_config(server)).await
}

/// The node's history of `session` once it holds `n` events (the stream
/// delivers to every node; bounded).
async fn held(node: &TestRelay, session: &str, n: usize) -> Vec<SseItem> {
    for _ in 0..400 {
        let held = node.held(session).await;
        if held.iter().filter(|i| i.is_event()).count() >= n {
            return held;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the node did not hold {n} events of {session} within 10 s");
}

#[tokio::test]
async fn an_event_posted_to_one_node_reaches_every_node_once() {
    let Some(server) = server(1 << 20).await else {
        return;
    };
    let (a, b, c) = (
        node(&server).await,
        node(&server).await,
        node(&server).await,
    );
    let mut sse = b.sse(&[("filter", r#"{"session":"s"}"#)]).await;
    let mut ws = c.ws("consumer").await;
    ws.subscribe(json!({"type": "subscribe", "id": "w", "filter": {"session": "s"}}))
        .await;

    let batch: Vec<Value> = (0..3).map(|seq| status("s", seq, "notice")).collect();
    let (code, answer) = json_body(post(&a, &batch).await).await;
    assert_eq!(code, 202, "{answer}");
    assert_eq!(answer, json!({"accepted": 3, "duplicates": 0}));
    assert_eq!(seqs(&sse.events(3).await), [0, 1, 2]);
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(ws.json().await["seq"].as_u64().expect("an event"));
    }
    assert_eq!(got, [0, 1, 2]);

    // The same batch again, to another node: held already and said so;
    // live subscribers on every node get the redelivery as received
    // (AEP-0003 §5), as from one relay, and the histories keep one copy.
    let (code, answer) = json_body(post(&b, &batch).await).await;
    assert_eq!(code, 202, "{answer}");
    assert_eq!(answer, json!({"accepted": 3, "duplicates": 3}));
    let (code, _) = json_body(post(&c, &[status("s", 3, "notice")]).await).await;
    assert_eq!(code, 202);
    // The redelivery and the next event travel apart: either may be first.
    let mut live = seqs(&sse.events(4).await);
    live.sort_unstable();
    assert_eq!(live, [0, 1, 2, 3]);
    let mut got = Vec::new();
    for _ in 0..4 {
        got.push(ws.json().await["seq"].as_u64().expect("an event"));
    }
    got.sort_unstable();
    assert_eq!(got, [0, 1, 2, 3]);
    // Every node's history holds the four, once.
    for n in [&a, &b, &c] {
        assert_eq!(seqs(&held(n, "s", 4).await), [0, 1, 2, 3]);
    }
}

#[tokio::test]
async fn what_a_dead_node_acknowledged_is_kept_and_a_new_node_starts_with_it() {
    let Some(server) = server(1 << 20).await else {
        return;
    };
    let a = node(&server).await;
    let c = node(&server).await;
    let batch: Vec<Value> = (0..5).map(|seq| status("r", seq, "notice")).collect();
    let (code, _) = json_body(post(&a, &batch).await).await;
    assert_eq!(code, 202);
    a.stop().await;
    // A subscriber resuming on another node after seq 1 gets the rest.
    held(&c, "r", 5).await;
    let resumed = c
        .history(&[("from", r#"[{"session":"r","epoch":0,"seq":1}]"#)])
        .await;
    assert_eq!(seqs(&resumed), [2, 3, 4]);
    // A node started now reads the stream before it serves: its first
    // answer holds everything.
    let d = node(&server).await;
    assert_eq!(seqs(&d.held("r").await), [0, 1, 2, 3, 4]);
}

#[tokio::test]
async fn an_event_over_the_servers_payload_limit_is_refused_whole() {
    let Some(server) = server(4096).await else {
        return;
    };
    let a = node(&server).await;
    let mut big = status("big", 1, "notice");
    big["data"]["message"] = json!("x".repeat(8192));
    let batch = [status("big", 0, "notice"), big];
    let (code, answer) = json_body(post(&a, &batch).await).await;
    assert_eq!(code, 413, "{answer}");
    assert!(
        answer["detail"].as_str().unwrap().contains("max_payload"),
        "{answer}"
    );
    // Nothing of the batch was stored.
    let (code, _) = json_body(post(&a, &[status("big", 2, "notice")]).await).await;
    assert_eq!(code, 202);
    assert_eq!(seqs(&held(&a, "big", 1).await), [2]);
}

#[tokio::test]
async fn a_node_with_another_buffer_depth_is_refused_at_start() {
    let Some(server) = server(1 << 20).await else {
        return;
    };
    let _a = node(&server).await;
    // The stream exists once the first node serves.
    let _ = _a.health().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let relay = Relay::new(node_config(&server).buffer(32)).unwrap();
    let started = timeout(WAIT, relay.serve(listener))
        .await
        .expect("refused within the bound");
    let error = started.expect_err("a second depth is refused");
    assert!(error.to_string().contains("--buffer"), "{error}");
}

#[tokio::test]
async fn a_batch_larger_than_the_clients_ack_window_is_stored() {
    let Some(server) = server(1 << 20).await else {
        return;
    };
    let a = node(&server).await;
    // More events than the NATS client lets wait for their acks at once
    // (5000): each session keeps 64, so the stream holds the last 64.
    let batch: Vec<Value> = (0..6000).map(|seq| status("wide", seq, "notice")).collect();
    let (code, answer) = json_body(post(&a, &batch).await).await;
    assert_eq!(code, 202, "{answer}");
    assert_eq!(answer, json!({"accepted": 6000, "duplicates": 0}));
    // And the node still publishes what comes next.
    let (code, _) = json_body(post(&a, &[status("wide", 6000, "notice")]).await).await;
    assert_eq!(code, 202);
    let mut last = Vec::new();
    for _ in 0..400 {
        last = seqs(&a.held("wide").await);
        if last.last() == Some(&6000) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(last, (5937..=6000).collect::<Vec<u64>>());
}

#[tokio::test]
async fn a_node_started_later_says_what_the_stream_discarded() {
    let Some(server) = server(1 << 20).await else {
        return;
    };
    let a = node(&server).await;
    // A node's buffer keeps a session's last 64: 0 to 5 are evicted (the
    // stream keeps them; a node started later reads them and evicts them
    // the same way).
    let batch: Vec<Value> = (0..70).map(|seq| status("cut", seq, "notice")).collect();
    let (code, _) = json_body(post(&a, &batch).await).await;
    assert_eq!(code, 202);
    held(&a, "cut", 64).await;
    let d = node(&server).await;
    let from = json!([{"session": "cut", "epoch": 0, "seq": 0}]).to_string();
    for (name, n) in [("a", &a), ("d", &d)] {
        let items = n.history(&[("from", &from)]).await;
        assert_eq!(
            items[0],
            SseItem::Comment("replay-exhausted cut 0:6".into()),
            "a resume from 0 on {name}"
        );
        assert_eq!(seqs(&items), (6..70).collect::<Vec<u64>>());
        // From the last discarded position nothing is missing.
        let from = json!([{"session": "cut", "epoch": 0, "seq": 5}]).to_string();
        let items = n.history(&[("from", &from)]).await;
        assert!(items[0].is_event(), "{:?}", items[0]);
        assert_eq!(seqs(&items), (6..70).collect::<Vec<u64>>());
    }
}

#[tokio::test]
async fn a_flood_past_the_buffer_reaches_a_live_subscriber_on_another_node_whole() {
    let Some(server) = server(1 << 20).await else {
        return;
    };
    let (a, b) = (node(&server).await, node(&server).await);
    let mut sse = b.sse(&[("filter", r#"{"session":"flood"}"#)]).await;
    // Twenty times the nodes' --buffer (64) in one session, at once: the
    // stream keeps what a node reading behind has not read yet, so the
    // subscriber misses nothing, whatever the node's lag.
    let batch: Vec<Value> = (0..1280)
        .map(|seq| status("flood", seq, "notice"))
        .collect();
    let (code, _) = json_body(post(&a, &batch).await).await;
    assert_eq!(code, 202);
    assert_eq!(
        seqs(&sse.events(1280).await),
        (0..1280).collect::<Vec<u64>>()
    );
    // The stream holds them all; each node's buffer the last 64.
    let client = async_nats::connect(server.url.as_str()).await.unwrap();
    let mut stream = async_nats::jetstream::new(client)
        .get_stream("AEP_EVENTS")
        .await
        .unwrap();
    assert_eq!(stream.info().await.unwrap().state.messages, 1280);
    assert_eq!(
        seqs(&held(&b, "flood", 64).await),
        (1216..1280).collect::<Vec<u64>>()
    );
}

#[tokio::test]
async fn a_node_follows_the_stream_a_server_that_lost_it_holds_anew() {
    let Some(mut server) = server(1 << 20).await else {
        return;
    };
    let a = node(&server).await;
    let batch: Vec<Value> = (0..5).map(|seq| status("old", seq, "notice")).collect();
    let (code, _) = json_body(post(&a, &batch).await).await;
    assert_eq!(code, 202);
    held(&a, "old", 5).await;
    // The server comes back without its store: the stream is gone, and
    // the one made anew numbers its messages from 1 again.
    server.restart(true).await;
    let b = node(&server).await;
    let batch: Vec<Value> = (0..3).map(|seq| status("new", seq, "notice")).collect();
    let (code, _) = json_body(post(&b, &batch).await).await;
    assert_eq!(code, 202);
    assert_eq!(seqs(&held(&a, "new", 3).await), [0, 1, 2]);
    // And `a` publishes to it, and reads what it published.
    let (code, answer) = json_body(post(&a, &[status("new", 3, "notice")]).await).await;
    assert_eq!(code, 202, "{answer}");
    assert_eq!(seqs(&held(&b, "new", 4).await), [0, 1, 2, 3]);
    assert_eq!(seqs(&held(&a, "new", 4).await), [0, 1, 2, 3]);
}

#[tokio::test]
async fn a_command_reaches_an_owner_on_its_node_once_and_every_node_keeps_it_once() {
    let Some(server) = server(1 << 20).await else {
        return;
    };
    let (a, b) = (
        common::start_with_token(node_config(&server), "t").await,
        common::start_with_token(node_config(&server), "t").await,
    );
    let filter = json!({"session": "job"}).to_string();
    let mut watcher_a = a.sse(&[("filter", &filter)]).await;
    let mut watcher_b = b.sse(&[("filter", &filter)]).await;
    let started = common::event("session.started", "job", 0);
    let mut owner = a
        .ws_hello(common::emitter_hello("target/1", &["control.cancel"]))
        .await;
    owner.send(&started).await;
    assert!(owner.sync("claimed").await.is_empty());
    let mut sender = a.ws("consumer").await;
    let cancel = common::command("control.cancel", "job");
    sender.send(&cancel).await;
    assert_eq!(owner.json().await["id"], cancel["id"]);
    assert!(sender.sync("sent").await.is_empty(), "routed, no answer");
    for watcher in [&mut watcher_a, &mut watcher_b] {
        assert_eq!(watcher.event().await.json()["type"], "session.started");
        assert_eq!(watcher.event().await.json()["id"], cancel["id"]);
    }
    for n in [&a, &b] {
        let held = held(n, "job", 2).await;
        assert_eq!(held.len(), 2, "once in the history of {}", n.addr);
    }
    // The owner back on a new connection re-sends what it is unsure of
    // (a duplicate for the stream) and owns its session again by it.
    drop(owner);
    let mut back = a
        .ws_hello(common::emitter_hello("target/1", &["control.cancel"]))
        .await;
    back.send(&started).await;
    assert!(back.sync("reclaimed").await.is_empty());
    let pause = common::command("control.cancel", "job");
    sender.send(&pause).await;
    assert_eq!(back.json().await["id"], pause["id"]);
    assert!(sender.sync("again").await.is_empty(), "routed, no answer");
    // The watcher on the other node got the re-sent session.started as a
    // redelivery (live, as one relay forwards it), then the command; the
    // history holds each once.
    let mut seen = Vec::new();
    for _ in 0..2 {
        seen.push(watcher_b.event().await.json()["id"].clone());
    }
    seen.sort_by_key(|id| id.to_string());
    let mut want = vec![started["id"].clone(), pause["id"].clone()];
    want.sort_by_key(|id| id.to_string());
    assert_eq!(seen, want);
    assert_eq!(held(&b, "job", 3).await.len(), 3);
}

#[tokio::test]
async fn a_server_restarted_on_its_store_loses_and_repeats_nothing() {
    let Some(mut server) = server(1 << 20).await else {
        return;
    };
    let (a, b) = (node(&server).await, node(&server).await);
    let mut sse = b.sse(&[("filter", r#"{"session":"re"}"#)]).await;
    let (code, _) = json_body(post(&a, &[status("re", 0, "notice")]).await).await;
    assert_eq!(code, 202);
    assert_eq!(seqs(&sse.events(1).await), [0]);
    server.restart(false).await;
    // Sent until stored (the client reconnects by itself; bounded).
    for seq in 1..3 {
        let mut stored = false;
        for _ in 0..10 {
            let (code, _) = json_body(post(&a, &[status("re", seq, "notice")]).await).await;
            if code == 202 {
                stored = true;
                break;
            }
            assert_eq!(code, 503);
        }
        assert!(stored, "seq {seq} stored once the server is back");
    }
    // Delivered on the other node within the usual bound, not once its
    // consumer misses heartbeats enough to make itself anew.
    assert_eq!(seqs(&sse.events(2).await), [1, 2]);
    for n in [&a, &b] {
        assert_eq!(seqs(&held(n, "re", 3).await), [0, 1, 2]);
    }
}

#[tokio::test]
async fn a_node_says_in_healthz_when_it_cannot_reach_the_stream() {
    let Some(mut server) = server(1 << 20).await else {
        return;
    };
    let a = node(&server).await;
    let health = a.get("/healthz").await;
    assert_eq!(health.status(), 200);
    assert_eq!(json_body(health).await.1["nats"], "connected");
    server.stop();
    let down = a
        .wait_health("the NATS link down", |h| h["nats"] == "disconnected")
        .await;
    assert_eq!(down["ok"], false);
    assert_eq!(a.get("/healthz").await.status(), 503);
    server.restart(false).await;
    a.wait_health("the NATS link back", |h| h["ok"] == true)
        .await;
}

#[tokio::test]
async fn a_node_holds_what_it_answered_202_for() {
    let Some(server) = server(1 << 20).await else {
        return;
    };
    let a = node(&server).await;
    // Read right after each answer, without waiting: as on one relay.
    for seq in 0..40 {
        let (code, _) = json_body(post(&a, &[status("rw", seq, "notice")]).await).await;
        assert_eq!(code, 202);
        let held = seqs(&a.held("rw").await);
        assert_eq!(held.last(), Some(&seq), "read after the 202 of {seq}");
    }
}

/// Three token nodes of one cluster.
async fn three_nodes(server: &Server) -> [TestRelay; 3] {
    [
        common::start_with_token(node_config(server), "t").await,
        common::start_with_token(node_config(server), "t").await,
        common::start_with_token(node_config(server), "t").await,
    ]
}

/// An owner of `session` connected to `node`, once `seen_on` lists it in
/// its roster (the claim went round the cluster).
async fn owner(node: &TestRelay, session: &str, seen_on: &TestRelay) -> common::Ws {
    let mut owner = node
        .ws_hello(common::emitter_hello("target/1", &["control.cancel"]))
        .await;
    owner
        .send(&common::event("session.started", session, 0))
        .await;
    assert!(owner.sync("claimed").await.is_empty());
    seen_on
        .wait_roster("the owner on another node", |entries| {
            entries.iter().any(|e| e["session"] == session)
        })
        .await;
    owner
}

#[tokio::test]
async fn a_command_sent_on_one_node_reaches_the_owner_on_another_once_and_its_ack_comes_back() {
    let Some(server) = server(1 << 20).await else {
        return;
    };
    let [a, b, c] = three_nodes(&server).await;
    let filter = json!({"session": "job"}).to_string();
    let mut watcher_a = a.sse(&[("filter", &filter)]).await;
    let mut watcher_c = c.sse(&[("filter", &filter)]).await;
    let mut target = owner(&b, "job", &c).await;
    let roster = c.wait_roster("one entry", |e| e.len() == 1).await;
    assert_eq!(roster[0]["agent"], "test-agent", "{roster:?}");
    assert_eq!(roster[0]["control"]["accepts"], json!(["control.cancel"]));
    let mut sender = c.ws("consumer").await;
    let cancel = common::command("control.cancel", "job");
    // Byte for byte: the text as sent, with its own spacing.
    let text = serde_json::to_string_pretty(&cancel).unwrap();
    sender.send_text(&text).await;
    assert_eq!(target.text().await, text);
    assert!(sender.sync("sent").await.is_empty(), "routed, no answer");
    // The owner acknowledges over its own connection; every node's
    // watchers see the command and the ack once.
    let mut ack = common::event("control.accepted", "job", 1);
    ack["source"] = "urn:aep:test:emitter".into();
    ack["cause"] = cancel["id"].clone();
    target.send(&ack).await;
    assert!(target.sync("acked").await.is_empty());
    for watcher in [&mut watcher_a, &mut watcher_c] {
        assert_eq!(watcher.event().await.json()["type"], "session.started");
        assert_eq!(watcher.event().await.json()["id"], cancel["id"]);
        assert_eq!(watcher.event().await.json()["id"], ack["id"]);
    }
    for n in [&a, &b, &c] {
        assert_eq!(held(n, "job", 3).await.len(), 3, "once on {}", n.addr);
    }
    // Only the owner's connection acknowledges: an ack from elsewhere in
    // the cluster is refused.
    let mut impostor = a.ws_hello(common::emitter_hello("impostor/1", &[])).await;
    let mut forged = common::event("control.accepted", "job", 2);
    forged["cause"] = cancel["id"].clone();
    impostor.send(&forged).await;
    let refused = impostor.json().await;
    assert_eq!(refused["code"], "unauthorized", "{refused}");
    // The command reached the owner once.
    assert!(target.sync("once").await.is_empty());
}

#[tokio::test]
async fn owners_on_two_nodes_are_ambiguous_and_a_stopped_nodes_owner_is_no_route() {
    let Some(server) = server(1 << 20).await else {
        return;
    };
    let [a, b, c] = three_nodes(&server).await;
    let mut first = owner(&a, "job", &c).await;
    let mut second = owner(&b, "job", &a).await;
    c.wait_roster("both owners", |e| e.len() == 2).await;
    let mut sender = c.ws("consumer").await;
    let cancel = common::command("control.cancel", "job");
    sender.send(&cancel).await;
    let refused = sender.json().await;
    assert_eq!(refused["code"], "ambiguous", "{refused}");
    assert_eq!(refused["cause"], cancel["id"]);
    assert!(first.sync("a").await.is_empty(), "never a broadcast");
    assert!(second.sync("b").await.is_empty(), "never a broadcast");
    // Node A stops: its claim leaves the cluster; B's owner alone gets
    // the next command.
    drop(first);
    a.stop().await;
    let mut routed = None;
    for n in 0..400 {
        let cancel = common::command("control.cancel", "job");
        sender.send(&cancel).await;
        let answer = sender.sync(&format!("try-{n}")).await;
        if answer.is_empty() {
            routed = Some(cancel);
            break;
        }
        assert_eq!(answer[0]["code"], "ambiguous", "{answer:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let routed = routed.expect("routed to B within 10 s of A's stop");
    assert_eq!(second.json().await["id"], routed["id"]);
    // B stops too: nobody owns the session.
    drop(second);
    b.stop().await;
    let mut last = Value::Null;
    for n in 0..400 {
        sender.send(&common::command("control.cancel", "job")).await;
        let answer = sender.sync(&format!("gone-{n}")).await;
        last = answer.first().cloned().unwrap_or_default();
        if last["code"] == "no-route" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(last["code"], "no-route", "{last}");
}

#[tokio::test]
async fn a_node_started_after_a_claim_weighs_it_at_once() {
    let Some(server) = server(1 << 20).await else {
        return;
    };
    let a = common::start_with_token(node_config(&server), "t").await;
    let b = common::start_with_token(node_config(&server), "t").await;
    let mut target = owner(&a, "job", &b).await;
    // A node started now reads the claims the bucket holds before it
    // serves, not at their next refresh: an impostor under another source
    // makes the session ambiguous there at once, and is never sent the
    // command.
    let d = common::start_with_token(node_config(&server), "t").await;
    let mut watcher = d.ws("consumer").await;
    let roster = watcher.roster("at-once").await;
    assert_eq!(roster.len(), 1, "{roster:?}");
    let mut impostor = d
        .ws_hello(common::emitter_hello("impostor/1", &["control.cancel"]))
        .await;
    let mut claim = common::event("session.started", "job", 1);
    claim["source"] = "urn:aep:test:impostor".into();
    impostor.send(&claim).await;
    assert!(impostor.sync("claimed").await.is_empty());
    let mut sender = d.ws("consumer").await;
    let cancel = common::command("control.cancel", "job");
    sender.send(&cancel).await;
    let refused = sender.json().await;
    assert_eq!(refused["code"], "ambiguous", "{refused}");
    assert!(impostor.sync("never").await.is_empty(), "never diverted");
    assert!(target.sync("never").await.is_empty(), "never diverted");
}

#[tokio::test]
async fn a_stopped_node_has_deleted_its_claims_when_it_returns() {
    use futures_util::StreamExt;
    let Some(server) = server(1 << 20).await else {
        return;
    };
    let a = common::start_with_token(node_config(&server), "t").await;
    let b = common::start_with_token(node_config(&server), "t").await;
    let mut agent = a
        .ws_hello(common::emitter_hello("target/1", &["control.cancel"]))
        .await;
    for n in 0..50 {
        agent
            .send(&common::event("session.started", &format!("job{n}"), 0))
            .await;
    }
    assert!(agent.sync("claimed").await.is_empty());
    b.wait_roster("every claim", |e| e.len() == 50).await;
    // The agent left (its claims held for its return): nothing to drain.
    drop(agent);
    b.wait_roster("the agent gone", |e| e.is_empty()).await;
    // Serving returns once the node's entries are gone from the bucket:
    // the process may exit right after (`aep relay` drops its runtime).
    a.stop().await;
    let client = async_nats::connect(server.url.as_str()).await.unwrap();
    let claims = async_nats::jetstream::new(client)
        .get_key_value("AEP_CLAIMS")
        .await
        .unwrap();
    let mut keys = claims.keys().await.unwrap();
    let mut left = Vec::new();
    while let Some(key) = keys.next().await {
        left.push(key.unwrap());
    }
    assert!(left.is_empty(), "{} entries left: {left:?}", left.len());
}
