//! TLS termination with rustls (AEP-0003 §8.1: off-host bindings need
//! TLS).

use std::fs::File;
use std::io::{self, BufReader};
use std::sync::Arc;

use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use crate::config::TlsFiles;

/// An acceptor for the certificate chain and key in `files`.
pub(crate) fn acceptor(files: &TlsFiles) -> io::Result<TlsAcceptor> {
    let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    let open = |path: &std::path::Path| {
        File::open(path)
            .map(BufReader::new)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
    };
    let certs = rustls_pemfile::certs(&mut open(&files.cert)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(format!("{}: {e}", files.cert.display())))?;
    if certs.is_empty() {
        return Err(invalid(format!(
            "{}: no PEM certificate found",
            files.cert.display()
        )));
    }
    let key = rustls_pemfile::private_key(&mut open(&files.key)?)
        .map_err(|e| invalid(format!("{}: {e}", files.key.display())))?
        .ok_or_else(|| invalid(format!("{}: no PEM private key found", files.key.display())))?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| invalid(format!("{}: {e}", files.key.display())))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}
