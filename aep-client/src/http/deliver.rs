//! The emitter's task: gathers batches from the outbox and delivers each,
//! splitting, dropping or retrying as the relay's answers say.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::time::Instant;

use super::batch::{BatchAnswer, BatchPoster};
use super::{HttpConfig, Rejected, Shared, KEPT_REJECTIONS};
use crate::backoff::Backoff;
use crate::outbox::{Outbox, Queued};

/// Gathers batches and delivers each before the next.
pub(super) async fn run(mut poster: Poster, outbox: Outbox) {
    while let Some(first) = outbox.pop().await {
        poster.shared.in_flight.fetch_add(1, Ordering::Relaxed);
        if poster.past_deadline() {
            // Closing and out of time: what is left stays undelivered.
            break;
        }
        let mut bytes = first.line.len();
        let mut batch = vec![first];
        let until = Instant::now() + poster.config.batch_wait;
        while batch.len() < poster.max_events && bytes < poster.config.batch_bytes {
            match tokio::time::timeout_at(until, outbox.pop()).await {
                Ok(Some(item)) => {
                    poster.shared.in_flight.fetch_add(1, Ordering::Relaxed);
                    bytes += item.line.len();
                    batch.push(item);
                }
                _ => break,
            }
        }
        poster.deliver(batch).await;
    }
}

pub(super) struct Poster {
    config: HttpConfig,
    shared: Arc<Shared>,
    client: Result<BatchPoster, String>,
    backoff: Backoff,
    /// Lowered when the relay says a batch holds too many events.
    max_events: usize,
}

impl Poster {
    pub(super) fn new(config: HttpConfig, shared: Arc<Shared>) -> Poster {
        let client = BatchPoster::new(&config.relay, config.token.clone(), config.timeout)
            .map_err(|e| e.to_string());
        Poster {
            backoff: Backoff::new(config.backoff.0, config.backoff.1),
            max_events: config.batch_events.max(1),
            config,
            shared,
            client,
        }
    }

    /// Delivers `batch`, splitting it on refusals, until every line is
    /// delivered or reported (or the close deadline passes).
    async fn deliver(&mut self, batch: Vec<Queued>) {
        let mut parts: VecDeque<Vec<Queued>> = VecDeque::from([batch]);
        while let Some(mut part) = parts.pop_front() {
            loop {
                match self.post(&part).await {
                    BatchAnswer::Accepted => {
                        self.backoff.reset();
                        self.shared
                            .delivered
                            .fetch_add(part.len() as u64, Ordering::Relaxed);
                        self.shared
                            .in_flight
                            .fetch_sub(part.len(), Ordering::Relaxed);
                        break;
                    }
                    BatchAnswer::Retry(_) => {
                        if !self.pause().await {
                            return;
                        }
                        self.shared.retries.fetch_add(1, Ordering::Relaxed);
                    }
                    BatchAnswer::BadLine {
                        index: Some(index),
                        code,
                        detail,
                    } if index < part.len() => {
                        let bad = part.remove(index);
                        self.reject(bad, 400, code, detail);
                        if part.is_empty() {
                            break;
                        }
                    }
                    BatchAnswer::BadLine { code, detail, .. }
                    | BatchAnswer::TooLarge { code, detail }
                        if part.len() == 1 =>
                    {
                        let status = if code == "too-many-events" || code == "payload-too-large" {
                            413
                        } else {
                            400
                        };
                        let only = part.remove(0);
                        self.reject(only, status, code, detail);
                        break;
                    }
                    BatchAnswer::BadLine { .. } => {
                        let rest = part.split_off(part.len() / 2);
                        parts.push_front(rest);
                    }
                    BatchAnswer::TooLarge { .. } => {
                        let rest = part.split_off(part.len() / 2);
                        self.max_events = self.max_events.min(part.len()).max(1);
                        parts.push_front(rest);
                    }
                    BatchAnswer::Refused {
                        status,
                        code,
                        detail,
                    } => {
                        for line in part.drain(..) {
                            self.reject(line, status, code.clone(), detail.clone());
                        }
                        break;
                    }
                }
            }
        }
    }

    fn past_deadline(&self) -> bool {
        let deadline = *self
            .shared
            .deadline
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Waits before a retry; `false` when the close deadline has passed.
    async fn pause(&mut self) -> bool {
        let wait = self.backoff.next_wait();
        let deadline = *self
            .shared
            .deadline
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match deadline {
            Some(deadline) => {
                let now = Instant::now();
                if now >= deadline {
                    return false;
                }
                tokio::time::sleep_until((now + wait).min(deadline)).await;
                Instant::now() < deadline
            }
            None => {
                tokio::time::sleep(wait).await;
                true
            }
        }
    }

    fn reject(&self, item: Queued, status: u16, code: String, detail: String) {
        let rejected = Rejected {
            line: item.line,
            status,
            code,
            detail,
        };
        tracing::warn!(status, code = %rejected.code, detail = %rejected.detail, "the relay refused an event");
        self.shared.rejected.fetch_add(1, Ordering::Relaxed);
        self.shared.in_flight.fetch_sub(1, Ordering::Relaxed);
        if let Some(on_reject) = &self.config.on_reject {
            on_reject(&rejected);
        }
        let mut kept = self.shared.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= KEPT_REJECTIONS {
            kept.pop_front();
        }
        kept.push_back(rejected);
    }

    /// One request.
    async fn post(&self, part: &[Queued]) -> BatchAnswer {
        let client = match &self.client {
            Ok(client) => client,
            Err(e) => {
                return BatchAnswer::Refused {
                    status: 0,
                    code: "client".into(),
                    detail: e.clone(),
                }
            }
        };
        let lines: Vec<&str> = part.iter().map(|q| q.line.as_str()).collect();
        self.shared.requests.fetch_add(1, Ordering::Relaxed);
        let answer = client.post(&lines).await;
        if let BatchAnswer::Retry(why) = &answer {
            tracing::debug!(error = %why, "POST /events failed; retrying");
        }
        answer
    }
}
