//! `GET /stream`: the SSE binding (AEP-0003 §3.3). The replay (with its
//! `replay-exhausted` comments) comes first, then live events; `live=0`
//! ends after the replay with `: replay-complete`. Each message is the
//! event's shared SSE frame; `: ping` keeps the stream warm.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use aep::frame::ErrorCode;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::{BufMut, BytesMut};
use futures_util::stream::{self, Stream};
use serde_json::Value;
use tokio::time::{interval_at, Instant, Interval, MissedTickBehavior};

use crate::fanout::{bounded, Inbox, Outbox, Taken};
use crate::http::{error, App, Params};
use crate::hub::{From, Hub, Replay, ReplayItem, Request};
use crate::metrics::Refusal;
use crate::subscribe;

/// Bytes gathered into one chunk of the response body.
const CHUNK: usize = 64 * 1024;

pub(crate) async fn stream(State(app): State<App>, headers: HeaderMap, params: Params) -> Response {
    let params = params.0;
    if !app.authorized(&headers, &params) {
        return app.unauthorized();
    }
    let hub = &app.hub;
    let refuse = |r: subscribe::Refusal| {
        hub.metrics.refuse(if r.code == ErrorCode::LimitExceeded {
            Refusal::Limit
        } else {
            Refusal::InvalidFilter
        });
        error(StatusCode::BAD_REQUEST, r.code.as_str(), &r.detail)
    };
    let filter_json = match params
        .get("filter")
        .map(|f| serde_json::from_str::<Value>(f))
    {
        None => None,
        Some(Ok(value)) => Some(value),
        Some(Err(e)) => {
            return refuse(subscribe::Refusal {
                code: ErrorCode::InvalidFilter,
                detail: format!("filter is not JSON: {e}"),
            })
        }
    };
    let filter = match subscribe::filter(filter_json.as_ref()) {
        Ok(f) => f,
        Err(r) => return refuse(r),
    };
    let ceiling = match subscribe::ceiling(params.get("capture").map(String::as_str)) {
        Ok(c) => c,
        Err(r) => return refuse(r),
    };
    let from_json = match params.get("from").map(String::as_str) {
        None => None,
        Some("all") => Some(Value::String("all".into())),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(v) => Some(v),
            Err(e) => {
                return refuse(subscribe::Refusal {
                    code: ErrorCode::InvalidFilter,
                    detail: format!("from is not JSON: {e}"),
                })
            }
        },
    };
    let mut from = match subscribe::from(from_json.as_ref(), hub.config.max_positions()) {
        Ok(f) => f,
        Err(r) => return refuse(r),
    };
    if from.is_none() {
        if let Some(value) = headers.get("last-event-id").filter(|v| !v.is_empty()) {
            // Every `id:` this relay sends parses back; anything else is
            // refused rather than taken as "live from now", which would
            // lose what the consumer missed without a word.
            // The id is sent as raw UTF-8 (a session may be non-ASCII).
            match std::str::from_utf8(value.as_bytes())
                .ok()
                .and_then(subscribe::last_event_id)
            {
                Some(position) => from = Some(From::Positions(vec![position])),
                None => {
                    return refuse(subscribe::Refusal {
                        code: ErrorCode::InvalidFilter,
                        detail:
                            "Last-Event-ID is not a position this relay sent (SESSION:EPOCH:SEQ)"
                                .into(),
                    })
                }
            }
        }
    }
    let live = params.get("live").map(String::as_str) != Some("0");
    let history = (!live)
        .then(|| subscribe::named_session(filter_json.as_ref()))
        .flatten();

    let (outbox, inbox) = bounded(
        hub.config.queue_soft,
        hub.config.queue_hard,
        hub.config.max_batch,
        hub.config.queue_bytes,
        &hub.metrics.queued,
    );
    let id = hub.next_id();
    let replay = hub.subscribe(Request {
        filter,
        ceiling,
        from,
        history,
        live: live.then(|| (id, outbox.clone())),
    });
    let chunks = Chunks {
        replay,
        done: false,
    };
    let body = if live {
        hub.metrics.sse.inc();
        let state = Live {
            replay: chunks,
            inbox,
            ping: ticker(app.hub.config.ping_interval),
            shutdown: app.shutdown.clone(),
            _guard: Guard {
                hub: app.hub.clone(),
                outbox,
            },
            done: false,
            writing: Vec::new(),
        };
        Body::from_stream(live_stream(state))
    } else {
        drop(outbox);
        let complete = Bytes::from_static(b": replay-complete\n\n");
        Body::from_stream(stream::iter(
            chunks
                .chain(std::iter::once(complete))
                .map(Ok::<_, std::io::Error>),
        ))
    };
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
            (header::HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        body,
    )
        .into_response()
}

