//! A minimal HTTP/1.1 client for a relay on a loopback address: one
//! keep-alive connection per [`Conn`], posting NDJSON batches, reading
//! small JSON answers and opening SSE streams. Every wait is bounded.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use super::Error;

/// How long one request may take, connect to last byte of the answer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The relay under test: a loopback address.
#[derive(Debug, Clone)]
pub struct Target {
    /// Where it listens.
    pub addr: SocketAddr,
    host: HeaderValue,
}

impl Target {
    /// Parses `http://HOST:PORT[/]`; refuses anything but a loopback
    /// address, so the load never leaves the machine.
    pub fn parse(url: &str) -> Result<Target, Error> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| Error::new(format!("--url {url:?}: only http:// URLs are supported")))?;
        let authority = rest.trim_end_matches('/');
        if authority.contains('/') {
            return Err(Error::new(format!(
                "--url {url:?}: give the relay's root (http://HOST:PORT), not a path"
            )));
        }
        let addrs: Vec<SocketAddr> = authority
            .to_socket_addrs()
            .map_err(|e| Error::new(format!("--url {url:?}: {e}")))?
            .collect();
        let addr = addrs
            .iter()
            .copied()
            .find(|a| a.ip().is_loopback())
            .filter(|_| addrs.iter().all(|a| a.ip().is_loopback()))
            .ok_or_else(|| {
                Error::new(format!(
                    "--url {url:?}: only loopback addresses are allowed (the load stays on this machine)"
                ))
            })?;
        let host = HeaderValue::from_str(authority)
            .map_err(|e| Error::new(format!("--url {url:?}: {e}")))?;
        Ok(Target { addr, host })
    }

    /// Opens a connection.
    pub async fn connect(&self) -> Result<Conn, Error> {
        let stream = tokio::time::timeout(REQUEST_TIMEOUT, TcpStream::connect(self.addr))
            .await
            .map_err(|_| Error::new(format!("connecting to {}: timed out", self.addr)))?
            .map_err(|e| Error::new(format!("connecting to {}: {e}", self.addr)))?;
        let _ = stream.set_nodelay(true);
        let (sender, connection) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| Error::new(format!("HTTP handshake with {}: {e}", self.addr)))?;
        let driver = tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Conn {
            sender,
            host: self.host.clone(),
            _driver: Driver(driver),
        })
    }
}

/// Ends the connection's task when its owner goes.
struct Driver(JoinHandle<()>);

impl Drop for Driver {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One keep-alive connection.
pub struct Conn {
    sender: SendRequest<Full<Bytes>>,
    host: HeaderValue,
    _driver: Driver,
}

/// An open SSE response: its body, and the connection it arrives on.
pub struct Stream {
    /// The response body.
    pub body: Incoming,
    _driver: Driver,
}

impl Conn {
    fn request(&self, method: Method, path: &str, body: Bytes) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = method;
        *request.uri_mut() = path.parse().expect("the benchmark's own paths parse");
        request
            .headers_mut()
            .insert(header::HOST, self.host.clone());
        request
    }

    async fn send(
        &mut self,
        request: Request<Full<Bytes>>,
    ) -> Result<hyper::Response<Incoming>, Error> {
        let what = format!("{} {}", request.method(), request.uri());
        let sending = async {
            self.sender.ready().await?;
            self.sender.send_request(request).await
        };
        tokio::time::timeout(REQUEST_TIMEOUT, sending)
            .await
            .map_err(|_| Error::new(format!("{what}: no answer within {REQUEST_TIMEOUT:?}")))?
            .map_err(|e| Error::new(format!("{what}: {e}")))
    }

    /// Posts an NDJSON batch to `/events`; anything but `202 Accepted` is
    /// an error naming the status and the relay's answer.
    pub async fn post_events(&mut self, body: Bytes) -> Result<(), Error> {
        self.post_events_at("/events", body).await
    }

    /// [`Conn::post_events`] to `path` (`/events` with a query, such as
    /// `access_token`).
    pub async fn post_events_at(&mut self, path: &str, body: Bytes) -> Result<(), Error> {
        let mut request = self.request(Method::POST, path, body);
        let headers = request.headers_mut();
        headers.insert("aep-version", HeaderValue::from_static("0.1"));
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-ndjson"),
        );
        let response = self.send(request).await?;
        let status = response.status();
        let answer = read_all(response.into_body(), "POST /events").await?;
        if status != StatusCode::ACCEPTED {
            return Err(Error::new(format!(
                "POST {path}: {status}: {}",
                String::from_utf8_lossy(&answer[..answer.len().min(400)])
            )));
        }
        Ok(())
    }

    /// GETs `path`; anything but `200 OK` is an error.
    pub async fn get(&mut self, path: &str) -> Result<Bytes, Error> {
        let response = self
            .send(self.request(Method::GET, path, Bytes::new()))
            .await?;
        let status = response.status();
        let body = read_all(response.into_body(), path).await?;
        if status != StatusCode::OK {
            return Err(Error::new(format!("GET {path}: {status}")));
        }
        Ok(body)
    }

    /// Opens an SSE stream at `path` (waiting for the response head,
    /// which a relay may hold back until its first event).
    pub async fn stream(mut self, path: &str) -> Result<Stream, Error> {
        let mut request = self.request(Method::GET, path, Bytes::new());
        request.headers_mut().insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        let what = format!("GET {path}");
        let response = async {
            self.sender.ready().await?;
            self.sender.send_request(request).await
        }
        .await
        .map_err(|e| Error::new(format!("{what}: {e}")))?;
        if response.status() != StatusCode::OK {
            return Err(Error::new(format!("{what}: {}", response.status())));
        }
        Ok(Stream {
            body: response.into_body(),
            _driver: self._driver,
        })
    }
}

async fn read_all(body: Incoming, what: &str) -> Result<Bytes, Error> {
    tokio::time::timeout(REQUEST_TIMEOUT, body.collect())
        .await
        .map_err(|_| {
            Error::new(format!(
                "{what}: the answer did not end within {REQUEST_TIMEOUT:?}"
            ))
        })?
        .map(|collected| collected.to_bytes())
        .map_err(|e| Error::new(format!("{what}: reading the answer: {e}")))
}

/// `text` percent-encoded for a query value.
pub fn query_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_targets() {
        assert!(Target::parse("http://127.0.0.1:8787").is_ok());
        assert!(Target::parse("http://127.0.0.1:8787/").is_ok());
        assert!(Target::parse("http://[::1]:8787").is_ok());
        for bad in [
            "http://10.0.0.1:8787",
            "http://0.0.0.0:8787",
            "https://127.0.0.1:8787",
            "http://127.0.0.1:8787/events",
            "127.0.0.1:8787",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn escapes_a_filter() {
        assert_eq!(
            query_escape(r#"{"session":"a-1"}"#),
            "%7B%22session%22%3A%22a-1%22%7D"
        );
    }
}
