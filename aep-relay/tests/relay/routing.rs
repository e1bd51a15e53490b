//! Command routing (AEP-0004 §4) and the roster (AEP-0003 §4.1): a
//! command reaches exactly one owner byte for byte, or its sender is told
//! why not in a cause-correlated error frame that never enters history.

use crate::common;

use aep_relay::Config;
use common::*;
use std::time::Duration;

use serde_json::{json, Value};

const TOKEN: &str = "routing-token";

/// An emitter connection that has claimed `session` (its positioned event
/// was handled before this returns).
async fn owner(relay: &TestRelay, instance: &str, accepts: &[&str], session: &str) -> Ws {
    let mut ws = relay.ws_hello(emitter_hello(instance, accepts)).await;
    ws.send(&event("session.started", session, 0)).await;
    assert!(ws.sync("claimed").await.is_empty());
    ws
}

/// Sends `command` and returns the refusal frame it draws.
async fn refusal(sender: &mut Ws, command: &Value) -> Value {
    sender.send(command).await;
    let frame = sender.json().await;
    assert_eq!(frame["type"], "error", "{frame}");
    assert_eq!(frame["cause"], command["id"], "cause-correlated: {frame}");
    assert!(frame.get("seq").is_none());
    frame
}

/// The types of the events `session` holds for replay.
async fn history_types(relay: &TestRelay, session: &str) -> Vec<String> {
    let held = relay.held(session).await;
    held.iter()
        .map(|i| i.json()["type"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_command_reaches_its_one_owner_byte_for_byte() {
    let relay = start_with_token(Config::default(), TOKEN).await;
    let filter = json!({"session": "job"}).to_string();
    let mut watcher = relay.sse(&[("filter", &filter)]).await;
    let mut target = owner(&relay, "target/1", &["control.cancel"], "job").await;
    let mut bystander = owner(&relay, "bystander/1", &["control.cancel"], "elsewhere").await;
    let mut sender = relay.ws("consumer").await;

    let text = r#"{ "type":"control.cancel" , "aep":"0.1","id":"cmd-\u0031","time":"2026-12-03T09:00:01Z","source":"urn:aep:test:operator","agent":"op","session":"job","data":{"scope":"session","reason":"caf\u00e9"}}"#;
    sender.send_text(text).await;
    assert_eq!(target.text().await, text);
    assert!(
        sender.sync("sent").await.is_empty(),
        "no answer to a routed command"
    );
    assert!(bystander.sync("quiet").await.is_empty());
    assert_eq!(relay.metric("aep_relay_commands_routed_total").await, 1);

    // The command is kept in the session's history and fanned out, as
    // the bytes it was sent as, without an SSE id (it has no position).
    assert_eq!(watcher.event().await.json()["type"], "session.started");
    let live = watcher.event().await;
    assert_eq!((live.data(), live.id()), (text, None));
    let held = relay.held("job").await;
    assert_eq!(held.len(), 2);
    assert_eq!((held[1].data(), held[1].id()), (text, None));
}

#[tokio::test]
async fn no_owner_is_no_route_and_history_stays_untouched() {
    let relay = start_with_token(Config::default(), TOKEN).await;
    relay
        .post_event(&event("session.started", "orphan", 0))
        .await;
    let mut sender = relay.ws("consumer").await;
    let frame = refusal(&mut sender, &command("control.pause", "orphan")).await;
    assert_eq!(frame["code"], "no-route");
    assert!(frame["detail"].is_string());
    assert_eq!(history_types(&relay, "orphan").await, ["session.started"]);
    assert!(sender.sync("alive").await.is_empty());
}

#[tokio::test]
async fn two_claimants_are_ambiguous_and_neither_gets_the_command() {
    let relay = start_with_token(Config::default(), TOKEN).await;
    let mut first = owner(&relay, "a/1", &["control.cancel"], "dup").await;
    let mut second = owner(&relay, "b/1", &["control.cancel"], "dup").await;
    let mut sender = relay.ws("consumer").await;
    let frame = refusal(&mut sender, &command("control.cancel", "dup")).await;
    assert_eq!(frame["code"], "ambiguous");
    assert!(first.sync("a").await.is_empty());
    assert!(second.sync("b").await.is_empty());
    let types = history_types(&relay, "dup").await;
    assert_eq!(
        types,
        ["session.started", "session.started"],
        "one event from each claimant, no refusal"
    );
    // The roster shows both claims, never one elected.
    let roster = sender.roster("r").await;
    let sessions: Vec<&str> = roster
        .iter()
        .map(|e| e["session"].as_str().unwrap())
        .collect();
    assert_eq!(sessions, ["dup", "dup"]);
    // When one claimant leaves, the command routes.
    drop(second);
    relay.wait_roster("one claimant", |r| r.len() == 1).await;
    let cancel = command("control.cancel", "dup");
    sender.send(&cancel).await;
    assert_eq!(first.json().await, cancel);
}

#[tokio::test]
async fn an_undeclared_type_is_unsupported_on_the_owners_behalf() {
    let relay = start_with_token(Config::default(), TOKEN).await;
    let mut target = owner(&relay, "t/1", &["control.cancel"], "picky").await;
    let mut sender = relay.ws("consumer").await;
    for undeclared in ["control.pause", "x.acme.control.reboot"] {
        let frame = refusal(&mut sender, &command(undeclared, "picky")).await;
        assert_eq!(frame["code"], "unsupported", "{undeclared}");
    }
    // An owner that declared nothing accepts nothing.
    let mut silent = relay.ws_hello(hello("emitter")).await;
    silent.send(&event("session.started", "mute", 0)).await;
    silent.sync("claimed").await;
    let frame = refusal(&mut sender, &command("control.cancel", "mute")).await;
    assert_eq!(frame["code"], "unsupported");
    assert!(target.sync("t").await.is_empty());
    assert!(silent.sync("s").await.is_empty());
    assert_eq!(history_types(&relay, "picky").await, ["session.started"]);
}

#[tokio::test]
async fn without_a_token_commands_are_unauthorized() {
    let relay = start(Config::default()).await;
    let mut target = owner(&relay, "t/1", &["control.cancel"], "open").await;
    let mut sender = relay.ws("consumer").await;
    let frame = refusal(&mut sender, &command("control.cancel", "open")).await;
    assert_eq!(frame["code"], "unauthorized");
    assert!(target.sync("t").await.is_empty());
    assert_eq!(history_types(&relay, "open").await, ["session.started"]);
    assert_eq!(relay.metric("aep_relay_commands_routed_total").await, 0);
}

#[tokio::test]
async fn a_consumer_connection_never_claims() {
    let relay = start_with_token(Config::default(), TOKEN).await;
    let mut watcher = relay.ws("consumer").await;
    relay
        .post_event(&event("session.started", "watched", 0))
        .await;
    // A consumer does not emit a session's events: refused, not ingested.
    let started = event("progress.status", "watched", 1);
    watcher.send(&started).await;
    let frame = watcher.json().await;
    assert_eq!(
        (&frame["type"], &frame["code"], &frame["cause"]),
        (&json!("error"), &json!("unauthorized"), &started["id"])
    );
    assert!(watcher.sync("sent").await.is_empty());
    assert_eq!(history_types(&relay, "watched").await, ["session.started"]);
    assert!(watcher.roster("r").await.is_empty());
    let mut sender = relay.ws("consumer").await;
    let frame = refusal(&mut sender, &command("control.cancel", "watched")).await;
    assert_eq!(frame["code"], "no-route");
    // A command claims nothing either; a `both` connection does claim.
    let mut both = relay.ws("both").await;
    both.send(&command("control.cancel", "cmd-only")).await;
    assert_eq!(both.json().await["code"], "no-route");
    both.send(&event("session.started", "mine", 0)).await;
    let roster = both.roster("r2").await;
    assert_eq!(roster.len(), 1);
    assert_eq!(roster[0]["session"], "mine");
}

#[tokio::test]
async fn a_reconnecting_emitter_claims_again() {
    let relay = start_with_token(Config::default(), TOKEN).await;
    let first = owner(&relay, "agent/1", &["control.cancel"], "long").await;
    drop(first);
    relay.wait_roster("no claim", <[Value]>::is_empty).await;
    let mut sender = relay.ws("consumer").await;
    let frame = refusal(&mut sender, &command("control.cancel", "long")).await;
    assert_eq!(frame["code"], "no-route");

    let mut again = relay
        .ws_hello(emitter_hello("agent/2", &["control.cancel"]))
        .await;
    again.send(&status("long", 1, "info")).await;
    again.sync("claimed").await;
    let cancel = command("control.cancel", "long");
    sender.send(&cancel).await;
    assert_eq!(again.json().await, cancel);
}

#[tokio::test]
async fn roster_entries_relay_declarations_verbatim() {
    let relay = start_with_token(Config::default(), TOKEN).await;
    let control = json!({"accepts": ["control.attention.respond"], "ack_window_ms": 2500, "x-note": {"k": [1, "two"]}});
    let emits = json!(["session", "run", "x.acme"]);
    let declared = json!({
        "type": "hello",
        "versions": ["0.1"],
        "role": "emitter",
        "identity": {"agent": "claude-code", "instance": "host-a/7c1f", "card": null},
        "capabilities": {"control": control, "emits": emits, "capture": ["metadata"], "x-unknown": true},
    });
    let mut emitter = relay.ws_hello(declared).await;
    for session in ["s2", "s1"] {
        emitter.send(&event("session.started", session, 0)).await;
    }
    // A command or an unpositioned event claims nothing.
    emitter.send(&command("control.cancel", "s3")).await;
    assert_eq!(emitter.json().await["code"], "no-route");
    let mut bare = relay.ws_hello(hello("emitter")).await;
    bare.send(&event("session.started", "s9", 0)).await;
    bare.sync("claimed").await;

    let mut consumer = relay.ws("consumer").await;
    let entry = |session: &str| json!({"session": session, "agent": "claude-code", "instance": "host-a/7c1f", "control": control, "emits": emits});
    let bare_entry = json!({"session": "s9", "agent": "test-agent", "instance": "test/1"});
    assert_eq!(
        consumer.roster("r-1").await,
        [entry("s1"), entry("s2"), bare_entry]
    );

    // The roster is watch-class: an emitter connection is refused in-band.
    emitter.send(&json!({"type": "roster", "id": "r-2"})).await;
    let frame = emitter.json().await;
    assert_eq!(
        (frame["type"].as_str(), frame["code"].as_str(), &frame["id"]),
        (Some("error"), Some("unauthorized"), &json!("r-2"))
    );
    assert!(emitter.sync("still-open").await.is_empty());
}

#[tokio::test]
async fn a_replayed_duplicate_claims_nothing_and_a_departed_owner_is_not_diverted() {
    let relay = start_with_token(
        Config::default().claim_grace(Duration::from_secs(60)),
        TOKEN,
    )
    .await;
    let accepts = ["control.attention.respond"];
    let mut owner_ws = relay.ws_hello(emitter_hello("owner/1", &accepts)).await;
    let started = event("session.started", "job", 0);
    owner_ws.send(&started).await;
    assert!(owner_ws.sync("claimed").await.is_empty());
    // The impostor re-sends the owner's event: a duplicate claims nothing.
    let mut impostor = relay.ws_hello(emitter_hello("impostor/1", &accepts)).await;
    impostor.send(&started).await;
    assert!(impostor.sync("replayed").await.is_empty());
    let mut sender = relay.ws("consumer").await;
    let roster = sender.roster("r").await;
    assert_eq!(roster.len(), 1, "{roster:?}");
    assert_eq!(roster[0]["instance"], "owner/1");

    // The owner leaves: its claim is held, the command refused, not
    // handed to the impostor.
    drop(owner_ws);
    relay
        .wait_roster("the owner gone", <[Value]>::is_empty)
        .await;
    let frame = refusal(&mut sender, &command("control.attention.respond", "job")).await;
    assert_eq!(frame["code"], "no-route");
    assert!(impostor.sync("nothing").await.is_empty());

    // A fresh event under another source makes the session ambiguous.
    let mut own = event("progress.status", "job", 1);
    own["source"] = "urn:aep:test:impostor".into();
    impostor.send(&own).await;
    assert!(impostor.sync("claimed").await.is_empty());
    let frame = refusal(&mut sender, &command("control.attention.respond", "job")).await;
    assert_eq!(frame["code"], "ambiguous");
    assert!(impostor.sync("still nothing").await.is_empty());
}

#[tokio::test]
async fn the_owner_returning_within_the_grace_takes_its_claim_back() {
    let relay = start_with_token(
        Config::default().claim_grace(Duration::from_secs(60)),
        TOKEN,
    )
    .await;
    let first = owner(&relay, "agent/1", &["control.cancel"], "long").await;
    drop(first);
    relay.wait_roster("no claim", <[Value]>::is_empty).await;
    let mut again = relay
        .ws_hello(emitter_hello("agent/2", &["control.cancel"]))
        .await;
    again.send(&status("long", 1, "info")).await;
    assert!(again.sync("claimed").await.is_empty());
    let mut sender = relay.ws("consumer").await;
    let cancel = command("control.cancel", "long");
    sender.send(&cancel).await;
    assert_eq!(again.json().await, cancel);
}

/// An ack of `command` from its target, as `control.accepted`.
fn ack(command: &Value, ack_type: &str, seq: u64) -> Value {
    let mut ack = event(ack_type, command["session"].as_str().unwrap(), seq);
    ack["cause"] = command["id"].clone();
    ack["data"] = if ack_type == "control.rejected" {
        json!({"reason": "refused"})
    } else {
        json!({})
    };
    ack
}

#[tokio::test]
async fn a_consumer_sends_only_commands_and_only_the_target_acknowledges() {
    let relay = start_with_token(Config::default(), TOKEN).await;
    let mut target = owner(&relay, "t/1", &["control.cancel"], "job").await;
    let mut sender = relay.ws("both").await;
    sender
        .subscribe(json!({"type": "subscribe", "id": "w", "filter": {"session": "job"}}))
        .await;
    let cancel = command("control.cancel", "job");
    sender.send(&cancel).await;
    assert_eq!(target.json().await, cancel);
    assert_eq!(sender.json().await["id"], cancel["id"], "the command, live");

    // A consumer forges the target's rejection: refused, not ingested.
    let mut forger = relay.ws("consumer").await;
    for forged in [
        ack(&cancel, "control.rejected", 1),
        ack(&cancel, "control.accepted", 1),
        event("session.ended", "job", 1),
    ] {
        forger.send(&forged).await;
        let frame = forger.json().await;
        assert_eq!(frame["type"], "error", "{forged}");
        assert_eq!(frame["code"], "unauthorized", "{frame}");
        assert_eq!(frame["cause"], forged["id"]);
    }
    // An emitter that is not the command's target is refused the same.
    let mut other = owner(&relay, "o/1", &[], "elsewhere").await;
    let forged = ack(&cancel, "control.rejected", 1);
    other.send(&forged).await;
    let frame = other.json().await;
    assert_eq!(
        (&frame["code"], &frame["cause"]),
        (&json!("unauthorized"), &forged["id"])
    );

    // Over HTTP too: a POST is never the connection a command went to.
    let forged = ack(&cancel, "control.rejected", 2);
    let (status, body) = json_body(relay.post_lines(&[forged.to_string()]).await).await;
    assert_eq!(
        (status, &body["error"]),
        (400, &json!("unauthorized")),
        "{body}"
    );

    // A consumer may still send commands (and `attention.routed`).
    let mut routed = command("attention.routed", "job");
    routed["data"] = json!({"request": "att-1", "to": "ops"});
    forger.send(&routed).await;
    let refused: Vec<Value> = forger.sync("routed").await;
    assert!(
        refused.iter().all(|f| f["code"] != "unauthorized"),
        "{refused:?}"
    );

    // The target's own ack is believed; the sender saw nothing forged.
    let real = ack(&cancel, "control.accepted", 1);
    target.send(&real).await;
    let next = sender
        .until(|f| f["type"] == "control.accepted" || f["type"] == "control.rejected")
        .await;
    assert_eq!(next.last().unwrap()["id"], real["id"], "{next:?}");
    assert!(next.iter().all(|f| f["type"] != "session.ended"));
    let types = history_types(&relay, "job").await;
    assert_eq!(
        types
            .iter()
            .filter(|t| t.starts_with("control."))
            .collect::<Vec<_>>(),
        ["control.cancel", "control.accepted"]
    );
}

#[tokio::test]
async fn claims_follow_the_buffer_and_the_roster_stays_under_the_frame_limit() {
    let max_frame = 2048;
    let relay = start_with_token(
        Config::default().max_sessions(3).max_frame(max_frame),
        TOKEN,
    )
    .await;
    let emits: Vec<String> = (0..12).map(|n| format!("x.acme.kind-{n:04}")).collect();
    let big_hello = |instance: &str| {
        let mut hello = emitter_hello(instance, &["control.cancel"]);
        hello["capabilities"]["emits"] = json!(emits);
        hello
    };
    let mut first = relay.ws_hello(big_hello("a/1")).await;
    for n in 0..10 {
        first
            .send(&event("session.started", &format!("s{n}"), 0))
            .await;
    }
    assert!(first.sync("claimed").await.is_empty());
    let mut consumer = relay.ws("consumer").await;
    // The buffer holds the last 3 sessions: the claims on the evicted
    // seven went with them.
    let sessions: Vec<Value> = consumer
        .roster("r-1")
        .await
        .iter()
        .map(|e| e["session"].clone())
        .collect();
    assert_eq!(sessions, [json!("s7"), json!("s8"), json!("s9")]);
    let mut sender = relay.ws("consumer").await;
    let frame = refusal(&mut sender, &command("control.cancel", "s0")).await;
    assert_eq!(frame["code"], "no-route");

    // Two more claimants of the held sessions: the roster would pass the
    // frame limit, so it stops short and says how much it left out.
    let mut claimants = Vec::new();
    for instance in ["b/1", "c/1"] {
        let mut more = relay.ws_hello(big_hello(instance)).await;
        for n in 7..10 {
            more.send(&event("progress.status", &format!("s{n}"), 1))
                .await;
        }
        assert!(more.sync("claimed").await.is_empty());
        claimants.push(more);
    }
    consumer.send(&json!({"type": "roster", "id": "r-2"})).await;
    let text = consumer.text().await;
    assert!(text.len() <= max_frame, "{} bytes", text.len());
    let frame: Value = serde_json::from_str(&text).unwrap();
    let shown = frame["entries"].as_array().unwrap().len();
    assert_eq!(frame["truncated"], true, "{frame}");
    assert!(shown > 0);
    assert_eq!(frame["omitted"].as_u64().unwrap() as usize + shown, 9);
}

#[tokio::test]
async fn a_held_claim_ends_with_the_grace() {
    let relay =
        start_with_token(Config::default().claim_grace(Duration::from_secs(3)), TOKEN).await;
    let first = owner(&relay, "agent/1", &["control.cancel"], "brief").await;
    drop(first);
    relay.wait_roster("no claim", <[Value]>::is_empty).await;
    let mut next = relay
        .ws_hello(emitter_hello("agent/9", &["control.cancel"]))
        .await;
    let mut own = status("brief", 1, "info");
    own["source"] = "urn:aep:test:successor".into();
    next.send(&own).await;
    assert!(next.sync("claimed").await.is_empty());
    // Refused (held, then ambiguous) until the grace ends, then routed
    // to the one claimant left; bounded in tries, no timing asserted.
    let mut sender = relay.ws("consumer").await;
    for n in 0..400 {
        let cancel = command("control.cancel", "brief");
        sender.send(&cancel).await;
        let answers = sender.sync("answer").await;
        if answers.is_empty() {
            assert!(n > 0, "the first try falls within the grace");
            assert_eq!(next.json().await, cancel);
            return;
        }
        assert_eq!(answers[0]["code"], "ambiguous", "{answers:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the held claim never ended");
}

#[tokio::test]
async fn an_agent_back_on_a_new_connection_owns_its_session_by_what_it_re_sends() {
    let relay = start_with_token(Config::default(), TOKEN).await;
    let accepts = ["control.cancel"];
    let mut first = relay.ws_hello(emitter_hello("agent/1", &accepts)).await;
    let started = event("session.started", "back", 0);
    first.send(&started).await;
    assert!(first.sync("claimed").await.is_empty());
    drop(first);
    relay
        .wait_roster("the first connection gone", <[Value]>::is_empty)
        .await;
    // Back on a new connection, the agent re-sends what it is not sure
    // arrived: a duplicate the buffer drops, which owns the session again.
    let mut again = relay.ws_hello(emitter_hello("agent/2", &accepts)).await;
    again.send(&started).await;
    assert!(again.sync("re-sent").await.is_empty());
    let mut sender = relay.ws("consumer").await;
    let cancel = command("control.cancel", "back");
    sender.send(&cancel).await;
    assert_eq!(again.json().await, cancel);
    // Its ack is believed from the new connection.
    let accepted = ack(&cancel, "control.accepted", 1);
    again.send(&accepted).await;
    let refused = again.sync("acked").await;
    assert!(refused.is_empty(), "{refused:?}");
    let types = history_types(&relay, "back").await;
    assert!(types.iter().any(|t| t == "control.accepted"), "{types:?}");
}

#[tokio::test]
async fn a_co_claimant_under_another_source_cannot_acknowledge() {
    let relay = start_with_token(Config::default(), TOKEN).await;
    let mut target = owner(&relay, "t/1", &["control.cancel"], "job").await;
    let mut sender = relay.ws("both").await;
    let cancel = command("control.cancel", "job");
    sender.send(&cancel).await;
    assert_eq!(target.json().await, cancel);

    // The attacker claims the session under its own source, then acks.
    let mut attacker = relay.ws_hello(emitter_hello("evil/1", &[])).await;
    let mut own = event("progress.status", "job", 1);
    own["source"] = "urn:aep:test:evil".into();
    attacker.send(&own).await;
    assert!(attacker.sync("co-claimed").await.is_empty());
    let mut forged = ack(&cancel, "control.accepted", 2);
    forged["source"] = "urn:aep:test:evil".into();
    attacker.send(&forged).await;
    let frame = attacker.json().await;
    assert_eq!(
        (&frame["code"], &frame["cause"]),
        (&json!("unauthorized"), &forged["id"]),
        "{frame}"
    );
    let types = history_types(&relay, "job").await;
    assert!(!types.iter().any(|t| t == "control.accepted"), "{types:?}");
}
