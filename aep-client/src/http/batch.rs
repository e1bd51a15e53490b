//! One NDJSON batch posted once to `POST /events` (AEP-0003 §3.2), and
//! what the relay's answer means for it: the building block of
//! [`HttpEmitter`](super::HttpEmitter), public for callers that decide
//! themselves what to do with each answer (the `aep post` command line
//! reports a refused line by its place in a file).

use std::time::Duration;

use serde_json::Value;

use super::MAX_RESPONSE;
use crate::error::{excerpt, Error};

/// What the relay's answer to one batch means.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BatchAnswer {
    /// `2xx`: every line was taken.
    Accepted,
    /// A network failure, `408`, `429` or `5xx`: send the same lines again
    /// (the same ids, §3.2.4) after a pause. The reason, in words.
    Retry(String),
    /// `400`: the batch was refused at its first bad line. `index` is that
    /// line's 0-based place among the batch's lines, when the relay named
    /// it (`{"line": n}`).
    BadLine {
        /// The 0-based index of the bad line, if named.
        index: Option<usize>,
        /// The body's `error` code (`invalid-event`, `invalid-json`...).
        code: String,
        /// The body's `detail`, or the body itself.
        detail: String,
    },
    /// `413`: too many events or too many bytes; split the batch.
    TooLarge {
        /// The body's `error` code (`too-many-events`,
        /// `payload-too-large`).
        code: String,
        /// The body's `detail`, or the body itself.
        detail: String,
    },
    /// Any other status (`401`, `403`, `415`, `426`...): sending it again
    /// would be refused the same way.
    Refused {
        /// The HTTP status.
        status: u16,
        /// The body's `error` code, empty when it had none.
        code: String,
        /// The body's `detail`, or the body itself.
        detail: String,
    },
}

/// Posts NDJSON batches to one relay, one request per call.
#[derive(Debug, Clone)]
pub struct BatchPoster {
    client: reqwest::Client,
    url: String,
    token: Option<String>,
}

impl BatchPoster {
    /// A poster to `{relay}/events`, each request bounded by `timeout`.
    pub fn new(relay: &str, token: Option<String>, timeout: Duration) -> Result<Self, Error> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(Duration::from_secs(10).min(timeout))
            .build()?;
        Ok(BatchPoster {
            client,
            url: format!("{}/events", relay.trim_end_matches('/')),
            token,
        })
    }

    /// Posts `lines` (event lines without their line ends) as one batch.
    pub async fn post<S: AsRef<str>>(&self, lines: &[S]) -> BatchAnswer {
        self.post_counted(lines).await.0
    }

    /// As [`post`](BatchPoster::post), with, for an accepted batch, how
    /// many of its lines the relay already held (its answer's
    /// `duplicates`; `None` from a relay that does not say).
    pub async fn post_counted<S: AsRef<str>>(&self, lines: &[S]) -> (BatchAnswer, Option<u64>) {
        let mut body = String::with_capacity(lines.iter().map(|l| l.as_ref().len() + 1).sum());
        for line in lines {
            body.push_str(line.as_ref());
            body.push('\n');
        }
        let mut request = self
            .client
            .post(&self.url)
            .header("AEP-Version", "0.1")
            .header("Content-Type", "application/x-ndjson")
            .body(body);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let mut response = match request.send().await {
            Ok(response) => response,
            Err(e) => return (BatchAnswer::Retry(Error::from(e).to_string()), None),
        };
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            let text = read_limited(&mut response).await;
            let duplicates = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|body| body["duplicates"].as_u64());
            return (BatchAnswer::Accepted, duplicates);
        }
        if status == 408 || status == 429 || status >= 500 {
            return (BatchAnswer::Retry(format!("HTTP {status}")), None);
        }
        let text = read_limited(&mut response).await;
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let code = body["error"].as_str().unwrap_or_default().to_owned();
        let detail = match &body["detail"] {
            Value::String(detail) => detail.clone(),
            Value::Null => excerpt(&text, 1024),
            other => excerpt(&other.to_string(), 1024),
        };
        let answer = match status {
            400 => BatchAnswer::BadLine {
                index: body["line"].as_u64().and_then(|n| usize::try_from(n).ok()),
                code,
                detail,
            },
            413 => BatchAnswer::TooLarge { code, detail },
            _ => BatchAnswer::Refused {
                status,
                code,
                detail,
            },
        };
        (answer, None)
    }
}

/// At most [`MAX_RESPONSE`] bytes of the body, as text.
async fn read_limited(response: &mut reqwest::Response) -> String {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = MAX_RESPONSE.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= MAX_RESPONSE {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}
