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
        let mut command = super::aep();
        command.args(args).args(["--relay", &self.base]);
        command.current_dir(super::crate_dir());
        command.env_remove("AEP_RELAY").env_remove("AEP_TOKEN");
        if let Some(token) = &self.token {
            command.env("AEP_TOKEN", token);
        }
        command
    }

    /// Posts `lines` with `aep post` and checks it exits 0.
    pub fn post(&self, lines: &[String]) {
        let run = super::run_command(self.aep(&["post", "-"]), Some(jsonl(lines).as_bytes()));
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
