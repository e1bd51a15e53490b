//! The subscription's task: connect with the resume plan, read what the
//! relay holds beyond the budget with `live=0` requests, read the
//! connection, and reconnect with backoff when it drops.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep::frame::ErrorCode;
use aep::Event;
use tokio::sync::mpsc;

use super::dedupe::Dedupe;
use super::positions::Positions;
use super::sse::{self, From, SseConn};
use super::ws::{self, WsConn};
use super::{Binding, Delivered, Item, Notice, Position, Raw, Settings};
use crate::backoff::Backoff;
use crate::error::{excerpt, Error};

type Tx = mpsc::Sender<Result<Item, Error>>;

enum Conn {
    Sse(SseConn),
    Ws(WsConn),
}

impl Conn {
    async fn next(&mut self) -> Raw {
        match self {
            Conn::Sse(c) => c.next().await,
            Conn::Ws(c) => c.next().await,
        }
    }
}

/// What to do after one connection.
enum Step {
    /// The caller left, or the stream ended (history done, a final error).
    Stop,
    /// Connect again now (the plan changed).
    Again,
    /// Connect again after the backoff.
    Later(Error),
}

struct Driver {
    settings: Settings,
    positions: Arc<Mutex<Positions>>,
    tx: Tx,
    client: reqwest::Client,
    dedupe: Dedupe,
    backoff: Backoff,
    budget: usize,
    pending_all: bool,
    last_event_id: Option<String>,
    connected_once: bool,
}

pub(crate) async fn run(settings: Settings, positions: Arc<Mutex<Positions>>, tx: Tx) {
    let client = match reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
    {
        Ok(client) => client,
        Err(e) => {
            let _ = tx.send(Err(Error::from(e))).await;
            return;
        }
    };
    let mut driver = Driver {
        dedupe: Dedupe::new(settings.dedupe),
        backoff: Backoff::new(settings.backoff.0, settings.backoff.1),
        budget: settings.budget,
        pending_all: settings.replay_all,
        settings,
        positions,
        tx,
        client,
        last_event_id: None,
        connected_once: false,
    };
    loop {
        match driver.connection().await {
            Step::Stop => return,
            Step::Again => tokio::time::sleep(Duration::from_millis(20)).await,
            Step::Later(error) => {
                if !driver.notice(Notice::Disconnected(error)).await {
                    return;
                }
                tokio::time::sleep(driver.backoff.next_wait()).await;
            }
        }
    }
}

impl Driver {
    async fn notice(&self, notice: Notice) -> bool {
        self.tx.send(Ok(Item::Notice(notice))).await.is_ok()
    }

    /// The start of the next live request and the positions left for
    /// history reads.
    fn plan(&self) -> (From, Vec<Position>) {
        let positions = self.positions.lock().unwrap_or_else(|e| e.into_inner());
        if self.pending_all && positions.is_empty() {
            return (From::All, Vec::new());
        }
        let (head, rest) = positions.split(self.budget);
        let from = if head.is_empty() {
            From::Nothing
        } else {
            From::Positions(head)
        };
        (from, rest)
    }

    async fn open(&self, from: &From, live: bool) -> Result<Conn, Error> {
        match self.settings.binding {
            Binding::WebSocket if live => Ok(Conn::Ws(ws::open(&self.settings, from).await?)),
            _ => {
                let last = if live {
                    self.last_event_id.as_deref()
                } else {
                    None
                };
                let conn = sse::open(&self.client, &self.settings, from, live, last).await?;
                Ok(Conn::Sse(conn))
            }
        }
    }

    /// One connection, from plan to drop.
    async fn connection(&mut self) -> Step {
        let (from, rest) = self.plan();
        let resumed = match &from {
            From::Positions(p) => p.len(),
            _ => 0,
        };
        let mut conn = match self.open(&from, self.settings.live).await {
            Ok(conn) => conn,
            Err(error) => return self.refused(error, &from).await,
        };
        self.backoff.reset();
        if matches!(from, From::All) {
            self.pending_all = false;
        }
        let notice = if self.connected_once {
            Notice::Reconnected { resumed }
        } else {
            Notice::Connected { resumed }
        };
        self.connected_once = true;
        if !self.notice(notice).await || !self.backfill(rest).await {
            return Step::Stop;
        }
        loop {
            match conn.next().await {
                Raw::End(error) => return Step::Later(error),
                Raw::Complete if !self.settings.live => {
                    let _ = self.notice(Notice::ReplayComplete).await;
                    return Step::Stop;
                }
                raw => {
                    if !self.take(raw).await {
                        return Step::Stop;
                    }
                }
            }
        }
    }

