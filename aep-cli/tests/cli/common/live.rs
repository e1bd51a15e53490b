//! An in-process relay on its own thread and runtime, for the tests of the
//! live commands (which run the built binary against it), and the events
//! they post.
#![allow(dead_code)]

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aep_relay::{Config, Relay, ShutdownHandle, Token};

/// The bound on every wait in these tests.
pub const WAIT: Duration = Duration::from_secs(30);

/// A running relay; dropping it shuts it down.
pub struct TestRelay {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The token, if the relay has one.
    pub token: Option<String>,
    shutdown: ShutdownHandle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestRelay {
    /// A relay with `token` (and `config` besides).
    pub fn start(token: Option<&str>, config: Config) -> TestRelay {
        let config = config.token(token.and_then(Token::new));
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let relay = Relay::new(config).unwrap();
                tx.send((listener.local_addr().unwrap(), relay.shutdown_handle()))
                    .unwrap();
                let _ = relay.serve(listener).await;
            });
        });
        let (address, shutdown) = rx.recv_timeout(WAIT).expect("the relay starts");
        TestRelay {
            base: format!("http://{address}"),
            token: token.map(str::to_owned),
            shutdown,
            thread: Some(thread),
        }
    }

    /// The events the relay holds of `session` (a `live=0` read).
    pub fn history(&self, session: &str) -> Vec<String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime
            .block_on(aep_client::history::history(
                &self.base,
                self.token.as_deref(),
                session,
                64 << 20,
            ))
            .expect("the history reads")
            .events
    }

    /// `aep ARGS` with `--relay` and the token in the environment.
    pub fn aep(&self, args: &[&str]) -> Command {
        aep_at(&self.base, self.token.as_deref(), args)
    }

    /// Posts `lines` with `aep post` and checks it exits 0.
    pub fn post(&self, lines: &[String]) {
        let run = run_bounded(self.aep(&["post", "-"]), Some(jsonl(lines).as_bytes()));
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
}

