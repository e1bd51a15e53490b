//! `aep doctor` against an in-process relay: a clean report with the
//! token, the findings (and their remedies) without it or with a wrong
//! one, a port nothing listens on, and a URL that is not one.

use crate::common;

use common::live::run_bounded;

use common::live::TestRelay;

const TOKEN: &str = "doctor-test-token";

fn lines_with<'a>(stdout: &'a str, start: &str) -> Vec<&'a str> {
    stdout.lines().filter(|l| l.starts_with(start)).collect()
}

#[test]
fn a_relay_with_its_token_is_clean() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let run = run_bounded(relay.aep(&["doctor"]), None);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        lines_with(&run.stdout, "finding").is_empty(),
        "{}",
        run.stdout
    );
    for expected in [
        "ok       the token is accepted",
        "ok       CORS: the preflight of /stream allows a browser's GET with a token",
        "ok       CORS: a refused GET /stream (400 Bad Request) is readable by a browser page",
        "ok       the discovery document (GET /events) speaks AEP 0.1",
    ] {
        assert!(
            run.stdout.lines().any(|l| l == expected),
            "{expected}\n{}",
            run.stdout
        );
    }
    assert!(
        run.stdout.contains("info     counts: ") && run.stdout.contains("sessions="),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("answers on IPv4 only; this URL uses IPv4"),
        "{}",
        run.stdout
    );
}

#[test]
fn each_problem_is_a_finding_with_its_remedy() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let mut no_token = relay.aep(&["doctor"]);
    no_token.env_remove("AEP_TOKEN");
    let run = run_bounded(no_token, None);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("finding  no token is given"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("remedy: set AEP_TOKEN"),
        "{}",
        run.stdout
    );

    let mut wrong = relay.aep(&["doctor"]);
    wrong.env("AEP_TOKEN", "wrong");
    let run = run_bounded(wrong, None);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("finding  the relay refuses the token given"),
        "{}",
        run.stdout
    );

    // localhost, where only IPv4 answers: a finding naming both families.
    let port = relay.base.rsplit(':').next().unwrap();
    let mut localhost = common::aep();
    localhost
        .args(["doctor", "--relay", &format!("http://localhost:{port}")])
        .env("AEP_TOKEN", TOKEN);
    let run = run_bounded(localhost, None);
    if std::net::TcpStream::connect(("::1", port.parse::<u16>().unwrap())).is_err() {
        assert_eq!(run.code, 1, "{}", run.stdout);
        assert!(
            run.stdout.contains("answers on 127.0.0.1 but not on [::1]"),
            "{}",
            run.stdout
        );
        assert!(
            run.stdout.contains("remedy: use http://127.0.0.1:"),
            "{}",
            run.stdout
        );
    }

    let open = TestRelay::start(None, aep_relay::Config::default());
    let mut given = open.aep(&["doctor"]);
    given.env("AEP_TOKEN", "mine");
    let run = run_bounded(given, None);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("info     auth off"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("finding  a token is given here, but the relay runs without one"),
        "{}",
        run.stdout
    );
    let run = run_bounded(open.aep(&["doctor"]), None);
    assert_eq!(
        run.code, 0,
        "watch-only is a posture, not a finding: {}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("info     CORS: without a token the relay lets only pages on this machine"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "ok       CORS: a refused GET /stream (400 Bad Request) is readable by a browser page"
        ),
        "{}",
        run.stdout
    );
}

#[test]
fn nothing_listening_and_a_bad_url() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let run = common::run(
        &["doctor", "--relay", &format!("http://127.0.0.1:{port}")],
        None,
    );
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains(&format!("finding  nothing answers on port {port}")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("remedy: start the relay"),
        "{}",
        run.stdout
    );
    let run = common::run(&["doctor", "--relay", "localhost:8787"], None);
    assert_eq!(run.code, 2, "{}", run.stderr);
}
