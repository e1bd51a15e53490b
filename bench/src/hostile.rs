//! `relay-hostile`: what a hostile client holding the relay's token (or
//! any local process, on a relay without one) can make a relay do. Each
//! attack runs against a relay on a loopback address while a monitor
//! samples the relay's resident memory (`/proc/PID/status`) and probes
//! `/healthz`; the report gives, per attack, the growth of the resident
//! set over its level before the attack, the slowest `/healthz` answer
//! during it, and what the wire said (a refusal, a close, a reply size).
//! The last attack, `sigterm`, sends SIGTERM during a large fan-out and
//! measures how long the relay takes to exit.
//!
//! Every wait is bounded; nothing leaves the machine.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::relay::client::Target;
use crate::relay::procfs;
use crate::relay::Error;

/// How long any one step may take before the attack reports it as stuck.
const STEP: Duration = Duration::from_secs(60);

/// The attacks, in the order they run (`sigterm` ends the relay).
pub const ATTACKS: [&str; 14] = [
    "closing",
    "claims",
    "fanout",
    "batches",
    "filters",
    "replay",
    "hellos",
    "hello-values",
    "big-events",
    "messages",
    "wide-json",
    "stuck-readers",
    "connections",
    "sigterm",
];

/// How hard each attack pushes; `full` is what a hostile review used,
/// `small` a quick check.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    /// Subscriptions per WebSocket connection.
    pub subscriptions: usize,
    /// Bytes of one subscription id (`closing`).
    pub id_bytes: usize,
    /// Sessions each subscription is delivered from (`closing`).
    pub sessions: usize,
    /// Sessions one emitter claims (`claims`).
    pub claims: usize,
    /// Bytes of the `emits` declaration (`claims`).
    pub emits_bytes: usize,
    /// Non-reading consumer connections (`fanout`, `sigterm`).
    pub consumers: usize,
    /// Events in the one batch fanned out (`fanout`, `sigterm`).
    pub batch: usize,
    /// Bytes of one filter's inclusion array (`filters`).
    pub filter_bytes: usize,
    /// How many times the buffer is overwritten under a slow reader
    /// (`replay`).
    pub overwrites: usize,
    /// Sessions the `replay` attack writes to.
    pub replay_sessions: usize,
    /// Events of ~512 bytes each `replay` round writes per session (the
    /// relay's replay depth overwrites the buffer once per round).
    pub replay_events: usize,
    /// Idle emitters (`hellos`) and bytes of each hello.
    pub hellos: usize,
    /// Bytes of each idle emitter's hello.
    pub hello_bytes: usize,
    /// Idle emitters whose hello declares about 60 KiB of `emits: [0,
    /// 0, ...]` (`hello-values`): little text, many values once parsed.
    pub hello_values: usize,
    /// Events posted (`big-events`) and bytes of each.
    pub big_events: usize,
    /// Bytes of each big event.
    pub big_event_bytes: usize,
    /// Emitters that begin a message and stall (`messages`), and
    /// emitters that send one wide event each (`wide-json`).
    pub messages: usize,
    /// Bytes of each such message (its frame's announced length; 7/8 of
    /// it is sent) and of each wide event.
    pub message_bytes: usize,
    /// Consumers that each watch a session of their own and never read
    /// (`stuck-readers`; half WebSocket, half SSE).
    pub stuck: usize,
    /// Bytes of each event posted to their sessions.
    pub stuck_event_bytes: usize,
    /// Consumer connections held open (`connections`; half WebSocket,
    /// half SSE).
    pub connections: usize,
}

impl Scale {
    /// The scale of the hostile review.
    pub const FULL: Scale = Scale {
        subscriptions: 64,
        id_bytes: 16 * 1024,
        sessions: 1024,
        claims: 20_000,
        emits_bytes: 50 * 1024,
        consumers: 60,
        batch: 10_000,
        filter_bytes: 3 << 20,
        overwrites: 6,
        replay_sessions: 20,
        replay_events: 10_000,
        hellos: 100,
        hello_bytes: 3 << 20,
        hello_values: 1000,
        big_events: 100,
        big_event_bytes: 15 << 20,
        messages: 300,
        message_bytes: 4 << 20,
        stuck: 60,
        stuck_event_bytes: 15 << 20,
        connections: 1000,
    };

