//! Helpers shared by the integration tests: an in-process relay that can
//! be restarted on the same port, a TCP proxy that can cut connections,
//! and events to send. Everything binds 127.0.0.1:0.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep_relay::{Config, Relay, ShutdownHandle, Token};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

pub const TOKEN: &str = "test-token";

/// A relay served in-process.
pub struct TestRelay {
    pub addr: SocketAddr,
    pub base: String,
    config: Config,
    shutdown: ShutdownHandle,
    server: Option<JoinHandle<std::io::Result<aep_relay::Drained>>>,
}

pub fn config() -> Config {
    Config::default()
        .token(Token::new(TOKEN))
        .grace(Duration::from_millis(500))
}

impl TestRelay {
    pub async fn start(config: Config) -> TestRelay {
        TestRelay::start_at(config, "127.0.0.1:0".parse().unwrap()).await
    }

    pub async fn start_at(config: Config, addr: SocketAddr) -> TestRelay {
        let listener = TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut relay = TestRelay {
            addr,
            base: format!("http://{addr}"),
            shutdown: Relay::new(config.clone()).unwrap().shutdown_handle(),
            config,
            server: None,
        };
        relay.serve(listener);
        relay
    }

    fn serve(&mut self, listener: TcpListener) {
        let relay = Relay::new(self.config.clone()).unwrap();
        self.shutdown = relay.shutdown_handle();
        self.server = Some(tokio::spawn(relay.serve(listener)));
    }

    /// Shuts the relay down (its buffers are gone).
    pub async fn stop(&mut self) {
        self.shutdown.shutdown();
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
    }

    /// Serves again on the same port, with empty buffers.
    pub async fn start_again(&mut self) {
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Ok(listener) => break listener,
                Err(e) if tries < 100 => {
                    tries += 1;
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("cannot bind {} again: {e}", self.addr),
            }
        };
        self.serve(listener);
    }
}

impl Drop for TestRelay {
    fn drop(&mut self) {
        self.shutdown.shutdown();
    }
}

/// A TCP proxy in front of `target` whose connections can be cut.
pub struct Proxy {
    pub addr: SocketAddr,
    pub base: String,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: JoinHandle<()>,
}

impl Proxy {
    pub async fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let tasks: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let held = tasks.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let task = tokio::spawn(async move {
                    if let Ok(mut upstream) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                    }
                });
                held.lock().unwrap().push(task);
            }
        });
        Proxy {
            addr,
            base: format!("http://{addr}"),
            tasks,
            accept,
        }
    }

    /// Drops every open connection (new ones still go through).
    pub fn cut(&self) {
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

/// A valid event line of `session` at `seq`, with a known id.
pub fn line(session: &str, seq: u64, severity: &str) -> String {
    serde_json::json!({
        "aep": "0.1",
        "id": format!("{session}-{seq}"),
        "type": "progress.status",
        "time": "2026-12-01T10:00:00Z",
        "source": "urn:aep:test",
        "agent": "test",
        "session": session,
        "seq": seq,
        "severity": severity,
        "data": {"percent": 1},
    })
    .to_string()
}

/// Posts lines as one NDJSON batch; the status.
pub async fn post(base: &str, lines: &[String]) -> u16 {
    let body = lines.join("\n") + "\n";
    reqwest::Client::new()
        .post(format!("{base}/events"))
        .bearer_auth(TOKEN)
        .header("AEP-Version", "0.1")
        .header("Content-Type", "application/x-ndjson")
        .body(body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Runs `f` within `secs` seconds or fails the test.
pub async fn within<T>(secs: u64, what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

/// A port on 127.0.0.1 where nothing listens (yet).
pub async fn free_addr() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap()
}

/// The ids a `live=0` read of `session` gives, in order.
pub async fn history_ids(base: &str, session: &str) -> Vec<String> {
    use aep_client::consume::{Item, Notice, Subscribe};
    let mut sub = Subscribe::new(base)
        .token(TOKEN)
        .filter(serde_json::json!({"session": session}))
        .unwrap()
        .history()
        .start();
    let mut ids = Vec::new();
    within(20, "a history read", async {
        while let Some(item) = sub.recv().await {
            match item.unwrap() {
                Item::Event(d) => ids.push(d.event.id),
                Item::Notice(Notice::ReplayComplete) => break,
                Item::Notice(_) => {}
            }
        }
    })
    .await;
    ids
}
