//! The HTTP surfaces: routes, auth, CORS, discovery, ingest, health and
//! metrics. SSE and the WebSocket have their own modules.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aep::frame::ErrorCode;
use axum::body::{Body, Bytes};
use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use bytes::BytesMut;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::hub::Hub;
use crate::ingest::{self, Admitted};
use crate::metrics::Refusal;
use crate::{sse, ui, ws};

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct App {
    pub hub: Arc<Hub>,
    pub shutdown: CancellationToken,
    /// Upgraded WebSocket connections, which outlive their HTTP request.
    pub sockets: TaskTracker,
    pub started: Instant,
    /// Bytes of `POST` bodies that may be read and ingested at once
    /// (`--max-inflight-bytes`).
    pub inflight: Arc<tokio::sync::Semaphore>,
    /// The cluster's stream, when the relay is a node of one
    /// ([`Config::nats`](crate::Config::nats)): what is admitted is
    /// published there, and delivered from there.
    #[cfg(feature = "nats")]
    pub nats: Option<Arc<crate::nats::Nats>>,
}

/// The query parameters of a request.
pub(crate) type Params = Query<HashMap<String, String>>;

pub(crate) fn router(app: App) -> Router {
    let routes = Router::new()
        .route(
            "/events",
            get(discovery).post(post_events).options(preflight),
        )
        .route("/.well-known/aep", get(discovery).options(preflight))
        .route("/stream", get(sse::stream).options(preflight))
        .route("/socket", get(ws::upgrade))
        .route("/healthz", get(healthz).options(preflight))
        .route("/metrics", get(metrics));
    // The browser UI, when on: static files only, see `ui`.
    let routes = if app.hub.config.ui {
        routes.merge(ui::router())
    } else {
        routes
    };
    routes
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(app.clone(), browsers))
        .with_state(app)
}

/// What a browser page may do here.
///
/// With a token, any page may read the responses (`*`): tokens are
/// bearer values, never cookies, so that grants nothing a page did not
/// hold. Without one the relay is open to whoever reaches it, so a web
/// page must not be able to use the visitor's browser to reach it: only
/// pages on a loopback origin may read its responses, and a request whose
/// `Host` is a DNS name other than `localhost` is refused (403), which
/// defeats DNS rebinding (an attacker's name made to resolve to
/// 127.0.0.1).
async fn browsers(State(app): State<App>, request: Request, next: Next) -> Response {
    let open = !app.hub.config.authenticated();
    if open {
        let host = request.headers().get(header::HOST);
        if host.is_some_and(|host| !host_allowed_without_token(host)) {
            return error(
                StatusCode::FORBIDDEN,
                "forbidden-host",
                "without a token this relay answers only requests addressed to localhost or an IP address; set a token to serve other names",
            );
        }
    }
    let allow = match request.headers().get(header::ORIGIN) {
        _ if !open => Some(HeaderValue::from_static("*")),
        Some(origin) if origin_is_loopback(origin) => Some(origin.clone()),
        _ => None,
    };
    let mut response = next.run(request).await;
    if let Some(allow) = allow {
        let headers = response.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allow);
        if open {
            headers.append(header::VARY, HeaderValue::from_static("origin"));
        }
    }
    response
}

/// A `Host` header a tokenless relay answers: an IP literal or
/// `localhost` (a name no one else can make resolve here), any port.
fn host_allowed_without_token(host: &HeaderValue) -> bool {
    let Ok(host) = host.to_str() else {
        return false;
    };
    let name = match host.rsplit_once(':') {
        // `[::1]:8787`, `127.0.0.1:8787`, `localhost:8787`
        Some((name, port)) if !name.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    let name = name.trim_end_matches('.');
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<std::net::Ipv4Addr>().is_ok()
        || name
            .strip_prefix('[')
            .and_then(|n| n.strip_suffix(']'))
            .is_some_and(|n| n.parse::<std::net::Ipv6Addr>().is_ok())
}

/// Whether a page's `Origin` names the host the request is addressed to
/// (the relay's own pages, such as its UI, whatever address serves them).
pub(crate) fn same_origin(origin: &HeaderValue, host: Option<&HeaderValue>) -> bool {
    let (Ok(origin), Some(Ok(host))) = (origin.to_str(), host.map(HeaderValue::to_str)) else {
        return false;
    };
    origin
        .split_once("://")
        .is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(host))
}

/// Whether a page's `Origin` is on this machine: `localhost`, `127.*` or
/// `[::1]`, any scheme and port.
pub(crate) fn origin_is_loopback(origin: &HeaderValue) -> bool {
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let Some((_, rest)) = origin.split_once("://") else {
        return false;
    };
    let host = match rest.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => rest,
    };
    host.eq_ignore_ascii_case("localhost")
        || host == "[::1]"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

