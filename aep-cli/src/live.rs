//! What the commands that talk to a relay share: the relay's address and
//! token, a tokio runtime, the stop signal, and state files replaced
//! atomically (here), and in the submodules:
//!
//! - [`reach`]: what went wrong with a relay, said one way, and how often
//!   one never reached is tried (`tail`, `sink`, `demo`);
//! - [`send`]: one command sent to an agent and settled by its ack
//!   (`respond --relay`, `cancel`);
//! - [`waiting`]: the sessions a relay holds and the requests waiting on a
//!   person in them (`sessions`, `pending`, `respond`).

pub mod reach;
pub mod send;
pub mod waiting;

use std::io::{self, Write};
use std::path::Path;

use crate::common::error::{Error, Result};

/// `--relay` and `--token`, with their environment twins.
#[derive(Debug, Clone, clap::Args)]
pub struct RelayArgs {
    /// The relay's base URL.
    #[arg(
        long,
        env = "AEP_RELAY",
        default_value = "http://127.0.0.1:8787",
        value_name = "URL"
    )]
    pub relay: String,

    /// The relay's bearer token [env: AEP_TOKEN] (prefer the environment:
    /// command lines are visible to other users of the machine).
    // The environment is read here rather than by clap, so a usage error
    // never shows `--token <TOKEN>` in its usage line as if it were the
    // way to give it.
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
}

impl RelayArgs {
    /// The token (`--token`, else `AEP_TOKEN`), an empty one counting as
    /// none.
    pub fn token(&self) -> Option<String> {
        token(self.token.as_deref()).or_else(|| token(std::env::var("AEP_TOKEN").ok().as_deref()))
    }

    /// The relay URL, checked: `http://` or `https://` and a host.
    pub fn url(&self) -> Result<String> {
        check_url(&self.relay)
    }
}

/// A token, an empty or blank one counting as none.
pub fn token(token: Option<&str>) -> Option<String> {
    token
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

/// `relay` without a trailing `/`, when it is an `http://` or `https://`
/// URL with a host, and without credentials, a query or a fragment: the
/// token goes in AEP_TOKEN, and the URL may then be said in messages.
/// A refused URL is said without what may be secret in it (see
/// [`shown`]).
pub fn check_url(relay: &str) -> Result<String> {
    if relay.contains('#') {
        // The page's address (`--print-ui-url`): never say what follows.
        return Err(Error::msg(format_args!(
            "--relay holds a fragment (the page's address, #token=…); give the relay's base \
             URL, {}, and its token as AEP_TOKEN",
            base_of(relay)
        )));
    }
    let web = ["http://", "https://"]
        .iter()
        .any(|scheme| relay.trim().starts_with(scheme));
    if web && relay.contains('?') {
        return Err(Error::msg(format_args!(
            "--relay holds a query (?…); give the relay's base URL, {}, and its token as \
             AEP_TOKEN",
            base_of(relay)
        )));
    }
    if web && userinfo(relay).is_some() {
        return Err(Error::msg(format_args!(
            "--relay holds credentials (…@); give the relay's base URL, {}, and its token as \
             AEP_TOKEN",
            base_of(relay)
        )));
    }
    let relay = relay.trim();
    let trimmed = relay.trim_end_matches('/');
    let rest = trimmed
        .strip_prefix("http://")
        .or_else(|| trimmed.strip_prefix("https://"));
    match rest {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') => {
            if let Some(endpoint) = ENDPOINTS.iter().find(|e| trimmed.ends_with(*e)) {
                let base = &trimmed[..trimmed.len() - endpoint.len()];
                return Err(Error::msg(format_args!(
                    "--relay {relay:?} names the relay's {endpoint} endpoint; give its base URL: {base}"
                )));
            }
            Ok(trimmed.to_owned())
        }
        _ => Err(Error::msg(format_args!(
            "--relay {:?} is not a relay URL such as http://127.0.0.1:8787",
            shown(relay)
        ))),
    }
}

