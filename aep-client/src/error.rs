//! The errors of every client, typed so a caller can tell a network
//! failure from a refusal: nothing a peer sends makes a client panic.

use std::fmt;

/// A client error.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The relay could not be reached or the connection failed.
    Network(String),
    /// The relay answered with an HTTP error status.
    Http {
        /// The status code.
        status: u16,
        /// The response body (at most 4 KiB of it).
        body: String,
    },
    /// The relay refused a request in-band (an `error` frame).
    Refused {
        /// The frame's `code`.
        code: String,
        /// The frame's `detail`.
        detail: String,
    },
    /// The peer broke the protocol (a frame or body that makes no sense).
    Protocol(String),
    /// No answer in time.
    Timeout,
    /// A local file could not be written (the JSONL binding).
    Io(String),
    /// The caller's input is unusable (a filter that fails closed, a bad
    /// URL, an event that breaks its schema); nothing was sent.
    Invalid(String),
    /// The client was closed.
    Closed,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Network(e) => write!(f, "network: {e}"),
            Error::Http { status, body } if body.is_empty() => write!(f, "HTTP {status}"),
            Error::Http { status, body } => write!(f, "HTTP {status}: {body}"),
            Error::Refused { code, detail } if detail.is_empty() => write!(f, "refused: {code}"),
            Error::Refused { code, detail } => write!(f, "refused: {code}: {detail}"),
            Error::Protocol(e) => write!(f, "protocol: {e}"),
            Error::Timeout => f.write_str("timed out"),
            Error::Io(e) => write!(f, "i/o: {e}"),
            Error::Invalid(e) => write!(f, "invalid: {e}"),
            Error::Closed => f.write_str("the client is closed"),
        }
    }
}

impl std::error::Error for Error {}

impl From<tokio_tungstenite::tungstenite::Error> for Error {
    fn from(e: tokio_tungstenite::tungstenite::Error) -> Error {
        use tokio_tungstenite::tungstenite::Error as Ws;
        match e {
            Ws::Http(response) => {
                let status = response.status().as_u16();
                let body = response
                    .body()
                    .as_deref()
                    .map(|b| String::from_utf8_lossy(&b[..b.len().min(4096)]).into_owned())
                    .unwrap_or_default();
                Error::Http { status, body }
            }
            Ws::ConnectionClosed | Ws::AlreadyClosed => Error::Closed,
            other => Error::Network(other.to_string()),
        }
    }
}

impl From<reqwest::Error> for Error {
    fn from(e: reqwest::Error) -> Error {
        if e.is_timeout() {
            Error::Timeout
        } else {
            Error::Network(e.to_string())
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::Io(e.to_string())
    }
}

/// At most `max` bytes of `body`, cut at a character boundary, for an
/// error message.
pub(crate) fn excerpt(body: &str, max: usize) -> String {
    if body.len() <= max {
        return body.to_owned();
    }
    let mut end = max;
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &body[..end])
}