    /// A quick run: the same attacks, a tenth of the load or less.
    pub const SMALL: Scale = Scale {
        subscriptions: 16,
        id_bytes: 4 * 1024,
        sessions: 128,
        claims: 2_000,
        emits_bytes: 8 * 1024,
        consumers: 8,
        batch: 2_000,
        filter_bytes: 256 * 1024,
        overwrites: 2,
        replay_sessions: 4,
        replay_events: 1_000,
        hellos: 10,
        hello_bytes: 256 * 1024,
        hello_values: 100,
        big_events: 8,
        big_event_bytes: 1 << 20,
        messages: 20,
        message_bytes: 1 << 20,
        stuck: 8,
        stuck_event_bytes: 2 << 20,
        connections: 100,
    };
}

/// What one attack did to the relay.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    /// The attack's name.
    pub attack: String,
    /// Resident set before the attack, MiB.
    pub rss_before_mib: f64,
    /// Highest resident set seen during the attack, MiB.
    pub rss_peak_mib: f64,
    /// Slowest `/healthz` answer during the attack, ms (a probe that got
    /// no answer counts as the time it waited).
    pub healthz_max_ms: f64,
    /// What the wire said and what was measured, in words.
    pub said: String,
}

/// The relay under attack.
pub struct Relay {
    /// Where it listens.
    pub target: Target,
    /// Its process, for memory and the SIGTERM.
    pub pid: u32,
    /// `?access_token=` for every request, when it has a token.
    pub token: Option<String>,
}

impl Relay {
    fn query(&self, first: bool) -> String {
        match &self.token {
            Some(t) => format!(
                "{}access_token={}",
                if first { '?' } else { '&' },
                crate::relay::client::query_escape(t)
            ),
            None => String::new(),
        }
    }

    fn ws_url(&self) -> String {
        format!("ws://{}/socket{}", self.target.addr, self.query(true))
    }

    async fn socket(&self, hello: Value) -> Result<Ws, Error> {
        let (mut ws, _) = tokio::time::timeout(
            STEP,
            tokio_tungstenite::connect_async_with_config(
                self.ws_url(),
                Some(
                    tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
                        .max_message_size(Some(256 << 20))
                        .max_frame_size(Some(256 << 20)),
                ),
                false,
            ),
        )
        .await
        .map_err(|_| Error::new("WebSocket connect: timed out"))?
        .map_err(|e| Error::new(format!("WebSocket connect: {e}")))?;
        ws.send(Message::text(hello.to_string()))
            .await
            .map_err(|e| Error::new(format!("sending hello: {e}")))?;
        let mut ws = Ws(ws);
        let reply = ws.next_json().await?;
        if reply["type"] != "hello" {
            return Err(Error::new(format!("hello refused: {}", brief(&reply))));
        }
        Ok(ws)
    }

    async fn post(&self, body: Bytes) -> Result<(), Error> {
        let mut conn = self.target.connect().await?;
        conn.post_events_at(&format!("/events{}", self.query(true)), body)
            .await
    }

    async fn metric(&self, name: &str) -> Option<f64> {
        let mut conn = self.target.connect().await.ok()?;
        let text = conn
            .get(&format!("/metrics{}", self.query(true)))
            .await
            .ok()?;
        String::from_utf8_lossy(&text).lines().find_map(|l| {
            let rest = l.strip_prefix(name)?;
            rest.trim().parse().ok()
        })
    }
}

struct Ws(WebSocketStream<MaybeTlsStream<TcpStream>>);

impl Ws {
    async fn send(&mut self, frame: Value) -> Result<(), Error> {
        self.send_text(frame.to_string()).await
    }

    async fn send_text(&mut self, text: String) -> Result<(), Error> {
        tokio::time::timeout(STEP, self.0.send(Message::text(text)))
            .await
            .map_err(|_| Error::new("a WebSocket send blocked"))?
            .map_err(|e| Error::new(format!("WebSocket send: {e}")))
    }

    /// The next text frame as JSON (pings skipped); an error on close.
    async fn next_json(&mut self) -> Result<Value, Error> {
        Ok(serde_json::from_str(&self.next_text().await?).unwrap_or(Value::Null))
    }

