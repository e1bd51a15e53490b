//! The errors of every client, typed so a caller can tell a network
//! failure from a refusal: nothing a peer sends makes a client panic.

use std::fmt;
use std::sync::Arc;

use aep::frame::{ErrorCode, ErrorFrame};

/// A client error.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The relay could not be reached or the connection failed; the
    /// cause in words (connection refused, the host name does not
    /// resolve, TLS, ...), with the error it came from as the source.
    Network(Cause),
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
        code: ErrorCode,
        /// The frame's `detail`.
        detail: String,
    },
    /// The peer broke the protocol (a frame or body that makes no sense).
    Protocol(String),
    /// No answer in time.
    Timeout,
    /// A local file could not be written (the JSONL binding); the I/O
    /// error is the source.
    Io(Cause),
    /// The caller's input is unusable (a filter that fails closed, a bad
    /// URL, an event that breaks its schema); nothing was sent.
    Invalid(String),
    /// The client was closed.
    Closed,
}

/// What went wrong, in words a person can act on, and the error it came
/// from when there is one ([`Error`]'s [`source`](std::error::Error::source)).
/// Two causes are equal when their words are.
#[derive(Debug, Clone)]
pub struct Cause {
    words: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Cause {
    /// A cause that is only words.
    pub fn new(words: impl Into<String>) -> Cause {
        Cause {
            words: words.into(),
            source: None,
        }
    }

    /// A cause in `words`, from `source`.
    pub fn with_source(
        words: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Cause {
        Cause {
            words: words.into(),
            source: Some(Arc::new(source)),
        }
    }

    /// The words.
    pub fn words(&self) -> &str {
        &self.words
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Cause) -> bool {
        self.words == other.words
    }
}

impl Eq for Cause {}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.words)
    }
}

impl From<String> for Cause {
    fn from(words: String) -> Cause {
        Cause::new(words)
    }
}

impl From<&str> for Cause {
    fn from(words: &str) -> Cause {
        Cause::new(words)
    }
}

impl From<ErrorFrame> for Error {
    /// The relay's in-band refusal ([`Error::Refused`]).
    fn from(frame: ErrorFrame) -> Self {
        Error::Refused {
            code: frame.code,
            detail: frame.detail.unwrap_or_default(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Network(e) => write!(f, "{e}"),
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

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Network(cause) | Error::Io(cause) => cause
                .source
                .as_deref()
                .map(|e| e as &(dyn std::error::Error + 'static)),
            _ => None,
        }
    }
}

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
            other => Error::Network(Cause::with_source(network_cause(&other), other)),
        }
    }
}

impl From<reqwest::Error> for Error {
    fn from(e: reqwest::Error) -> Error {
        if e.is_timeout() {
            Error::Timeout
        } else {
            Error::Network(Cause::with_source(network_cause(&e), e))
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::Io(Cause::with_source(e.to_string(), e))
    }
}

/// What made a connection fail, in words: the chain of causes is walked
/// for what a person can act on (nothing listens, the name does not
/// resolve, TLS refused), else its innermost message.
pub(crate) fn network_cause(e: &(dyn std::error::Error + 'static)) -> String {
    use std::io::ErrorKind;
    let mut kind = None;
    let mut tls = None;
    let mut dns = false;
    let mut innermost = e.to_string();
    let mut current = Some(e);
    let mut depth = 0;
    while let Some(err) = current.filter(|_| depth < 16) {
        let text = err.to_string();
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            kind = kind.or(Some(io.kind()));
            // An I/O error's own source skips the error it wraps.
            if let Some(inner) = io.get_ref() {
                let inner = inner.to_string();
                if tls.is_none() && looks_like_tls(&inner) {
                    tls = Some(inner);
                }
            }
        }
        if tls.is_none() && looks_like_tls(&text) {
            tls = Some(text.clone());
        }
        dns |= text.contains("dns error") || text.contains("failed to lookup address");
        innermost = text;
        current = err.source();
        depth += 1;
    }
    if let Some(tls) = tls {
        return format!("TLS failed: {tls}");
    }
    if dns {
        return "the host name does not resolve".to_owned();
    }
    match kind {
        Some(ErrorKind::ConnectionRefused) => {
            "connection refused (nothing listens there)".to_owned()
        }
        Some(ErrorKind::TimedOut) => "the connection timed out".to_owned(),
        Some(ErrorKind::ConnectionReset) => "the connection was reset".to_owned(),
        Some(ErrorKind::ConnectionAborted) => "the connection was aborted".to_owned(),
        _ => innermost,
    }
}

fn looks_like_tls(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower.contains("certificate") || lower.contains("tls") || lower.contains("handshake")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Wrapped(
        &'static str,
        Option<Box<dyn std::error::Error + Send + Sync>>,
    );

    impl fmt::Display for Wrapped {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    #[test]
    fn a_network_failure_says_its_cause_in_words() {
        let refused = Wrapped(
            "error sending request for url (http://127.0.0.1:9/events)",
            Some(Box::new(Wrapped(
                "client error (Connect)",
                Some(Box::new(std::io::Error::from(
                    std::io::ErrorKind::ConnectionRefused,
                ))),
            ))),
        );
        assert_eq!(
            network_cause(&refused),
            "connection refused (nothing listens there)"
        );
        let dns = Wrapped(
            "error sending request",
            Some(Box::new(Wrapped(
                "dns error: failed to lookup address information",
                None,
            ))),
        );
        assert_eq!(network_cause(&dns), "the host name does not resolve");
        let tls = Wrapped(
            "error sending request",
            Some(Box::new(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "invalid peer certificate: UnknownIssuer",
            ))),
        );
        assert_eq!(
            network_cause(&tls),
            "TLS failed: invalid peer certificate: UnknownIssuer"
        );
        let other = Wrapped("outer", Some(Box::new(Wrapped("the innermost word", None))));
        assert_eq!(network_cause(&other), "the innermost word");
        assert_eq!(
            Error::Network("connection refused".into()).to_string(),
            "connection refused"
        );
    }
}