    /// What a failed open means.
    async fn refused(&mut self, error: Error, from: &From) -> Step {
        let shrinkable = match &error {
            Error::Http { status, .. } => {
                (400..500).contains(status) && !matches!(status, 401 | 403)
            }
            Error::Refused { code, .. } => {
                matches!(code, ErrorCode::LimitExceeded | ErrorCode::InvalidFilter)
            }
            _ => false,
        };
        let fatal = matches!(
            &error,
            Error::Http {
                status: 401 | 403,
                ..
            } | Error::Invalid(_)
                | Error::Refused { .. }
        );
        if shrinkable {
            match from {
                From::All => {
                    self.pending_all = false;
                    let said = format!("the relay refused from=all ({error}); following live");
                    return if self.notice(Notice::Degraded(said)).await {
                        Step::Again
                    } else {
                        Step::Stop
                    };
                }
                From::Positions(sent) if !sent.is_empty() => {
                    self.budget = sent.len() / 2;
                    let budget = self.budget;
                    return if self.notice(Notice::BudgetShrunk { budget }).await {
                        Step::Again
                    } else {
                        Step::Stop
                    };
                }
                _ => {}
            }
        }
        if fatal || shrinkable {
            let _ = self.tx.send(Err(error)).await;
            return Step::Stop;
        }
        Step::Later(error)
    }

    /// Reads what the relay holds after `rest` with `live=0` requests of
    /// at most the budget each (halved when refused). `false` when the
    /// caller left.
    async fn backfill(&mut self, mut rest: Vec<Position>) -> bool {
        let mut size = self.budget.max(1);
        while !rest.is_empty() {
            let chunk: Vec<Position> = rest.drain(..size.min(rest.len())).collect();
            let count = chunk.len();
            let from = From::Positions(chunk);
            let mut conn = match sse::open(&self.client, &self.settings, &from, false, None).await {
                Ok(conn) => conn,
                Err(Error::Http { status, .. })
                    if count > 1
                        && (400..500).contains(&status)
                        && !matches!(status, 401 | 403) =>
                {
                    size = count / 2;
                    self.budget = self.budget.min(size);
                    if let From::Positions(chunk) = from {
                        rest.splice(0..0, chunk);
                    }
                    continue;
                }
                Err(error) => {
                    let said = format!("{count} sessions were not read back: {error}");
                    if !self.notice(Notice::Degraded(said)).await {
                        return false;
                    }
                    continue;
                }
            };
            loop {
                match conn.next().await {
                    Raw::Complete => break,
                    Raw::End(error) => {
                        let said =
                            format!("a history read of {count} sessions ended early: {error}");
                        if !self.notice(Notice::Degraded(said)).await {
                            return false;
                        }
                        break;
                    }
                    raw => {
                        if !self.take(raw).await {
                            return false;
                        }
                    }
                }
            }
        }
        true
    }

    /// Passes one item on; `false` when the caller left.
    async fn take(&mut self, raw: Raw) -> bool {
        let item = match raw {
            Raw::Event(line, id) => {
                if id.is_some() {
                    self.last_event_id = id;
                }
                match self.accept(line) {
                    Some(item) => item,
                    None => return true,
                }
            }
            Raw::Exhausted(earliest) => Item::Notice(Notice::ReplayExhausted {
                session: earliest.session.clone(),
                earliest,
            }),
            Raw::Skipped(reason, excerpt) => Item::Notice(Notice::Skipped { reason, excerpt }),
            Raw::Complete | Raw::End(_) => return true,
        };
        self.tx.send(Ok(item)).await.is_ok()
    }

    /// An event line through decoding, the filter, dedupe and the ceiling.
    fn accept(&mut self, line: String) -> Option<Item> {
        if line.len() > self.settings.max_event_bytes {
            return Some(skipped(
                format!(
                    "an event longer than {} bytes",
                    self.settings.max_event_bytes
                ),
                &line,
            ));
        }
        let event = match Event::from_json(&line) {
            Ok(event) => event,
            Err(error) => return Some(skipped(format!("not an AEP 0.1 event: {error}"), &line)),
        };
        if !self.settings.filter.matches(&event) || self.dedupe.seen(&event.source, &event.id) {
            return None;
        }
        if let Some(ceiling) = self.settings.capture {
            if event.capture_or_default() > ceiling {
                let lowered = event.down_level(ceiling);
                return match serde_json::to_string(&lowered) {
                    Ok(line) => Some(Item::Event(Delivered {
                        event: lowered,
                        line,
                    })),
                    Err(error) => Some(skipped(format!("cannot down-level: {error}"), &line)),
                };
            }
        }
        Some(Item::Event(Delivered { event, line }))
    }
}

fn skipped(reason: String, line: &str) -> Item {
    Item::Notice(Notice::Skipped {
        reason,
        excerpt: excerpt(line, 256),
    })
}
