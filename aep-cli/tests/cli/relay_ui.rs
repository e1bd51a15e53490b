//! `aep relay` and its browser UI: the start line names the page's
//! address and never the token; `--print-ui-url` prints the address with
//! the token in its fragment to standard output only.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const TOKEN: &str = "s3cret token&/";

#[test]
fn the_ui_address_is_printed_for_the_person_and_never_logged() {
    let mut relay = Command::new(env!("CARGO_BIN_EXE_aep"))
        .args(["relay", "--listen", "127.0.0.1:0", "--print-ui-url"])
        .env("AEP_TOKEN", TOKEN)
        .env_remove("AEP_NO_UI")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the aep binary runs");
    let stdout = relay.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let printed = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the address was printed in time");
    let _ = Command::new("kill")
        .args(["-TERM", &relay.id().to_string()])
        .status();
    let mut stderr = String::new();
    relay
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = relay.wait().unwrap();
    assert!(status.success(), "aep relay: {status}\n{stderr}");

    let printed = printed.trim();
    let (page, fragment) = printed.split_once('#').expect("a fragment");
    assert!(
        page.starts_with("http://127.0.0.1:") && page.ends_with('/'),
        "{printed}"
    );
    assert_ne!(
        page, "http://127.0.0.1:0/",
        "the bound port, not the asked one"
    );
    assert_eq!(fragment, "token=s3cret%20token%26%2F");
    assert!(
        stderr.contains(&format!("browser UI at {page}")),
        "{stderr}"
    );
    assert!(
        !stderr.contains("s3cret"),
        "the token reached the log: {stderr}"
    );
}

#[test]
fn no_ui_and_print_ui_url_do_not_go_together() {
    let out = Command::new(env!("CARGO_BIN_EXE_aep"))
        .args(["relay", "--no-ui", "--print-ui-url"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
}