async fn preflight() -> Response {
    (
        StatusCode::NO_CONTENT,
        [
            (header::ACCESS_CONTROL_ALLOW_METHODS, "GET, POST, OPTIONS"),
            (
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                "authorization, accept, content-type, last-event-id, aep-version",
            ),
            (header::ACCESS_CONTROL_MAX_AGE, "86400"),
        ],
    )
        .into_response()
}

async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "not-found", "no such endpoint")
}

/// A JSON error body `{"error": code, "detail": detail}`.
pub(crate) fn error(status: StatusCode, code: &str, detail: &str) -> Response {
    json_response(status, json!({"error": code, "detail": detail}))
}

pub(crate) fn json_response(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

impl App {
    /// The `inflight_bytes` gauge: bytes of `POST` bodies and WebSocket
    /// messages read and not yet handled.
    fn inflight_metric(&self) -> String {
        let max = self
            .hub
            .config
            .max_inflight_bytes
            .min(tokio::sync::Semaphore::MAX_PERMITS);
        let held = max.saturating_sub(self.inflight.available_permits());
        format!(
            "# HELP aep_relay_inflight_bytes Bytes of POST bodies and WebSocket messages read and not yet handled (bounded by --max-inflight-bytes).\n# TYPE aep_relay_inflight_bytes gauge\naep_relay_inflight_bytes {held}\n"
        )
    }

    /// Whether the request carries the token (always, without one): in
    /// `Authorization: Bearer`, or `?access_token=` for browsers.
    pub fn authorized(&self, headers: &HeaderMap, params: &HashMap<String, String>) -> bool {
        let Some(token) = &self.hub.config.token else {
            return true;
        };
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                // The scheme is case-insensitive (RFC 9110 §11.1).
                let (scheme, value) = v.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| value.trim())
            });
        bearer.is_some_and(|b| token.matches(b))
            || params.get("access_token").is_some_and(|t| token.matches(t))
    }

    pub fn unauthorized(&self) -> Response {
        self.hub.metrics.refuse(Refusal::Unauthorized);
        let mut response = error(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a bearer token is required (Authorization: Bearer, or access_token=)",
        );
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        response
    }

    /// The discovery document (AEP-0003 §3.4), true to what this relay does.
    /// `control.routed` says whether this relay routes commands (it does
    /// only when started with a token): a non-secret boolean, so a client
    /// such as the browser page knows whether answering can work at all.
    pub fn discovery(&self) -> Value {
        json!({
            "aep": ["0.1"],
            "role": "collector",
            "endpoints": {"events": "/events", "stream": "/stream", "socket": "/socket"},
            "capabilities": self.capabilities(),
            "control": {"routed": self.hub.config.authenticated()},
        })
    }

    /// The capability block of discovery and of the relay's `hello`.
    pub fn capabilities(&self) -> Value {
        json!({
            "filters": ["attr-match"],
            "replay": {"buffer": self.hub.config.buffer, "all": true},
            "capture": ["none", "metadata", "redacted", "full"],
            "control": {"accepts": []},
            "roster": {},
            "experimental": {},
        })
    }
}

async fn discovery(State(app): State<App>, headers: HeaderMap, Query(params): Params) -> Response {
    if !app.authorized(&headers, &params) {
        return app.unauthorized();
    }
    json_response(StatusCode::OK, app.discovery())
}

async fn healthz(State(app): State<App>, headers: HeaderMap, Query(params): Params) -> Response {
    let mut body = json!({"ok": true});
    if app.authorized(&headers, &params) {
        let m = &app.hub.metrics;
        body["sessions"] = m.sessions.get().into();
        body["subscriptions"] = m.subscriptions.get().into();
        body["websockets"] = m.websockets.get().into();
        body["sse"] = m.sse.get().into();
        body["buffered_events"] = m.buffered_events.get().into();
        body["uptime_s"] = app.started.elapsed().as_secs().into();
    }
    // A node of a cluster that cannot store, or no longer reads, the
    // stream is not healthy: it says so, and why.
    #[cfg(feature = "nats")]
    if let Some(nats) = &app.nats {
        let link = nats.health();
        body["nats"] = link.into();
        body["node"] = nats.node().into();
        if link != "connected" {
            body["ok"] = false.into();
            return json_response(StatusCode::SERVICE_UNAVAILABLE, body);
        }
    }
    json_response(StatusCode::OK, body)
}

async fn metrics(State(app): State<App>, headers: HeaderMap, Query(params): Params) -> Response {
    if !app.authorized(&headers, &params) {
        return app.unauthorized();
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        app.hub.metrics.render() + &app.inflight_metric(),
    )
        .into_response()
}