/// The replay as body chunks of about [`CHUNK`] bytes, rendered one at a
/// time as the response is written.
struct Chunks {
    replay: Replay,
    done: bool,
}

impl Iterator for Chunks {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        let mut chunk = BytesMut::new();
        while chunk.len() < CHUNK {
            let Some(item) = self.replay.next() else {
                self.done = true;
                break;
            };
            render(&mut chunk, item);
        }
        (!chunk.is_empty()).then(|| chunk.freeze())
    }
}

/// Appends one replay item to `chunk`.
fn render(chunk: &mut BytesMut, item: ReplayItem) {
    match item {
        ReplayItem::Exhausted { session, earliest } => chunk.put_slice(
            format!(
                ": replay-exhausted {} {}:{}\n\n",
                comment_safe(&session),
                earliest.epoch,
                earliest.seq
            )
            .as_bytes(),
        ),
        ReplayItem::Event(stored) => chunk.put_slice(&stored.sse()),
    }
}

/// A session id as it can stand in a comment line: as is when it is one
/// token, JSON-quoted when it holds whitespace or control characters.
pub(crate) fn comment_safe(session: &str) -> String {
    if session.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Value::String(session.to_owned()).to_string()
    } else {
        session.to_owned()
    }
}

fn ticker(period: std::time::Duration) -> Interval {
    let mut ticker = interval_at(Instant::now() + period, period);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    ticker
}

/// Ends the subscription when the response is dropped (the client left).
struct Guard {
    hub: Arc<Hub>,
    outbox: Outbox,
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.hub.unsubscribe_outbox(&self.outbox);
        self.hub.metrics.sse.dec();
    }
}

struct Live {
    replay: Chunks,
    inbox: Inbox,
    ping: Interval,
    shutdown: tokio_util::sync::CancellationToken,
    _guard: Guard,
    done: bool,
    /// The deliveries in the chunk last handed to the HTTP layer, counted
    /// in the relay's budget until it asks for the next (it has taken the
    /// last one in by then).
    writing: Vec<Taken>,
}

fn live_stream(state: Live) -> impl Stream<Item = Result<Bytes, std::io::Error>> {
    stream::unfold(state, |mut s| async move {
        s.writing.clear();
        if s.done {
            return None;
        }
        if let Some(chunk) = s.replay.next() {
            return Some((Ok(chunk), s));
        }
        let chunk = tokio::select! {
            biased;
            _ = s.shutdown.cancelled() => {
                s.done = true;
                Bytes::from_static(b": shutting-down\n\n")
            }
            delivery = s.inbox.recv() => match delivery {
                Some(taken) if !s.inbox.overflowed.load(Ordering::Acquire) => {
                    let mut size = taken.stored.sse().len();
                    s.writing.push(taken);
                    while size < CHUNK {
                        let Some(more) = s.inbox.try_recv() else { break };
                        size += more.stored.sse().len();
                        s.writing.push(more);
                    }
                    if let [one] = &s.writing[..] {
                        // One delivery: its bytes as they are, not a copy.
                        one.stored.sse()
                    } else {
                        let mut chunk = BytesMut::with_capacity(size);
                        for taken in &s.writing {
                            chunk.put_slice(&taken.stored.sse());
                        }
                        chunk.freeze()
                    }
                }
                _ => {
                    // Cut off at the hard bound (AEP-0003 §8.4): end the
                    // stream so the consumer resumes from its position.
                    s.done = true;
                    s._guard.hub.metrics.disconnected_backpressure.inc();
                    Bytes::from_static(b": disconnected: backpressure, resume from your last id\n\n")
                }
            },
            _ = s.ping.tick() => Bytes::from_static(b": ping\n\n"),
        };
        Some((Ok(chunk), s))
    })
}
