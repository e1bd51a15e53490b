//! `aep doctor`: one read-only pass over what makes a relay usable from
//! here: reachability on each loopback address family, the auth posture,
//! CORS for browser consumers, and the relay's own counts. Each finding
//! comes with its remedy.

use std::net::SocketAddr;
use std::time::Duration;

use reqwest::header::{HeaderMap, ACCESS_CONTROL_ALLOW_ORIGIN};
use reqwest::{Method, StatusCode, Url};
use serde_json::Value;

use super::Status;
use crate::common::error::Context;
use crate::common::terminal::{escape, Newlines};
use crate::diag;
use crate::live::RelayArgs;

const LONG_ABOUT: &str = "\
Checks, read-only, what stands between a client and the relay at --relay:

  reachability  when the URL's host is localhost or a loopback address, the
                port is probed on IPv4 (127.0.0.1) and IPv6 ([::1])
                separately: `localhost` resolves to either, depending on the
                client
  auth          an unauthenticated /healthz that carries counts means the
                relay runs without a token (watch-only: commands refused);
                with a token (--token, AEP_TOKEN), whether the relay takes
                it, on /healthz and the discovery document
  CORS          the preflight OPTIONS /stream and a refused GET /stream must
                both carry Access-Control-Allow-Origin, or a browser page
                can neither read the stream nor explain a refusal
  counts        the relay's own /healthz counts, for information

Each line is `ok`, `info` or `finding`; every finding says what to do. The
probes run from this machine: a clean report here says nothing about a
browser behind a port forward, a container or a VM; run it there too.";

const AFTER_HELP: &str = "\
Exit status: 0 no findings, 1 findings, 2 a usage error (a URL that is not
one).

Examples:
  aep doctor
  AEP_TOKEN=$(cat token) aep doctor --relay http://localhost:8787";

/// The arguments of `aep doctor`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Check a relay from here: address families, auth, CORS, counts",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    #[command(flatten)]
    pub relay: RelayArgs,
}

/// The report: lines on standard output, findings counted.
#[derive(Default)]
struct Report {
    findings: usize,
}

impl Report {
    fn ok(&mut self, text: &str) {
        say(format_args!("ok       {}", clean(text)));
    }

    fn info(&mut self, text: &str) {
        say(format_args!("info     {}", clean(text)));
    }

    fn finding(&mut self, text: &str, remedy: &str) {
        self.findings += 1;
        say(format_args!("finding  {}", clean(text)));
        say(format_args!("         remedy: {}", clean(remedy)));
    }
}

/// One line of the report on standard output; a closed output ends
/// nothing (the exit status still tells).
fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

fn clean(text: &str) -> String {
    escape(text, Newlines::Escape).into_owned()
}

/// How long one probe may take.
const PROBE: Duration = Duration::from_secs(3);

/// Runs `aep doctor`.
pub fn run(args: &Args) -> Status {
    let base = match args
        .relay
        .url()
        .and_then(|u| Url::parse(&u).context("--relay"))
    {
        Ok(url) => url,
        Err(e) => {
            diag!("aep doctor: error: {e}");
            return Status::Failure;
        }
    };
    let Some(runtime) = crate::live::runtime("doctor") else {
        return Status::Failure;
    };
    let mut report = Report::default();
    runtime.block_on(examine(&base, args.relay.token(), &mut report));
    say(format_args!(
        "{} finding(s). The probes ran from this machine; where a client is refused, run `aep doctor --relay {}` on its machine too.",
        report.findings,
        base.as_str().trim_end_matches('/')
    ));
    if report.findings == 0 {
        Status::Clean
    } else {
        Status::Findings
    }
}