/// How long a client may take to send its body.
const BODY_TIMEOUT: Duration = Duration::from_secs(60);

async fn post_events(State(app): State<App>, Query(params): Params, request: Request) -> Response {
    let refuse = |why, response| {
        app.hub.metrics.refuse(why);
        response
    };
    let headers = request.headers();
    if !app.authorized(headers, &params) {
        return app.unauthorized();
    }
    match headers.get("aep-version").map(HeaderValue::to_str) {
        None => {
            return refuse(
                Refusal::Version,
                error(
                    StatusCode::BAD_REQUEST,
                    "version-required",
                    "the AEP-Version header is required (AEP-0003 §3.2)",
                ),
            )
        }
        Some(Ok(v)) if v.trim() == "0.1" => {}
        Some(_) => {
            return refuse(
                Refusal::Version,
                json_response(StatusCode::UPGRADE_REQUIRED, json!({"versions": ["0.1"]})),
            )
        }
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase());
    let batch = match content_type.as_deref() {
        Some("application/x-ndjson") => true,
        Some("application/json") => false,
        _ => {
            return refuse(
                Refusal::ContentType,
                error(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "unsupported-media-type",
                    "send application/json (one event) or application/x-ndjson (a batch)",
                ),
            )
        }
    };
    let max_body = app.hub.config.max_body;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max_body as u64) {
        return refuse(Refusal::TooLarge, too_large(max_body));
    }
    // The body and what it parses into are held until the ingest ends:
    // over all connections, at most `--max-inflight-bytes` of bodies,
    // counted as their bytes arrive (an idle upload holds what it sent).
    let (body, _inflight) = match read_body(request.into_body(), max_body, &app).await {
        Ok(read) => read,
        Err((why, response)) => return refuse(why, response),
    };
    // Parsing and fanning out a batch is CPU work: it runs off the async
    // workers, so `/healthz`, other connections and the shutdown are never
    // queued behind batches, however many arrive at once.
    let hub = app.hub.clone();
    let internal = || {
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the batch could not be ingested",
        )
    };
    // A node of a cluster publishes the batch; the stream delivers it.
    #[cfg(feature = "nats")]
    if let Some(nats) = app.nats.clone() {
        let checked = tokio::task::spawn_blocking(move || {
            admit_body(&hub, &body, batch, |admitted| {
                admitted
                    .iter()
                    .map(crate::nats::Outgoing::of)
                    .collect::<Vec<_>>()
            })
        })
        .await;
        let outgoing = match checked {
            Ok(Ok(outgoing)) => outgoing,
            Ok(Err(refused)) => return *refused,
            Err(_) => return internal(),
        };
        let count = outgoing.len();
        return match nats.publish(outgoing).await {
            Ok(duplicates) => accepted(count, duplicates),
            Err(failed) => {
                let (status, code) = match failed {
                    crate::nats::Failed::TooLarge { .. } => {
                        (StatusCode::PAYLOAD_TOO_LARGE, "payload-too-large")
                    }
                    crate::nats::Failed::Unavailable(_) => {
                        (StatusCode::SERVICE_UNAVAILABLE, "unavailable")
                    }
                };
                error(status, code, &failed.to_string())
            }
        };
    }
    let ingested = tokio::task::spawn_blocking(move || {
        admit_body(&hub, &body, batch, |admitted| {
            (admitted.len(), hub.ingest(admitted, None))
        })
    })
    .await;
    match ingested {
        Ok(Ok((count, duplicates))) => accepted(count, duplicates),
        Ok(Err(refused)) => *refused,
        Err(_) => internal(),
    }
}

/// The answer to a `POST` whose `count` events were all taken.
fn accepted(count: usize, duplicates: usize) -> Response {
    json_response(
        StatusCode::ACCEPTED,
        json!({"accepted": count, "duplicates": duplicates}),
    )
}

