//! `aep mcp` driven by an MCP client of another implementation: the
//! official Python SDK (`pip install mcp`; `.ci/run` installs it), through
//! `mcp_python.py`, while a person answers with `aep respond`.
//!
//! Without Python 3 and its `mcp` package the test fails, saying so,
//! unless `AEP_SKIP_PYTHON_TESTS=1` opts out.

use std::process::Command;

use serde_json::{json, Value};

use crate::common::live::{run_bounded, spawn, stop, until, Lines, TestRelay, WAIT};

const TOKEN: &str = "mcp-python-token";

/// Whether the Python MCP SDK is there; `false` (with a message) only
/// when the test is opted out of.
fn python_mcp() -> bool {
    if std::env::var("AEP_SKIP_PYTHON_TESTS").as_deref() == Ok("1") {
        eprintln!("SKIPPED: AEP_SKIP_PYTHON_TESTS=1 opts out of the Python MCP client test");
        return false;
    }
    let found = Command::new("python3")
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|out| out.status.success());
    assert!(
        found,
        "the Python MCP client test needs python3 with the `mcp` package \
         (pip install mcp; .ci/run installs it); AEP_SKIP_PYTHON_TESTS=1 skips it"
    );
    true
}

#[test]
fn the_python_mcp_sdk_asks_a_form_and_gets_typed_values() {
    if !python_mcp() {
        return;
    }
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let session = "mcp-python";
    let mut command = Command::new("python3");
    command
        .arg(crate::common::crate_dir().join("tests/cli/mcp_python.py"))
        .env("AEP_BIN", env!("CARGO_BIN_EXE_aep"))
        .env("AEP_RELAY", &relay.base)
        .env("AEP_TOKEN", TOKEN)
        .env("AEP_MCP_SESSION", session);
    let mut client = spawn(command);
    let lines = Lines::of(&mut client);
    let errors = Lines::of_stderr(&mut client);
    // The client's next result line; on a failure, what it said.
    let mut next = || -> Value {
        match lines.next() {
            Some(line) => serde_json::from_str(&line).unwrap(),
            None => {
                stop(&mut client, "KILL");
                panic!(
                    "no line from the Python client within {WAIT:?}; it said:\n{}",
                    errors.rest(std::time::Duration::from_secs(1)).join("\n")
                );
            }
        }
    };

    let listed: Value = next();
    assert_eq!(listed["server"], "aep");
    assert_eq!(listed["tools"], json!(["ask_human", "notify"]));
    assert_eq!(listed["schemas"]["ask_human"]["type"], "object");

    // The person: the request shows in `aep pending`, and is answered.
    let mut pending = Value::Null;
    until("the request pending on the relay", || {
        let run = run_bounded(
            relay.aep(&["pending", "--session", session, "--json"]),
            None,
        );
        pending = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
        pending.as_array().is_some_and(|rows| rows.len() == 1)
    });
    assert_eq!(pending[0]["kind"], "form");
    assert_eq!(pending[0]["fields"], json!(["branch", "jobs", "dry_run"]));
    let request = pending[0]["request"].as_str().unwrap().to_owned();
    let values = r#"{"branch":"fix/build","jobs":4,"dry_run":true}"#;
    let run = run_bounded(
        relay.aep(&["respond", "--session", session, "--values", values]),
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);

    let asked: Value = next();
    assert_eq!(asked["tool"], "ask_human");
    assert_eq!(asked["is_error"], false, "{asked}");
    assert_eq!(
        asked["structured"]["values"],
        json!({"branch": "fix/build", "jobs": 4, "dry_run": true})
    );
    assert_eq!(asked["structured"]["request"], request.as_str());
    assert!(
        asked["text"][0].as_str().unwrap().contains("fix/build"),
        "{asked}"
    );
    let told: Value = next();
    assert_eq!(told, json!({"tool": "notify", "is_error": false}));

    // The client leaves: `aep mcp` ends the session.
    let deadline = std::time::Instant::now() + WAIT;
    while client.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    if client.try_wait().unwrap().is_none() {
        stop(&mut client, "KILL");
        panic!("the Python client did not exit");
    }
    assert!(client.wait().unwrap().success(), "the Python client failed");
    until("session.ended on the relay", || {
        relay
            .history(session)
            .iter()
            .any(|l| l.contains("\"session.ended\""))
    });
}
