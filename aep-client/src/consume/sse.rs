//! The SSE binding's client side (AEP-0003 §3.3): the request (`filter`,
//! `capture`, `from`, `live=0`, `Last-Event-ID`) and an incremental,
//! bounded parser of the `text/event-stream` body.

use std::collections::VecDeque;
use std::time::Duration;

use aep::frame::{self, Resume};
use serde_json::Value;

use super::{Position, Raw, Settings};
use crate::error::{excerpt, Error};

/// Where a request starts.
#[derive(Debug, Clone)]
pub(crate) enum From {
    /// No resume: live only (or the filter's session for a history read).
    Nothing,
    /// After these positions.
    Positions(Vec<Position>),
    /// Every held session from its earliest position.
    All,
}

impl From {
    /// The `subscribe` frame's `from`, if any.
    pub fn resume(&self) -> Option<Resume> {
        match self {
            From::Nothing => None,
            From::Positions(p) if p.is_empty() => None,
            From::Positions(p) => Some(Resume::Positions(
                p.iter()
                    .map(|p| frame::Position {
                        session: p.session.clone(),
                        epoch: Some(p.epoch),
                        seq: Some(frame::Seq::Seen(p.seq)),
                    })
                    .collect(),
            )),
            From::All => Some(Resume::All),
        }
    }

    /// The `from` query parameter, if any (the same JSON).
    pub fn to_json(&self) -> Option<Value> {
        self.resume().and_then(|r| serde_json::to_value(r).ok())
    }
}

/// An open SSE response.
pub(crate) struct SseConn {
    response: reqwest::Response,
    parser: Parser,
    idle: Duration,
    ended: bool,
}

/// `GET {relay}/stream` with the subscription's parameters.
pub(crate) async fn open(
    client: &reqwest::Client,
    settings: &Settings,
    from: &From,
    live: bool,
    last_event_id: Option<&str>,
) -> Result<SseConn, Error> {
    let mut query: Vec<(&str, String)> = Vec::new();
    if let Some(filter) = &settings.filter_json {
        query.push(("filter", filter.to_string()));
    }
    if let Some(capture) = settings.capture {
        query.push(("capture", capture.as_str().to_owned()));
    }
    if let Some(from) = from.to_json() {
        let text = match from {
            Value::String(s) => s,
            other => other.to_string(),
        };
        query.push(("from", text));
    }
    if !live {
        query.push(("live", "0".into()));
    }
    let url = format!("{}/stream", settings.relay.trim_end_matches('/'));
    let mut request = client
        .get(url)
        .query(&query)
        .header("Accept", "text/event-stream");
    if let Some(token) = &settings.token {
        request = request.bearer_auth(token);
    }
    if let Some(id) = last_event_id {
        request = request.header("Last-Event-ID", id);
    }
    let mut response = tokio::time::timeout(Duration::from_secs(30), request.send())
        .await
        .map_err(|_| Error::Timeout)??;
    let status = response.status().as_u16();
    if status != 200 {
        let mut body = Vec::new();
        while let Ok(Ok(Some(chunk))) =
            tokio::time::timeout(Duration::from_secs(5), response.chunk()).await
        {
            body.extend_from_slice(&chunk[..chunk.len().min(4096 - body.len().min(4096))]);
            if body.len() >= 4096 {
                break;
            }
        }
        return Err(Error::Http {
            status,
            body: excerpt(&String::from_utf8_lossy(&body), 4096),
        });
    }
    Ok(SseConn {
        response,
        parser: Parser::new(settings.max_event_bytes),
        idle: settings.idle_timeout,
        ended: false,
    })
}

impl SseConn {
    /// The next item of the stream; [`Raw::End`] once it is over.
    pub async fn next(&mut self) -> Raw {
        loop {
            if let Some(item) = self.parser.items.pop_front() {
                return item;
            }
            if self.ended {
                return Raw::End(Error::Closed);
            }
            match tokio::time::timeout(self.idle, self.response.chunk()).await {
                Err(_) => {
                    self.ended = true;
                    return Raw::End(Error::Protocol(format!(
                        "the stream was silent for {} s",
                        self.idle.as_secs()
                    )));
                }
                Ok(Err(e)) => {
                    self.ended = true;
                    return Raw::End(Error::from(e));
                }
                Ok(Ok(None)) => {
                    self.ended = true;
                    self.parser.items.push_back(Raw::End(Error::Network(
                        "the relay ended the stream".into(),
                    )));
                }
                Ok(Ok(Some(chunk))) => self.parser.feed(&chunk),
            }
        }
    }
}