async fn examine(base: &Url, token: Option<String>, report: &mut Report) {
    let client = match reqwest::Client::builder().timeout(PROBE).build() {
        Ok(client) => client,
        Err(e) => {
            report.finding(&format!("no HTTP client: {e}"), "report this as a bug");
            return;
        }
    };
    families(base, report).await;
    let plain = get(&client, base, "/healthz", None).await;
    let Some((status, _, body)) = plain else {
        report.finding(
            &format!("{base} does not answer GET /healthz"),
            "start the relay (`aep relay`, or `aep relay --listen ADDR` for this URL's address), or fix --relay / AEP_RELAY",
        );
        return;
    };
    if status != StatusCode::OK || body.get("ok") != Some(&Value::Bool(true)) {
        report.finding(
            &format!(
                "GET /healthz answered {status}, not {{\"ok\": true}}: this is not an AEP relay"
            ),
            "point --relay at the relay's base URL",
        );
        return;
    }
    report.ok(&format!("{base} answers /healthz"));
    let counts_open = counts(&body).is_some();
    let mut counted = body.clone();
    if counts_open {
        report.info("auth off: the relay runs without a token (watch-only: events flow, every command is refused `unauthorized`, AEP-0004 §4.1)");
        if token.is_some() {
            report.finding(
                "a token is given here, but the relay runs without one: commands sent through it will be refused",
                "start the relay with the token (AEP_TOKEN=... aep relay), or drop --token/AEP_TOKEN to watch only",
            );
        }
    } else {
        report.info("auth on: the relay requires a bearer token on every surface but /healthz");
        match &token {
            None => report.finding(
                "no token is given (--token, AEP_TOKEN): every request but /healthz will be refused 401",
                "set AEP_TOKEN to the relay's token",
            ),
            Some(token) => match get(&client, base, "/healthz", Some(token)).await {
                Some((_, _, with)) if counts(&with).is_some() => {
                    report.ok("the token is accepted");
                    counted = with;
                }
                _ => report.finding(
                    "the relay refuses the token given",
                    "use the token the relay was started with (AEP_TOKEN of `aep relay`)",
                ),
            },
        }
    }
    let accepted = counts(&counted).is_some();
    if accepted {
        match get(&client, base, "/events", token.as_deref()).await {
            Some((StatusCode::OK, _, doc))
                if doc["aep"]
                    .as_array()
                    .is_some_and(|v| v.iter().any(|v| v == "0.1")) =>
            {
                report.ok("the discovery document (GET /events) speaks AEP 0.1")
            }
            Some((status, _, _)) => report.finding(
                &format!("GET /events answered {status} without a discovery document for AEP 0.1"),
                "check that --relay names an AEP 0.1 relay",
            ),
            None => report.finding("GET /events did not answer", "check the relay's logs"),
        }
    }
    cors(&client, base, token.as_deref(), counts_open, report).await;
    if let Some(counts) = counts(&counted) {
        report.info(&format!("counts: {counts}"));
    }
}

/// The members of a /healthz body besides `ok`, as `name=value`.
fn counts(body: &Value) -> Option<String> {
    let members = body.as_object()?;
    let parts: Vec<String> = members
        .iter()
        .filter(|(k, _)| k.as_str() != "ok")
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// Probes the port on each loopback family, when the host is loopback.
async fn families(base: &Url, report: &mut Report) {
    let Some(host) = base.host_str() else { return };
    let Some(port) = base.port_or_known_default() else {
        return;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let localhost = host.eq_ignore_ascii_case("localhost");
    let v4_host = localhost
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|a| a.is_loopback());
    let v6_host = localhost
        || host
            .parse::<std::net::Ipv6Addr>()
            .is_ok_and(|a| a.is_loopback());
    if !v4_host && !v6_host {
        report.info(&format!(
            "{host} is not a loopback address: the address families are not probed"
        ));
        return;
    }
    let v4 = connects(SocketAddr::from(([127, 0, 0, 1], port))).await;
    let v6 = connects(SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port))).await;
    match (v4, v6) {
        (true, true) => report.ok(&format!("port {port} answers on IPv4 (127.0.0.1) and IPv6 ([::1])")),
        (false, false) => report.finding(
            &format!("nothing answers on port {port}, on 127.0.0.1 or [::1]"),
            &format!("start the relay: `aep relay --listen 127.0.0.1:{port}`"),
        ),
        (true, false) if localhost => report.finding(
            &format!("port {port} answers on 127.0.0.1 but not on [::1], and `localhost` resolves to ::1 first for some clients (browsers, Node 17+)"),
            &format!("use http://127.0.0.1:{port} in clients, or listen on both families (`aep relay --listen [::]:{port}` on a dual-stack host)"),
        ),
        (false, true) if localhost => report.finding(
            &format!("port {port} answers on [::1] but not on 127.0.0.1, and `localhost` resolves to 127.0.0.1 for most clients"),
            &format!("use http://[::1]:{port} in clients, or listen on both families (`aep relay --listen [::]:{port}` on a dual-stack host)"),
        ),
        (true, false) => report.info(&format!("port {port} answers on IPv4 only; this URL uses IPv4")),
        (false, true) if v6_host => report.info(&format!("port {port} answers on IPv6 only; this URL uses IPv6")),
        (false, true) => report.finding(
            &format!("port {port} answers on [::1] only, but the URL names an IPv4 address"),
            &format!("use http://[::1]:{port}, or `aep relay --listen 127.0.0.1:{port}`"),
        ),
    }
}

