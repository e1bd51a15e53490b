//! Authentication (AEP-0003 §8.1): with a token, every surface but
//! `/healthz` needs it, in `Authorization: Bearer` or `?access_token=`,
//! and the token is never written to a log.

use crate::common;

use std::io::{self, Write};
use std::sync::{Arc, Mutex, OnceLock};

use aep_relay::{Config, Token};
use common::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

const TOKEN: &str = "s3cret-Token-do-not-log";

/// The upgrade answer to a WebSocket request made with `request`.
async fn ws_status(relay: &TestRelay, url: &str, authorization: Option<&str>) -> u16 {
    let mut request = url.into_client_request().expect("a WS request");
    if let Some(value) = authorization {
        request
            .headers_mut()
            .insert("authorization", value.parse().unwrap());
    }
    let stream = tcp_connect(relay.addr, None).await;
    match tokio::time::timeout(WAIT, tokio_tungstenite::client_async(request, stream)).await {
        Ok(Ok((_, response))) => response.status().as_u16(),
        Ok(Err(tokio_tungstenite::tungstenite::Error::Http(response))) => {
            response.status().as_u16()
        }
        other => panic!("a WS upgrade answer, got {other:?}"),
    }
}

#[tokio::test]
async fn every_surface_but_healthz_needs_the_token() {
    let relay = start_with_token(Config::default(), TOKEN).await;
    let anonymous = reqwest::Client::builder().no_proxy().build().unwrap();
    let body = status("auth", 0, "info").to_string();
    let tries = [
        ("POST", "/events"),
        ("GET", "/events"),
        ("GET", "/.well-known/aep"),
        ("GET", "/stream"),
        ("GET", "/stream?live=0&from=all"),
        ("GET", "/metrics"),
    ];
    for (method, path) in tries {
        for authorization in [
            None,
            Some("Bearer wrong"),
            Some(&*format!("Basic {TOKEN}")),
            Some(&*format!("Bearer {TOKEN}x")),
        ] {
            let mut request = anonymous
                .request(method.parse().unwrap(), relay.url(path))
                .header("aep-version", "0.1")
                .header("content-type", "application/json")
                .body(body.clone());
            if let Some(value) = authorization {
                request = request.header("authorization", value);
            }
            let response = send(request).await;
            assert_eq!(
                response
                    .headers()
                    .get("www-authenticate")
                    .map(|v| v.to_str().unwrap()),
                Some("Bearer")
            );
            let (status, refusal) = json_body(response).await;
            assert_eq!(
                (status, refusal["error"].as_str()),
                (401, Some("unauthorized")),
                "{method} {path} with {authorization:?}"
            );
        }
    }
    let ws = relay.ws_url();
    assert_eq!(ws_status(&relay, &ws, None).await, 401);
    assert_eq!(ws_status(&relay, &ws, Some("Bearer nope")).await, 401);
    assert_eq!(
        ws_status(&relay, &format!("{ws}?access_token=nope"), None).await,
        401
    );
    assert_eq!(
        ws_status(&relay, &ws, Some(&format!("Bearer {TOKEN}"))).await,
        101
    );
    assert!(relay.held("auth").await.is_empty(), "nothing was ingested");
    assert!(
        relay
            .metric("aep_relay_refused_total{reason=\"unauthorized\"}")
            .await
            >= 27
    );
}

#[tokio::test]
async fn a_preflight_needs_no_token() {
    let relay = start_with_token(Config::default(), TOKEN).await;
    let anonymous = reqwest::Client::builder().no_proxy().build().unwrap();
    for path in ["/events", "/stream", "/.well-known/aep", "/healthz"] {
        let preflight = anonymous
            .request(reqwest::Method::OPTIONS, relay.url(path))
            .header("origin", "http://page.example")
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "authorization");
        let response = send(preflight).await;
        assert_eq!(response.status(), 204, "{path}");
        let headers = response.headers();
        assert_eq!(headers["access-control-allow-origin"], "*");
        let allowed = headers["access-control-allow-headers"].to_str().unwrap();
        for header in [
            "authorization",
            "last-event-id",
            "aep-version",
            "content-type",
        ] {
            assert!(allowed.contains(header), "{path}: {allowed}");
        }
    }
}

