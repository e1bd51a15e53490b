//! The hostile client on tiny counts against an in-process relay, so it
//! cannot rot: every attack but `sigterm` (which would end this test's own
//! process) runs to its end and says what the relay did. No timing and no
//! memory figure is asserted.

use aep_bench::hostile::{self, Relay, Scale, ATTACKS};
use aep_bench::relay::client::Target;
use aep_relay::{Config, Token};

const TINY: Scale = Scale {
    subscriptions: 4,
    id_bytes: 64,
    sessions: 8,
    claims: 50,
    emits_bytes: 1024,
    consumers: 2,
    batch: 100,
    filter_bytes: 2048,
    overwrites: 1,
    replay_sessions: 2,
    replay_events: 60,
    hellos: 3,
    hello_bytes: 2048,
    hello_values: 3,
    big_events: 2,
    big_event_bytes: 64 * 1024,
    messages: 2,
    message_bytes: 64 * 1024,
    stuck: 2,
    stuck_event_bytes: 64 * 1024,
    connections: 4,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_attack_but_sigterm_runs_to_its_end() {
    let config = Config::default()
        .buffer(50)
        .token(Token::new("hostile-smoke"));
    let relay = aep_relay::Relay::new(config).unwrap();
    let shutdown = relay.shutdown_handle();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(relay.serve(listener));
    let target = Relay {
        target: Target::parse(&url).unwrap(),
        pid: std::process::id(),
        token: Some("hostile-smoke".into()),
    };

    for attack in ATTACKS.iter().filter(|a| **a != "sigterm") {
        let outcome = hostile::run(&target, attack, TINY).await.unwrap();
        assert_eq!(outcome.attack, *attack);
        assert!(
            !outcome.said.starts_with("stopped:"),
            "{attack} did not run to its end: {}",
            outcome.said
        );
        assert!(
            outcome.rss_peak_mib >= outcome.rss_before_mib,
            "{outcome:?}"
        );
        let expected = match *attack {
            "closing" => "4 subscriptions taken; 32 deliveries read; closing frame: ",
            "claims" => "50 sessions claimed; roster: \"roster\" (50 entries",
            "fanout" => "2 consumers x 4 subscriptions; a 100-event POST answered in",
            "batches" => "1 consumers x 4 subscriptions matching nothing; three 100-event POSTs",
            "filters" => "4 subscriptions taken, asked with 2 KiB filters; 200 events posted",
            "replay" => "a silent from=all reader while 2 sessions x 60 events",
            "hellos" => "3 of 3 emitters with 2 KiB hellos held",
            "hello-values" => "3 of 3 emitters with 60 KiB hellos of zeros held",
            "big-events" => "2 of 2 events of 64 KiB accepted with a consumer that never reads",
            "messages" => "2 emitters each sent 55 KiB of a 63 KiB message and stalled",
            "wide-json" => "2 emitters sent an event of 32256 zeros",
            "connections" => "4 consumers: ",
            "stuck-readers" => {
                "4 of 4 events of 64 KiB accepted, each for one of 2 consumers that never read"
            }
            _ => unreachable!(),
        };
        assert!(
            outcome.said.contains(expected),
            "{attack}: {}",
            outcome.said
        );
    }
    assert!(hostile::run(&target, "nonsense", TINY).await.is_err());

    shutdown.shutdown();
    server.await.unwrap().unwrap();
}