/// The `text/event-stream` parser: lines of at most `max` bytes (longer
/// ones are skipped whole and reported), `data:` joined, `id:` kept.
pub(crate) struct Parser {
    max: usize,
    line: Vec<u8>,
    overlong: bool,
    data: Option<String>,
    id: Option<String>,
    pub items: VecDeque<Raw>,
}

impl Parser {
    pub fn new(max: usize) -> Parser {
        Parser {
            max: max.max(1024),
            line: Vec::new(),
            overlong: false,
            data: None,
            id: None,
            items: VecDeque::new(),
        }
    }

    pub fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (part, rest, complete) = match bytes.iter().position(|b| *b == b'\n') {
                Some(at) => (&bytes[..at], &bytes[at + 1..], true),
                None => (bytes, &[][..], false),
            };
            bytes = rest;
            if !self.overlong {
                if self.line.len() + part.len() > self.max {
                    self.overlong = true;
                    self.line.clear();
                } else {
                    self.line.extend_from_slice(part);
                }
            }
            if complete {
                if std::mem::take(&mut self.overlong) {
                    self.data = None;
                    self.items.push_back(Raw::Skipped(
                        format!("a stream line longer than {} bytes", self.max),
                        String::new(),
                    ));
                } else {
                    let mut line = std::mem::take(&mut self.line);
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    self.line_done(&line);
                }
            }
        }
    }

    fn line_done(&mut self, line: &[u8]) {
        let Ok(line) = std::str::from_utf8(line) else {
            self.data = None;
            self.items.push_back(Raw::Skipped(
                "a stream line that is not UTF-8".into(),
                String::new(),
            ));
            return;
        };
        if line.is_empty() {
            if let Some(data) = self.data.take() {
                self.items.push_back(Raw::Event(data, self.id.clone()));
            }
            return;
        }
        if let Some(comment) = line.strip_prefix(':') {
            self.comment(comment.trim());
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                let data = self.data.get_or_insert_with(String::new);
                if data.len() + value.len() + 1 > self.max {
                    self.data = None;
                    self.items.push_back(Raw::Skipped(
                        format!("an event longer than {} bytes", self.max),
                        String::new(),
                    ));
                    return;
                }
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(value);
            }
            "id" if !value.contains('\0') => self.id = Some(value.to_owned()),
            _ => {}
        }
    }

    fn comment(&mut self, comment: &str) {
        if let Some(rest) = comment.strip_prefix("replay-exhausted ") {
            match exhausted(rest) {
                Some(position) => self.items.push_back(Raw::Exhausted(position)),
                None => self.items.push_back(Raw::Skipped(
                    "a replay-exhausted comment that does not parse".into(),
                    excerpt(comment, 256),
                )),
            }
        } else if comment == "replay-complete" {
            self.items.push_back(Raw::Complete);
        }
    }
}

/// `{session} {epoch}:{seq}`; a session holding whitespace comes
/// JSON-quoted.
fn exhausted(rest: &str) -> Option<Position> {
    let (session, at) = rest.trim().rsplit_once(' ')?;
    let (epoch, seq) = at.split_once(':')?;
    let session = if session.starts_with('"') {
        serde_json::from_str::<String>(session).ok()?
    } else {
        session.to_owned()
    };
    (!session.is_empty()).then_some(())?;
    Some(Position::new(
        session,
        epoch.parse().ok()?,
        seq.parse().ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&[u8]], max: usize) -> Vec<Raw> {
        let mut p = Parser::new(max);
        for c in chunks {
            p.feed(c);
        }
        p.items.into_iter().collect()
    }

    #[test]
    fn events_comments_and_ids_across_chunks() {
        let items = parse(
            &[b": ping\n\n: replay-exhausted s 1:", b"5\n\nevent: a.b\nda", b"ta: {\"x\":1}\r\nid: s:1:5\n\n: replay-exhausted \"a b\" 0:0\n: replay-complete\n"],
            1024,
        );
        assert_eq!(
            items,
            [
                Raw::Exhausted(Position::new("s", 1, 5)),
                Raw::Event("{\"x\":1}".into(), Some("s:1:5".into())),
                Raw::Exhausted(Position::new("a b", 0, 0)),
                Raw::Complete,
            ]
        );
    }

    #[test]
    fn long_lines_and_bad_bytes_are_skipped_and_said() {
        let long = vec![b'x'; 5000];
        let items = parse(&[b"data: ", &long, b"\n\ndata: \xff\n\ndata: {}\n\n"], 1024);
        assert!(matches!(&items[0], Raw::Skipped(why, _) if why.contains("longer")));
        assert!(matches!(&items[1], Raw::Skipped(why, _) if why.contains("UTF-8")));
        assert_eq!(items[2], Raw::Event("{}".into(), None));
        assert_eq!(items.len(), 3);
    }
}