/// Where the authority's credentials (`user:password@`) are in `url`:
/// the text between `://` and the last `@` before the path. A password
/// may hold an unencoded `/`, `?` or `#`, which ends the authority
/// early: when what precedes it is no host (`user:pass`, a port not of
/// digits) and an `@` follows, the credentials run to that `@` (to the
/// last `@` before the next `/`).
fn userinfo(url: &str) -> Option<std::ops::Range<usize>> {
    let start = url.find("://")? + 3;
    let rest = &url[start..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    if !authority.contains('@') && is_host(authority) {
        return None;
    }
    let first = rest.find('@')?;
    let to = rest[first..]
        .find('/')
        .map_or(rest.len(), |slash| first + slash);
    let at = rest[..to].rfind('@')?;
    Some(start..start + at + 1)
}

/// Whether `authority` reads as a host with an optional port of digits
/// (`[::1]:8787` included).
fn is_host(authority: &str) -> bool {
    let port = match authority.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((_, "")) => return true,
            Some((_, rest)) => match rest.strip_prefix(':') {
                Some(port) => port,
                None => return false,
            },
            None => return false,
        },
        None => authority.rsplit_once(':').map_or("", |(_, port)| port),
    };
    port.bytes().all(|b| b.is_ascii_digit())
}

/// `url` without its credentials, query and fragment, trimmed: the base
/// URL to give instead. The credentials go first: a password may hold a
/// `?` or `#`.
fn base_of(url: &str) -> String {
    let mut out = url.to_owned();
    if let Some(range) = userinfo(&out) {
        out.replace_range(range, "");
    }
    if let Some(cut) = out.find(['?', '#']) {
        out.truncate(cut);
    }
    out.trim().trim_end_matches('/').to_owned()
}

/// `url` as it may be said in a message: credentials, a query and a
/// fragment (where tokens are carried) replaced by `…`. Without a `://`
/// (`http:/user:pass@host`) all before an `@` counts as credentials.
fn shown(url: &str) -> String {
    let mut out = url.to_owned();
    let credentials = match userinfo(&out) {
        Some(range) => Some(range),
        None if !out.contains("://") => out.rfind('@').map(|at| 0..at + 1),
        None => None,
    };
    if let Some(range) = credentials {
        out.replace_range(range, "…@");
    }
    if let Some(cut) = out.find(['?', '#']) {
        let mark = out.as_bytes()[cut] as char;
        out.truncate(cut);
        out.push(mark);
        out.push('…');
    }
    out
}

/// The relay's endpoints, which a base URL never ends with.
const ENDPOINTS: [&str; 6] = [
    "/stream",
    "/events",
    "/socket",
    "/healthz",
    "/metrics",
    "/.well-known/aep",
];

/// A tokio runtime for one command; `None` (said on standard error) when
/// it cannot start.
pub fn runtime(command: &str) -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => Some(runtime),
        Err(e) => {
            crate::diag!("aep {command}: error: cannot start the runtime: {e}");
            None
        }
    }
}

