//! `nats-ceiling` on tiny counts against a nats-server of its own, so it
//! cannot rot: every phase runs and the summary has its rows. No timing
//! is asserted.
//!
//! The server is `AEP_NATS_SERVER`, else `nats-server` on the `PATH`.
//! Without it this test fails, saying so, unless `AEP_SKIP_NATS_TESTS=1`
//! opts out.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use aep_bench::nats::{self, Options};

/// A nats-server with JetStream on a temporary store, killed when dropped.
struct Server {
    child: Child,
    store: std::path::PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.store);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_phase_runs_against_a_nats_server() {
    if std::env::var("AEP_SKIP_NATS_TESTS").as_deref() == Ok("1") {
        eprintln!("SKIPPED: AEP_SKIP_NATS_TESTS=1 opts out of the NATS tests");
        return;
    }
    let binary = std::env::var("AEP_NATS_SERVER").unwrap_or_else(|_| "nats-server".into());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let store = std::env::temp_dir().join(format!("nats-ceiling-smoke-{}", std::process::id()));
    let child = Command::new(&binary)
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(&store)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "this test needs a nats-server with JetStream ({binary}: {e}); \
                 set AEP_NATS_SERVER=/path/to/nats-server, \
                 or AEP_SKIP_NATS_TESTS=1 to skip it"
            )
        });
    let server = Server { child, store };
    let mut listening = false;
    for _ in 0..400 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            listening = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        listening,
        "nats-server did not listen on {port} within 10 s"
    );

    let mut options = Options::new(format!("nats://127.0.0.1:{port}"));
    options.pid = Some(server.child.id());
    options.events = 3_000;
    options.sessions = 3;
    options.batch = 100;
    options.window = 256;
    options.fanout = vec![1, 3];
    options.fanout_deliveries = 1_200;
    options.fanout_window = 100;
    options.limit_secs = 60;
    let ceiling = nats::run(&options).await.unwrap();
    assert_eq!(ceiling.publish.events, 3_000);
    assert_eq!(ceiling.publish_read.events, 3_000);
    assert!(
        ceiling.publish.server_cpu_seconds.is_some(),
        "metered with a PID"
    );
    let fanout: Vec<(usize, u64)> = ceiling
        .fanout
        .iter()
        .map(|f| (f.subscribers, f.deliveries))
        .collect();
    assert_eq!(fanout, [(1, 1_200), (3, 1_200)]);

    // A report survives JSON, and the summary has every row.
    let json = serde_json::to_string(&ceiling).unwrap();
    let again: nats::Ceiling = serde_json::from_str(&json).unwrap();
    let table = nats::summary(&[ceiling, again], &[]);
    for row in [
        "| JetStream publish, acks awaited 256 at a time, read back",
        "| JetStream publish, acks awaited 256 at a time |",
        "| core NATS fan-out to 1 subscriber |",
        "| core NATS fan-out to 3 subscribers |",
    ] {
        assert!(table.contains(row), "{row} in\n{table}");
    }
    assert!(
        !options.url.is_empty()
            && nats::run(&Options::new("nats://10.1.2.3:4222"))
                .await
                .is_err(),
        "only loopback"
    );
}
