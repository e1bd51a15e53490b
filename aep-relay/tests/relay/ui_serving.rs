//! The browser UI's files over HTTP: served without auth (they hold no
//! data) while every data surface still wants the token, with their
//! content types, the Content-Security-Policy, validators and cache
//! headers; off with `Config::ui(false)`.

use std::time::Duration;

use aep_relay::{Config, Relay, Token};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const TOKEN: &str = "ui-serving-token";

async fn serve(config: Config) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(Relay::new(config).unwrap().serve(listener));
    addr
}

/// One request; the status, the headers (lower-cased names) and the body.
async fn get(
    addr: std::net::SocketAddr,
    path: &str,
    extra: &str,
) -> (u16, Vec<(String, String)>, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw))
        .await
        .expect("the relay answered in time")
        .unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers, body.to_owned())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

#[tokio::test]
async fn the_page_is_served_without_auth_and_the_data_is_not() {
    let addr = serve(Config::default().token(Token::new(TOKEN))).await;
    for (path, content_type) in [
        ("/", "text/html; charset=utf-8"),
        ("/ui/style.css", "text/css; charset=utf-8"),
        ("/ui/js/main.js", "text/javascript; charset=utf-8"),
        ("/ui/js/views/request.js", "text/javascript; charset=utf-8"),
        ("/ui/icon.svg", "image/svg+xml"),
    ] {
        let (status, headers, body) = get(addr, path, "").await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(
            header(&headers, "content-type"),
            Some(content_type),
            "{path}"
        );
        let csp = header(&headers, "content-security-policy").unwrap();
        assert!(
            csp.contains("default-src 'none'")
                && csp.contains("script-src 'self'")
                && csp.contains("connect-src 'self'"),
            "{path}: {csp}"
        );
        assert!(
            !csp.contains("unsafe-inline") && !csp.contains("http"),
            "{path}: {csp}"
        );
        assert_eq!(header(&headers, "x-content-type-options"), Some("nosniff"));
        assert_eq!(header(&headers, "referrer-policy"), Some("no-referrer"));
        assert_eq!(header(&headers, "cache-control"), Some("no-cache"));
        assert!(!body.contains(TOKEN));
        // The validator: the same file again is a 304 with no body.
        let etag = header(&headers, "etag").unwrap().to_owned();
        let (status, _, body) = get(addr, path, &format!("If-None-Match: {etag}\r\n")).await;
        assert_eq!((status, body.as_str()), (304, ""), "{path}");
        let (status, _, _) = get(addr, path, "If-None-Match: \"other\"\r\n").await;
        assert_eq!(status, 200, "{path}");
    }
    // Data still wants the token.
    for path in ["/stream", "/events", "/.well-known/aep", "/metrics"] {
        assert_eq!(get(addr, path, "").await.0, 401, "{path}");
    }
    let (status, _, body) = get(addr, "/ui/js/nothing.js", "").await;
    assert_eq!(status, 404);
    assert!(body.contains("not-found"));
    assert_eq!(get(addr, "/ui/../Cargo.toml", "").await.0, 404);
}

#[tokio::test]
async fn the_page_can_be_turned_off() {
    let addr = serve(Config::default().ui(false)).await;
    assert_eq!(get(addr, "/", "").await.0, 404);
    assert_eq!(get(addr, "/ui/js/main.js", "").await.0, 404);
    assert_eq!(get(addr, "/healthz", "").await.0, 200);
}
