//! `aep respond` at a terminal: the prompts driven through a
//! pseudo-terminal as a person would, keystroke by keystroke.
//!
//! Every keystroke is sent only after the prompt it answers has been seen
//! on the terminal (no sleeps), and every wait has a generous timeout, so
//! the tests hold on a loaded machine. Standard output goes to a file, as
//! when the answer is piped to a transport; the prompts are on standard
//! error, the terminal.

#![cfg(unix)]

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use aep::{Capture, Event};
use expectrl::process::unix::WaitStatus;
use expectrl::{Eof, Expect, Session};
use serde_json::{json, Value};

const ENTER: &str = "\r";
const DOWN: &str = "\x1b[B";
const SPACE: &str = " ";
const BACKSPACE: &str = "\x7f";
const CTRL_C: &str = "\x03";
const ESC: &str = "\x1b";

/// A terminal session running `aep respond FILE > OUT`.
struct Terminal {
    session: expectrl::session::OsSession,
    out: tempfile::NamedTempFile,
    _capture: tempfile::NamedTempFile,
}

impl Terminal {
    /// Starts `aep respond` on a capture holding `request`.
    fn start(request: &Value) -> Terminal {
        let mut capture = tempfile::NamedTempFile::new().expect("a temporary file");
        writeln!(capture, "{request}").expect("write the capture");
        let out = tempfile::NamedTempFile::new().expect("a temporary file");
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(r#"exec "$AEP" respond "$CAPTURE" > "$OUT""#)
            .env("AEP", env!("CARGO_BIN_EXE_aep"))
            .env("CAPTURE", capture.path())
            .env("OUT", out.path())
            .env("TERM", "xterm-256color");
        let mut session = Session::spawn(command).expect("spawn in a pseudo-terminal");
        // Generous: a loaded machine may be slow to start and draw.
        session.set_expect_timeout(Some(Duration::from_secs(90)));
        Terminal {
            session,
            out,
            _capture: capture,
        }
    }

    /// Waits until `text` is on the terminal.
    fn see(&mut self, text: &str) {
        if let Err(e) = self.session.expect(text) {
            let mut screen = Vec::new();
            let mut buf = [0; 4096];
            while let Ok(n @ 1..) = self.session.try_read(&mut buf) {
                screen.extend_from_slice(&buf[..n]);
            }
            panic!(
                "`{text}` never appeared on the terminal ({e}); it shows:\n{}",
                String::from_utf8_lossy(&screen)
            );
        }
    }

    /// Types `keys`.
    fn keys(&mut self, keys: &str) {
        self.session.send(keys).expect("type on the terminal");
    }

    /// Waits for `text`, then types `keys`.
    fn answer(&mut self, text: &str, keys: &str) {
        self.see(text);
        self.keys(keys);
    }

    /// Waits for the end; the exit status and what was written.
    fn finish(mut self) -> (i32, String) {
        self.session.expect(Eof).expect("the program ends");
        let status = self.session.get_process().wait().expect("wait");
        let code = match status {
            WaitStatus::Exited(_, code) => code,
            other => panic!("not a normal exit: {other:?}"),
        };
        (code, read(self.out.path()))
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("read the output")
}

/// The single event written, checked as an event.
fn event(written: &str) -> (Event, Value) {
    assert_eq!(written.lines().count(), 1, "one line: {written}");
    let event: Event = serde_json::from_str(written).expect("an AEP event");
    event.validate().expect("a valid event");
    (event, serde_json::from_str(written).unwrap())
}

fn request(data: Value) -> Value {
    json!({
        "aep": "0.1", "id": "req-1", "type": "attention.requested",
        "time": "2026-12-03T09:00:00Z", "source": "urn:aep:agent:demo", "agent": "demo",
        "session": "s1", "seq": 2, "capture": "redacted", "data": data,
    })
}

/// A form with every field type: required string, bounded number,
/// boolean and select with `other`; an optional closed multi-select,
/// select, multi-select with `other`, boolean and string.
fn every_field_form() -> Value {
    let db = json!([{"id": "pg", "label": "PostgreSQL"}, {"id": "sqlite", "label": "SQLite"}]);
    let ext = json!([{"id": "postgis", "label": "PostGIS"}, {"id": "pgvector", "label": "pgvector"}, {"id": "hstore", "label": "hstore"}]);
    let modes = json!([{"id": "fast", "label": "Fast"}, {"id": "safe", "label": "Safe"}]);
    let tags = json!([{"id": "red", "label": "Red"}, {"id": "green", "label": "Green"}]);
    request(json!({
        "kind": "form", "prompt": "Set up the database",
        "fields": [
            {"id": "name", "type": "string", "label": "Database name", "required": true},
            {"id": "port", "type": "number", "label": "Port", "required": true, "min": 1, "max": 65535},
            {"id": "tls", "type": "boolean", "label": "Use TLS", "required": true},
            {"id": "engine", "type": "select", "label": "Engine", "required": true, "other": true, "choices": db},
            {"id": "ext", "type": "select", "label": "Extensions", "multi": true, "choices": ext},
            {"id": "mode", "type": "select", "label": "Mode", "choices": modes},
            {"id": "tags", "type": "select", "label": "Tags", "multi": true, "other": true, "choices": tags},
            {"id": "verbose", "type": "boolean", "label": "Verbose logs"},
            {"id": "note", "type": "string", "label": "Note for the agent"},
        ]
    }))
}

#[test]
fn a_form_with_every_field_type_is_answered_at_the_terminal() {
    let mut t = Terminal::start(&every_field_form());
    t.see("Set up the database");
    // A required field cannot be skipped: the refusal shows, then it is answered.
    t.answer("Database name (required)", ENTER);
    t.answer("field `name`: required, but not answered", "orders\r");
    // A number outside its range is refused and corrected.
    t.answer("Port (required)", "70000\r");
    t.see("field `port`: 70000 is outside [1, 65535]");
    t.keys(&BACKSPACE.repeat(5));
    t.keys("5432\r");
    t.answer("Use TLS (required)", "y\r");
    // "Other…" leads to free text.
    t.answer("Engine (required)", &format!("{DOWN}{DOWN}{ENTER}"));
    t.answer("Engine: other, in your words", "CockroachDB\r");
    t.answer("Extensions", &format!("{SPACE}{DOWN}{SPACE}{ENTER}"));
    t.answer("Mode", &format!("{DOWN}{ENTER}"));
    t.answer("Tags", &format!("{DOWN}{SPACE}{DOWN}{SPACE}{ENTER}"));
    t.answer("Tags: other, in your words", "teal\r");
    // An optional boolean: Yes, No, Skip.
    t.answer("Verbose logs", &format!("{DOWN}{ENTER}"));
    // An optional string, skipped.
    t.answer("Note for the agent", ENTER);
    let (code, written) = t.finish();
    assert_eq!(code, 0, "{written}");
    let (event, json) = event(&written);
    assert_eq!(event.type_, "control.attention.respond");
    assert_eq!(event.subject.as_deref(), Some("req-1"));
    assert_eq!(
        event.capture,
        Some(Capture::Redacted),
        "free text was given"
    );
    assert_eq!(
        json["data"]["answer"]["values"],
        json!({
            "name": "orders", "port": 5432, "tls": true, "engine": "CockroachDB",
            "ext": ["postgis", "pgvector"], "mode": "safe", "tags": ["green", "teal"],
            "verbose": false,
        })
    );
}

#[test]
fn structural_answers_are_written_at_metadata() {
    let choices = json!([{"id": "a", "label": "Alpha"}, {"id": "b", "label": "Beta"}]);
    let form = request(json!({
        "kind": "form", "prompt": "Pick",
        "fields": [
            {"id": "n", "type": "number", "label": "How many", "required": true},
            {"id": "x", "type": "select", "label": "Which", "required": true, "other": true, "choices": choices},
        ]
    }));
    let mut t = Terminal::start(&form);
    t.answer("How many (required)", "forty\r");
    t.see("enter a number");
    t.keys(&BACKSPACE.repeat(5));
    t.keys("2.5\r");
    t.answer("Which (required)", &format!("{DOWN}{ENTER}"));
    let (code, written) = t.finish();
    assert_eq!(code, 0, "{written}");
    let (event, json) = event(&written);
    assert_eq!(event.capture, Some(Capture::Metadata));
    assert_eq!(
        json["data"]["answer"]["values"],
        json!({"n": 2.5, "x": "b"})
    );
}

#[test]
fn a_permission_is_answered_from_its_options() {
    let mut t = Terminal::start(&request(json!({
        "kind": "permission", "prompt": "Run rm -rf build?",
        "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}]
    })));
    t.answer("Run rm -rf build? (permission)", &format!("{DOWN}{ENTER}"));
    let (code, written) = t.finish();
    assert_eq!(code, 0, "{written}");
    let (event, json) = event(&written);
    assert_eq!(json["data"], json!({"answer": {"option": "deny"}}));
    assert_eq!(event.capture, Some(Capture::Metadata));
}

#[test]
fn an_input_without_options_takes_free_text() {
    let mut t = Terminal::start(&request(
        json!({"kind": "input", "prompt": "Which branch?"}),
    ));
    t.answer("Which branch? (input)", ENTER);
    t.answer("an answer is required", "release/2.1\r");
    let (code, written) = t.finish();
    assert_eq!(code, 0, "{written}");
    let (event, json) = event(&written);
    assert_eq!(json["data"], json!({"answer": {"text": "release/2.1"}}));
    assert_eq!(event.capture, Some(Capture::Redacted));
}

#[test]
fn ctrl_c_cancels_and_writes_nothing() {
    let mut t = Terminal::start(&every_field_form());
    t.answer("Database name (required)", "orders\r");
    t.answer("Port (required)", "54");
    t.keys(CTRL_C);
    t.see("cancelled, nothing written");
    let (code, written) = t.finish();
    assert_eq!(code, 130);
    assert_eq!(written, "");
}

#[test]
fn esc_cancels_and_writes_nothing() {
    let mut t = Terminal::start(&every_field_form());
    t.answer("Database name (required)", "orders\r");
    t.answer("Port (required)", ESC);
    t.see("cancelled, nothing written");
    let (code, written) = t.finish();
    assert_eq!(code, 130);
    assert_eq!(written, "");
}

#[test]
fn a_required_select_with_nothing_to_pick_exits_1() {
    let mut t = Terminal::start(&request(json!({
        "kind": "form", "prompt": "Pick",
        "fields": [
            {"id": "empty", "type": "select", "label": "Empty", "choices": []},
            {"id": "none", "type": "select", "label": "None", "required": true, "choices": []},
        ]
    })));
    t.see("field `none` offers no choices to pick and takes no free text");
    let (code, written) = t.finish();
    assert_eq!(code, 1);
    assert_eq!(written, "");
}

#[test]
fn a_request_with_an_empty_option_list_takes_free_text() {
    let mut t = Terminal::start(&request(
        json!({"kind": "input", "prompt": "Anything?", "options": []}),
    ));
    t.answer("Anything? (input)", "yes\r");
    let (code, written) = t.finish();
    assert_eq!(code, 0, "{written}");
    let (_, json) = event(&written);
    assert_eq!(json["data"], json!({"answer": {"text": "yes"}}));
}

/// The request is the agent's text: an ESC in its prompt or labels must
/// not clear the screen or retitle the window; it is shown escaped.
#[test]
fn control_characters_in_a_request_are_shown_escaped() {
    let hostile = request(json!({
        "kind": "permission", "prompt": "\u{1b}[2J\u{1b}]0;owned\u{7}Run rm?",
        "options": [{"id": "allow", "label": "Al\u{1b}]0;label\u{7}low"}, {"id": "deny", "label": "Deny"}],
    }));
    let mut t = Terminal::start(&hostile);
    let seen = t.session.expect("Deny").expect("the options are drawn");
    let screen = String::from_utf8_lossy(seen.before()).into_owned();
    for raw in ["\u{1b}]0;owned", "\u{1b}[2J", "\u{1b}]0;label"] {
        assert!(
            !screen.contains(raw),
            "{raw:?} reached the terminal: {screen:?}"
        );
    }
    assert!(screen.contains("\\x1b]0;owned\\x07Run rm?"), "{screen:?}");
    assert!(screen.contains("Al\\x1b]0;label\\x07low"), "{screen:?}");
    t.keys(ENTER);
    let (code, written) = t.finish();
    assert_eq!(code, 0, "{written}");
    assert_eq!(
        event(&written).1["data"]["answer"],
        json!({"option": "allow"})
    );
}

/// `aep post` with no FILE, on a terminal: it says it reads standard
/// input before it waits on it.
#[test]
fn reading_a_terminals_standard_input_is_said() {
    let mut command = Command::new(env!("CARGO_BIN_EXE_aep"));
    command
        .args(["post", "--relay", "http://127.0.0.1:9"])
        .env("TERM", "xterm-256color");
    let mut session = Session::spawn(command).expect("spawn in a pseudo-terminal");
    session.set_expect_timeout(Some(Duration::from_secs(60)));
    session
        .expect("reading events from standard input (end with Ctrl-D)")
        .expect("the notice is on the terminal");
    session.send("\x04").expect("type Ctrl-D");
    session.expect(Eof).expect("the program ends");
}