    async fn next_text(&mut self) -> Result<String, Error> {
        let deadline = Instant::now() + STEP;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.0.next()).await {
                Err(_) => return Err(Error::new("no frame within the step's bound")),
                Ok(None) => return Err(Error::new("the relay closed the connection")),
                Ok(Some(Err(e))) => return Err(Error::new(format!("WebSocket read: {e}"))),
                Ok(Some(Ok(Message::Text(t)))) => return Ok(t.to_string()),
                Ok(Some(Ok(Message::Close(frame)))) => {
                    return Err(Error::new(format!("closed: {frame:?}")))
                }
                Ok(Some(Ok(_))) => {}
            }
        }
    }

    /// Subscribes with `id` and `filter`; what the relay answered.
    async fn subscribe(&mut self, id: Value, filter: Value) -> Result<Value, Error> {
        self.send(json!({"type": "subscribe", "id": id, "filter": filter}))
            .await?;
        self.next_json().await
    }
}

fn hello(role: &str, emits: Option<Value>) -> Value {
    let mut hello = json!({"type": "hello", "versions": ["0.1"], "role": role, "identity": {"agent": "hostile"}});
    if let Some(emits) = emits {
        hello["capabilities"] = json!({"emits": emits});
    }
    hello
}

/// An event of `session` at `seq`, with `data.message` of `pad` bytes.
fn event(session: &str, seq: u64, pad: usize) -> String {
    json!({
        "aep": "0.1", "id": format!("{session}-{seq}"), "type": "progress.status",
        "time": "2026-12-06T10:00:00Z", "source": "urn:hostile", "agent": "hostile",
        "session": session, "seq": seq, "severity": "notice",
        "data": {"message": "x".repeat(pad)},
    })
    .to_string()
}

/// A list of distinct strings whose JSON is about `bytes` long.
fn strings(bytes: usize, prefix: &str) -> Value {
    let each = 32;
    Value::Array(
        (0..bytes / each)
            .map(|i| Value::String(format!("{prefix}{i:0>24}")))
            .collect(),
    )
}

fn brief(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 160 {
        format!("{}…", text.chars().take(160).collect::<String>())
    } else {
        text
    }
}

/// Watches the relay while an attack runs.
struct Monitor {
    stop: Arc<AtomicBool>,
    peak_kib: Arc<AtomicU64>,
    healthz_us: Arc<AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    before_kib: u64,
}

impl Monitor {
    fn start(relay: &Relay) -> Monitor {
        let before_kib = procfs::resident(relay.pid).map_or(0, |r| r.current_kib);
        let stop = Arc::new(AtomicBool::new(false));
        let peak_kib = Arc::new(AtomicU64::new(before_kib));
        let healthz_us = Arc::new(AtomicU64::new(0));
        let rss = {
            let (stop, peak, pid) = (stop.clone(), peak_kib.clone(), relay.pid);
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(r) = procfs::resident(pid) {
                        peak.fetch_max(r.current_kib, Ordering::Relaxed);
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
        };
        let health = {
            let (stop, worst) = (stop.clone(), healthz_us.clone());
            let target = relay.target.clone();
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let began = Instant::now();
                    let probe = async {
                        let mut conn = target.connect().await.ok()?;
                        conn.get("/healthz").await.ok()
                    };
                    let _ = tokio::time::timeout(STEP, probe).await;
                    worst.fetch_max(began.elapsed().as_micros() as u64, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })
        };
        Monitor {
            stop,
            peak_kib,
            healthz_us,
            tasks: vec![rss, health],
            before_kib,
        }
    }

    async fn finish(self, attack: &str, said: String) -> Outcome {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            let _ = tokio::time::timeout(STEP, task).await;
        }
        Outcome {
            attack: attack.to_owned(),
            rss_before_mib: self.before_kib as f64 / 1024.0,
            rss_peak_mib: self.peak_kib.load(Ordering::Relaxed) as f64 / 1024.0,
            healthz_max_ms: self.healthz_us.load(Ordering::Relaxed) as f64 / 1000.0,
            said,
        }
    }
}

/// Runs `attack` against `relay` at `scale`.
pub async fn run(relay: &Relay, attack: &str, scale: Scale) -> Result<Outcome, Error> {
    let monitor = Monitor::start(relay);
    let said = match attack {
        "closing" => closing(relay, scale).await,
        "claims" => claims(relay, scale).await,
        "fanout" => fanout(relay, scale, false).await,
        "batches" => batches(relay, scale).await,
        "filters" => filters(relay, scale).await,
        "replay" => replay(relay, scale).await,
        "hellos" => hellos(relay, scale).await,
        "hello-values" => hello_values(relay, scale).await,
        "big-events" => big_events(relay, scale).await,
        "messages" => messages(relay, scale).await,
        "wide-json" => wide_json(relay, scale).await,
        "stuck-readers" => stuck_readers(relay, scale).await,
        "connections" => connections(relay, scale).await,
        "sigterm" => fanout(relay, scale, true).await,
        other => return Err(Error::new(format!("no attack {other:?}"))),
    };
    let said = said.unwrap_or_else(|e| format!("stopped: {e}"));
    Ok(monitor.finish(attack, said).await)
}

