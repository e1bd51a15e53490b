//! The browser UI of `aep relay`, in headless Chromium through WebDriver
//! (fantoccini, with a chromedriver each test starts): the relay in
//! process, `aep demo` (or a scripted agent) connected, and the page
//! opened the way a person opens it. Every wait is bounded.
//!
//! Chromium and chromedriver are Debian's (`.ci/run` installs them); a
//! machine without them fails these tests unless
//! `AEP_SKIP_BROWSER_TESTS=1`.

#[path = "ui_browser/harness.rs"]
mod harness;

use std::collections::HashSet;
use std::time::Duration;

use fantoccini::Locator;
use futures_util::{SinkExt, StreamExt};
use harness::{demo, enabled, history, images, relay, stop_demo, Browser, ONE_AT_A_TIME, WAIT};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

const TOKEN: &str = "ui-test-token";
const PAGE_SOURCE: &str = "aep://browser/agent/aep-ui";

const TAB: &str = "\u{E004}";
const ENTER: &str = "\u{E007}";
const END: &str = "\u{E010}";
const BACKSPACE: &str = "\u{E003}";
const DOWN: &str = "\u{E015}";
const UP: &str = "\u{E013}";
const HOME: &str = "\u{E011}";
const PAGE_DOWN: &str = "\u{E00F}";
const LEFT: &str = "\u{E012}";
const RIGHT: &str = "\u{E014}";
const ESCAPE: &str = "\u{E00C}";
/// The most timeline rows the page holds at once: the rows of the view
/// (70% of the 1 000 px window, rows about 30 px) and 30 on each side.
const WINDOW_ROWS: usize = 120;

fn run(test: &str, body: impl std::future::Future<Output = ()>) {
    if !enabled(test) {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(body);
}

/// The one event of `events` that `pick` takes.
fn one<'a>(events: &'a [Value], what: &str, pick: impl Fn(&Value) -> bool) -> &'a Value {
    let found: Vec<&Value> = events.iter().filter(|e| pick(e)).collect();
    // On a failure, the whole history (each event's type, id and cause)
    // says whether the event is missing or only unlike what was picked.
    let held: Vec<String> = events
        .iter()
        .map(|e| format!("{} {} cause={}", e["type"], e["id"], e["cause"]))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "exactly one {what} in the history: {found:#?}\nthe history:\n{}",
        held.join("\n")
    );
    found[0]
}

/// Types into whatever has focus.
async fn keys(b: &Browser, text: &str) {
    let active = b.client.active_element().await.expect("a focused element");
    active.send_keys(text).await.expect("keys typed");
}

async fn focused_name(b: &Browser) -> String {
    let v = b
        .client
        .execute(
            "const a = document.activeElement; return (a.labels && a.labels[0] ? a.labels[0].textContent : a.textContent) || a.name || a.tagName;",
            vec![],
        )
        .await
        .unwrap();
    v.as_str().unwrap_or_default().trim().to_owned()
}

