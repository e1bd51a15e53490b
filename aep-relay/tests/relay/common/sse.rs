//! An SSE reader that splits a `text/event-stream` body into messages
//! and comments.

use std::pin::Pin;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use serde_json::Value;
use tokio::time::timeout;

use super::WAIT;

/// One SSE item: a message, or a comment-only block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    Event {
        event: Option<String>,
        data: String,
        id: Option<String>,
        /// The block as received, without its blank-line terminator.
        raw: String,
    },
    Comment(String),
}

impl SseItem {
    pub fn is_event(&self) -> bool {
        matches!(self, SseItem::Event { .. })
    }

    /// The `data:` text (panics on a comment).
    pub fn data(&self) -> &str {
        match self {
            SseItem::Event { data, .. } => data,
            SseItem::Comment(c) => panic!("a comment, not an event: {c}"),
        }
    }

    /// The `data:` text parsed.
    pub fn json(&self) -> Value {
        serde_json::from_str(self.data()).expect("data is JSON")
    }

    pub fn id(&self) -> Option<&str> {
        match self {
            SseItem::Event { id, .. } => id.as_deref(),
            SseItem::Comment(_) => None,
        }
    }

    pub fn comment(&self) -> Option<&str> {
        match self {
            SseItem::Comment(c) => Some(c),
            SseItem::Event { .. } => None,
        }
    }
}

/// The event `seq`s among `items`.
pub fn seqs(items: &[SseItem]) -> Vec<u64> {
    items
        .iter()
        .filter(|i| i.is_event())
        .filter_map(|i| i.json()["seq"].as_u64())
        .collect()
}

/// The comments among `items`.
pub fn comments(items: &[SseItem]) -> Vec<String> {
    items
        .iter()
        .filter_map(|i| i.comment().map(str::to_owned))
        .collect()
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// An SSE reader that splits the body into messages and comments.
pub struct Sse {
    body: ByteStream,
    buf: Vec<u8>,
    ended: bool,
}

impl Sse {
    pub fn new(response: reqwest::Response) -> Sse {
        Sse {
            body: Box::pin(response.bytes_stream()),
            buf: Vec::new(),
            ended: false,
        }
    }

    /// The next item, skipping `: ping`; `None` once the body ends.
    pub async fn next(&mut self) -> Option<SseItem> {
        loop {
            let item = self.next_raw().await?;
            if item.comment() != Some("ping") {
                return Some(item);
            }
        }
    }

    /// The next item, `: ping` included; `None` once the body ends.
    pub async fn next_raw(&mut self) -> Option<SseItem> {
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buf.drain(..end + 2).collect();
                let block = String::from_utf8(block[..end].to_vec()).expect("SSE is UTF-8");
                return Some(parse_block(block));
            }
            if self.ended {
                assert!(
                    self.buf.is_empty(),
                    "a partial SSE block at the end: {:?}",
                    String::from_utf8_lossy(&self.buf)
                );
                return None;
            }
            match timeout(WAIT, self.body.next()).await {
                Err(_) => panic!(
                    "no SSE item within {WAIT:?} (buffered: {:?})",
                    String::from_utf8_lossy(&self.buf)
                ),
                Ok(Some(Ok(chunk))) => self.buf.extend_from_slice(&chunk),
                Ok(Some(Err(e))) => panic!("the SSE body failed: {e}"),
                Ok(None) => self.ended = true,
            }
        }
    }

    /// The next item, which must be an event.
    pub async fn event(&mut self) -> SseItem {
        match self.next().await {
            Some(item) if item.is_event() => item,
            other => panic!("expected an SSE event, got {other:?}"),
        }
    }

    /// The next `n` events (comments in between are an error).
    pub async fn events(&mut self, n: usize) -> Vec<SseItem> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.event().await);
        }
        out
    }

    /// Every item up to the end of the body (at most 100 000).
    pub async fn read_to_end(&mut self) -> Vec<SseItem> {
        let mut out = Vec::new();
        for _ in 0..100_000 {
            match self.next().await {
                Some(item) => out.push(item),
                None => return out,
            }
        }
        panic!("the SSE body did not end");
    }

    /// Reads items until one satisfies `stop`; returns them all, that one
    /// last (at most 100 000).
    pub async fn until(&mut self, stop: impl Fn(&SseItem) -> bool) -> Vec<SseItem> {
        let mut out = Vec::new();
        for _ in 0..100_000 {
            let item = self
                .next()
                .await
                .unwrap_or_else(|| panic!("the stream ended; read {out:?}"));
            let done = stop(&item);
            out.push(item);
            if done {
                return out;
            }
        }
        panic!("no matching SSE item among 100 000");
    }
}

/// Parses one SSE block (its lines, without the blank terminator line).
pub fn parse_block(block: String) -> SseItem {
    let mut event = None;
    let mut data: Option<String> = None;
    let mut id = None;
    let mut comment = None;
    for line in block.split('\n') {
        if let Some(c) = line.strip_prefix(':') {
            comment.get_or_insert_with(|| c.strip_prefix(' ').unwrap_or(c).to_owned());
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value).to_owned();
        match field {
            "event" => event = Some(value),
            "data" => match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(&value);
                }
                None => data = Some(value),
            },
            "id" => id = Some(value),
            other => panic!("unexpected SSE field {other:?} in {block:?}"),
        }
    }
    match data {
        Some(data) => SseItem::Event {
            event,
            data,
            id,
            raw: block,
        },
        None => {
            SseItem::Comment(comment.unwrap_or_else(|| panic!("an empty SSE block: {block:?}")))
        }
    }
}