/// Resolves on SIGTERM or SIGINT.
pub async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// Replaces `path` with `bytes` atomically: a temporary file beside it,
/// written and synced, renamed over it, then the directory synced. A
/// reader sees the old content or the new, never a torn file.
pub fn replace_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(".{}.tmp", std::process::id()));
    let temp = dir.join(temp_name);
    let written = (|| {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written?;
    sync_dir(dir)
}

/// Syncs a directory, so that a rename or a new file in it survives a
/// crash.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        std::fs::File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// This machine's name, for `source` URIs and `instance`s.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relay_urls_are_checked() {
        assert_eq!(
            check_url("http://127.0.0.1:8787/").unwrap(),
            "http://127.0.0.1:8787"
        );
        assert!(check_url("https://relay.example").is_ok());
        assert!(check_url("127.0.0.1:8787").is_err());
        assert!(check_url("http://").is_err());
        assert!(check_url("ftp://x").is_err());
        assert_eq!(token(Some("  ")), None);
        assert_eq!(token(Some(" t ")), Some("t".into()));
    }

    #[test]
    fn an_endpoint_or_the_pages_address_is_refused_naming_the_base_url() {
        let stream = check_url("http://127.0.0.1:8787/stream")
            .unwrap_err()
            .to_string();
        assert!(stream.contains("/stream endpoint"), "{stream}");
        assert!(
            stream.ends_with("base URL: http://127.0.0.1:8787"),
            "{stream}"
        );
        assert!(check_url("https://relay.example/aep/.well-known/aep").is_err());
        assert!(
            check_url("https://relay.example/aep").is_ok(),
            "a path prefix is fine"
        );
        let page = check_url("http://127.0.0.1:8787/#token=s3cret")
            .unwrap_err()
            .to_string();
        assert!(page.contains("http://127.0.0.1:8787,"), "{page}");
        assert!(!page.contains("s3cret"), "the token is never said: {page}");
    }

    #[test]
    fn credentials_and_queries_are_refused_and_never_said() {
        for (url, base) in [
            (
                "http://user:s3cret@relay.example:8787/",
                "http://relay.example:8787,",
            ),
            ("https://s3cret@relay.example", "https://relay.example,"),
            (
                "http://relay.example/?access_token=s3cret",
                "http://relay.example,",
            ),
            (
                "http://a:s3cret@relay.example/?token=s3cret#token=s3cret",
                "http://relay.example,",
            ),
            (
                "http://a:s3cret@relay.example/#token=s3cret",
                "http://relay.example,",
            ),
            ("ws://:s3cret@relay.example", "ws://…@relay.example"),
            ("s3cret@relay.example", "…@relay.example"),
        ] {
            let error = format!("{:#}", check_url(url).unwrap_err());
            assert!(!error.contains("s3cret"), "{url}: {error}");
            assert!(error.contains(base), "{url}: {error}");
        }
        // An `@` in the path is not a credential.
        assert_eq!(
            check_url("https://relay.example/team@aep").unwrap(),
            "https://relay.example/team@aep"
        );
        assert_eq!(
            shown("http://relay.example/aep"),
            "http://relay.example/aep"
        );
        assert_eq!(shown("http://u:p@h/x#t"), "http://…@h/x#…");
    }

    #[test]
    fn a_password_with_a_slash_hash_or_question_mark_is_never_said() {
        // Unencoded `/`, `#`, `?` (or `@`) in a password end the authority
        // early: the text before them is no host (a port not of digits),
        // and the credentials run to the `@` after them.
        for url in [
            "http://user:s3/cret@relay.example:8787",
            "http://user:s3/cret@relay.example/stream",
            "http://user:s3#cret@relay.example:8787",
            "http://user:s3?cret@relay.example:8787",
            "http://user:s3?cret@relay.example/?token=x",
            "http://user:s3@c#ret@relay.example",
            "http:/user:s3cret@relay.example",
        ] {
            let error = format!("{:#}", check_url(url).unwrap_err());
            assert!(!error.contains("s3"), "{url}: {error}");
            assert!(!error.contains("cret"), "{url}: {error}");
            if url.starts_with("http://") {
                assert!(error.contains("http://relay.example"), "{url}: {error}");
            }
        }
        // Legitimate URLs still pass: IPv6 hosts, ports, path prefixes,
        // an `@` in the path.
        for (url, checked) in [
            ("http://[::1]:8787", "http://[::1]:8787"),
            ("http://[::1]:8787/aep/", "http://[::1]:8787/aep"),
            ("http://[::1]/team@aep", "http://[::1]/team@aep"),
            (
                "https://relay.example:443/team@aep/",
                "https://relay.example:443/team@aep",
            ),
            (" http://127.0.0.1:8787/ ", "http://127.0.0.1:8787"),
        ] {
            assert_eq!(check_url(url).unwrap(), checked, "{url}");
        }
    }

    #[test]
    fn a_replaced_file_holds_the_new_bytes_and_no_temporary_stays() {
        let dir = std::env::temp_dir().join(format!("aep-live-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.json");
        replace_file(&path, b"one").unwrap();
        replace_file(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["state.json"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
