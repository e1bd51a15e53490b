//! `aep relay --nats`: three nodes as processes on one nats-server of the
//! test's own, one of them killed (SIGKILL, no goodbye). What a node
//! acknowledged survives it; a command sent on one node reaches `aep demo`
//! on another; the killed node's agent is `no-route`, never diverted, and
//! once its claims expire the agent back on another node owns its session.
//!
//! The server is `AEP_NATS_SERVER`, else `nats-server` on the `PATH`
//! (`.ci/run` installs one). Without it the test fails, saying so, unless
//! `AEP_SKIP_NATS_TESTS=1` opts out.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::live::{aep_at, jsonl, run_bounded, session, stop, WAIT};

const TOKEN: &str = "cluster-test-token";

/// A child process killed when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A nats-server with JetStream on a free loopback port; `None` when the
/// test is opted out of.
fn nats_server(store: &std::path::Path) -> Option<(Process, String)> {
    if std::env::var("AEP_SKIP_NATS_TESTS").as_deref() == Ok("1") {
        eprintln!("SKIPPED: AEP_SKIP_NATS_TESTS=1 opts out of the NATS cluster tests");
        return None;
    }
    let binary = std::env::var("AEP_NATS_SERVER").unwrap_or_else(|_| "nats-server".into());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new(&binary)
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(store)
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
        });
    let server = Process(child);
    let deadline = Instant::now() + WAIT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nats-server did not listen");
        std::thread::sleep(Duration::from_millis(25));
    }
    Some((server, format!("nats://127.0.0.1:{port}")))
}

/// `aep relay --nats` on a free port, once it listens, with its address.
fn node(nats: &str) -> (Process, String) {
    let mut child = crate::common::aep()
        .args([
            "relay",
            "--listen",
            "127.0.0.1:0",
            "--buffer",
            "1000",
            "--nats",
            nats,
        ])
        .env("AEP_TOKEN", TOKEN)
        .env("AEP_NO_UI", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the aep binary runs");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("listening on ").nth(1) {
                let _ = tx.send(rest.split_whitespace().next().unwrap_or("").to_owned());
            }
        }
    });
    let base = rx
        .recv_timeout(WAIT)
        .expect("the node says where it listens in time");
    (Process(child), base)
}

/// `aep demo` on `session` against the node at `base`.
fn demo(base: &str, session: &str) -> Child {
    aep_at(
        base,
        Some(TOKEN),
        &["demo", "--session", session, "--run", "r1", "--pace", "20"],
    )
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("the aep binary runs")
}

/// `aep demo` on `session` against the node at `base`, started again
/// while it refuses to start because the session has a live writer in
/// the cluster (at most 60 s: a dead node's claims expire).
fn demo_once_free(base: &str, session: &str) -> Child {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut child = demo(base, session);
        std::thread::sleep(Duration::from_secs(3));
        match child.try_wait().unwrap() {
            None => return child,
            Some(status) => assert!(
                Instant::now() < deadline,
                "aep demo on {base} kept exiting ({status})"
            ),
        }
    }
}

/// `aep cancel SESSION --run RUN` sent to the node at `base`: its exit
/// status and standard error.
fn cancel(base: &str, session: &str, run: &str) -> (i32, String) {
    let run = run_bounded(
        aep_at(
            base,
            Some(TOKEN),
            &["cancel", session, "--run", run, "--ack-window", "3000"],
        ),
        None,
    );
    (run.code, run.stderr)
}

/// Sends `aep cancel` to `base` until `done` takes its outcome (at most
/// 60 s, for claims to expire); the last outcome.
fn cancel_until(
    base: &str,
    session: &str,
    run: &str,
    done: impl Fn(i32, &str) -> bool,
) -> (i32, String) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (code, stderr) = cancel(base, session, run);
        if done(code, &stderr) || Instant::now() > deadline {
            return (code, stderr);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The events a node holds of `session`.
fn history(base: &str, session: &str) -> Vec<serde_json::Value> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime
        .block_on(aep_client::history::history(
            base,
            Some(TOKEN),
            session,
            64 << 20,
        ))
        .expect("the history reads")
        .events
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect()
}

#[test]
fn a_killed_node_loses_nothing_it_acknowledged_and_its_agent_is_never_diverted() {
    let store = tempfile::tempdir().unwrap();
    let Some((_server, nats)) = nats_server(store.path()) else {
        return;
    };
    let (_a, a) = node(&nats);
    let (mut b_process, b) = node(&nats);
    let (_c, c) = node(&nats);

    // Acknowledged (202) by node B, which dies below.
    let lines = session("urn:aep:test:cluster", "kept", 0, 200, 16);
    let run = run_bounded(
        aep_at(&b, Some(TOKEN), &["post", "-"]),
        Some(jsonl(&lines).as_bytes()),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);

    // The agent on node B, a command sent on node A: the agent's own
    // answer (a run it is not running: rejected, the session goes on).
    let mut agent = demo(&b, "job");
    let (code, stderr) = cancel_until(&a, "job", "nope", |_, stderr| {
        stderr.contains("rejected by the target")
    });
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("rejected by the target: invalid: run \"nope\" is not running"),
        "a command on node A reaches the demo on node B: {stderr}"
    );

    // Node B and its agent die without a word.
    let _ = b_process.0.kill();
    let _ = b_process.0.wait();
    let _ = stop(&mut agent, "KILL");
    let held: Vec<u64> = history(&c, "kept")
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(
        held,
        (0..200).collect::<Vec<_>>(),
        "node C holds what node B acknowledged, once"
    );

    // The owner's node is gone: refused on its behalf, not diverted.
    let (code, stderr) = cancel(&a, "job", "r1");
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("no-route"), "{stderr}");

    // The agent back on node C: it finds node B's claim in the roster
    // while that lives on, and starts once B's entry expired.
    let mut back = demo_once_free(&c, "job");
    let (code, stderr) = cancel_until(&a, "job", "r1", |code, stderr| {
        assert!(
            code == 0 || stderr.contains("no-route") || stderr.contains("ambiguous"),
            "refused on the owner's behalf meanwhile: {stderr}"
        );
        code == 0
    });
    assert_eq!(
        code, 0,
        "the agent back on node C owns its session: {stderr}"
    );
    assert!(stderr.contains("accepted by aep-demo"), "{stderr}");
    assert_eq!(stop(&mut back, "TERM"), Some(0));
}