#[tokio::test]
async fn the_access_token_query_parameter_works() {
    let relay = start_with_token(Config::default(), TOKEN).await;
    let anonymous = reqwest::Client::builder().no_proxy().build().unwrap();
    let q = format!("access_token={TOKEN}");
    let post = anonymous
        .post(relay.url(&format!("/events?{q}")))
        .header("aep-version", "0.1")
        .header("content-type", "application/json")
        .body(status("q", 0, "info").to_string());
    assert_eq!(send(post).await.status(), 202);
    for path in ["/events", "/.well-known/aep", "/metrics"] {
        let response = send(anonymous.get(relay.url(&format!("{path}?{q}")))).await;
        assert_eq!(response.status(), 200, "{path}");
    }
    let stream = anonymous.get(relay.url(&format!("/stream?live=0&from=all&{q}")));
    let mut sse = Sse::new(send(stream).await);
    assert_eq!(seqs(&sse.read_to_end().await), [0]);
    let ws = format!("{}?{q}", relay.ws_url());
    assert_eq!(ws_status(&relay, &ws, None).await, 101);
}

#[tokio::test]
async fn healthz_answers_without_auth_and_counts_only_with_it() {
    let relay = start_with_token(Config::default(), TOKEN).await;
    relay.post_event(&status("h", 0, "info")).await;
    let anonymous = reqwest::Client::builder().no_proxy().build().unwrap();
    let (status, body) = json_body(send(anonymous.get(relay.url("/healthz"))).await).await;
    assert_eq!((status, body), (200, json!({"ok": true})));
    let health = relay.health().await;
    assert_eq!(health["ok"], true);
    assert_eq!(health["sessions"], 1);
    assert_eq!(health["buffered_events"], 1);
    for key in ["subscriptions", "websockets", "sse", "uptime_s"] {
        assert!(health[key].is_u64(), "{key} in {health}");
    }
}

/// Everything every `tracing` event of this test binary writes.
fn captured_logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || Capture(sink.clone()))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        logs
    })
    .clone()
}

struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_token_is_never_logged() {
    let logs = captured_logs();
    let config = Config::default().max_connections(2);
    assert!(!config
        .clone()
        .token(Token::new(TOKEN))
        .summary()
        .contains(TOKEN));
    assert!(!format!("{:?}", config.clone().token(Token::new(TOKEN))).contains(TOKEN));
    let relay = start_with_token(config, TOKEN).await;

    // Hold both connections, the token in the query of each, and knock
    // a third time: that refusal is logged.
    let anonymous = reqwest::Client::builder().no_proxy().build().unwrap();
    let sse = send(anonymous.get(relay.url(&format!("/stream?access_token={TOKEN}")))).await;
    let ws = format!("{}?access_token={TOKEN}", relay.ws_url());
    let (socket, _) = tokio_tungstenite::client_async(ws, tcp_connect(relay.addr, None).await)
        .await
        .expect("a socket");
    let mut third = tcp_connect(relay.addr, None).await;
    let mut rest = Vec::new();
    let read = tokio::time::timeout(WAIT, third.read_to_end(&mut rest))
        .await
        .expect("closed in time");
    assert!(
        read.is_err() || rest.is_empty(),
        "the third connection is closed unanswered"
    );
    drop((sse, socket));

    // A request hyper cannot parse, carrying the token (refused too if
    // the connections above are not gone yet: logged either way).
    let mut bad = tcp_connect(relay.addr, None).await;
    let garbage = format!("GET /events?access_token={TOKEN} HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\nno colon here\r\n\r\n");
    bad.write_all(garbage.as_bytes()).await.unwrap();
    let _ = tokio::time::timeout(WAIT, bad.read_to_end(&mut rest)).await;
    relay.stop().await;

    let text = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(
        text.contains("connection refused"),
        "the relay logged: {text}"
    );
    assert!(!text.contains(TOKEN), "the token was logged:\n{text}");
    assert!(
        !text.contains("s3cret"),
        "part of the token was logged:\n{text}"
    );
}

/// The upgrade answer to a WebSocket request from a page at `origin`.
async fn ws_status_from(relay: &TestRelay, origin: &str) -> u16 {
    let mut request = relay.ws_url().into_client_request().expect("a WS request");
    request
        .headers_mut()
        .insert("origin", origin.parse().unwrap());
    if let Some(token) = &relay.token {
        let value = format!("Bearer {token}");
        request
            .headers_mut()
            .insert("authorization", value.parse().unwrap());
    }
    let stream = tcp_connect(relay.addr, None).await;
    match tokio::time::timeout(WAIT, tokio_tungstenite::client_async(request, stream)).await {
        Ok(Ok((_, response))) => response.status().as_u16(),
        Ok(Err(tokio_tungstenite::tungstenite::Error::Http(response))) => {
            response.status().as_u16()
        }
        other => panic!("a WS upgrade answer, got {other:?}"),
    }
}

