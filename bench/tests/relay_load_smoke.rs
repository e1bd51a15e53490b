//! The relay load tool on tiny counts against an in-process relay, so it
//! cannot rot: every phase runs and produces its row, and two reports
//! compare. No timing is asserted.

use aep_bench::relay::{self, Options};
use aep_relay::{Config, Relay};

fn tiny(url: String, label: &str) -> Options {
    let mut options = Options::new(url, label);
    options.pid = Some(std::process::id());
    options.ingest_events = 2_500;
    options.batch = 100;
    options.connections = 2;
    options.ingest_sessions = 3;
    options.fanout = vec![1, 3];
    options.fanout_deliveries = 600;
    options.rate = 200;
    options.latency_seconds = 1;
    options.latency_batch = 5;
    options.fill_events = 150;
    options.idle = 20;
    options.decode_passes = 1;
    options.limit_secs = 30;
    options
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_phase_runs_against_an_in_process_relay() {
    // A small queue bound: the fan-out window must keep subscribers under it.
    let relay = Relay::new(Config::default().buffer(50).queue(300, 600)).unwrap();
    let shutdown = relay.shutdown_handle();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(relay.serve(listener));

    let report = relay::run(&tiny(url.clone(), "ours")).await.unwrap();
    assert_eq!(report.buffer, 50, "the depth comes from discovery");
    let ingest = report.ingest.as_ref().expect("ingest ran");
    assert_eq!((ingest.events, ingest.batch), (2_500, 100));
    assert!(ingest.relay_cpu_seconds.is_some(), "metered with a PID");
    let fanout: Vec<(usize, u64)> = report
        .fanout
        .iter()
        .map(|f| (f.subscribers, f.deliveries))
        .collect();
    assert_eq!(fanout, [(1, 600), (3, 600)]);
    let latency = report.latency.as_ref().expect("latency ran");
    assert_eq!(latency.events, 200);
    assert!(latency.p50_ms <= latency.p99_ms);
    let buffered = report.buffered.as_ref().expect("measured with a PID");
    assert_eq!((buffered.sessions, buffered.depth), (3, 50));
    assert_eq!(
        report
            .idle
            .as_ref()
            .expect("measured with a PID")
            .connections,
        20
    );
    assert_eq!(report.decode.events, 2_500);
    let table = report.table();
    for row in [
        "| ingest: 2,500 events",
        "| fan-out to 1 SSE subscriber:",
        "| fan-out to 3 SSE subscribers",
        "| latency at 200 events/s",
        "| memory per buffered event (3 sessions x 50)",
        "| memory per idle SSE connection (20)",
        "| in process: `EventRef::from_json`",
    ] {
        assert!(table.contains(row), "{row} in\n{table}");
    }

    // A report survives JSON, and two relays' reports compare.
    let json = serde_json::to_string(&report).unwrap();
    let again: relay::Report = serde_json::from_str(&json).unwrap();
    let mut other = again.clone();
    other.label = "reference".into();
    let compared = relay::compare(&[report, again], &[other]).unwrap();
    assert!(compared.contains("| ingest | "), "{compared}");
    assert!(
        compared.contains("| fan-out to 3 SSE subscribers |"),
        "{compared}"
    );
    assert!(
        compared.contains("| 1.00x | at least 4x | no |"),
        "{compared}"
    );
    assert!(compared.contains("ingest ceiling"), "{compared}");

    // A run of some phases only.
    let mut options = tiny(url, "ours");
    options.phases = relay::Phases::parse("ingest").unwrap();
    let report = relay::run(&options).await.unwrap();
    assert!(report.ingest.is_some());
    assert!(report.fanout.is_empty() && report.latency.is_none() && report.buffered.is_none());
    assert!(relay::Phases::parse("ingest,oops").is_err());

    shutdown.shutdown();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_relay_that_is_not_there_is_named() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let mut options = tiny(url, "gone");
    options.limit_secs = 1;
    let started = std::time::Instant::now();
    let error = relay::run(&options).await.unwrap_err();
    assert!(
        error.to_string().contains("the relay did not answer"),
        "{error}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

#[tokio::test]
async fn only_loopback_relays() {
    let error = relay::run(&tiny("http://192.0.2.1:8787".into(), "far"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("only loopback"), "{error}");
}
