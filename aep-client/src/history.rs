//! A session's buffered history from a relay: one `live=0` SSE read
//! (AEP-0003 §5), the stream ending after the replay.

use std::time::Duration;

use crate::error::Error;

/// What a history read gives: the events' lines, in the relay's order,
/// and whether the relay said part of the session was evicted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    /// Each event's JSON text.
    pub events: Vec<String>,
    /// The `replay-exhausted` comments seen (the session's early history
    /// is no longer held).
    pub exhausted: Vec<String>,
}

/// Reads the buffered history of `session` (`GET /stream?live=0`, the
/// filter naming the session), at most `limit` bytes of response.
pub async fn history(
    relay: &str,
    token: Option<&str>,
    session: &str,
    limit: usize,
) -> Result<History, Error> {
    let filter = serde_json::json!({ "session": session }).to_string();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let mut request = client
        .get(format!("{}/stream", relay.trim_end_matches('/')))
        .query(&[("live", "0"), ("filter", filter.as_str())]);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let mut response = request.send().await?;
    let status = response.status().as_u16();
    if status != 200 {
        let body = response.text().await.unwrap_or_default();
        return Err(Error::Http {
            status,
            body: body.chars().take(4096).collect(),
        });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > limit {
            return Err(Error::Protocol(format!(
                "the history of {session} is larger than {limit} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    let text =
        String::from_utf8(body).map_err(|_| Error::Protocol("the stream is not UTF-8".into()))?;
    Ok(parse(&text))
}

/// Splits an SSE body into its events' data and its exhaustion comments.
pub(crate) fn parse(text: &str) -> History {
    let mut history = History::default();
    for line in text.lines() {
        if let Some(data) = line.strip_prefix("data:") {
            history
                .events
                .push(data.strip_prefix(' ').unwrap_or(data).to_owned());
        } else if let Some(comment) = line.strip_prefix(':') {
            let comment = comment.trim();
            if comment.starts_with("replay-exhausted") {
                history.exhausted.push(comment.to_owned());
            }
        }
    }
    history
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_events_and_markers() {
        let body = ": replay-exhausted s 0:5\n\nevent: a.b\ndata: {\"x\":1}\nid: s:0:5\n\nevent: a.c\ndata:{}\n\n: replay-complete\n\n";
        let h = parse(body);
        assert_eq!(h.events, ["{\"x\":1}", "{}"]);
        assert_eq!(h.exhausted, ["replay-exhausted s 0:5"]);
    }
}
