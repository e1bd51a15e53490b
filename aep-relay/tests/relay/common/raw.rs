//! An SSE consumer on a bare TCP socket: it sends its request and reads
//! only when told to, so a test can make a consumer that falls behind.
//! It asks over HTTP/1.0, so the body comes unchunked and ends with the
//! connection.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

use super::{parse_block, tcp_connect, SseItem, WAIT};

/// A raw SSE consumer.
pub struct RawSse {
    stream: TcpStream,
    buf: Vec<u8>,
    head: Option<String>,
    ended: bool,
}

impl RawSse {
    /// Connects with a small receive buffer and sends `GET {target}`;
    /// reads nothing.
    pub async fn open(addr: SocketAddr, target: &str, token: Option<&str>) -> RawSse {
        let mut stream = tcp_connect(addr, Some(4096)).await;
        let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
        let request = format!(
            "GET {target} HTTP/1.0\r\nHost: {addr}\r\nAccept: text/event-stream\r\n{auth}\r\n"
        );
        timeout(WAIT, stream.write_all(request.as_bytes()))
            .await
            .expect("the request written in time")
            .expect("the request written");
        RawSse {
            stream,
            buf: Vec::new(),
            head: None,
            ended: false,
        }
    }

    async fn fill(&mut self) {
        let mut chunk = vec![0; 64 * 1024];
        let n = timeout(WAIT, self.stream.read(&mut chunk))
            .await
            .unwrap_or_else(|_| panic!("nothing read within {WAIT:?}"))
            .expect("a read");
        if n == 0 {
            self.ended = true;
        }
        self.buf.extend_from_slice(&chunk[..n]);
    }

    /// The response head (status line and headers).
    pub async fn head(&mut self) -> String {
        while self.head.is_none() {
            if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head: Vec<u8> = self.buf.drain(..end + 4).collect();
                self.head = Some(String::from_utf8_lossy(&head).into_owned());
                break;
            }
            assert!(!self.ended, "the connection ended before a response head");
            self.fill().await;
        }
        self.head.clone().expect("read above")
    }

    /// The next SSE item; `None` once the connection ends.
    pub async fn next(&mut self) -> Option<SseItem> {
        self.head().await;
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buf.drain(..end + 2).collect();
                let block = String::from_utf8(block[..end].to_vec()).expect("SSE is UTF-8");
                let item = parse_block(block);
                if item.comment() == Some("ping") {
                    continue;
                }
                return Some(item);
            }
            if self.ended {
                return None;
            }
            self.fill().await;
        }
    }

    /// Every item up to the end of the connection (at most 100 000).
    pub async fn read_to_end(&mut self) -> Vec<SseItem> {
        let mut out = Vec::new();
        for _ in 0..100_000 {
            match self.next().await {
                Some(item) => out.push(item),
                None => return out,
            }
        }
        panic!("the SSE stream did not end");
    }
}