#[test]
fn the_demo_form_is_answered_from_the_page() {
    run("the_demo_form_is_answered_from_the_page", async {
        let served = relay("127.0.0.1:0", Some(TOKEN)).await;
        let session = "release-42";
        let mut agent = demo(&served.base, Some(TOKEN), session);
        let mut other = demo(&served.base, Some(TOKEN), "nightly-docs");
        let b = Browser::start().await;
        b.client
            .goto(&format!("{}/#token={TOKEN}", served.base))
            .await
            .unwrap();

        // The token leaves the address bar and stays with the tab.
        let url = b.client.current_url().await.unwrap();
        assert!(!url.as_str().contains(TOKEN), "the token is still in {url}");
        let kept = b
            .client
            .execute("return sessionStorage.getItem('aep-relay-token')", vec![])
            .await
            .unwrap();
        assert_eq!(kept, json!(TOKEN));

        // The fleet: the session waits on a person; the inbox holds both
        // of its requests; the title counts what is pending.
        let row = format!("tr[data-session='{session}'][data-state='waiting']");
        b.wait_for(&row, "the demo session waiting on a person", |t| {
            t.contains("aep-demo")
        })
        .await;
        b.wait_for(
            "#inbox article[data-request] h3",
            "the form in the inbox",
            |t| t == "How should the release go?",
        )
        .await;
        b.wait_for(
            "tr[data-session='nightly-docs'][data-state='waiting']",
            "the second session",
            |_| true,
        )
        .await;
        b.wait_script(
            "return /^\\(\\d+\\) AEP relay$/.test(document.title) && document.title",
            "the title badge",
            WAIT,
        )
        .await;
        b.wait_for("#socket-state", "the control socket", |t| t == "ready")
            .await;
        let said = b
            .client
            .execute(
                "return document.getElementById('announcer').textContent",
                vec![],
            )
            .await
            .unwrap();
        assert!(
            said.as_str().unwrap().starts_with("New "),
            "the live region announces requests: {said}"
        );
        let live = b
            .client
            .execute(
                "return document.getElementById('announcer').getAttribute('aria-live')",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(live, json!("polite"));
        b.screenshot(&images().join("ui-fleet.png")).await;

        // The session page, reached by its link.
        b.client
            .find(Locator::Css(&format!("tr[data-session='{session}'] a")))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        // The page reached is the session clicked (rows keep their place
        // while both demos work, so the click cannot land on a neighbour).
        b.wait_for("#session-title", "the session page", |t| {
            t.contains(session)
        })
        .await;
        let card_css = ".session-view article[data-request]";
        let request_id = b
            .wait_attr(
                card_css,
                "data-request",
                "the form on the session page",
                |t| t.contains("Send answer"),
            )
            .await;
        let form = format!("article[data-request='{request_id}'] form.form-answer");

        // Every input has a label naming its field.
        let unlabelled = b
            .client
            .execute(
                &format!("return [...document.querySelectorAll(\"{form} input, {form} select, {form} textarea\")].filter(i => !i.labels || i.labels.length === 0).map(i => i.id)"),
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(unlabelled, json!([]), "inputs without a <label>");
        let labels = b.client.execute(&format!("return [...document.querySelectorAll(\"{form} label, {form} legend\")].map(l => l.textContent)"), vec![]).await.unwrap();
        for label in [
            "Branch name for the fix (required)",
            "Parallel build jobs",
            "Dry run first",
            "Release target (required)",
            "Checks to run",
            "Who to notify",
            "Other",
        ] {
            assert!(
                labels
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|l| l.as_str().unwrap().starts_with(label)),
                "no label {label}: {labels}"
            );
        }
        let send = b
            .client
            .find(Locator::Css(&format!("{form} button[type=submit]")))
            .await
            .unwrap();
        assert_eq!(send.text().await.unwrap(), "Send answer");

        // The emitter's rules are checked first, each error at its field,
        // and nothing is sent.
        b.client
            .find(Locator::Css(&format!("{form} [data-field='jobs'] input")))
            .await
            .unwrap()
            .send_keys("99")
            .await
            .unwrap();
        send.click().await.unwrap();
        b.wait_for(
            &format!("{form} [data-field='branch'] .error"),
            "the branch error",
            |t| t.starts_with("Required"),
        )
        .await;
        b.wait_for(
            &format!("{form} [data-field='target'] .error"),
            "the target error",
            |t| t.starts_with("Required"),
        )
        .await;
        b.wait_for(
            &format!("{form} [data-field='jobs'] .error"),
            "the range error",
            |t| t == "At most 16.",
        )
        .await;
        assert_eq!(
            focused_name(&b).await,
            "Branch name for the fix (required)",
            "focus moves to the first error"
        );
        let sent = b
            .client
            .find_all(Locator::Css(&format!(
                "article[data-request='{request_id}'] li.command"
            )))
            .await
            .unwrap();
        assert!(sent.is_empty(), "a form with errors was sent");

        // Filled from the keyboard alone, from the focused first field.
        keys(&b, "fix/build").await;
        keys(&b, TAB).await;
        keys(&b, &format!("{END}{BACKSPACE}{BACKSPACE}4")).await;
        keys(&b, TAB).await;
        assert_eq!(focused_name(&b).await, "Dry run first");
        keys(&b, " ").await;
        keys(&b, TAB).await;
        assert_eq!(focused_name(&b).await, "Staging");
        keys(&b, " ").await;
        keys(&b, TAB).await;
        assert_eq!(focused_name(&b).await, "Unit tests");
        keys(&b, " ").await;
        keys(&b, TAB).await;
        keys(&b, TAB).await;
        assert_eq!(focused_name(&b).await, "Dependency audit");
        keys(&b, " ").await;
        keys(&b, TAB).await;
        assert_eq!(focused_name(&b).await, "The team channel");
        keys(&b, DOWN).await;
        keys(&b, DOWN).await;
        assert_eq!(focused_name(&b).await, "Other");
        keys(&b, TAB).await;
        assert_eq!(focused_name(&b).await, "Other answer for “Who to notify”");
        keys(&b, "the on-call person").await;
        // Fixed fields clear their errors as they are edited.
        let errors = b.client.execute(&format!("return [...document.querySelectorAll(\"{form} .error\")].filter(e => !e.hidden).map(e => e.textContent)"), vec![]).await.unwrap();
        assert_eq!(errors, json!([]), "errors left after the fixes");
        b.client.execute(&format!("document.querySelector(\"article[data-request='{request_id}']\").scrollIntoView({{block: 'start'}})"), vec![]).await.unwrap();
        b.screenshot(&images().join("ui-form.png")).await;
        keys(&b, TAB).await;
        assert_eq!(focused_name(&b).await, "Send answer");
        keys(&b, ENTER).await;

        // The ack, then the outcome events, on the page.
        let card_sel = format!("article[data-request='{request_id}']");
        let command_id = b
            .wait_attr(
                &format!("{card_sel} li.command-accepted"),
                "data-command",
                "the ack",
                |t| t.contains("accepted by the agent"),
            )
            .await;
        // The answer's id reads short, whole in its tooltip and copy button.
        let chip = b
            .wait_attr(
                &format!("{card_sel} li.command-accepted .id-chip"),
                "data-id",
                "the answer's id",
                |t| t.contains('…') && t.len() < 16,
            )
            .await;
        assert_eq!(chip, command_id);
        b.wait_for(
            &format!("{card_sel} li[data-type='attention.answered']"),
            "attention.answered",
            |t| {
                t.contains("branch=fix/build")
                    && t.contains("checks=unit+audit")
                    && t.contains("notify=the on-call person")
            },
        )
        .await;
        b.wait_for(
            &format!("{card_sel} li[data-type='attention.resolved']"),
            "attention.resolved",
            |t| t.contains("answered"),
        )
        .await;
        b.wait_for(
            &format!("{card_sel}[data-state='resolved']"),
            "the request resolved",
            |_| true,
        )
        .await;

        // The same, exactly, in the relay's history.
        let entered = json!({"branch": "fix/build", "jobs": 4, "dry_run": true, "target": "staging", "checks": ["unit", "audit"], "notify": "the on-call person"});
        let events = history(&served.base, Some(TOKEN), session).await;
        let command = one(&events, "answer", |e| e["id"] == command_id.as_str());
        assert_eq!(command["type"], "control.attention.respond");
        assert_eq!(command["source"], PAGE_SOURCE);
        assert_eq!(command["subject"], request_id.as_str());
        assert_eq!(command["cause"], request_id.as_str());
        assert_eq!(command["capture"], "full", "typed text goes at full");
        assert!(command.get("seq").is_none());
        assert_eq!(command["data"]["answer"], json!({"values": entered}));
        one(&events, "ack", |e| {
            e["type"] == "control.accepted" && e["cause"] == command_id.as_str()
        });
        let answered = one(&events, "answered", |e| {
            e["type"] == "attention.answered" && e["cause"] == command_id.as_str()
        });
        assert_eq!(answered["data"]["answer"]["values"], entered);
        let resolved = one(&events, "resolved", |e| {
            e["type"] == "attention.resolved" && e["subject"] == request_id.as_str()
        });
        assert_eq!(resolved["data"]["resolution"], "answered");

        // The permission, by its button: ids only, so capture metadata.
        b.client
            .find(Locator::Css(
                "article[data-request] button[data-option='allow']",
            ))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let permission_command = b
            .wait_attr(
                ".session-view article[data-request]:has(.kind-permission) li.command-accepted",
                "data-command",
                "the permission's ack",
                |_| true,
            )
            .await;
        let events = history(&served.base, Some(TOKEN), session).await;
        let allow = one(&events, "allow", |e| e["id"] == permission_command.as_str());
        assert_eq!(allow["capture"], "metadata");
        assert_eq!(allow["data"]["answer"], json!({"option": "allow"}));

        // The timeline: the command is there, and a cause link leads to it.
        b.wait_for(
            &format!("tr[data-event='{command_id}'][data-type='control.attention.respond']"),
            "the answer in the timeline",
            |_| true,
        )
        .await;
        let answered_id = answered["id"].as_str().unwrap();
        // The demo goes on writing: stop following the latest event first,
        // as a person reading back does, so the row holds still.
        b.client
            .find(Locator::Css("#timeline-follow"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        b.wait_script(
            "return !document.getElementById('timeline-follow').checked",
            "following stopped",
            WAIT,
        )
        .await;
        b.client
            .find(Locator::Css(&format!(
                "tr[data-event='{answered_id}'] a.cause"
            )))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        b.wait_for(
            &format!("tr.followed[data-event='{command_id}']"),
            "the followed cause",
            |_| true,
        )
        .await;
        let focused = b
            .client
            .execute("return document.activeElement.dataset.event", vec![])
            .await
            .unwrap();
        assert_eq!(focused, json!(command_id));

        b.assert_no_errors(&[]).await;
        b.close().await;
        stop_demo(&mut agent);
        stop_demo(&mut other);
        served.stop().await;
    });
}

/// A scripted agent over the WebSocket: its session, requests of every
/// answerable shape, and answers that refuse, time out, then accept.
struct Scripted {
    /// Every command it received, as text.
    commands: mpsc::UnboundedReceiver<String>,
}

fn event(id: &str, kind: &str, session: &str, seq: u64, extra: Value) -> Value {
    let mut e = json!({
        "aep": "0.1", "id": id, "type": kind,
        "time": aep::control::rfc3339(aep_client::session::now_ms()),
        "source": format!("urn:test:{session}"), "agent": "scripted-agent", "session": session, "seq": seq,
    });
    for (k, v) in extra.as_object().unwrap() {
        e[k] = v.clone();
    }
    e
}

async fn scripted(base: &str, session: &str, requests: Vec<Value>, stay: bool) -> Scripted {
    let url = format!(
        "{}/socket?access_token={TOKEN}",
        base.replace("http://", "ws://")
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    let hello = json!({"type": "hello", "versions": ["0.1"], "role": "emitter", "identity": {"agent": "scripted-agent"},
        "capabilities": {"control": {"accepts": ["control.attention.respond"]}}});
    ws.send(Message::text(hello.to_string())).await.unwrap();
    let mut seq = 0;
    let started = event(
        &format!("{session}-start"),
        "session.started",
        session,
        seq,
        json!({"capture": "redacted", "data": {"label": "scripted"}}),
    );
    ws.send(Message::text(started.to_string())).await.unwrap();
    for r in requests {
        seq += 1;
        let mut e = event(
            r["id"].as_str().unwrap(),
            "attention.requested",
            session,
            seq,
            json!({"severity": "notice"}),
        );
        e["capture"] = r["capture"].clone();
        e["data"] = r["data"].clone();
        ws.send(Message::text(e.to_string())).await.unwrap();
    }
    let (tx, commands) = mpsc::unbounded_channel();
    if !stay {
        // Leave once the relay holds the session: its owner is gone.
        let deadline = tokio::time::Instant::now() + WAIT;
        while history(base, Some(TOKEN), session).await.len() < seq as usize + 1 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the relay did not take the scripted session"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = ws.close(None).await;
        return Scripted { commands };
    }
    let session = session.to_owned();
    tokio::spawn(async move {
        let mut seen: HashSet<String> = HashSet::new();
        while let Some(Ok(message)) = ws.next().await {
            let Message::Text(text) = message else {
                continue;
            };
            let frame: Value = serde_json::from_str(&text).unwrap();
            if frame["type"] != "control.attention.respond" {
                continue;
            }
            let _ = tx.send(text.to_string());
            let id = frame["id"].as_str().unwrap().to_owned();
            let subject = frame["subject"].as_str().unwrap_or_default().to_owned();
            let first = seen.insert(id.clone());
            let mut out = Vec::new();
            match subject.as_str() {
                "REQ-P" => out.push((
                    "control.rejected",
                    json!({"reason": "refused", "detail": "the test agent keeps its disk"}),
                    None,
                )),
                // The free-text answer: silence the first time (the page
                // times out), accepted on the retry.
                "REQ-T" if first => {}
                "REQ-T" => {
                    out.push(("control.accepted", json!({}), None));
                    out.push((
                        "attention.answered",
                        json!({"answer": frame["data"]["answer"]}),
                        Some("REQ-T"),
                    ));
                    out.push((
                        "attention.resolved",
                        json!({"resolution": "answered"}),
                        Some("REQ-T"),
                    ));
                }
                _ => out.push((
                    "control.rejected",
                    json!({"reason": "invalid", "detail": "unexpected"}),
                    None,
                )),
            }
            for (kind, data, subject) in out {
                seq += 1;
                let mut e = event(
                    &format!("{session}-{seq}"),
                    kind,
                    &session,
                    seq,
                    json!({"cause": id, "capture": "full", "data": data}),
                );
                if let Some(s) = subject {
                    e["subject"] = json!(s);
                }
                if ws.send(Message::text(e.to_string())).await.is_err() {
                    return;
                }
            }
        }
    });
    Scripted { commands }
}

#[test]
fn refusals_timeouts_and_requests_not_answerable_here() {
    run(
        "refusals_timeouts_and_requests_not_answerable_here",
        async {
            let served = relay("127.0.0.1:0", Some(TOKEN)).await;
            let options =
                json!([{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}]);
            let mut agent = scripted(
            &served.base,
            "scripted",
            vec![
                json!({"id": "REQ-P", "capture": "redacted", "data": {"kind": "permission", "prompt": "Free 3 GB?", "options": options, "respond_via": ["control"]}}),
                json!({"id": "REQ-T", "capture": "redacted", "data": {"kind": "input", "prompt": "Name the release", "respond_via": ["control"]}}),
                json!({"id": "REQ-M", "capture": "metadata", "data": {"kind": "permission", "prompt": "permission request", "options": [{"id": "allow", "label": "1"}, {"id": "deny", "label": "2"}], "respond_via": ["control"]}}),
                json!({"id": "REQ-O", "capture": "redacted", "data": {"kind": "permission", "prompt": "Answer in the terminal", "options": options, "respond_via": ["oob"]}}),
            ],
            true,
        )
        .await;
            let _gone = scripted(
            &served.base,
            "orphaned",
            vec![json!({"id": "REQ-G", "capture": "redacted", "data": {"kind": "permission", "prompt": "Anyone there?", "options": options, "respond_via": ["control"]}})],
            false,
        )
        .await;
            // A position that does not advance: a violation the page shows.
            let repeat = event(
                "REPEAT",
                "progress.status",
                "orphaned",
                1,
                json!({"data": {"message": "again"}}),
            );
            post(served.addr, &[repeat.to_string()]).await;
            let b = Browser::start().await;
            b.client
                .goto(&format!("{}/#token={TOKEN}", served.base))
                .await
                .unwrap();
            b.wait_for("#socket-state", "the control socket", |t| t == "ready")
                .await;
            b.wait_for(
                "#violations li[data-rule='seq-regression']",
                "the violation",
                |t| t.contains("session orphaned") && t.contains("REPEAT"),
            )
            .await;
            b.wait_for("#violations-title", "the violation count", |t| {
                t == "Protocol violations (1)"
            })
            .await;

            // Refused by the agent: the reason and detail are shown.
            let card = |id: &str| format!("article[data-request='{id}']");
            b.wait_for(
                &format!("{} button[data-option='allow']", card("REQ-P")),
                "the Allow button",
                |t| t == "Allow",
            )
            .await
            .click()
            .await
            .unwrap();
            b.wait_for(
                &format!("{} li.command-rejected", card("REQ-P")),
                "the refusal",
                |t| {
                    t.contains("rejected by the agent: refused")
                        && t.contains("the test agent keeps its disk")
                },
            )
            .await;

            // Silence past the ack window: a timeout, and a retry with the
            // same command, byte for byte.
            let text = b
                .wait_for(
                    &format!("{} textarea", card("REQ-T")),
                    "the free-text box",
                    |_| true,
                )
                .await;
            text.send_keys("Aurora").await.unwrap();
            b.client
                .find(Locator::Css(&format!(
                    "{} form.free-text button[type=submit]",
                    card("REQ-T")
                )))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            b.wait_for(
                &format!("{} li.command-timeout", card("REQ-T")),
                "the timeout",
                |t| t.contains("timeout: no acknowledgement within 10 s"),
            )
            .await;
            b.client
                .find(Locator::Css(&format!("{} button.retry", card("REQ-T"))))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            b.wait_for(
                &format!("{} li.command-accepted", card("REQ-T")),
                "the ack of the retry",
                |t| t.contains("(try 2)"),
            )
            .await;
            b.wait_for(
                &format!("{} li[data-type='attention.answered']", card("REQ-T")),
                "the outcome",
                |t| t.contains("“Aurora”"),
            )
            .await;
            let mut got = Vec::new();
            while got.len() < 3 {
                let next = tokio::time::timeout(WAIT, agent.commands.recv())
                    .await
                    .expect("commands arrived in time")
                    .expect("the agent runs");
                got.push(next);
            }
            let free: Vec<&String> = got.iter().filter(|c| c.contains("\"REQ-T\"")).collect();
            assert_eq!(free.len(), 2, "the answer and its retry: {got:#?}");
            assert_eq!(
                free[0], free[1],
                "a retry is the same command, byte for byte"
            );
            let answer: Value = serde_json::from_str(free[0]).unwrap();
            assert_eq!(answer["capture"], "full");
            assert_eq!(answer["data"]["answer"], json!({"text": "Aurora"}));

            // Capture metadata: the page says the labels are placeholders.
            b.wait_for(
                &format!("{} .capture-note", card("REQ-M")),
                "the capture note",
                |t| t.contains("placeholders, not the agent’s words"),
            )
            .await;
            let placeholder = b
                .client
                .find(Locator::Css(&format!("{} h3", card("REQ-M"))))
                .await
                .unwrap();
            assert!(placeholder
                .attr("class")
                .await
                .unwrap()
                .unwrap()
                .contains("placeholder"));

            // Out of band, and no live owner: no controls, and why.
            b.wait_for(
                &format!("{} .unreachable", card("REQ-O")),
                "the out-of-band note",
                |t| t.contains("can only be answered in the agent’s own window"),
            )
            .await;
            assert!(!b
                .client
                .find(Locator::Css(&format!(
                    "{} button[data-option='allow']",
                    card("REQ-O")
                )))
                .await
                .unwrap()
                .is_displayed()
                .await
                .unwrap());
            b.wait_for(
                &format!("{} .unreachable", card("REQ-G")),
                "the no-owner note",
                |t| t.contains("no live owner"),
            )
            .await;
            assert!(!b
                .client
                .find(Locator::Css(&format!(
                    "{} button[data-option='allow']",
                    card("REQ-G")
                )))
                .await
                .unwrap()
                .is_displayed()
                .await
                .unwrap());

            b.assert_no_errors(&[]).await;
            b.close().await;
            served.stop().await;
        },
    );
}

/// A relay's refusal leaves one way on, never two: one that may be sent
/// again as it is (`no-route`) offers Retry and hides the answer
/// controls; one for what the command says (`invalid-event`) gives the
/// controls back with the relay's reason, and no Retry.
#[test]
fn a_relay_refusal_offers_retry_or_the_controls_never_both() {
    run(
        "a_relay_refusal_offers_retry_or_the_controls_never_both",
        async {
            let served = relay("127.0.0.1:0", Some(TOKEN)).await;
            let options =
                json!([{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}]);
            let mut agent = scripted(
                &served.base,
                "refusing",
                vec![
                    json!({"id": "REQ-N", "capture": "redacted", "data": {"kind": "permission", "prompt": "Route me", "options": options, "respond_via": ["control"]}}),
                    json!({"id": "REQ-I", "capture": "redacted", "data": {"kind": "permission", "prompt": "Spoil me", "options": options, "respond_via": ["control"]}}),
                ],
                true,
            )
            .await;
            let b = Browser::start().await;
            b.client
                .goto(&format!("{}/#token={TOKEN}", served.base))
                .await
                .unwrap();
            b.wait_for("#socket-state", "the control socket", |t| t == "ready")
                .await;
            // The page's first command for each request is spoiled on its
            // way out: REQ-N's sent to a session nobody owns (the relay
            // refuses it with no-route), REQ-I's without a valid `aep`
            // (invalid-event). A retry goes out as it was made.
            b.client
                .execute(
                    "window.aepSpoil = { 'REQ-N': ['\"session\":\"refusing\"', '\"session\":\"nobody\"'], 'REQ-I': ['\"aep\":\"0.1\"', '\"aep\":5'] }; const send = WebSocket.prototype.send; WebSocket.prototype.send = function (data) { for (const [req, [from, to]] of Object.entries(window.aepSpoil)) if (typeof data === 'string' && data.includes(`\"subject\":\"${req}\"`)) { delete window.aepSpoil[req]; data = data.replace(from, to); } return send.call(this, data); };",
                    vec![],
                )
                .await
                .unwrap();
            let card = |id: &str| format!("article[data-request='{id}']");
            // What the card offers: Retry buttons, and whether the Allow
            // button is shown and enabled.
            let offers = |id: &str| {
                format!("const c = document.querySelector(\"{}\"); const allow = c.querySelector(\"button[data-option='allow']\"); return [c.querySelectorAll('button.retry').length, allow.checkVisibility(), allow.disabled];", card(id).replace('\'', "\\'"))
            };
            for id in ["REQ-N", "REQ-I"] {
                b.wait_for(
                    &format!("{} button[data-option='allow']", card(id)),
                    "the Allow button",
                    |t| t == "Allow",
                )
                .await
                .click()
                .await
                .unwrap();
            }
            b.wait_for(
                &format!("{} li.command-refused", card("REQ-N")),
                "the no-route refusal",
                |t| t.contains("refused by the relay: no-route"),
            )
            .await;
            assert_eq!(
                b.client.execute(&offers("REQ-N"), vec![]).await.unwrap(),
                json!([1, false, false]),
                "Retry, the controls hidden"
            );
            let invalid = b
                .wait_for(
                    &format!("{} li.command-refused", card("REQ-I")),
                    "the invalid-event refusal",
                    |t| t.contains("refused by the relay: invalid-event"),
                )
                .await;
            assert!(
                invalid
                    .text()
                    .await
                    .unwrap()
                    .contains("Send a different answer"),
                "the relay's reason and what to do"
            );
            assert_eq!(
                b.client.execute(&offers("REQ-I"), vec![]).await.unwrap(),
                json!([0, true, false]),
                "the controls back, no Retry"
            );
            // The retry goes to the agent (whose script rejects it).
            b.client
                .find(Locator::Css(&format!("{} button.retry", card("REQ-N"))))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            b.wait_for(
                &format!("{} li.command-rejected", card("REQ-N")),
                "the agent's answer to the retry",
                |t| t.contains("(try 2)"),
            )
            .await;
            let got = tokio::time::timeout(WAIT, agent.commands.recv())
                .await
                .expect("the retry arrived in time")
                .expect("the agent runs");
            assert!(got.contains("\"REQ-N\""), "{got}");
            b.assert_no_errors(&[]).await;
            b.close().await;
            served.stop().await;
        },
    );
}

/// A Retry with no control socket (the token forgotten) sends nothing,
/// and the card says so: it does not claim the command went out and
/// wait out an ack window for it.
#[test]
fn a_retry_without_a_control_socket_says_it_was_not_sent() {
    run(
        "a_retry_without_a_control_socket_says_it_was_not_sent",
        async {
            let served = relay("127.0.0.1:0", Some(TOKEN)).await;
            let options =
                json!([{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}]);
            let _agent = scripted(
                &served.base,
                "refusing",
                vec![json!({"id": "REQ-N", "capture": "redacted", "data": {"kind": "permission", "prompt": "Route me", "options": options, "respond_via": ["control"]}})],
                true,
            )
            .await;
            let b = Browser::start().await;
            b.client
                .goto(&format!("{}/#token={TOKEN}", served.base))
                .await
                .unwrap();
            b.wait_for("#socket-state", "the control socket", |t| t == "ready")
                .await;
            b.client
                .execute(
                    "const send = WebSocket.prototype.send; WebSocket.prototype.send = function (data) { if (typeof data === 'string' && data.includes('\"subject\":\"REQ-N\"')) data = data.replace('\"session\":\"refusing\"', '\"session\":\"nobody\"'); return send.call(this, data); };",
                    vec![],
                )
                .await
                .unwrap();
            let card = "article[data-request='REQ-N']";
            b.wait_for(
                &format!("{card} button[data-option='allow']"),
                "the Allow button",
                |t| t == "Allow",
            )
            .await
            .click()
            .await
            .unwrap();
            b.wait_for(
                &format!("{card} li.command-refused"),
                "the no-route refusal",
                |t| t.contains("refused by the relay: no-route"),
            )
            .await;
            // The token forgotten: no control socket. Retry.
            b.client
                .execute(
                    "document.getElementById('token-forget').click(); document.querySelector(\"article[data-request='REQ-N'] button.retry\").click();",
                    vec![],
                )
                .await
                .unwrap();
            let said = b
                .wait_for(&format!("{card} li.command"), "the retry's outcome", |t| {
                    t.contains("(try 2)")
                })
                .await
                .text()
                .await
                .unwrap();
            assert!(
                said.contains("not-connected") && !said.contains("waiting"),
                "a retry that went nowhere says so: {said}"
            );
            b.close().await;
            served.stop().await;
        },
    );
}

#[test]
fn without_a_token_the_page_watches_and_says_why() {
    run("without_a_token_the_page_watches_and_says_why", async {
        // A relay without a token routes no answer. The page learns that
        // from the relay, not from its address: even opened with a token
        // it says answering is off, and why, and offers no answer controls.
        let open = relay("127.0.0.1:0", None).await;
        let mut agent = demo(&open.base, None, "watched");
        let b = Browser::start().await;
        b.client
            .goto(&format!("{}/#token=any", open.base))
            .await
            .unwrap();
        b.wait_for("#posture", "the posture", |t| {
            t.starts_with(
                "Watch-only: answering is off because this relay was started without a token",
            )
        })
        .await;
        b.wait_for("#socket-state", "the socket state", |t| {
            t == "off (this relay routes no answers)"
        })
        .await;
        b.wait_for(
            "#inbox article[data-request] .unreachable",
            "why answering is off",
            |t| t.contains("this relay was started without a token"),
        )
        .await;
        let buttons = b
            .client
            .find_all(Locator::Css("#inbox button[data-option]"))
            .await
            .unwrap();
        assert!(!buttons.is_empty());
        for button in buttons {
            assert!(
                !button.is_displayed().await.unwrap(),
                "an answer button shows on a relay that routes no answers"
            );
        }
        let text = b.text().await;
        assert!(
            !text.contains("Answering is on") && !text.contains("Control: ready"),
            "the page claims it can answer:\n{text}"
        );
        b.assert_no_errors(&[]).await;
        b.close().await;
        stop_demo(&mut agent);
        open.stop().await;
    });
}

#[test]
fn the_empty_states_say_no_token_or_wrong_token_and_the_warning_is_on_top() {
    run(
        "the_empty_states_say_no_token_or_wrong_token_and_the_warning_is_on_top",
        async {
            // A relay that wants a token, opened without one: the empty
            // states say so (not "no sessions yet"), and the page asks.
            let guarded = relay("127.0.0.1:0", Some(TOKEN)).await;
            let mut agent = demo(&guarded.base, Some(TOKEN), "guarded");
            let b = Browser::start().await;
            b.client.goto(&format!("{}/", guarded.base)).await.unwrap();
            b.wait_for("#token-why", "the token question", |t| {
                t.contains("requires a token")
            })
            .await;
            b.wait_for("#fleet p.empty", "the no-token empty state", |t| {
                t.contains("no token given")
            })
            .await;
            b.wait_for("#inbox p.empty", "the inbox's no-token state", |t| {
                t.contains("no token given")
            })
            .await;
            let text = b.text().await;
            assert!(
                !text.contains("No sessions yet") && !text.contains("Nothing is waiting"),
                "an empty state hides the cause:\n{text}"
            );

            // A wrong token: the warning sits at the top of the page, and
            // the empty states name the cause.
            b.client
                .find(Locator::Css("#token-input"))
                .await
                .unwrap()
                .send_keys(&format!("not-the-token{ENTER}"))
                .await
                .unwrap();
            b.wait_for("#token-alert", "the wrong-token warning", |t| {
                t.contains("wrong token")
            })
            .await;
            b.wait_for("#fleet p.empty", "the wrong-token empty state", |t| {
                t.contains("wrong token")
            })
            .await;
            let on_top = b
                .client
                .execute(
                    "const a = document.getElementById('token-alert'); \
                     return Boolean(a.compareDocumentPosition(document.getElementById('view')) & Node.DOCUMENT_POSITION_FOLLOWING) \
                     && !document.getElementById('notices').textContent.includes('token');",
                    vec![],
                )
                .await
                .unwrap();
            assert_eq!(on_top, json!(true), "the token warning is not at the top");
            // The refusals of the wrong token (and of none) are the only
            // errors the console may hold.
            b.assert_no_errors(&["401", "HTTP Authentication failed"])
                .await;
            b.close().await;
            stop_demo(&mut agent);
            guarded.stop().await;
        },
    );
}

#[test]
fn a_token_address_pasted_into_an_open_tab_is_taken_and_stripped() {
    run(
        "a_token_address_pasted_into_an_open_tab_is_taken_and_stripped",
        async {
            let guarded = relay("127.0.0.1:0", Some(TOKEN)).await;
            let mut agent = demo(&guarded.base, Some(TOKEN), "pasted");
            let b = Browser::start().await;
            b.client.goto(&format!("{}/", guarded.base)).await.unwrap();
            b.wait_for("#token-why", "the token question", |t| {
                t.contains("requires a token")
            })
            .await;
            // A mark on this document: the paste must not reload the page.
            b.client
                .execute("window.aepSameTab = true;", vec![])
                .await
                .unwrap();

            // The address `--print-ui-url` prints, pasted into this tab.
            b.client
                .goto(&format!("{}/#token={TOKEN}", guarded.base))
                .await
                .unwrap();
            b.wait_for(
                "tr[data-session='pasted']",
                "the session after the pasted token",
                |_| true,
            )
            .await;
            b.wait_for("#posture", "the posture", |t| {
                t.starts_with("Answering is on")
            })
            .await;
            let href = b
                .wait_script(
                    "return !location.href.includes('token=') && location.href",
                    "the token gone from the address bar",
                    WAIT,
                )
                .await;
            assert!(!href.as_str().unwrap().contains(TOKEN), "{href}");
            let same = b
                .client
                .execute(
                    "return [window.aepSameTab === true, sessionStorage.getItem('aep-relay-token')]",
                    vec![],
                )
                .await
                .unwrap();
            assert_eq!(
                same,
                json!([true, TOKEN]),
                "the token was taken in the same document and kept for the tab"
            );
            b.assert_no_errors(&["401"]).await;
            b.close().await;
            stop_demo(&mut agent);
            guarded.stop().await;
        },
    );
}

/// A token address pasted into a tab that shows a session page: the token
/// is taken and stripped, and the tab stays on the session page (an
/// address that names a page as well goes to that page).
#[test]
fn a_token_address_pasted_on_a_session_page_stays_on_it() {
    run(
        "a_token_address_pasted_on_a_session_page_stays_on_it",
        async {
            let served = relay("127.0.0.1:0", Some(TOKEN)).await;
            a_session_with_tool_calls(served.addr).await;
            let b = Browser::start().await;
            b.client
                .goto(&format!("{}/#token={TOKEN}", served.base))
                .await
                .unwrap();
            b.wait_for("tr[data-session='tl']", "the session", |_| true)
                .await;
            b.client
                .execute(
                    "location.hash = '/session/' + encodeURIComponent(JSON.stringify(['urn:test:tl', 'tl'])); window.aepSameTab = true; window.aepRoute = location.hash;",
                    vec![],
                )
                .await
                .unwrap();
            b.wait_for("#session-title", "the session page", |t| t == "Session tl")
                .await;
            let route: String = b
                .client
                .execute("return window.aepRoute", vec![])
                .await
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned();
            // Where the tab is after a paste: its fragment, the page shown,
            // and whether it is the same document.
            let page = "return [location.hash, document.querySelector('.session-view #session-title')?.textContent ?? document.querySelector('#view').firstElementChild?.className, window.aepSameTab === true]";
            let stripped = || async {
                b.wait_script(
                    "return !location.href.includes('token=')",
                    "the token gone from the address bar",
                    WAIT,
                )
                .await
            };

            // The address `--print-ui-url` prints, pasted into this tab.
            b.client
                .goto(&format!("{}/#token={TOKEN}", served.base))
                .await
                .unwrap();
            stripped().await;
            assert_eq!(
                b.client.execute(page, vec![]).await.unwrap(),
                json!([route, "Session tl", true]),
                "the tab stays on the session page"
            );

            // An address naming a page and the token goes to that page.
            b.client
                .execute("location.hash = '/';", vec![])
                .await
                .unwrap();
            b.wait_for("tr[data-session='tl']", "the fleet", |_| true)
                .await;
            b.client
                .goto(&format!("{}/{route}&token={TOKEN}", served.base))
                .await
                .unwrap();
            stripped().await;
            b.wait_for("#session-title", "the session page", |t| t == "Session tl")
                .await;
            assert_eq!(
                b.client.execute(page, vec![]).await.unwrap(),
                json!([route, "Session tl", true]),
                "the page the address names"
            );
            b.assert_no_errors(&[]).await;
            b.close().await;
            served.stop().await;
        },
    );
}

/// Posts a session that ended with a request pending ("gone", REQ-E) and
/// a live one with two requests ("alive": REQ-L answerable, REQ-X without
/// `respond_via`), all at capture `redacted`.
async fn ended_and_live(addr: std::net::SocketAddr) {
    let options = json!([{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}]);
    let request = |id: &str, session: &str, seq: u64, data: Value| {
        event(
            id,
            "attention.requested",
            session,
            seq,
            json!({"capture": "redacted", "data": data}),
        )
    };
    let lines: Vec<String> = [
        event("E0", "session.started", "gone", 0, json!({})),
        request(
            "REQ-E",
            "gone",
            1,
            json!({"kind": "permission", "prompt": "Delete the cache?", "options": options, "respond_via": ["control"]}),
        ),
        event("E2", "session.ended", "gone", 2, json!({})),
        event("L0", "session.started", "alive", 0, json!({})),
        request(
            "REQ-L",
            "alive",
            1,
            json!({"kind": "permission", "prompt": "Push the tag?", "options": options, "respond_via": ["control"]}),
        ),
        request(
            "REQ-X",
            "alive",
            2,
            json!({"kind": "permission", "prompt": "Answer me there", "options": options}),
        ),
    ]
    .iter()
    .map(Value::to_string)
    .collect();
    post(addr, &lines).await;
}

#[test]
fn requests_of_ended_sessions_leave_the_inbox_for_the_closed_list() {
    run(
        "requests_of_ended_sessions_leave_the_inbox_for_the_closed_list",
        async {
            let served = relay("127.0.0.1:0", Some(TOKEN)).await;
            ended_and_live(served.addr).await;
            let b = Browser::start().await;
            b.client
                .goto(&format!("{}/#token={TOKEN}", served.base))
                .await
                .unwrap();
            b.wait_for("#socket-state", "the control socket", |t| t == "ready")
                .await;

            // The ended session's request is not waiting: it is in the
            // folded closed list, findable, with no answer controls.
            b.wait_for(
                "#inbox .inbox-list > article[data-request='REQ-L'] h3",
                "the live request in the inbox",
                |t| t == "Push the tag?",
            )
            .await;
            b.wait_for("#closed summary", "the closed list", |t| {
                t == "Closed without an answer (1)"
            })
            .await;
            let placed = b
                .client
                .execute(
                    "return { inbox: [...document.querySelectorAll('#inbox > .inbox-list > article')].map((a) => a.dataset.request).sort(), \
                     closed: [...document.querySelectorAll('#closed article')].map((a) => a.dataset.request) };",
                    vec![],
                )
                .await
                .unwrap();
            assert_eq!(
                placed,
                json!({"inbox": ["REQ-L", "REQ-X"], "closed": ["REQ-E"]}),
                "the ended session's request left the inbox"
            );
            // Only what can still be answered counts in the tab's title.
            let title = b.client.title().await.unwrap();
            assert_eq!(title, "(2) AEP relay");
            b.client
                .find(Locator::Css("#closed summary"))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            b.wait_for(
                "#closed article[data-request='REQ-E'] .unreachable",
                "why the closed request cannot be answered",
                |t| t.contains("Closed without an answer: the agent’s session ended"),
            )
            .await;
            for button in b
                .client
                .find_all(Locator::Css("#closed article button"))
                .await
                .unwrap()
            {
                assert!(
                    !button.is_displayed().await.unwrap(),
                    "an answer control shows under a request of an ended session"
                );
            }
            b.assert_no_errors(&[]).await;
            b.close().await;
            served.stop().await;
        },
    );
}

#[test]
fn requests_say_what_they_mean_in_plain_words() {
    run("requests_say_what_they_mean_in_plain_words", async {
        let served = relay("127.0.0.1:0", Some(TOKEN)).await;
        ended_and_live(served.addr).await;
        let b = Browser::start().await;
        b.client
            .goto(&format!("{}/#token={TOKEN}", served.base))
            .await
            .unwrap();
        b.wait_for("#socket-state", "the control socket", |t| t == "ready")
            .await;
        // Plain words; the spec's kept in a tooltip.
        let note = b
            .wait_attr(
                "article[data-request='REQ-L'] .capture-note",
                "title",
                "the redaction note",
                |t| t == "Text was redacted by the agent before it was sent.",
            )
            .await;
        assert!(note.contains("redacted"), "{note}");
        let why = b
            .wait_attr(
                "article[data-request='REQ-X'] .unreachable",
                "title",
                "the out-of-band note",
                |t| {
                    t == "This request can only be answered in the agent’s own window, not from this page."
                },
            )
            .await;
        assert!(why.contains("respond_via"), "{why}");
        let text = b.text().await;
        for jargon in [
            "Captured at",
            "redaction pipeline",
            "respond_via",
            "AEP-0004",
            "§",
        ] {
            assert!(!text.contains(jargon), "the page says {jargon:?}:\n{text}");
        }
        b.assert_no_errors(&[]).await;
        b.close().await;
        served.stop().await;
    });
}

/// Posts `lines` as one NDJSON batch (the relay's public ingest).
async fn post(addr: std::net::SocketAddr, lines: &[String]) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = lines.join("\n");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nAEP-Version: 0.1\r\nContent-Type: application/x-ndjson\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(WAIT, stream.read_to_string(&mut answer))
        .await
        .expect("the relay answered")
        .unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 202"),
        "the history was not taken back: {answer}"
    );
}

#[test]
fn a_page_left_open_resumes_across_a_relay_restart_without_duplicates() {
    run(
        "a_page_left_open_resumes_across_a_relay_restart_without_duplicates",
        async {
            let first = relay("127.0.0.1:0", Some(TOKEN)).await;
            let addr = first.addr;
            let session = "restarted";
            let mut agent = demo(&first.base, Some(TOKEN), session);
            let b = Browser::start().await;
            b.client
                .goto(&format!("{}/#token={TOKEN}", first.base))
                .await
                .unwrap();
            b.wait_for(
                &format!("tr[data-session='{session}'] a"),
                "the session",
                |_| true,
            )
            .await
            .click()
            .await
            .unwrap();
            b.wait_script(
                "return Number(document.querySelector('table.timeline').dataset.events) >= 12",
                "a dozen events",
                WAIT,
            )
            .await;

            // The relay goes away and comes back on the same address holding
            // what it held (as a relay with storage would): the page resumes
            // from its positions; what it sees twice it shows once.
            let held: Vec<String> = history(&first.base, Some(TOKEN), session)
                .await
                .iter()
                .map(|e| e.to_string())
                .collect();
            let before = held.len();
            first.stop().await;
            b.wait_for("#stream-state", "the page noticing", |t| {
                t == "reconnecting"
            })
            .await;
            let second = relay(&addr.to_string(), Some(TOKEN)).await;
            post(addr, &held).await;
            // The demo reconnects and goes on; its next events reach the page.
            let deadline = tokio::time::Instant::now() + WAIT;
            let newer = loop {
                let now: Vec<Value> = history(&second.base, Some(TOKEN), session).await;
                // The newest that is a row of its own (a tool call's events
                // fold under the call's row, and only rows shown are drawn).
                let own = now
                    .get(before..)
                    .unwrap_or_default()
                    .iter()
                    .rev()
                    .find(|e| !e["type"].as_str().unwrap_or("").starts_with("tool."));
                if let (true, Some(e)) = (now.len() > before + 5, own) {
                    break e["id"].as_str().unwrap().to_owned();
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "the demo did not continue on the new relay"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            };
            b.wait_for(
                &format!("tr[data-event='{newer}']"),
                "an event from after the restart",
                |_| true,
            )
            .await;
            b.wait_for("#stream-state", "the stream live again", |t| t == "live")
                .await;
            let ids = b.client.execute("return [...document.querySelectorAll('tr[data-event]')].map(r => r.dataset.event)", vec![]).await.unwrap();
            let ids: Vec<&str> = ids
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            let unique: HashSet<&str> = ids.iter().copied().collect();
            assert_eq!(unique.len(), ids.len(), "an event shows twice");
            let held = b
                .client
                .execute(
                    "return Number(document.querySelector('table.timeline').dataset.events)",
                    vec![],
                )
                .await
                .unwrap();
            assert!(
                held.as_u64().unwrap() > before as u64,
                "the timeline did not grow past the restart: {held}"
            );
            b.client
                .find(Locator::Css(".session-view a[href='#/']"))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            b.wait_for("#violations-title", "no violations", |t| {
                t == "Protocol violations (0)"
            })
            .await;
            b.assert_no_errors(&[
                "ERR_CONNECTION_REFUSED",
                "ERR_INCOMPLETE_CHUNKED_ENCODING",
                "/socket",
            ])
            .await;
            b.close().await;
            stop_demo(&mut agent);
            second.stop().await;
        },
    );
}

/// One `aep hook claude-code` call against `base`, its payload written to
/// standard input; the process, to be waited on.
fn hook_call(home: &std::path::Path, base: &str, payload: &Value) -> std::process::Child {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_aep"))
        .args(["hook", "claude-code"])
        .env("AEP_HOME", home)
        .env("AEP_RELAY", base)
        .env("AEP_TOKEN", TOKEN)
        .env("AEP_ATTENTION_TIMEOUT_MS", "60000")
        .env("AEP_ADAPTER_IDLE", "3s")
        .env_remove("AEP_CAPTURE")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the aep binary runs");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(payload.to_string().as_bytes()).unwrap();
    child
}

/// Waits (bounded) for a hook process to exit 0; its standard output.
async fn hook_output(child: std::process::Child) -> String {
    let output = tokio::time::timeout(
        WAIT,
        tokio::task::spawn_blocking(move || child.wait_with_output()),
    )
    .await
    .expect("the hook exited in time")
    .unwrap()
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn a_claude_code_question_is_answered_in_the_page_and_the_agent_gets_the_labels() {
    run(
        "a_claude_code_question_is_answered_in_the_page_and_the_agent_gets_the_labels",
        async {
            let served = relay("127.0.0.1:0", Some(TOKEN)).await;
            let home = tempfile::tempdir().unwrap();
            let session = "cc-question";
            let payload = |hook: &str, extra: Value| {
                let mut payload =
                    json!({"session_id": session, "hook_event_name": hook, "cwd": "/w"});
                for (k, v) in extra.as_object().unwrap() {
                    payload[k] = v.clone();
                }
                payload
            };
            let questions = json!({"questions": [
                {"question": "Which database?", "header": "DB", "multiSelect": false,
                 "options": [{"label": "Postgres"}, {"label": "SQLite"}]},
                {"question": "Which checks run in CI?", "header": "CI", "multiSelect": true,
                 "options": [{"label": "fmt"}, {"label": "clippy"}, {"label": "test"}]},
                {"question": "Which runtime?", "header": "Async", "multiSelect": false,
                 "options": [{"label": "tokio"}, {"label": "smol"}]}
            ]});
            hook_output(hook_call(
                home.path(),
                &served.base,
                &payload("UserPromptSubmit", json!({"prompt": "set the project up"})),
            ))
            .await;
            let held = hook_call(
                home.path(),
                &served.base,
                &payload(
                    "PermissionRequest",
                    json!({"tool_name": "AskUserQuestion", "tool_input": questions}),
                ),
            );

            let b = Browser::start().await;
            b.client
                .goto(&format!("{}/#token={TOKEN}", served.base))
                .await
                .unwrap();
            b.wait_for("#socket-state", "the control socket", |t| t == "ready")
                .await;
            b.wait_for(
                "#inbox article[data-request] h3",
                "the question in the inbox",
                |t| t == "claude-code asks 3 questions",
            )
            .await;
            b.client
                .find(Locator::Css(&format!("tr[data-session='{session}'] a")))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            let request_id = b
                .wait_attr(
                    ".session-view article[data-request]",
                    "data-request",
                    "the form on the session page",
                    |t| t.contains("DB: Which database?") && t.contains("Send answer"),
                )
                .await;
            let form = format!("article[data-request='{request_id}'] form.form-answer");
            for input in [
                "[data-field='1'] input[value='2']",
                "[data-field='2'] input[value='1']",
                "[data-field='2'] input[value='3']",
            ] {
                b.client
                    .find(Locator::Css(&format!("{form} {input}")))
                    .await
                    .unwrap()
                    .click()
                    .await
                    .unwrap();
            }
            b.client
                .find(Locator::Css(&format!(
                    "{form} [data-field='3'] input.other-text"
                )))
                .await
                .unwrap()
                .send_keys("async-std")
                .await
                .unwrap();
            b.client
                .find(Locator::Css(&format!("{form} button[type=submit]")))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            b.wait_for(
                &format!("article[data-request='{request_id}'] li.command-accepted"),
                "the agent's ack",
                |t| t.contains("accepted by the agent"),
            )
            .await;

            let stdout = hook_output(held).await;
            let decision: Value = serde_json::from_str(stdout.trim()).expect(&stdout);
            let mut updated = questions.clone();
            updated["answers"] = json!({
                "Which database?": "SQLite",
                "Which checks run in CI?": "fmt, test",
                "Which runtime?": "async-std",
            });
            assert_eq!(
                decision,
                json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                    "decision": {"behavior": "allow", "updatedInput": updated}}})
            );
            let events = history(&served.base, Some(TOKEN), session).await;
            let answered = one(&events, "answered", |e| e["type"] == "attention.answered");
            assert_eq!(
                answered["data"]["answer"]["values"],
                json!({"1": "2", "2": ["1", "3"], "3": "async-std"})
            );

            b.assert_no_errors(&[]).await;
            b.close().await;
            served.stop().await;
        },
    );
}

/// A session with a run, two tool calls and other events, posted.
async fn a_session_with_tool_calls(addr: std::net::SocketAddr) {
    let tool = |name: &str, call: &str| json!({"name": name, "call_id": call});
    let lines: Vec<String> = [
        event("T0", "session.started", "tl", 0, json!({})),
        event(
            "T1",
            "run.started",
            "tl",
            1,
            json!({"run": "r1", "capture": "full", "data": {"prompt": "Tidy the build"}}),
        ),
        event(
            "T2",
            "tool.requested",
            "tl",
            2,
            json!({"run": "r1", "data": {"tool": tool("Bash", "c1")}}),
        ),
        event(
            "T3",
            "progress.status",
            "tl",
            3,
            json!({"run": "r1", "capture": "full", "data": {"message": "the needle is here"}}),
        ),
        event(
            "T4",
            "tool.completed",
            "tl",
            4,
            json!({"run": "r1", "data": {"tool": tool("Bash", "c1"), "duration_ms": 1500}}),
        ),
        event(
            "T5",
            "tool.requested",
            "tl",
            5,
            json!({"run": "r1", "data": {"tool": tool("Read", "c2")}}),
        ),
        event(
            "T6",
            "tool.failed",
            "tl",
            6,
            json!({"run": "r1", "severity": "warning", "data": {"tool": tool("Read", "c2"), "error": {"type": "NotFound"}}}),
        ),
        event("T7", "run.finished", "tl", 7, json!({"run": "r1"})),
    ]
    .iter()
    .map(Value::to_string)
    .collect();
    post(addr, &lines).await;
}

#[test]
fn the_timeline_folds_tool_calls_groups_runs_and_filters() {
    run(
        "the_timeline_folds_tool_calls_groups_runs_and_filters",
        async {
            let served = relay("127.0.0.1:0", Some(TOKEN)).await;
            a_session_with_tool_calls(served.addr).await;
            let b = Browser::start().await;
            b.client
                .goto(&format!("{}/#token={TOKEN}", served.base))
                .await
                .unwrap();
            b.wait_for("#socket-state", "the control socket", |t| t == "ready")
                .await;
            b.client
            .execute(
                "location.hash = '/session/' + encodeURIComponent(JSON.stringify(['urn:test:tl', 'tl']))",
                vec![],
            )
            .await
            .unwrap();
            // The run is a group with its status and prompt.
            b.wait_for("tr.run-head[data-run-head='r1']", "the run's group", |t| {
                t.contains("Run r1") && t.contains("finished") && t.contains("Tidy the build")
            })
            .await;
            // Each tool call is one row: its tool, outcome and duration.
            b.wait_for(
                "tr.call[data-status='completed']",
                "the completed call",
                |t| t.contains("Bash") && t.contains("1.5 s") && t.contains("completed"),
            )
            .await;
            b.wait_for("tr.call[data-status='failed']", "the failed call", |t| {
                t.contains("Read") && t.contains("failed")
            })
            .await;
            // Only the rows shown are in the page (the timeline draws the
            // rows near its view); the table says how many it has.
            let hidden = |id: &str| {
                format!("return document.querySelector(\"tr[data-event='{id}']\") === null")
            };
            assert_eq!(
                b.client
                    .execute(
                        "return [document.querySelector('table.timeline').getAttribute('aria-rowcount'), document.querySelector(\"tr[data-event='T3']\").getAttribute('aria-rowindex')]",
                        vec![]
                    )
                    .await
                    .unwrap(),
                json!(["8", "6"]),
                "the header, T0, the run's head, T1, two calls, T3 and T7"
            );
            assert_eq!(
                b.client.execute(&hidden("T2"), vec![]).await.unwrap(),
                json!(true),
                "a call's events are folded under its row"
            );
            assert_eq!(
                b.client.execute(&hidden("T3"), vec![]).await.unwrap(),
                json!(false)
            );
            // Opening the call shows its events.
            b.client
                .find(Locator::Css("tr.call[data-status='completed']"))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            b.wait_script(
            "return document.querySelector(\"tr[data-event='T2']\") !== null && document.querySelector(\"tr[data-event='T4']\") !== null && document.querySelector('table.timeline').getAttribute('aria-rowcount') === '10'",
            "the call's events shown",
            WAIT,
        )
        .await;
            b.client
                .execute(
                    "document.querySelector('.timeline-tools').scrollIntoView()",
                    vec![],
                )
                .await
                .unwrap();
            b.screenshot(&images().join("ui-timeline.png")).await;
            // A type filter leaves the progress event and hides the calls.
            b.client
            .execute(
                "const s = document.getElementById('timeline-family'); s.value = 'progress'; s.dispatchEvent(new Event('change'));",
                vec![],
            )
            .await
            .unwrap();
            b.wait_script(
            "return document.querySelectorAll('tr.call').length === 0 && document.querySelector(\"tr[data-event='T3']\") !== null",
            "the calls hidden by the type filter",
            WAIT,
        )
        .await;
            // Search over what the events carry, with a count of what matches.
            b.client
            .execute(
                "const s = document.getElementById('timeline-family'); s.value = ''; s.dispatchEvent(new Event('change')); const q = document.getElementById('timeline-search'); q.value = 'NEEDLE'; q.dispatchEvent(new Event('input'));",
                vec![],
            )
            .await
            .unwrap();
            b.wait_for("#timeline-shown", "the match count", |t| {
                t.starts_with("1 of 8 events match")
            })
            .await;
            // The severity filter keeps the failed call's row (its failure is a warning).
            b.client
            .execute(
                "const q = document.getElementById('timeline-search'); q.value = ''; q.dispatchEvent(new Event('input')); const s = document.getElementById('timeline-severity'); s.value = 'warning'; s.dispatchEvent(new Event('change'));",
                vec![],
            )
            .await
            .unwrap();
            b.wait_script(
            "return document.querySelector(\"tr.call[data-status='failed']\") !== null && document.querySelector(\"tr.call[data-status='completed']\") === null && document.querySelector(\"tr[data-event='T3']\") === null",
            "only the warning's call left",
            WAIT,
        )
        .await;
            // Folding the run hides its rows but its head.
            b.client
            .execute(
                "const s = document.getElementById('timeline-severity'); s.value = ''; s.dispatchEvent(new Event('change')); document.querySelector(\"tr.run-head[data-run-head='r1']\").click();",
                vec![],
            )
            .await
            .unwrap();
            b.wait_script(
            "return document.querySelector(\"tr[data-event='T3']\") === null && document.querySelector(\"tr.run-head[data-run-head='r1']\") !== null && document.querySelector(\"tr[data-event='T0']\") !== null && document.querySelector('table.timeline').getAttribute('aria-rowcount') === '3'",
            "the run folded",
            WAIT,
        )
        .await;
            assert_eq!(
                b.client
                    .execute(
                        "return document.getElementById('timeline-follow').checked",
                        vec![]
                    )
                    .await
                    .unwrap(),
                json!(true),
                "the timeline follows the latest event until the person scrolls up"
            );
            b.assert_no_errors(&[]).await;
            b.close().await;
            served.stop().await;
        },
    );
}

/// The timeline is a treegrid: runs and calls fold (`aria-expanded`),
/// each row says its level, and the links in rows are no Tab stops: Enter
/// or ArrowRight on a row goes to its link, Escape or ArrowLeft back, and
/// Tab from a row leaves the timeline.
#[test]
fn the_timeline_is_a_treegrid_whose_links_are_reached_from_their_row() {
    run(
        "the_timeline_is_a_treegrid_whose_links_are_reached_from_their_row",
        async {
            let served = relay("127.0.0.1:0", Some(TOKEN)).await;
            a_session_with_tool_calls(served.addr).await;
            let because = event(
                "T8",
                "progress.status",
                "tl",
                8,
                json!({"run": "r1", "cause": "T3", "capture": "full", "data": {"message": "because"}}),
            );
            post(served.addr, &[because.to_string()]).await;
            let b = Browser::start().await;
            b.client
                .goto(&format!("{}/#token={TOKEN}", served.base))
                .await
                .unwrap();
            b.wait_for("#socket-state", "the control socket", |t| t == "ready")
                .await;
            b.client
                .execute(
                    "location.hash = '/session/' + encodeURIComponent(JSON.stringify(['urn:test:tl', 'tl']))",
                    vec![],
                )
                .await
                .unwrap();
            b.wait_for("tr[data-event='T8'] a.cause", "the cause link", |_| true)
                .await;
            let roles = b
                .client
                .execute(
                    "const q = (s) => document.querySelector(s); return [q('table.timeline').getAttribute('role'), q(\"tr[data-event='T8'] a.cause\").tabIndex, q(\"tr[data-event='T8']\").getAttribute('aria-level'), q(\"tr[data-event='T0']\").getAttribute('aria-level'), q(\"tr.run-head[data-run-head='r1']\").getAttribute('aria-level'), q(\"tr.call[data-status='completed']\").getAttribute('aria-level'), q(\"tr.call[data-status='completed']\").getAttribute('aria-expanded'), q(\"tr[data-event='T8'] td\").getAttribute('role')]",
                    vec![],
                )
                .await
                .unwrap();
            assert_eq!(
                roles,
                json!(["treegrid", -1, "2", "1", "1", "2", "false", "gridcell"]),
                "a treegrid whose links are no Tab stops"
            );
            let focus = "const a = document.activeElement; return a.matches('a.cause') ? 'cause of ' + a.closest('tr').dataset.event : (a.dataset.event ?? a.dataset.call ?? a.tagName);";
            let focused = || async { b.client.execute(focus, vec![]).await.unwrap() };
            let row =
                |id: &str| format!("document.querySelector(\"tr[data-event='{id}']\").focus()");
            b.client.execute(&row("T8"), vec![]).await.unwrap();
            // Tab from a row leaves the timeline, its links skipped.
            keys(&b, TAB).await;
            let left = b
                .client
                .execute(
                    "return document.querySelector('table.timeline').contains(document.activeElement) ? document.activeElement.outerHTML : 'outside'",
                    vec![],
                )
                .await
                .unwrap();
            assert_eq!(left, json!("outside"), "Tab leaves the timeline");
            // Enter and ArrowRight go to the row's link, Escape and
            // ArrowLeft back to the row.
            b.client.execute(&row("T8"), vec![]).await.unwrap();
            keys(&b, ENTER).await;
            assert_eq!(focused().await, json!("cause of T8"));
            keys(&b, ESCAPE).await;
            assert_eq!(focused().await, json!("T8"));
            keys(&b, RIGHT).await;
            assert_eq!(focused().await, json!("cause of T8"));
            keys(&b, LEFT).await;
            assert_eq!(focused().await, json!("T8"));
            // Enter on the link follows the cause.
            keys(&b, RIGHT).await;
            keys(&b, ENTER).await;
            b.wait_for("tr.followed[data-event='T3']", "the followed cause", |_| {
                true
            })
            .await;
            assert_eq!(focused().await, json!("T3"));
            // ArrowRight opens a folded call, ArrowLeft folds it; ArrowLeft
            // on a row in a call goes to the call.
            b.client
                .execute(
                    "document.querySelector(\"tr.call[data-status='completed']\").focus()",
                    vec![],
                )
                .await
                .unwrap();
            keys(&b, RIGHT).await;
            b.wait_script(
                "return document.querySelector(\"tr.call[data-status='completed']\").getAttribute('aria-expanded') === 'true' && document.querySelector(\"tr[data-event='T2']\")?.getAttribute('aria-level') === '3'",
                "the call opened",
                WAIT,
            )
            .await;
            keys(&b, DOWN).await;
            assert_eq!(focused().await, json!("T2"));
            keys(&b, LEFT).await;
            assert_eq!(focused().await, json!(r#"["r1","c1"]"#), "the call's row");
            keys(&b, LEFT).await;
            b.wait_script(
                "return document.querySelector(\"tr.call[data-status='completed']\").getAttribute('aria-expanded') === 'false' && document.querySelector(\"tr[data-event='T2']\") === null",
                "the call folded",
                WAIT,
            )
            .await;
            b.assert_no_errors(&[]).await;
            b.close().await;
            served.stop().await;
        },
    );
}

#[test]
fn the_fleet_folds_ended_sessions_filters_and_fits_a_phone() {
    run(
        "the_fleet_folds_ended_sessions_filters_and_fits_a_phone",
        async {
            let served = relay("127.0.0.1:0", Some(TOKEN)).await;
            ended_and_live(served.addr).await;
            a_session_with_tool_calls(served.addr).await;
            let b = Browser::start().await;
            b.client
                .goto(&format!("{}/#token={TOKEN}", served.base))
                .await
                .unwrap();
            // Ended sessions are folded away, and counted.
            b.wait_for("tr[data-session='alive']", "the live session", |_| true)
                .await;
            b.wait_for(".fleet-tools .ended-count", "the ended count", |t| {
                t == "Show ended sessions (1)"
            })
            .await;
            let rows = "return [...document.querySelectorAll('table.fleet tbody tr')].map((r) => r.dataset.session).join(' ')";
            assert_eq!(
                b.client.execute(rows, vec![]).await.unwrap(),
                json!("tl alive"),
                "newest first, the ended session folded away"
            );
            b.client
                .find(Locator::Css("#fleet-ended"))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            b.wait_for(
                "tr[data-session='gone'][data-state='ended']",
                "the ended session shown",
                |_| true,
            )
            .await;
            // By agent, and by text.
            b.client
            .execute(
                "const s = document.getElementById('fleet-agent'); s.value = 'scripted-agent'; s.dispatchEvent(new Event('change')); const q = document.getElementById('fleet-search'); q.value = 'ALI'; q.dispatchEvent(new Event('input'));",
                vec![],
            )
            .await
            .unwrap();
            b.wait_script(
            "return [...document.querySelectorAll('table.fleet tbody tr')].map((r) => r.dataset.session).join(' ') === 'alive'",
            "only the session the search finds",
            WAIT,
        )
        .await;
            // A phone's width: nothing makes the page wider than the screen.
            b.client.set_window_size(390, 844).await.unwrap();
            b.wait_script(
            "return window.innerWidth <= 420 && document.documentElement.scrollWidth <= window.innerWidth + 1",
            "the page within a phone's width",
            WAIT,
        )
        .await;
            b.assert_no_errors(&[]).await;
            b.close().await;
            served.stop().await;
        },
    );
}

/// Every piece of visible text on the page whose contrast with what is
/// behind it is under WCAG AA (4.5:1; 3:1 for large text), computed from
/// the page's own styles. With `dark`, the stylesheet's
/// `prefers-color-scheme: dark` variables are applied first.
const CONTRAST_AUDIT: &str = r#"
const dark = arguments[0];
if (dark) {
  const rules = [...document.styleSheets].flatMap((s) => [...s.cssRules]);
  const media = rules.find((r) => r.media && r.media.mediaText.includes('prefers-color-scheme: dark'));
  const root = [...media.cssRules].find((r) => r.selectorText === ':root');
  for (const name of root.style) document.documentElement.style.setProperty(name, root.style.getPropertyValue(name));
}
function parse(c) {
  let m = /^rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)$/.exec(c);
  if (m) return [m[1] / 255, m[2] / 255, m[3] / 255, m[4] === undefined ? 1 : Number(m[4])];
  m = /^color\(srgb ([\d.e-]+) ([\d.e-]+) ([\d.e-]+)(?: \/ ([\d.e-]+))?\)$/.exec(c);
  if (m) return [Number(m[1]), Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])];
  throw new Error('a colour the audit cannot read: ' + c);
}
const over = (top, under) => {
  const a = top[3];
  return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat(1);
};
function background(el) {
  const layers = [];
  for (let e = el; e; e = e.parentElement) {
    const c = parse(getComputedStyle(e).backgroundColor);
    if (c[3] > 0) layers.push(c);
    if (c[3] >= 1) break;
  }
  let bg = [1, 1, 1, 1];
  for (const layer of layers.reverse()) bg = over(layer, bg);
  return bg;
}
const lum = (c) => {
  const f = (v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
  return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
};
const failures = [];
let checked = 0;
for (const el of document.querySelectorAll('body *')) {
  const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
  if (!own || !el.checkVisibility({ opacityProperty: true, visibilityProperty: true })) continue;
  if (el.closest('[disabled], :disabled, .skip, .visually-hidden, option')) continue;
  const style = getComputedStyle(el);
  const bg = background(el);
  const fg = over(parse(style.color), bg);
  const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
  const ratio = (hi + 0.05) / (lo + 0.05);
  const size = parseFloat(style.fontSize);
  const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
  checked += 1;
  if (ratio < (large ? 3 : 4.5)) {
    failures.push(`${el.tagName.toLowerCase()}.${el.className} "${el.textContent.trim().slice(0, 30)}": ${ratio.toFixed(2)}`);
  }
}
return { checked, failures };
"#;

#[test]
fn the_page_keeps_aa_contrast_in_light_and_dark() {
    run("the_page_keeps_aa_contrast_in_light_and_dark", async {
        let served = relay("127.0.0.1:0", Some(TOKEN)).await;
        ended_and_live(served.addr).await;
        a_session_with_tool_calls(served.addr).await;
        // A live owner, so its requests have answer buttons to check.
        let mut agent = demo(&served.base, Some(TOKEN), "contrast");
        let b = Browser::start().await;
        for dark in [false, true] {
            let scheme = if dark { "dark" } else { "light" };
            // The fleet, the inbox with answer buttons, the closed list
            // (the address names the fleet: a token address alone keeps
            // the session page the second round starts on).
            b.client
                .goto(&format!("{}/#/&token={TOKEN}", served.base))
                .await
                .unwrap();
            b.wait_script(
                "return document.querySelector('article[data-request] button.option:not(:disabled)') !== null",
                "the answer buttons, enabled",
                WAIT,
            )
            .await;
            b.client
                .execute("document.getElementById('fleet-ended').click(); document.querySelector('#closed').open = true;", vec![])
                .await
                .unwrap();
            let fleet = b
                .client
                .execute(CONTRAST_AUDIT, vec![json!(dark)])
                .await
                .unwrap();
            assert!(fleet["checked"].as_u64().unwrap() > 20, "{fleet}");
            assert_eq!(
                fleet["failures"],
                json!([]),
                "the fleet in {scheme}: {fleet}"
            );
            // A session's timeline, a call opened, severities shown.
            b.client
                .execute(
                    "location.hash = '/session/' + encodeURIComponent(JSON.stringify(['urn:test:tl', 'tl']))",
                    vec![],
                )
                .await
                .unwrap();
            b.wait_for("tr.call[data-status='failed']", "the failed call", |_| true)
                .await;
            b.client
                .execute(
                    "document.querySelector(\"tr.call[data-status='failed']\").click()",
                    vec![],
                )
                .await
                .unwrap();
            let session = b
                .client
                .execute(CONTRAST_AUDIT, vec![json!(dark)])
                .await
                .unwrap();
            assert!(session["checked"].as_u64().unwrap() > 20, "{session}");
            assert_eq!(
                session["failures"],
                json!([]),
                "the session page in {scheme}: {session}"
            );
        }
        b.close().await;
        stop_demo(&mut agent);
        served.stop().await;
    });
}

#[test]
fn the_inbox_is_walked_with_the_keyboard() {
    run("the_inbox_is_walked_with_the_keyboard", async {
        let served = relay("127.0.0.1:0", Some(TOKEN)).await;
        ended_and_live(served.addr).await;
        let b = Browser::start().await;
        b.client
            .goto(&format!("{}/#token={TOKEN}", served.base))
            .await
            .unwrap();
        b.wait_for(
            "#inbox article[data-request='REQ-X']",
            "the two requests",
            |_| true,
        )
        .await;
        let focused =
            "return document.activeElement.dataset.request || document.activeElement.tagName";
        let order = b
            .client
            .execute(
                "return [...document.querySelectorAll('#inbox > .inbox-list > article.request')].map((a) => a.dataset.request)",
                vec![],
            )
            .await
            .unwrap();
        let order: Vec<String> = serde_json::from_value(order).unwrap();
        assert_eq!(order.len(), 2, "{order:?}");
        let (first, last) = (json!(order[0]), json!(order[1]));
        b.client
            .execute(
                &format!(
                    "document.querySelector(\"#inbox article[data-request='{}'] a\").focus()",
                    order[0]
                ),
                vec![],
            )
            .await
            .unwrap();
        keys(&b, "\u{E015}").await; // ArrowDown
        assert_eq!(b.client.execute(focused, vec![]).await.unwrap(), last);
        keys(&b, "k").await;
        assert_eq!(b.client.execute(focused, vec![]).await.unwrap(), first);
        keys(&b, "\u{E010}").await; // End
        assert_eq!(b.client.execute(focused, vec![]).await.unwrap(), last);
        keys(&b, "j").await;
        assert_eq!(
            b.client.execute(focused, vec![]).await.unwrap(),
            last,
            "the last stays the last"
        );
        keys(&b, "\u{E011}").await; // Home
        assert_eq!(b.client.execute(focused, vec![]).await.unwrap(), first);
        b.assert_no_errors(&[]).await;
        b.close().await;
        served.stop().await;
    });
}

/// The page's figures with a fleet of 500 sessions and one session of
/// 100 000 events, generated here (a measurement, not a test: it asserts
/// nothing about time). Run by hand:
/// `cargo test -p aep-cli --test browser ui_figures -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement run by hand; its figures are in docs/ui.md"]
fn ui_figures() {
    run("ui_figures", async {
        let config = aep_relay::Config::default()
            .buffer(100_000)
            .max_sessions(1_000)
            .max_buffer_bytes(256 << 20)
            .max_buffered_bytes(1 << 30);
        let served = harness::relay_with("127.0.0.1:0", Some(TOKEN), config).await;
        let mut lines = Vec::new();
        for n in 0..500 {
            let session = format!("fleet-{n:03}");
            lines.push(
                event(
                    &format!("F{n}-0"),
                    "session.started",
                    &session,
                    0,
                    json!({}),
                )
                .to_string(),
            );
            lines.push(
                event(
                    &format!("F{n}-1"),
                    "run.started",
                    &session,
                    1,
                    json!({"run": "r1"}),
                )
                .to_string(),
            );
        }
        post(served.addr, &lines).await;
        let big = |seq: u64| {
            let kind = if seq.is_multiple_of(10) {
                "tool.requested"
            } else {
                "progress.status"
            };
            let data = if kind == "tool.requested" {
                json!({"tool": {"name": "Bash", "call_id": format!("c{seq}")}})
            } else {
                json!({"message": format!("step {seq}")})
            };
            event(
                &format!("B{seq}"),
                kind,
                "big",
                seq,
                json!({"run": "r1", "capture": "full", "data": data}),
            )
            .to_string()
        };
        for chunk in 0..10u64 {
            let lines: Vec<String> = (chunk * 10_000..(chunk + 1) * 10_000)
                .map(|s| big(s + 1))
                .collect();
            post(served.addr, &lines).await;
        }
        let b = Browser::start().await;
        let t0 = std::time::Instant::now();
        b.client
            .goto(&format!("{}/#token={TOKEN}", served.base))
            .await
            .unwrap();
        b.wait_script(
            "return document.querySelectorAll('table.fleet tbody tr').length >= 501",
            "the fleet of 501 sessions",
            Duration::from_secs(600),
        )
        .await;
        let first = t0.elapsed();
        // Where the time went: the page's performance measures (`aep:*`,
        // see docs/ui.md), summed per stage, in ms since the page opened.
        let stages = b
            .client
            .execute(
                "const out = { at: Math.round(performance.now()) }; for (const e of performance.getEntriesByType('measure')) { if (!e.name.startsWith('aep:')) continue; const s = (out[e.name.slice(4)] ||= { n: 0, ms: 0, max: 0, from: e.startTime, to: 0 }); s.n += 1; s.ms += e.duration; s.max = Math.max(s.max, e.duration); s.to = Math.max(s.to, e.startTime + e.duration); } for (const s of Object.values(out)) if (typeof s === 'object') for (const k of ['ms', 'max', 'from', 'to']) s[k] = Math.round(s[k]); return out;",
                vec![],
            )
            .await
            .unwrap();
        println!("UI STAGES: {stages}");
        // When the page drew the whole fleet, in its own time since it
        // opened: the test's polling waits on the page's thread, so `first`
        // is later than what a person saw.
        let drawn = b
            .client
            .execute(
                "const e = performance.getEntriesByName('aep:fleet-rows').find((e) => e.detail && e.detail.rows >= 501); return e ? e.duration : null;",
                vec![],
            )
            .await
            .unwrap();
        let taken = stages["deliver"]["to"].as_f64().unwrap_or(-1.0);
        let filter_ms = b
            .client
            .execute(
                "const t = performance.now(); const q = document.getElementById('fleet-search'); q.value = 'fleet-42'; q.dispatchEvent(new Event('input')); const ms = performance.now() - t; q.value = ''; q.dispatchEvent(new Event('input')); return ms;",
                vec![],
            )
            .await
            .unwrap();
        let t1 = std::time::Instant::now();
        b.client
            .execute(
                "location.hash = '/session/' + encodeURIComponent(JSON.stringify(['urn:test:big', 'big']))",
                vec![],
            )
            .await
            .unwrap();
        b.wait_script(
            "return Number(document.querySelector('table.timeline').dataset.events) >= 2000",
            "the big session's timeline",
            Duration::from_secs(120),
        )
        .await;
        let session = t1.elapsed();
        let timeline_filter_ms = b
            .client
            .execute(
                "const t = performance.now(); const s = document.getElementById('timeline-family'); s.value = 'tool'; s.dispatchEvent(new Event('change')); const ms = performance.now() - t; s.value = ''; s.dispatchEvent(new Event('change')); return ms;",
                vec![],
            )
            .await
            .unwrap();
        // Frames while 1 000 events a second arrive for 5 s.
        b.client
            .execute(
                "window.__gaps = []; let last = performance.now(); const tick = (now) => { window.__gaps.push(now - last); last = now; if (!window.__stop) requestAnimationFrame(tick); }; requestAnimationFrame(tick);",
                vec![],
            )
            .await
            .unwrap();
        let mut seq = 100_000;
        for _ in 0..50 {
            let lines: Vec<String> = (0..100)
                .map(|_| {
                    seq += 1;
                    big(seq)
                })
                .collect();
            post(served.addr, &lines).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let frames = b
            .client
            .execute(
                "window.__stop = true; const g = window.__gaps.slice(1); return { frames: g.length, over50: g.filter((x) => x > 50).length, worst: Math.max(...g), heapMB: performance.memory ? performance.memory.usedJSHeapSize / 1048576 : null, rows: document.querySelectorAll('table.timeline tbody tr').length };",
                vec![],
            )
            .await
            .unwrap();
        println!(
            "UI FIGURES: fleet of 501 sessions drawn at {:.2} s of the page's time, its 101 000 events all taken in at {:.2} s, seen by the test at {:.1} s; fleet search {:.1} ms; the 100 000-event session's page in {:.1} s; its type filter {:.1} ms; streaming 1 000 events/s for 5 s: {}",
            drawn.as_f64().unwrap_or(-1.0) / 1000.0,
            taken / 1000.0,
            first.as_secs_f64(),
            filter_ms.as_f64().unwrap_or(-1.0),
            session.as_secs_f64(),
            timeline_filter_ms.as_f64().unwrap_or(-1.0),
            frames
        );
        b.close().await;
        served.stop().await;
    });
}

#[test]
fn a_long_session_keeps_a_bounded_timeline_as_it_grows() {
    run(
        "a_long_session_keeps_a_bounded_timeline_as_it_grows",
        async {
            let served = relay("127.0.0.1:0", Some(TOKEN)).await;
            let line = |seq: u64| {
                let (kind, data) = if seq.is_multiple_of(10) {
                    (
                        "tool.requested",
                        json!({"tool": {"name": "Bash", "call_id": format!("c{seq}")}}),
                    )
                } else {
                    ("progress.status", json!({"message": format!("step {seq}")}))
                };
                event(
                    &format!("L{seq}"),
                    kind,
                    "long",
                    seq,
                    json!({"run": "r1", "capture": "full", "data": data}),
                )
                .to_string()
            };
            let first: Vec<String> = (0..2_500).map(line).collect();
            post(served.addr, &first).await;
            let b = Browser::start().await;
            b.client
                .goto(&format!("{}/#token={TOKEN}", served.base))
                .await
                .unwrap();
            b.wait_for("tr[data-session='long']", "the long session", |_| true)
                .await;
            b.client
            .execute(
                "location.hash = '/session/' + encodeURIComponent(JSON.stringify(['urn:test:long', 'long']))",
                vec![],
            )
            .await
            .unwrap();
            // What the timeline holds (the events, its rows as the table
            // says), whether the page holds at most the rows near the view,
            // and the last row drawn.
            let rows = "const t = document.querySelector('table.timeline'); const r = [...t.querySelectorAll('tbody tr')]; return [Number(t.dataset.events), t.getAttribute('aria-rowcount'), r.length <= WINDOW, r[r.length - 1].dataset.event];".replace("WINDOW", &WINDOW_ROWS.to_string());
            b.wait_script(
                "return document.querySelector(\"tr[data-event='L2499']\") !== null",
                "the newest event",
                WAIT,
            )
            .await;
            // The fold keeps 2 000 events: the timeline holds those, a row
            // per tool call among them (its event folded under it) and the
            // run's head: 2 001 rows and the header.
            assert_eq!(
                b.client.execute(&rows, vec![]).await.unwrap(),
                json!([2000, "2002", true, "L2499"])
            );
            // More arrive: the oldest rows leave, the count holds.
            let more: Vec<String> = (2_500..2_750).map(line).collect();
            post(served.addr, &more).await;
            b.wait_script(
                "return document.querySelector(\"tr[data-event='L2749']\") !== null",
                "the events that came later",
                WAIT,
            )
            .await;
            assert_eq!(
                b.client.execute(&rows, vec![]).await.unwrap(),
                json!([2000, "2002", true, "L2749"])
            );
            // The oldest it holds is at the top.
            b.client
                .execute(
                    "document.querySelector('.timeline-box').scrollTop = 0",
                    vec![],
                )
                .await
                .unwrap();
            b.wait_script(
                "const r = document.querySelectorAll('table.timeline tbody tr'); return r.length > 3 && r[0].dataset.runHead === 'r1' && r[1].dataset.call === '[\"r1\",\"c750\"]' && r[2].dataset.event === 'L751'",
                "the oldest rows at the top",
                WAIT,
            )
            .await;
            b.wait_for("p.note", "the note on what is not kept", |t| {
                t == "750 earlier events are not kept in this page."
            })
            .await;
            b.assert_no_errors(&[]).await;
            b.close().await;
            served.stop().await;
        },
    );
}

/// A 2 000-event session: the page holds only the rows near the view, the
/// table says how many it has, scrolling to the top shows the oldest event,
/// a call opened there shows its event in place, "Jump to latest" and a
/// cause link to a row far from the view draw what they move to.
#[test]
fn a_long_timeline_draws_only_the_rows_near_the_view() {
    run("a_long_timeline_draws_only_the_rows_near_the_view", async {
        let served = relay("127.0.0.1:0", Some(TOKEN)).await;
        let lines: Vec<String> = (0..2_000u64)
                .map(|seq| {
                    let (kind, mut extra) = if seq.is_multiple_of(10) {
                        (
                            "tool.requested",
                            json!({"run": "r1", "data": {"tool": {"name": "Bash", "call_id": format!("c{seq}")}}}),
                        )
                    } else {
                        (
                            "progress.status",
                            json!({"run": "r1", "capture": "full", "data": {"message": format!("step {seq}")}}),
                        )
                    };
                    if seq == 1_999 {
                        extra["cause"] = json!("W3");
                    }
                    event(&format!("W{seq}"), kind, "wide", seq, extra).to_string()
                })
                .collect();
        post(served.addr, &lines).await;
        let b = Browser::start().await;
        b.client
            .goto(&format!("{}/#token={TOKEN}", served.base))
            .await
            .unwrap();
        b.wait_for("tr[data-session='wide']", "the session", |_| true)
            .await;
        b.client
                .execute(
                    "location.hash = '/session/' + encodeURIComponent(JSON.stringify(['urn:test:wide', 'wide']))",
                    vec![],
                )
                .await
                .unwrap();
        // All of it placed: 200 calls, 1 800 other events, the run's head.
        b.wait_script(
                "return document.querySelector('table.timeline')?.getAttribute('aria-rowcount') === '2002' && document.querySelector(\"tr[data-event='W1999']\") !== null",
                "the whole timeline, following its end",
                WAIT,
            )
            .await;
        let drawn = "const r = [...document.querySelectorAll('table.timeline tbody tr')]; return { rows: r.length, first: r[0].dataset.runHead ?? r[0].dataset.call ?? r[0].dataset.event, last: r[r.length - 1].dataset.event, index: r[r.length - 1].getAttribute('aria-rowindex'), follow: document.getElementById('timeline-follow').checked, height: document.querySelector('.timeline-box').scrollHeight };";
        let end = b.client.execute(drawn, vec![]).await.unwrap();
        let rows = end["rows"].as_u64().unwrap() as usize;
        assert!(
            (10..=WINDOW_ROWS).contains(&rows),
            "the page holds the rows near the view, not all 2 001: {end}"
        );
        assert_eq!(end["last"], "W1999", "{end}");
        assert_eq!(end["index"], "2002", "{end}");
        assert_eq!(end["follow"], true, "{end}");
        // The box is as tall as the whole timeline would be.
        assert!(
            end["height"].as_u64().unwrap() > 2_001 * 20,
            "the scroll bar is the whole timeline's: {end}"
        );

        // The person scrolls to the top: the oldest rows are drawn, and
        // following stops.
        b.client
            .execute(
                "document.querySelector('.timeline-box').scrollTop = 0",
                vec![],
            )
            .await
            .unwrap();
        b.wait_script(
                "const r = document.querySelectorAll('table.timeline tbody tr'); return r.length > 3 && r[0].dataset.runHead === 'r1' && r[1].dataset.call === '[\"r1\",\"c0\"]' && r[2].dataset.event === 'W1' && r[2].getAttribute('aria-rowindex') === '4'",
                "the oldest event at the top",
                WAIT,
            )
            .await;
        let top = b.client.execute(drawn, vec![]).await.unwrap();
        assert!(
            top["rows"].as_u64().unwrap() as usize <= WINDOW_ROWS,
            "{top}"
        );
        assert_eq!(top["follow"], false, "scrolling up stops following: {top}");
        assert_eq!(
            b.client
                .execute(
                    "return document.getElementById('timeline-jump').hidden",
                    vec![]
                )
                .await
                .unwrap(),
            json!(false)
        );
        // A call opened at the top from the keyboard (the first drawn, c0)
        // shows its event under it, and keeps the focus.
        b.client
            .execute(
                "document.querySelector('table.timeline tr.call').focus()",
                vec![],
            )
            .await
            .unwrap();
        keys(&b, ENTER).await;
        b.wait_script(
                "return document.querySelector(\"tr[data-event='W0']\")?.getAttribute('aria-rowindex') === '4' && document.querySelector('table.timeline').getAttribute('aria-rowcount') === '2003'",
                "the call's event in place",
                WAIT,
            )
            .await;
        assert_eq!(
            b.client
                .execute("return [document.activeElement.dataset.call, document.activeElement.getAttribute('aria-expanded')]", vec![])
                .await
                .unwrap(),
            json!(["[\"r1\",\"c0\"]", "true"])
        );
        assert_eq!(
            b.client
                .execute(
                    "return document.querySelector(\"tr[data-event='W1999']\")",
                    vec![]
                )
                .await
                .unwrap(),
            Value::Null,
            "the newest row is not drawn while the view is at the top"
        );
        // "Jump to latest" draws the end again and follows it.
        b.client
            .find(Locator::Css("#timeline-jump"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        b.wait_script(
                "return document.querySelector(\"tr[data-event='W1999'] a.cause\") !== null && document.getElementById('timeline-follow').checked && document.querySelector(\"tr[data-event='W3']\") === null",
                "the newest event again",
                WAIT,
            )
            .await;
        // Its cause, far above the view and not drawn, is drawn,
        // scrolled to and focused.
        b.client
            .find(Locator::Css("tr[data-event='W1999'] a.cause"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        b.wait_for("tr.followed[data-event='W3']", "the followed cause", |_| {
            true
        })
        .await;
        assert_eq!(
            b.client
                .execute("return document.activeElement.dataset.event", vec![])
                .await
                .unwrap(),
            json!("W3")
        );
        let at = b
                .client
                .execute(
                    "const box = document.querySelector('.timeline-box').getBoundingClientRect(); const row = document.querySelector(\"tr[data-event='W3']\").getBoundingClientRect(); return row.top >= box.top && row.bottom <= box.bottom;",
                    vec![],
                )
                .await
                .unwrap();
        assert_eq!(at, json!(true), "the cause is in the view");
        let followed = b.client.execute(drawn, vec![]).await.unwrap();
        assert!(
            followed["rows"].as_u64().unwrap() as usize <= WINDOW_ROWS,
            "{followed}"
        );
        assert_eq!(followed["follow"], false, "{followed}");
        b.assert_no_errors(&[]).await;
        b.close().await;
        served.stop().await;
    });
}

/// A 2 000-event timeline from the keyboard: a focused row keeps the
/// focus however far the view scrolls from it (it stays drawn), and the
/// timeline is one Tab stop whose rows the arrow keys, PageDown, Home and
/// End walk across, drawing and scrolling to the row they reach.
#[test]
fn a_long_timeline_is_walked_with_the_keyboard_and_keeps_its_focus() {
    run(
        "a_long_timeline_is_walked_with_the_keyboard_and_keeps_its_focus",
        async {
            let served = relay("127.0.0.1:0", Some(TOKEN)).await;
            let lines: Vec<String> = (0..2_000u64)
                .map(|seq| {
                    let extra = if seq.is_multiple_of(10) {
                        json!({"run": "r1", "data": {"tool": {"name": "Bash", "call_id": format!("c{seq}")}}})
                    } else {
                        json!({"run": "r1", "capture": "full", "data": {"message": format!("step {seq}")}})
                    };
                    let kind = if seq.is_multiple_of(10) {
                        "tool.requested"
                    } else {
                        "progress.status"
                    };
                    event(&format!("K{seq}"), kind, "keys", seq, extra).to_string()
                })
                .collect();
            post(served.addr, &lines).await;
            let b = Browser::start().await;
            b.client
                .goto(&format!("{}/#token={TOKEN}", served.base))
                .await
                .unwrap();
            b.wait_for("tr[data-session='keys']", "the session", |_| true)
                .await;
            b.client
                .execute(
                    "location.hash = '/session/' + encodeURIComponent(JSON.stringify(['urn:test:keys', 'keys']))",
                    vec![],
                )
                .await
                .unwrap();
            b.wait_script(
                "return document.querySelector('table.timeline')?.getAttribute('aria-rowcount') === '2002' && document.querySelector(\"tr[data-event='K1999']\") !== null",
                "the whole timeline",
                WAIT,
            )
            .await;
            // Where the focus is: the focused row's event (or call), its
            // place among the rows, whether it is in the page, and how
            // many rows the page holds.
            let focus = "const a = document.activeElement; return { row: a.dataset.event ?? a.dataset.call ?? a.dataset.runHead ?? a.tagName, index: a.getAttribute('aria-rowindex'), inPage: a.isConnected && document.querySelector('table.timeline tbody').contains(a), rows: document.querySelectorAll('table.timeline tbody tr[aria-rowindex]').length, stops: document.querySelectorAll('table.timeline tbody tr[tabindex=\"0\"]').length };";
            // A row focused at the top...
            b.client
                .execute(
                    "document.querySelector('.timeline-box').scrollTop = 0",
                    vec![],
                )
                .await
                .unwrap();
            b.wait_script(
                "return document.querySelector(\"tr[data-event='K5']\") !== null",
                "the top rows",
                WAIT,
            )
            .await;
            b.client
                .execute(
                    "document.querySelector(\"tr[data-event='K5']\").focus()",
                    vec![],
                )
                .await
                .unwrap();
            // ...keeps the focus when the view scrolls to the end, far
            // beyond the rows drawn around it.
            b.client
                .execute(
                    "const box = document.querySelector('.timeline-box'); box.scrollTop = box.scrollHeight;",
                    vec![],
                )
                .await
                .unwrap();
            b.wait_script(
                "return document.querySelector(\"tr[data-event='K1999']\") !== null && document.querySelector(\"tr[data-event='K300']\") === null",
                "the end drawn, the middle not",
                WAIT,
            )
            .await;
            let far = b.client.execute(focus, vec![]).await.unwrap();
            assert_eq!(far["row"], "K5", "the focus stays on its row: {far}");
            assert_eq!(far["inPage"], true, "the focused row stays drawn: {far}");
            assert!(
                far["rows"].as_u64().unwrap() as usize <= WINDOW_ROWS + 1,
                "{far}"
            );
            // The timeline is one Tab stop: the focused row.
            assert_eq!(far["stops"], 1, "{far}");

            // End moves to the last row, across the 2 001: drawn, shown,
            // focused.
            keys(&b, END).await;
            let end = b.client.execute(focus, vec![]).await.unwrap();
            assert_eq!(end["row"], "K1999", "{end}");
            assert_eq!(end["index"], "2002", "{end}");
            // Home to the first (the run's head), then down 40 rows, one
            // at a time, beyond the rows drawn at first.
            keys(&b, HOME).await;
            let home = b.client.execute(focus, vec![]).await.unwrap();
            assert_eq!(home["row"], "r1", "{home}");
            assert_eq!(home["index"], "2", "{home}");
            for _ in 0..40 {
                keys(&b, DOWN).await;
            }
            let down = b.client.execute(focus, vec![]).await.unwrap();
            assert_eq!(down["index"], "42", "{down}");
            assert_eq!(down["inPage"], true, "{down}");
            // j and k too, and a page at a time.
            keys(&b, "jjk").await;
            assert_eq!(
                b.client.execute(focus, vec![]).await.unwrap()["index"],
                "43"
            );
            keys(&b, UP).await;
            assert_eq!(
                b.client.execute(focus, vec![]).await.unwrap()["index"],
                "42"
            );
            for _ in 0..30 {
                keys(&b, PAGE_DOWN).await;
            }
            let paged = b.client.execute(focus, vec![]).await.unwrap();
            let index: u64 = paged["index"].as_str().unwrap().parse().unwrap();
            assert!(index > 42 + 30 * 10, "each page moves many rows: {paged}");
            // The row reached is in the view, and the page holds no more
            // than the rows near it.
            let shown = b
                .client
                .execute(
                    "const box = document.querySelector('.timeline-box').getBoundingClientRect(); const row = document.activeElement.getBoundingClientRect(); return row.top >= box.top - 1 && row.bottom <= box.bottom + 1;",
                    vec![],
                )
                .await
                .unwrap();
            assert_eq!(
                shown,
                json!(true),
                "the row reached is in the view: {paged}"
            );
            assert!(
                paged["rows"].as_u64().unwrap() as usize <= WINDOW_ROWS + 1,
                "{paged}"
            );
            assert_eq!(paged["stops"], 1, "{paged}");
            b.assert_no_errors(&[]).await;
            b.close().await;
            served.stop().await;
        },
    );
}

/// A live session at the fold's bound: the row with the keyboard's focus
/// is let go from the top as new events arrive. The focus moves to the
/// next row the timeline still holds, not to the page's body (where the
/// arrow keys would walk nothing).
#[test]
fn a_focused_row_the_fold_lets_go_passes_the_focus_on() {
    run(
        "a_focused_row_the_fold_lets_go_passes_the_focus_on",
        async {
            let served = relay("127.0.0.1:0", Some(TOKEN)).await;
            let line = |seq: u64| {
                event(
                    &format!("G{seq}"),
                    "progress.status",
                    "gone",
                    seq,
                    json!({"run": "r1", "capture": "full", "data": {"message": format!("step {seq}")}}),
                )
                .to_string()
            };
            let first: Vec<String> = (0..2_000).map(line).collect();
            post(served.addr, &first).await;
            let b = Browser::start().await;
            b.client
                .goto(&format!("{}/#token={TOKEN}", served.base))
                .await
                .unwrap();
            b.wait_for("tr[data-session='gone']", "the session", |_| true)
                .await;
            b.client
                .execute(
                    "location.hash = '/session/' + encodeURIComponent(JSON.stringify(['urn:test:gone', 'gone']))",
                    vec![],
                )
                .await
                .unwrap();
            b.wait_script(
                "return document.querySelector('table.timeline')?.dataset.events === '2000' && document.querySelector(\"tr[data-event='G1999']\") !== null",
                "the whole timeline",
                WAIT,
            )
            .await;
            let focus = "const a = document.activeElement; return { row: a.dataset.event ?? a.dataset.runHead ?? a.tagName, inPage: document.querySelector('table.timeline tbody').contains(a) };";
            // Home, then down to the third event.
            b.client
                .execute(
                    "document.querySelector(\"table.timeline tbody tr[tabindex='0']\").focus()",
                    vec![],
                )
                .await
                .unwrap();
            keys(&b, HOME).await;
            for _ in 0..3 {
                keys(&b, DOWN).await;
            }
            let at = b.client.execute(focus, vec![]).await.unwrap();
            assert_eq!(at["row"], "G2", "{at}");
            // Five more events: the fold lets G0 to G4 go.
            let more: Vec<String> = (2_000..2_005).map(line).collect();
            post(served.addr, &more).await;
            b.wait_script(
                "return document.querySelector('table.timeline').dataset.events === '2000' && !document.querySelector(\"tr[data-event='G2']\")",
                "the oldest rows let go",
                WAIT,
            )
            .await;
            let after = b.client.execute(focus, vec![]).await.unwrap();
            assert_eq!(
                after["inPage"], true,
                "the focus stays in the timeline: {after}"
            );
            assert_eq!(after["row"], "G5", "on the next row it holds: {after}");
            // The keys still walk from there.
            keys(&b, DOWN).await;
            let next = b.client.execute(focus, vec![]).await.unwrap();
            assert_eq!(next["row"], "G6", "{next}");
            b.assert_no_errors(&[]).await;
            b.close().await;
            served.stop().await;
        },
    );
}

/// `aep mcp` as an MCP client starts it, asking a person through the page:
/// the form the agent gave is filled in the browser, and the tool's result
/// is the typed values the person entered.
#[cfg(feature = "mcp")]
#[test]
fn an_mcp_ask_human_form_is_answered_in_the_page() {
    use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
    use rmcp::transport::TokioChildProcess;
    use rmcp::ServiceExt;

    run("an_mcp_ask_human_form_is_answered_in_the_page", async {
        let served = relay("127.0.0.1:0", Some(TOKEN)).await;
        let session = "mcp-release";
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_aep"));
        command
            .args(["mcp", "--session", session])
            .env("AEP_RELAY", &served.base)
            .env("AEP_TOKEN", TOKEN)
            .kill_on_drop(true);
        let transport = TokioChildProcess::new(command).expect("the aep binary runs");
        let config = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("ui-mcp-agent", "0.0.1"),
        );
        let client = tokio::time::timeout(WAIT, config.serve(transport))
            .await
            .expect("initialize in time")
            .expect("initialize");

        let prompt = "Which build should ship?";
        let fields = json!([
            {"id": "branch", "type": "string", "label": "Branch", "required": true},
            {"id": "target", "type": "select", "label": "Target", "required": true,
             "choices": [{"id": "staging", "label": "Staging"}, {"id": "production", "label": "Production"}]},
            {"id": "jobs", "type": "number", "label": "Jobs", "min": 1, "max": 16},
            {"id": "dry_run", "type": "boolean", "label": "Dry run first"}
        ]);
        let peer = client.peer().clone();
        let call = tokio::spawn(async move {
            let Value::Object(arguments) = json!({"prompt": prompt, "fields": fields}) else {
                unreachable!()
            };
            let params = CallToolRequestParams::new("ask_human").with_arguments(arguments);
            tokio::time::timeout(WAIT * 4, peer.call_tool(params))
                .await
                .expect("the tool returned in time")
                .expect("the tool call went through")
        });

        let b = Browser::start().await;
        b.client
            .goto(&format!("{}/#token={TOKEN}", served.base))
            .await
            .unwrap();
        b.wait_for(
            &format!("tr[data-session='{session}'][data-state='waiting']"),
            "the MCP session waiting on a person",
            |t| t.contains("ui-mcp-agent"),
        )
        .await;
        b.client
            .find(Locator::Css(&format!("tr[data-session='{session}'] a")))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let request_id = b
            .wait_attr(
                ".session-view article[data-request]",
                "data-request",
                "the form on the session page",
                |t| t.contains(prompt) && t.contains("Send answer"),
            )
            .await;
        let form = format!("article[data-request='{request_id}'] form.form-answer");
        for (css, keys) in [
            ("[data-field='branch'] input", "fix/build"),
            ("[data-field='jobs'] input", "4"),
        ] {
            b.client
                .find(Locator::Css(&format!("{form} {css}")))
                .await
                .unwrap()
                .send_keys(keys)
                .await
                .unwrap();
        }
        for css in [
            "[data-field='target'] input[value='staging']",
            "[data-field='dry_run'] input",
        ] {
            b.client
                .find(Locator::Css(&format!("{form} {css}")))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
        }
        b.client
            .find(Locator::Css(&format!("{form} button[type=submit]")))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        b.wait_for(
            &format!("article[data-request='{request_id}'] li.command-accepted"),
            "the ack from aep mcp",
            |t| t.contains("accepted by the agent"),
        )
        .await;

        // The agent's tool result: the values as typed, not as text.
        let result = tokio::time::timeout(WAIT * 5, call)
            .await
            .expect("the call ended in time")
            .unwrap();
        assert_eq!(result.is_error, Some(false), "{result:?}");
        let structured = result.structured_content.expect("structured content");
        assert_eq!(
            structured["values"],
            json!({"branch": "fix/build", "target": "staging", "jobs": 4, "dry_run": true})
        );
        assert_eq!(structured["request"], request_id.as_str());

        b.assert_no_errors(&[]).await;
        b.close().await;
        let _ = tokio::time::timeout(WAIT, client.cancel()).await;
        let events = history(&served.base, Some(TOKEN), session).await;
        one(&events, "attention.resolved", |e| {
            e["type"] == "attention.resolved" && e["subject"] == request_id.as_str()
        });
        served.stop().await;
    });
}