impl Drop for TestRelay {
    fn drop(&mut self) {
        self.shutdown.shutdown();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// `aep ARGS` against the relay at `base`, with `--relay` and the token
/// in the environment.
pub fn aep_at(base: &str, token: Option<&str>, args: &[&str]) -> Command {
    let mut command = super::aep();
    command.args(args).args(["--relay", base]);
    command.current_dir(super::crate_dir());
    command.env_remove("AEP_RELAY").env_remove("AEP_TOKEN");
    if let Some(token) = token {
        command.env("AEP_TOKEN", token);
    }
    command
}

/// Lines as a JSONL text.
pub fn jsonl(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// A valid session: `session.started` at seq 0 (when `from` is 0), then
/// `run.started`, then `progress.status` events, up to seq `to`
/// (exclusive); each `data` padded with `pad` bytes.
pub fn session(source: &str, session: &str, from: u64, to: u64, pad: usize) -> Vec<String> {
    (from..to)
        .map(|seq| {
            let (kind, data) = match seq {
                0 => ("session.started", serde_json::json!({})),
                1 => ("run.started", serde_json::json!({})),
                _ => (
                    "progress.status",
                    serde_json::json!({"message": format!("step {seq}"), "phase": "x".repeat(pad)}),
                ),
            };
            let mut event = serde_json::json!({
                "aep": "0.1", "id": format!("{session}-e{seq}"), "type": kind,
                "time": format!("2026-11-30T09:{:02}:{:02}Z", (seq / 60) % 60, seq % 60),
                "source": source, "agent": "test-agent", "session": session, "seq": seq,
                "data": data,
            });
            if seq >= 1 {
                event["run"] = "r1".into();
            }
            if seq >= 2 {
                // `message` is free text.
                event["capture"] = "redacted".into();
            }
            event.to_string()
        })
        .collect()
}

/// Spawns `command` with its output piped.
pub fn spawn(mut command: Command) -> Child {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the aep binary runs")
}

/// Sends `signal` (`TERM`, `KILL`) to `child` and waits for its exit code
/// within the bound (`None`: killed by the signal).
pub fn stop(child: &mut Child, signal: &str) -> Option<i32> {
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status();
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        assert!(
            Instant::now() < deadline,
            "the command did not stop within {WAIT:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The rest of a child's standard error (after it exited).
pub fn stderr_of(child: &mut Child) -> String {
    let mut text = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut text);
    }
    text
}

/// Waits, within the bound, until `check` holds.
pub fn until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not within {WAIT:?}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// A reader of a child's standard output, line by line, on a thread, so
/// that every wait for a line is bounded.
pub struct Lines(std::sync::mpsc::Receiver<String>);

impl Lines {
    /// Starts reading `child`'s standard output.
    pub fn of(child: &mut Child) -> Lines {
        Lines::read(child.stdout.take().expect("stdout is piped"))
    }

    /// Starts reading `child`'s standard error.
    pub fn of_stderr(child: &mut Child) -> Lines {
        Lines::read(child.stderr.take().expect("stderr is piped"))
    }

    fn read(out: impl Read + Send + 'static) -> Lines {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Lines(rx)
    }

    /// The next `n` lines, within the bound.
    pub fn take(&self, n: usize) -> Vec<String> {
        let deadline = Instant::now() + WAIT;
        (0..n)
            .map(|i| {
                self.0
                    .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                    .unwrap_or_else(|_| {
                        panic!("line {} of {n} did not come within {WAIT:?}", i + 1)
                    })
            })
            .collect()
    }

    /// Lines until one holds `text` (within the bound); all of them.
    pub fn until(&self, text: &str) -> Vec<String> {
        let deadline = Instant::now() + WAIT;
        let mut lines = Vec::new();
        loop {
            let line = self
                .0
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| panic!("no line with {text:?} within {WAIT:?}: {lines:#?}"));
            let found = line.contains(text);
            lines.push(line);
            if found {
                return lines;
            }
        }
    }

    /// The next line, or `None` when none comes within the bound.
    pub fn next(&self) -> Option<String> {
        self.0.recv_timeout(WAIT).ok()
    }

    /// Whatever else comes within `wait`.
    pub fn rest(&self, wait: Duration) -> Vec<String> {
        let deadline = Instant::now() + wait;
        let mut lines = Vec::new();
        while let Ok(line) = self
            .0
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            lines.push(line);
        }
        lines
    }
}

/// `aep demo` on `session` (run `r1`, fast), the agent that answers
/// commands.
pub fn demo(relay: &TestRelay, session: &str) -> Child {
    let mut command = super::aep();
    command
        .args([
            "demo",
            "--relay",
            &relay.base,
            "--session",
            session,
            "--run",
            "r1",
            "--pace",
            "20",
        ])
        .env_remove("AEP_RELAY")
        .env_remove("AEP_TOKEN");
    if let Some(token) = &relay.token {
        command.env("AEP_TOKEN", token);
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the aep binary runs")
}

/// The first event of `session` in the relay's history that `pick` takes,
/// within the bound.
pub fn wait_for(
    relay: &TestRelay,
    session: &str,
    mut pick: impl FnMut(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let mut found = None;
    until("the awaited event is in the history", || {
        found = relay
            .history(session)
            .iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|e| pick(e));
        found.is_some()
    });
    found.unwrap()
}

/// A control target that claims a session, declares the commands, and
/// never answers: what it receives is kept. Dropping it disconnects.
pub struct SilentTarget {
    /// The command lines received.
    pub received: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SilentTarget {
    /// Connects to `relay` and claims `session`.
    pub fn start(relay: &TestRelay, claimed: &str) -> SilentTarget {
        use futures_util::{SinkExt, StreamExt};
        use tokio_tungstenite::tungstenite::Message;
        let url = format!(
            "{}/socket?access_token={}",
            relay.base.replace("http://", "ws://"),
            relay.token.clone().unwrap_or_default()
        );
        let claim = session("urn:aep:silent", claimed, 0, 1, 0).remove(0);
        let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = received.clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready, is_ready) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
                let hello = serde_json::json!({"type": "hello", "versions": ["0.1"], "role": "emitter",
                    "identity": {"agent": "silent"},
                    "capabilities": {"control": {"accepts": ["control.cancel", "control.attention.respond"]}}});
                ws.send(Message::text(hello.to_string())).await.unwrap();
                ws.send(Message::text(claim)).await.unwrap();
                let mut stopped = std::pin::pin!(stopped);
                let mut said = false;
                loop {
                    tokio::select! {
                        _ = &mut stopped => break,
                        message = ws.next() => match message {
                            Some(Ok(Message::Text(text))) => {
                                if text.contains("\"type\":\"hello\"") && !said {
                                    said = true;
                                    let _ = ready.send(());
                                } else if text.contains("control.") {
                                    kept.lock().unwrap().push(text.to_string());
                                }
                            }
                            Some(Ok(_)) => {}
                            _ => break,
                        }
                    }
                }
            });
        });
        is_ready
            .recv_timeout(WAIT)
            .expect("the silent target says hello");
        SilentTarget {
            received,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for SilentTarget {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Runs a prepared `aep` command as `run_command` does, but killed (and
/// the test failed) when it has not exited within the bound.
pub fn run_bounded(mut command: Command, stdin: Option<&[u8]>) -> super::Run {
    use std::io::Write;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the aep binary runs");
    let mut input = child.stdin.take().expect("stdin is piped");
    let bytes = stdin.unwrap_or_default().to_vec();
    std::thread::spawn(move || {
        let _ = input.write_all(&bytes);
    });
    let read = |mut from: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = from.read_to_string(&mut text);
            text
        })
    };
    let out = read(Box::new(child.stdout.take().expect("stdout is piped")));
    let err = read(Box::new(child.stderr.take().expect("stderr is piped")));
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?} did not exit within {WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let run = super::Run {
        code: status.code().expect("exited, not killed by a signal"),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    super::assert_no_panic(&run);
    run
}