#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive() {
    let relay = start_with_token(Config::default(), TOKEN).await;
    let anonymous = reqwest::Client::builder().no_proxy().build().unwrap();
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let request = anonymous
            .get(relay.url("/events"))
            .header("authorization", format!("{scheme} {TOKEN}"));
        assert_eq!(send(request).await.status(), 200, "{scheme}");
    }
    let request = anonymous
        .get(relay.url("/events"))
        .header("authorization", format!("Basic {TOKEN}"));
    assert_eq!(send(request).await.status(), 401);
}

#[tokio::test]
async fn without_a_token_no_foreign_page_can_read_or_reach_the_relay() {
    let relay = start(Config::default()).await;
    let anonymous = reqwest::Client::builder().no_proxy().build().unwrap();

    // A foreign page's read is not granted (no CORS header), a loopback
    // page's is.
    let foreign = anonymous
        .get(relay.url("/stream"))
        .query(&[("live", "0"), ("from", "all")])
        .header("origin", "https://evil.example");
    let response = send(foreign).await;
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none(),
        "{:?}",
        response.headers()
    );
    let local = anonymous
        .get(relay.url("/events"))
        .header("origin", "http://localhost:5173");
    let response = send(local).await;
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        "http://localhost:5173"
    );

    // DNS rebinding: a request addressed to a foreign name is refused.
    for host in [
        "evil.example",
        "evil.example:8787",
        "attacker.localhost.evil",
    ] {
        let request = anonymous.get(relay.url("/events")).header("host", host);
        let (status, body) = json_body(send(request).await).await;
        assert_eq!(status, 403, "{host}");
        assert_eq!(body["error"], "forbidden-host", "{host}");
    }
    for host in [
        "localhost",
        "localhost:8787",
        "127.0.0.1:1",
        "[::1]:8787",
        "10.1.2.3",
    ] {
        let request = anonymous.get(relay.url("/events")).header("host", host);
        assert_eq!(send(request).await.status(), 200, "{host}");
    }

    // A WebSocket from a foreign page is refused; from this machine, not.
    assert_eq!(ws_status_from(&relay, "https://evil.example").await, 403);
    assert_eq!(ws_status_from(&relay, "http://127.0.0.1:3000").await, 101);
    // The relay's own pages (its UI), whatever address serves them.
    let own = format!("http://{}", relay.addr);
    assert_eq!(ws_status_from(&relay, &own).await, 101);
}

#[tokio::test]
async fn with_a_token_any_page_holding_it_may_read_and_connect() {
    let relay = start_with_token(Config::default(), TOKEN).await;
    let request = relay
        .request(reqwest::Method::GET, "/events")
        .header("origin", "https://dashboard.example")
        .header("host", "relay.example");
    let response = send(request).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    assert_eq!(
        ws_status_from(&relay, "https://dashboard.example").await,
        101
    );
}

#[tokio::test]
async fn idle_connections_that_never_send_a_request_free_their_slots() {
    let relay = start_with_token(
        Config::default()
            .max_connections(2)
            .head_timeout(std::time::Duration::from_millis(200)),
        TOKEN,
    )
    .await;
    // Two sockets that connect and say nothing take both slots...
    let mut idle = Vec::new();
    for _ in 0..2 {
        idle.push(tcp_connect(relay.addr, None).await);
    }
    // ...until the head deadline closes them (the hang guard is far
    // longer than the deadline, and than the default of old).
    for socket in &mut idle {
        let mut buf = [0u8; 64];
        let read = tokio::time::timeout(WAIT, socket.read(&mut buf))
            .await
            .expect("an idle unauthenticated socket is closed in time");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    }
    // A real client is served again.
    let health = relay.health().await;
    assert_eq!(health["ok"], true);
    let mut socket = tcp_connect(relay.addr, None).await;
    socket
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(WAIT, socket.read_to_end(&mut answer)).await;
    assert!(answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");
}