/// Long subscription ids and many recorded positions, then a binary frame
/// (which the relay answers by closing): how big the `closing` frame is.
async fn closing(relay: &Relay, scale: Scale) -> Result<String, Error> {
    let mut ws = relay.socket(hello("consumer", None)).await?;
    // An id the relay refuses is retried at 200 bytes, so the positions
    // and the `closing` frame are exercised at the bound as well.
    let (mut taken, mut shorter) = (0, 0);
    let mut refused = None;
    for i in 0..scale.subscriptions {
        let id = format!("{i:04}{}", "i".repeat(scale.id_bytes));
        let reply = ws.subscribe(Value::String(id), json!({})).await?;
        if reply["type"] == "subscribed" {
            taken += 1;
            continue;
        }
        refused.get_or_insert_with(|| brief(&reply));
        let id = format!("{i:04}{}", "i".repeat(scale.id_bytes.min(200)));
        if ws.subscribe(Value::String(id), json!({})).await?["type"] == "subscribed" {
            shorter += 1;
        }
    }
    let refused = refused.map(|r| format!("{r}; {shorter} taken with 200-byte ids instead"));
    let taken = taken + shorter;
    // Batches small enough for the consumer's queue, each read before
    // the next, so every position is recorded.
    let mut deliveries = 0;
    let sessions: Vec<usize> = (0..scale.sessions).collect();
    for group in sessions.chunks(32) {
        let lines: Vec<String> = group
            .iter()
            .map(|s| event(&format!("closing-{s}"), 0, 0))
            .collect();
        relay.post(Bytes::from(lines.join("\n") + "\n")).await?;
        for _ in 0..taken * group.len() {
            ws.next_text().await?;
            deliveries += 1;
        }
    }
    ws.0.send(Message::binary(vec![0u8; 4]))
        .await
        .map_err(|e| Error::new(format!("sending the binary frame: {e}")))?;
    let mut closing_bytes = None;
    for _ in 0..16 {
        match ws.next_text().await {
            Ok(text) if text.contains("\"closing\"") => {
                closing_bytes = Some(text.len());
                break;
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok(format!(
        "{taken} subscriptions taken{}; {deliveries} deliveries read; closing frame: {}",
        refused.map_or(String::new(), |r| format!(" (first refusal: {r})")),
        closing_bytes.map_or("none arrived".into(), |b| format!("{b} bytes"))
    ))
}

/// One emitter with a large declaration claims many sessions; then a
/// consumer asks for the roster.
async fn claims(relay: &Relay, scale: Scale) -> Result<String, Error> {
    let emits = strings(scale.emits_bytes, "progress.x");
    let mut emitter = relay.socket(hello("emitter", Some(emits))).await?;
    for s in 0..scale.claims {
        emitter
            .send_text(event(&format!("claim-{s}"), 0, 0))
            .await?;
    }
    // The relay reads frames in order: a ping answered means every event
    // before it was taken.
    emitter.send(json!({"type": "ping", "t": 1})).await?;
    loop {
        if emitter.next_json().await?["type"] == "pong" {
            break;
        }
    }
    let mut consumer = relay.socket(hello("consumer", None)).await?;
    let began = Instant::now();
    consumer.send(json!({"type": "roster", "id": "r"})).await?;
    let said = match consumer.next_text().await {
        Ok(text) => {
            let reply: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let entries = reply["entries"].as_array().map_or(0, Vec::len);
            format!(
                "roster: {} ({} entries, {} bytes) in {:.0} ms",
                reply["type"],
                entries,
                text.len(),
                began.elapsed().as_secs_f64() * 1000.0
            )
        }
        Err(e) => format!("roster: no reply ({e})"),
    };
    Ok(format!(
        "{} sessions claimed; {said}; relay_buffered_sessions {:?}",
        scale.claims,
        relay.metric("aep_relay_sessions").await
    ))
}

/// Non-reading consumers with many subscriptions each, then one large
/// batch; with `sigterm`, SIGTERM is sent while the batch is in flight
/// and the relay's exit is timed.
async fn fanout(relay: &Relay, scale: Scale, sigterm: bool) -> Result<String, Error> {
    let mut consumers = Vec::new();
    for _ in 0..scale.consumers {
        let mut ws = relay.socket(hello("consumer", None)).await?;
        for i in 0..scale.subscriptions {
            ws.subscribe(json!(i), json!({})).await?;
        }
        consumers.push(ws);
    }
    let lines: Vec<String> = (0..scale.batch as u64)
        .map(|seq| event("fanout", seq, 0))
        .collect();
    let body = Bytes::from(lines.join("\n") + "\n");
    let began = Instant::now();
    let post = relay.post(body);
    if !sigterm {
        let posted = post.await;
        let took = began.elapsed();
        drop(consumers);
        return Ok(format!(
            "{} consumers x {} subscriptions; a {}-event POST answered in {:.0} ms ({})",
            scale.consumers,
            scale.subscriptions,
            scale.batch,
            took.as_secs_f64() * 1000.0,
            posted.map_or_else(|e| e.to_string(), |()| "202".into())
        ));
    }
    let path = format!("/events{}", relay.query(true));
    let posting = tokio::spawn(post_owned(relay.target.clone(), path, lines));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sent = Instant::now();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &relay.pid.to_string()])
        .status()
        .map_err(|e| Error::new(format!("kill: {e}")))?;
    if !killed.success() {
        return Err(Error::new("kill -TERM failed"));
    }
    let deadline = sent + Duration::from_secs(120);
    let proc = format!("/proc/{}", relay.pid);
    while alive(&proc) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let exit = sent.elapsed();
    posting.abort();
    drop(consumers);
    Ok(format!(
        "SIGTERM {:.0} ms into a {}-event batch to {} consumers x {}: {}",
        (sent - began).as_secs_f64() * 1000.0,
        scale.batch,
        scale.consumers,
        scale.subscriptions,
        if alive(&proc) {
            "still running after 120 s".to_owned()
        } else {
            format!("exited after {:.0} ms", exit.as_secs_f64() * 1000.0)
        }
    ))
}

/// Consumers whose many filters match nothing, then three large batches
/// at once: the relay's CPU goes to filtering, and `/healthz` must still
/// answer.
async fn batches(relay: &Relay, scale: Scale) -> Result<String, Error> {
    let mut consumers = Vec::new();
    for c in 0..(scale.consumers / 3).max(1) {
        let mut ws = relay.socket(hello("consumer", None)).await?;
        for i in 0..scale.subscriptions {
            let mut sessions = strings(250 * 32, &format!("b{c}-{i}-"));
            if let Some(list) = sessions.as_array_mut() {
                list.truncate(255);
            }
            ws.subscribe(json!(i), json!({"session": sessions})).await?;
        }
        consumers.push(ws);
    }
    let began = Instant::now();
    let posts: Vec<_> = (0..3)
        .map(|b| {
            let lines: Vec<String> = (0..scale.batch as u64)
                .map(|seq| event(&format!("batch-{b}"), seq, 0))
                .collect();
            let path = format!("/events{}", relay.query(true));
            tokio::spawn(post_owned(relay.target.clone(), path, lines))
        })
        .collect();
    for post in posts {
        let _ = tokio::time::timeout(STEP, post).await;
    }
    drop(consumers);
    Ok(format!(
        "{} consumers x {} subscriptions matching nothing; three {}-event POSTs at once took {:.0} ms",
        (scale.consumers / 3).max(1),
        scale.subscriptions,
        scale.batch,
        began.elapsed().as_secs_f64() * 1000.0
    ))
}

/// Whether the process behind `/proc/PID` is still running (a zombie,
/// exited but not yet reaped, counts as gone).
fn alive(proc: &str) -> bool {
    std::fs::read_to_string(format!("{proc}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
}

async fn post_owned(target: Target, path: String, lines: Vec<String>) {
    if let Ok(mut conn) = target.connect().await {
        let _ = conn
            .post_events_at(&path, Bytes::from(lines.join("\n") + "\n"))
            .await;
    }
}

/// Subscriptions with huge inclusion arrays, then events fanned out.
async fn filters(relay: &Relay, scale: Scale) -> Result<String, Error> {
    let mut ws = relay.socket(hello("consumer", None)).await?;
    let (mut taken, mut shorter) = (0, 0);
    let mut refused = None;
    for i in 0..scale.subscriptions {
        let mut sessions = strings(scale.filter_bytes, &format!("f{i}-"));
        if let Some(list) = sessions.as_array_mut() {
            list.push(Value::String("filters".into()));
        }
        let reply = ws.subscribe(json!(i), json!({"session": sessions})).await?;
        if reply["type"] == "subscribed" {
            taken += 1;
            continue;
        }
        refused.get_or_insert_with(|| brief(&reply));
        // At the bound instead: the most values an inclusion may hold.
        let mut at_bound = strings(250 * 32, &format!("f{i}-"));
        if let Some(list) = at_bound.as_array_mut() {
            list.truncate(255);
            list.push(Value::String("filters".into()));
        }
        let reply = ws.subscribe(json!(i), json!({"session": at_bound})).await?;
        if reply["type"] == "subscribed" {
            shorter += 1;
        }
    }
    let refused =
        refused.map(|r| format!("{r}; {shorter} taken with 256-value inclusions instead"));
    let taken = taken + shorter;
    let count = 200;
    let lines: Vec<String> = (0..count).map(|seq| event("filters", seq, 0)).collect();
    let began = Instant::now();
    relay.post(Bytes::from(lines.join("\n") + "\n")).await?;
    let took = began.elapsed();
    Ok(format!(
        "{taken} subscriptions taken, asked with {} KiB filters{}; {count} events posted in {:.0} ms ({:.2} ms per event)",
        scale.filter_bytes / 1024,
        refused.map_or(String::new(), |r| format!(" (first refusal: {r})")),
        took.as_secs_f64() * 1000.0,
        took.as_secs_f64() * 1000.0 / count as f64
    ))
}

/// A `from=all` SSE reader that never reads while the buffer is
/// overwritten several times.
async fn replay(relay: &Relay, scale: Scale) -> Result<String, Error> {
    let per_event = 512;
    let (sessions, per_session) = (scale.replay_sessions, scale.replay_events as u64);
    let fill = |round: u64| -> Vec<Bytes> {
        (0..sessions)
            .map(|s| {
                let lines: Vec<String> = (0..per_session)
                    .map(|i| event(&format!("replay-{s}"), round * per_session + i, per_event))
                    .collect();
                Bytes::from(lines.join("\n") + "\n")
            })
            .collect()
    };
    for body in fill(0) {
        relay.post(body).await?;
    }
    let conn = relay.target.connect().await?;
    let stream = conn
        .stream(&format!("/stream?from=all{}", relay.query(false)))
        .await?;
    for round in 1..=scale.overwrites as u64 {
        for body in fill(round) {
            relay.post(body).await?;
        }
    }
    let buffered = relay.metric("aep_relay_buffered_bytes").await;
    drop(stream);
    Ok(format!(
        "a silent from=all reader while {sessions} sessions x {per_session} events of ~{per_event} B were overwritten {} times; buffered bytes at the end {:?}",
        scale.overwrites, buffered
    ))
}

/// Idle emitters, each with a large hello.
async fn hellos(relay: &Relay, scale: Scale) -> Result<String, Error> {
    let (mut held, mut smaller) = (Vec::new(), Vec::new());
    let mut refused = None;
    for i in 0..scale.hellos {
        let emits = strings(scale.hello_bytes, &format!("h{i}."));
        match relay.socket(hello("emitter", Some(emits))).await {
            Ok(ws) => held.push(ws),
            Err(e) => {
                refused.get_or_insert_with(|| e.to_string());
                // At the bound instead: a hello of about 60 KiB.
                let emits = strings(scale.hello_bytes.min(60 * 1024), &format!("h{i}."));
                if let Ok(ws) = relay.socket(hello("emitter", Some(emits))).await {
                    smaller.push(ws);
                }
            }
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (kept, instead) = (held.len(), smaller.len());
    drop((held, smaller));
    Ok(format!(
        "{kept} of {} emitters with {} KiB hellos held{}",
        scale.hellos,
        scale.hello_bytes / 1024,
        refused.map_or(String::new(), |r| format!(
            " (first refusal: {r}; {instead} held with 60 KiB hellos instead)"
        ))
    ))
}

/// Idle emitters whose hellos are just under the relay's 64 KiB bound and
/// declare `emits` as about 30 000 zeros: two bytes of text each, many
/// times that as parsed values, so what the relay keeps of them is what
/// it must charge.
async fn hello_values(relay: &Relay, scale: Scale) -> Result<String, Error> {
    let zeros = Value::Array(vec![json!(0); 30 * 1024]);
    let mut held = Vec::new();
    let mut refused = None;
    for _ in 0..scale.hello_values {
        match relay.socket(hello("emitter", Some(zeros.clone()))).await {
            Ok(ws) => held.push(ws),
            Err(e) => {
                refused.get_or_insert_with(|| e.to_string());
            }
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let kept = held.len();
    drop(held);
    Ok(format!(
        "{kept} of {} emitters with 60 KiB hellos of zeros held{}",
        scale.hello_values,
        refused.map_or(String::new(), |r| format!(" (first refusal: {r})"))
    ))
}

/// Large events into one session, watched by a live consumer that never
/// reads (what its queue keeps alive outlives the buffer's eviction).
async fn big_events(relay: &Relay, scale: Scale) -> Result<String, Error> {
    let stalled = relay
        .target
        .connect()
        .await?
        .stream(&format!("/stream{}", relay.query(true)))
        .await?;
    let mut accepted = 0;
    let mut refused = None;
    for seq in 0..scale.big_events as u64 {
        let line = event("big", seq, scale.big_event_bytes);
        match relay.post(Bytes::from(line)).await {
            Ok(()) => accepted += 1,
            Err(e) => {
                refused.get_or_insert_with(|| e.to_string());
            }
        }
    }
    drop(stalled);
    Ok(format!(
        "{accepted} of {} events of {} KiB accepted with a consumer that never reads{}; buffered bytes {:?}",
        scale.big_events,
        scale.big_event_bytes / 1024,
        refused.map_or(String::new(), |r| format!(" (first refusal: {r})")),
        relay.metric("aep_relay_buffered_bytes").await
    ))
}

/// Emitters that each begin a message just under the frame limit, send
/// 7/8 of it and stall: what the relay reads of them is what it holds.
async fn messages(relay: &Relay, scale: Scale) -> Result<String, Error> {
    use tokio::io::AsyncWriteExt;
    let len = scale.message_bytes - 1024;
    let mut frame = vec![0x81, 0x80 | 127];
    frame.extend_from_slice(&(len as u64).to_be_bytes());
    frame.extend_from_slice(&[0; 4]);
    frame.resize(frame.len() + len * 7 / 8, b' ');
    let frame = Bytes::from(frame);
    let mut writers = Vec::new();
    for _ in 0..scale.messages {
        let mut ws = relay.socket(hello("emitter", None)).await?;
        let frame = frame.clone();
        writers.push(tokio::spawn(async move {
            // The relay may stop reading: the write stays blocked until the
            // connection is closed or the attack ends.
            let _ = tokio::time::timeout(STEP, ws.0.get_mut().write_all(&frame)).await;
            ws
        }));
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let inflight = relay.metric("aep_relay_inflight_bytes").await;
    for writer in &writers {
        writer.abort();
    }
    Ok(format!(
        "{} emitters each sent {} KiB of a {} KiB message and stalled; bytes in flight after 5 s: {inflight:?}",
        scale.messages,
        len * 7 / 8 / 1024,
        len / 1024
    ))
}

/// Emitters that each send one event whose data is a wide array of small
/// values (text that would make a tree many times its size).
async fn wide_json(relay: &Relay, scale: Scale) -> Result<String, Error> {
    let count = (scale.message_bytes - 1024) / 2;
    let mut values = String::with_capacity(2 * count + 2);
    values.push('[');
    for n in 0..count {
        values.push_str(if n == 0 { "0" } else { ",0" });
    }
    values.push(']');
    let mut sent = Vec::new();
    for i in 0..scale.messages.min(40) {
        let mut ws = relay.socket(hello("emitter", None)).await?;
        let text = format!(
            r#"{{"aep":"0.1","id":"wide-{i}","type":"progress.status","time":"2026-12-06T10:00:00Z","source":"urn:hostile:wide","agent":"hostile","session":"wide-{i}","seq":0,"severity":"notice","data":{{"message":"m","values":{values}}}}}"#
        );
        sent.push(tokio::spawn(async move {
            let ok = ws.send_text(text).await.is_ok();
            tokio::time::sleep(Duration::from_secs(2)).await;
            ok
        }));
    }
    let mut ok = 0;
    for task in sent {
        if task.await.unwrap_or(false) {
            ok += 1;
        }
    }
    Ok(format!(
        "{ok} emitters sent an event of {count} zeros ({} KiB) at once; events in: {:?}",
        (2 * count) / 1024,
        relay.metric("aep_relay_events_in_total").await
    ))
}

/// Consumers that each watch a session of their own and never read, and
/// large events posted to those sessions in turn, twice round: each event
/// is one consumer's alone, and what the consumers hold alive (deliveries
/// waiting and being written) outlives the buffer's eviction.
async fn stuck_readers(relay: &Relay, scale: Scale) -> Result<String, Error> {
    let session = |i: usize| format!("stuck-{i}");
    let (mut sockets, mut streams) = (Vec::new(), Vec::new());
    for i in 0..scale.stuck {
        let filter = json!({"session": session(i)});
        if i % 2 == 0 {
            let mut ws = relay.socket(hello("consumer", None)).await?;
            let reply = ws.subscribe(json!("s"), filter).await?;
            if reply["type"] != "subscribed" {
                return Err(Error::new(format!("subscribe refused: {}", brief(&reply))));
            }
            sockets.push(ws);
        } else {
            let path = format!(
                "/stream?filter={}{}",
                crate::relay::client::query_escape(&filter.to_string()),
                relay.query(false)
            );
            streams.push(relay.target.connect().await?.stream(&path).await?);
        }
    }
    let (mut accepted, mut refused) = (0, None);
    for round in 0..2u64 {
        for i in 0..scale.stuck {
            let line = event(&session(i), round, scale.stuck_event_bytes);
            match relay.post(Bytes::from(line)).await {
                Ok(()) => accepted += 1,
                Err(e) => {
                    refused.get_or_insert_with(|| e.to_string());
                }
            }
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let queued = relay.metric("aep_relay_queued_bytes").await;
    let buffered = relay.metric("aep_relay_buffered_bytes").await;
    drop((sockets, streams));
    Ok(format!(
        "{accepted} of {} events of {} KiB accepted, each for one of {} consumers that never read{}; queued bytes {queued:?}, buffered bytes {buffered:?}",
        2 * scale.stuck,
        scale.stuck_event_bytes / 1024,
        scale.stuck,
        refused.map_or(String::new(), |r| format!(" (first refusal: {r})")),
    ))
}

/// Consumer connections that subscribe to everything and stop reading
/// while events of 1 MiB are fanned out to them: what one connection
/// costs the relay beyond what the budgets count (its read and write
/// buffers, its task, its half-written frame).
async fn connections(relay: &Relay, scale: Scale) -> Result<String, Error> {
    let before = procfs::resident(relay.pid).map_or(0, |r| r.current_kib);
    let (mut sockets, mut streams) = (Vec::new(), Vec::new());
    for i in 0..scale.connections {
        if i % 2 == 0 {
            let mut ws = relay.socket(hello("consumer", None)).await?;
            let reply = ws.subscribe(json!("s"), json!({})).await?;
            if reply["type"] != "subscribed" {
                return Err(Error::new(format!("subscribe refused: {}", brief(&reply))));
            }
            sockets.push(ws);
        } else {
            let path = format!("/stream{}", relay.query(true));
            streams.push(relay.target.connect().await?.stream(&path).await?);
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle = procfs::resident(relay.pid).map_or(0, |r| r.current_kib);
    let mut accepted = 0;
    for seq in 0..8 {
        if relay
            .post(Bytes::from(event("connections", seq, 1 << 20)))
            .await
            .is_ok()
        {
            accepted += 1;
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let stalled = procfs::resident(relay.pid).map_or(0, |r| r.current_kib);
    let queued = relay.metric("aep_relay_queued_bytes").await;
    drop((sockets, streams));
    let per = |kib: u64| kib.saturating_sub(before) as f64 / scale.connections.max(1) as f64;
    Ok(format!(
        "{} consumers: {:.0} KiB each when idle; {accepted} events of 1 MiB posted to them, never read: {:.0} KiB each; queued bytes {queued:?}",
        scale.connections,
        per(idle),
        per(stalled),
    ))
}