async fn connects(address: SocketAddr) -> bool {
    matches!(
        tokio::time::timeout(PROBE, tokio::net::TcpStream::connect(address)).await,
        Ok(Ok(_))
    )
}

/// A GET; its status, headers and JSON body (`Null` when it is not JSON).
async fn get(
    client: &reqwest::Client,
    base: &Url,
    path: &str,
    token: Option<&str>,
) -> Option<(StatusCode, HeaderMap, Value)> {
    let mut request = client.get(join(base, path));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.ok()?;
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap_or_default();
    Some((
        status,
        headers,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    ))
}

fn join(base: &Url, path: &str) -> String {
    format!("{}{path}", base.as_str().trim_end_matches('/'))
}

/// The preflight and a refused request, each with its CORS header, asked
/// from a foreign page, or, when the relay runs without a token (`open`),
/// from a page on this machine: an open relay grants no other.
async fn cors(
    client: &reqwest::Client,
    base: &Url,
    token: Option<&str>,
    open: bool,
    report: &mut Report,
) {
    let origin = if open {
        report.info("CORS: without a token the relay lets only pages on this machine read it or reach its WebSocket (a page elsewhere is refused); checked from http://localhost");
        "http://localhost"
    } else {
        "http://aep-doctor.invalid"
    };
    let preflight = client
        .request(Method::OPTIONS, join(base, "/stream"))
        .header("Origin", origin)
        .header("Access-Control-Request-Method", "GET")
        .header(
            "Access-Control-Request-Headers",
            "authorization, last-event-id",
        )
        .send()
        .await;
    let remedy = "serve Access-Control-Allow-Origin on /stream, its preflight and its refusals (aep relay does; behind a proxy, pass the header through)";
    match preflight {
        Ok(r) if r.status().is_success() && r.headers().contains_key(ACCESS_CONTROL_ALLOW_ORIGIN) => {
            let headers = r
                .headers()
                .get("access-control-allow-headers")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_ascii_lowercase();
            if headers.contains("authorization") || headers.contains('*') {
                report.ok("CORS: the preflight of /stream allows a browser's GET with a token");
            } else {
                report.finding(
                    "CORS: the preflight of /stream does not allow the Authorization header",
                    "allow authorization and last-event-id in Access-Control-Allow-Headers",
                );
            }
        }
        Ok(r) => report.finding(
            &format!("CORS: the preflight OPTIONS /stream answered {} without Access-Control-Allow-Origin", r.status()),
            remedy,
        ),
        Err(e) => report.finding(&format!("CORS: the preflight OPTIONS /stream failed: {e}"), remedy),
    }
    // A request refused on purpose: a filter that is not JSON.
    let mut refused = client
        .get(join(base, "/stream"))
        .query(&[("filter", "{"), ("live", "0")])
        .header("Origin", origin);
    if let Some(token) = token {
        refused = refused.bearer_auth(token);
    }
    match refused.send().await {
        Ok(r) if r.status().is_success() => report.info("CORS: a malformed filter was not refused (the relay did not check it)"),
        Ok(r) if r.headers().contains_key(ACCESS_CONTROL_ALLOW_ORIGIN) => {
            report.ok(&format!("CORS: a refused GET /stream ({}) is readable by a browser page", r.status()))
        }
        Ok(r) => report.finding(
            &format!("CORS: a refused GET /stream ({}) has no Access-Control-Allow-Origin: a browser sees an opaque network error instead of the reason", r.status()),
            remedy,
        ),
        Err(e) => report.finding(&format!("CORS: GET /stream failed: {e}"), remedy),
    }
}
