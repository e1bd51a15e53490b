//! TLS termination: with a certificate and key the relay speaks HTTPS,
//! and refuses plain HTTP on the same port.
#![cfg(feature = "tls")]

use std::sync::Arc;
use std::time::Duration;

use aep_relay::{Config, Relay, TlsFiles};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn serves_https_with_the_given_certificate() {
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, generated.cert.pem()).unwrap();
    std::fs::write(&key, generated.signing_key.serialize_pem()).unwrap();

    let relay = Relay::new(Config::default().tls(Some(TlsFiles { cert, key }))).unwrap();
    let shutdown = relay.shutdown_handle();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(relay.serve(listener));

    let mut roots = RootCertStore::empty();
    roots.add(generated.cert.der().clone()).unwrap();
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let mut tls = timeout(WAIT, connector.connect(name, tcp))
        .await
        .unwrap()
        .unwrap();
    tls.write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut response = Vec::new();
    let _ = timeout(WAIT, tls.read_to_end(&mut response)).await.unwrap();
    let response = String::from_utf8_lossy(&response);
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains(r#""ok":true"#), "{response}");

    // Plain HTTP on the TLS port gets no HTTP answer.
    let mut plain = TcpStream::connect(addr).await.unwrap();
    plain
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = timeout(WAIT, plain.read_to_end(&mut answer)).await;
    assert!(!String::from_utf8_lossy(&answer).contains("200 OK"));

    shutdown.shutdown();
    let drained = timeout(WAIT, server).await.unwrap().unwrap().unwrap();
    assert!(drained.clean);
}

#[test]
fn unreadable_tls_files_are_an_error_naming_the_file() {
    let files = TlsFiles {
        cert: "/nonexistent/cert.pem".into(),
        key: "/nonexistent/key.pem".into(),
    };
    let error = Relay::new(Config::default().tls(Some(files)))
        .err()
        .expect("an error");
    assert!(
        error.to_string().contains("/nonexistent/cert.pem"),
        "{error}"
    );
}
