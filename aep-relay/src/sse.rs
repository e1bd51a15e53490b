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

use crate::budget::Share;
use crate::fanout::{bounded, Inbox, Outbox, Taken};
use crate::http::{error, App, Params};
use crate::hub::{From, Hub, Replay, ReplayItem, Request};
use crate::metrics::Refusal;
use crate::stored::Stored;
use crate::subscribe;

/// Bytes gathered into one chunk of the response body, at most: smaller
/// deliveries are gathered into chunks up to this size, a larger one is
/// handed on alone (see [`counted`]).
pub(crate) const CHUNK: usize = 16 * 1024;

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
    let chunks = Chunks::new(replay, hub.clone(), !live);
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
            next: None,
        };
        Body::from_stream(live_stream(state))
    } else {
        drop(outbox);
        Body::from_stream(stream::iter(chunks.map(Ok::<_, std::io::Error>)))
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

/// What ends a stream cut off at its queue's bound or the relay's
/// (AEP-0003 §8.4): the consumer resumes from its position.
const CUT_OFF: &[u8] = b": disconnected: backpressure, resume from your last id\n\n";

/// An event's SSE message handed to the HTTP layer whole, without a
/// copy, and counted in the relay's budget for all queues for as long as
/// the layer holds any of it: the bytes own the event's [`Share`], so the
/// layer never keeps a large event alive uncounted, however long its
/// peer takes to read it.
fn counted(share: Share<Stored>) -> Bytes {
    struct Counted {
        frame: Bytes,
        _share: Share<Stored>,
    }
    impl AsRef<[u8]> for Counted {
        fn as_ref(&self) -> &[u8] {
            &self.frame
        }
    }
    let frame = share.item().sse();
    Bytes::from_owner(Counted {
        frame,
        _share: share,
    })
}

/// The replay as body chunks of at most about [`CHUNK`] bytes, rendered
/// one at a time as the response is written; an event larger than that
/// goes alone (see [`counted`]), counted in the relay's budget for all
/// queues while it is written: the buffer may let it go meanwhile. Past
/// twice that budget the replay ends as a consumer cut off does.
struct Chunks {
    replay: Replay,
    /// Its budget for all queues counts a large event while it is
    /// written.
    hub: Arc<Hub>,
    /// End with `: replay-complete` (a `live=0` read).
    complete: bool,
    /// The replay has no more items.
    drained: bool,
    /// The stream ends here: the replay is done, or was cut off.
    done: bool,
    /// Cut off at the budget.
    cut: bool,
    /// An item taken that did not fit into the last chunk.
    next: Option<ReplayItem>,
    /// A large event taken (counted) after the last chunk was made.
    large: Option<Share<Stored>>,
}

impl Chunks {
    fn new(replay: Replay, hub: Arc<Hub>, complete: bool) -> Chunks {
        Chunks {
            replay,
            hub,
            complete,
            drained: false,
            done: false,
            cut: false,
            next: None,
            large: None,
        }
    }
}

impl Iterator for Chunks {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        if let Some(share) = self.large.take() {
            return Some(counted(share));
        }
        let mut chunk = BytesMut::new();
        while chunk.len() < CHUNK {
            let Some(item) = self.next.take().or_else(|| self.replay.next()) else {
                self.drained = true;
                break;
            };
            let stored = match item {
                ReplayItem::Event(stored) if stored.sse().len() > CHUNK => stored,
                ReplayItem::Event(stored)
                    if !chunk.is_empty() && chunk.len() + stored.sse().len() > CHUNK =>
                {
                    // Into the next chunk: this one stays within CHUNK.
                    self.next = Some(ReplayItem::Event(stored));
                    break;
                }
                item => {
                    render(&mut chunk, item);
                    continue;
                }
            };
            // Counted from the moment it is taken from the replay.
            let queued = &self.hub.metrics.queued;
            let Some(share) = Share::take(&stored, queued, queued.max().saturating_mul(2)) else {
                self.cut = true;
                self.done = true;
                self.hub.metrics.disconnected_backpressure.inc();
                chunk.put_slice(CUT_OFF);
                return Some(chunk.freeze());
            };
            if chunk.is_empty() {
                return Some(counted(share));
            }
            self.large = Some(share);
            break;
        }
        if self.drained {
            self.done = true;
            if self.complete {
                chunk.put_slice(b": replay-complete\n\n");
            }
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
    /// A delivery taken that did not fit into the last chunk.
    next: Option<Taken>,
}

/// The live body. What the HTTP layer holds of it is at most its write
/// buffer's worth of chunks, each a copy of at most [`CHUNK`] bytes or a
/// lone delivery no larger, and deliveries larger than that, each
/// counted while the layer holds it (see [`counted`]).
fn live_stream(state: Live) -> impl Stream<Item = Result<Bytes, std::io::Error>> {
    stream::unfold(state, |mut s| async move {
        if s.done {
            return None;
        }
        if let Some(chunk) = s.replay.next() {
            s.done = s.replay.cut;
            return Some((Ok(chunk), s));
        }
        let delivery = match s.next.take() {
            Some(taken) => Some(taken),
            None => tokio::select! {
                biased;
                _ = s.shutdown.cancelled() => {
                    s.done = true;
                    return Some((Ok(Bytes::from_static(b": shutting-down\n\n")), s));
                }
                delivery = s.inbox.recv() => delivery,
                _ = s.ping.tick() => {
                    return Some((Ok(Bytes::from_static(b": ping\n\n")), s));
                }
            },
        };
        let chunk = match delivery {
            Some(taken) if !s.inbox.overflowed.load(Ordering::Acquire) => s.chunk(taken),
            _ => {
                // Cut off at the hard bound (AEP-0003 §8.4).
                s.done = true;
                s._guard.hub.metrics.disconnected_backpressure.inc();
                Bytes::from_static(CUT_OFF)
            }
        };
        Some((Ok(chunk), s))
    })
}

impl Live {
    /// The chunk that begins with `first`: it and the deliveries waiting
    /// behind it that fit within [`CHUNK`], or a delivery larger than
    /// that alone.
    fn chunk(&mut self, first: Taken) -> Bytes {
        let frame = first.stored.sse();
        if frame.len() > CHUNK {
            return counted(first.into_share());
        }
        let mut size = frame.len();
        let mut more = Vec::new();
        while size < CHUNK {
            let Some(taken) = self.inbox.try_recv() else {
                break;
            };
            let len = taken.stored.sse().len();
            if size + len > CHUNK {
                self.next = Some(taken);
                break;
            }
            size += len;
            more.push(taken);
        }
        if more.is_empty() {
            // One delivery: its bytes as they are, not a copy.
            return frame;
        }
        let mut chunk = BytesMut::with_capacity(size);
        chunk.put_slice(&frame);
        for taken in &more {
            chunk.put_slice(&taken.stored.sse());
        }
        chunk.freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::Budget;

    #[test]
    fn a_counted_message_stays_counted_while_any_of_its_bytes_live() {
        let json = r#"{"aep":"0.1","id":"e","type":"progress.status","time":"2026-12-06T09:00:00Z","source":"urn:a","agent":"a","session":"s","seq":0}"#;
        let stored = Arc::new(Stored::new(
            &aep::Event::from_json(json).unwrap(),
            json.as_bytes(),
        ));
        let budget = Budget::new(1 << 20);
        let share = Share::take(&stored, &budget, 1 << 20).unwrap();
        let bytes = counted(share);
        assert_eq!(bytes, stored.sse(), "the message, not a copy of part of it");
        assert_eq!(budget.held(), stored.size());
        // What a writer keeps of it after writing some: still counted.
        let rest = bytes.slice(10..);
        drop(bytes);
        assert_eq!(budget.held(), stored.size());
        drop(rest);
        assert_eq!(budget.held(), 0);
    }
}