/// Parses `body` (one event, or an NDJSON batch) and refuses it whole at
/// its first bad line (the answer to the `POST`), else hands the admitted
/// events to `take`.
fn admit_body<T>(
    hub: &Hub,
    body: &Bytes,
    batch: bool,
    take: impl FnOnce(&[Admitted<'_>]) -> T,
) -> Result<T, Box<Response>> {
    let refuse = |why, response| {
        hub.metrics.refuse(why);
        Err(Box::new(response))
    };
    let max_batch = hub.config.max_batch;
    let lines = if batch {
        match ingest::batch(body, max_batch) {
            Ok(lines) => lines,
            Err(count) => {
                return refuse(
                    Refusal::TooManyEvents,
                    json_response(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        json!({"error": "too-many-events", "max": max_batch, "count": count}),
                    ),
                )
            }
        }
    } else {
        vec![(0, body.trim_ascii())]
    };
    let mut admitted: Vec<Admitted> = Vec::with_capacity(lines.len());
    for &(index, line) in &lines {
        let refusal = match ingest::admit(line) {
            Ok(event) if event.is_command() => (
                ErrorCode::Other("command-refused".into()),
                "commands flow only over the authenticated WebSocket (AEP-0004 §4.1)".to_owned(),
                Refusal::Command,
            ),
            Ok(event)
                if crate::routing::is_ack(event.event.type_())
                    && hub.owned(event.event.session()) =>
            {
                (
                    ErrorCode::Unauthorized,
                    format!(
                        "session {:?} has an owner connected (or returning); only its connection acknowledges the commands it was sent (AEP-0004 §8)",
                        event.event.session().unwrap_or_default()
                    ),
                    Refusal::Unauthorized,
                )
            }
            Ok(event) => {
                admitted.push(event);
                continue;
            }
            Err(e) => (e.code(), e.detail().to_owned(), Refusal::InvalidEvent),
        };
        let (code, detail, why) = refusal;
        return refuse(
            why,
            json_response(
                StatusCode::BAD_REQUEST,
                json!({"error": code.as_str(), "line": index, "detail": detail}),
            ),
        );
    }
    Ok(take(&admitted))
}

fn too_large(max: usize) -> Response {
    let mut response = json_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        json!({"error": "payload-too-large", "max_bytes": max}),
    );
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The body, at most `max` bytes; over it, the 413 to answer (the rest of
/// the upload is not read: the connection closes after the answer).
async fn read_body(
    body: Body,
    max: usize,
    app: &App,
) -> Result<(Bytes, OwnedSemaphorePermit), (Refusal, Response)> {
    let mut held = app
        .inflight
        .clone()
        .try_acquire_many_owned(0)
        .expect("the semaphore is never closed");
    let mut bytes = BytesMut::new();
    let read = async {
        let mut body = body;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|_| {
                let response = error(
                    StatusCode::BAD_REQUEST,
                    "body",
                    "the request body could not be read",
                );
                (Refusal::TooLarge, response)
            })?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if bytes.len() + data.len() > max {
                return Err((Refusal::TooLarge, too_large(max)));
            }
            let more = u32::try_from(data.len())
                .ok()
                .and_then(|n| app.inflight.clone().try_acquire_many_owned(n).ok());
            let Some(more) = more else {
                return Err((Refusal::Limit, busy(app.hub.config.max_inflight_bytes)));
            };
            held.merge(more);
            bytes.extend_from_slice(&data);
        }
        Ok(())
    };
    match tokio::time::timeout(BODY_TIMEOUT, read).await {
        Ok(Ok(())) => Ok((bytes.freeze(), held)),
        Ok(Err(refused)) => Err(refused),
        Err(_) => Err((
            Refusal::TooLarge,
            error(
                StatusCode::REQUEST_TIMEOUT,
                "timeout",
                "the request body took too long",
            ),
        )),
    }
}

/// `503 busy`: the bodies being read and ingested take `max` bytes, the
/// relay's `--max-inflight-bytes`.
fn busy(max: usize) -> Response {
    let mut response = json_response(
        StatusCode::SERVICE_UNAVAILABLE,
        json!({"error": "busy", "detail": format!("the relay is reading {max} bytes of other requests, its --max-inflight-bytes; retry shortly")}),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> HeaderValue {
        HeaderValue::from_str(text).unwrap()
    }

    #[test]
    fn a_tokenless_relay_answers_ip_literals_and_localhost_only() {
        for host in [
            "localhost",
            "LOCALHOST:80",
            "localhost.",
            "127.0.0.1:8787",
            "10.0.0.5",
            "[::1]",
            "[::1]:8787",
        ] {
            assert!(host_allowed_without_token(&v(host)), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:8787",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "[::1",
            ":8787",
            "",
        ] {
            assert!(!host_allowed_without_token(&v(host)), "{host}");
        }
    }

    #[test]
    fn loopback_origins_and_the_relays_own() {
        for origin in [
            "http://localhost:5173",
            "https://127.0.0.2",
            "http://[::1]:9",
        ] {
            assert!(origin_is_loopback(&v(origin)), "{origin}");
        }
        for origin in [
            "https://evil.example",
            "null",
            "http://localhost.evil",
            "http://10.0.0.5",
        ] {
            assert!(!origin_is_loopback(&v(origin)), "{origin}");
        }
        let host = v("10.0.0.5:8787");
        assert!(same_origin(&v("http://10.0.0.5:8787"), Some(&host)));
        assert!(!same_origin(&v("http://10.0.0.5:9999"), Some(&host)));
        assert!(!same_origin(&v("http://10.0.0.5:8787"), None));
    }
}
