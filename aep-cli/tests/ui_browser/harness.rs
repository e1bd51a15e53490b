//! Headless Chromium through chromedriver, started by the test on a free
//! port with a new empty profile; a relay in process; bounded waits.
//!
//! Chromium and chromedriver come from the system (Debian's `chromium`
//! and `chromium-driver`; `.ci/run` installs them). When either is
//! missing the tests fail, saying so, unless `AEP_SKIP_BROWSER_TESTS=1`
//! opts out (then each test prints that it was skipped).

use std::net::{SocketAddr, TcpListener as StdListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aep_relay::{Config, Relay, ShutdownHandle, Token};
use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

/// The bound on every wait for the page.
pub const WAIT: Duration = Duration::from_secs(30);
/// The bound on starting chromedriver and Chromium (slow on a loaded
/// two-core machine).
const START: Duration = Duration::from_secs(90);

/// The flags Chromium needs here (as root, in a container, offline).
const FLAGS: [&str; 12] = [
    "--disable-crash-reporter",
    "--disable-breakpad",
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1000",
];

/// Serializes the browser tests: one Chromium at a time on a small machine.
pub static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn find(env: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(env) {
        return Some(PathBuf::from(path)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
}

/// Whether the browser tests run: `false` (with a message) only when
/// `AEP_SKIP_BROWSER_TESTS=1`; a missing browser is a failure.
pub fn enabled(test: &str) -> bool {
    if std::env::var("AEP_SKIP_BROWSER_TESTS").as_deref() == Ok("1") {
        eprintln!("SKIPPED {test}: AEP_SKIP_BROWSER_TESTS=1 opts out of the browser tests");
        return false;
    }
    true
}

/// A headless Chromium session through a chromedriver of its own.
pub struct Browser {
    pub client: Client,
    driver: Child,
    _profile: tempfile::TempDir,
}

fn free_port() -> u16 {
    let listener = StdListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().unwrap().port()
}

impl Browser {
    pub async fn start() -> Browser {
        let chromium = find("AEP_CHROMIUM", &["chromium", "chromium-browser", "google-chrome"])
            .expect("the browser tests need Chromium (Debian: apt-get install chromium chromium-driver; .ci/run installs it), or AEP_CHROMIUM=/path; AEP_SKIP_BROWSER_TESTS=1 skips them");
        let chromedriver = find("AEP_CHROMEDRIVER", &["chromedriver"])
            .expect("the browser tests need chromedriver (Debian: apt-get install chromium-driver; .ci/run installs it), or AEP_CHROMEDRIVER=/path; AEP_SKIP_BROWSER_TESTS=1 skips them");
        let port = free_port();
        let mut command = Command::new(&chromedriver);
        // Its own process group, so the browser it starts ends with it.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let driver = command
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromedriver.display()));
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let deadline = Instant::now() + START;
        while TcpStream::connect(addr).is_err() {
            assert!(
                Instant::now() < deadline,
                "chromedriver did not listen on {addr} within {START:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = tempfile::tempdir().unwrap();
        let mut args: Vec<String> = FLAGS.iter().map(|s| s.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), json!("chrome"));
        caps.insert(
            "goog:chromeOptions".into(),
            json!({"binary": chromium.to_string_lossy(), "args": args}),
        );
        caps.insert("goog:loggingPrefs".into(), json!({"browser": "ALL"}));
        // WebDriver's own waits, bounded like ours.
        let bound = WAIT.as_millis() as u64;
        caps.insert(
            "timeouts".into(),
            json!({"pageLoad": bound, "script": bound, "implicit": 0}),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = tokio::time::timeout(
            START,
            ClientBuilder::new(connector)
                .capabilities(caps)
                .connect(&format!("http://{addr}")),
        )
        .await
        .expect("chromedriver started a session in time")
        .expect("chromedriver started Chromium");
        Browser {
            client,
            driver,
            _profile: profile,
        }
    }

    /// The browser's console messages so far (chromedriver's log).
    pub async fn console(&self) -> Vec<Value> {
        match self.client.issue_cmd(BrowserLog).await {
            Ok(Value::Array(entries)) => entries,
            _ => Vec::new(),
        }
    }

    /// Fails on any console message at SEVERE (an uncaught error, a CSP
    /// refusal, a failed module), except ones `allowed` matches.
    pub async fn assert_no_errors(&self, allowed: &[&str]) {
        let severe: Vec<Value> = self
            .console()
            .await
            .into_iter()
            .filter(|e| e["level"] == "SEVERE")
            .filter(|e| {
                let m = e["message"].as_str().unwrap_or_default();
                !allowed.iter().any(|a| m.contains(a))
            })
            .collect();
        assert!(severe.is_empty(), "the page logged errors: {severe:#?}");
    }

    pub async fn text(&self) -> String {
        match self.client.find(Locator::Css("body")).await {
            Ok(body) => body.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        }
    }

    /// The first element matching `css` once it exists and `ready` holds
    /// for its text, within the bound; a failure shows the page.
    pub async fn wait_for(&self, css: &str, what: &str, ready: impl Fn(&str) -> bool) -> Element {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Ok(found) = self.client.find_all(Locator::Css(css)).await {
                for el in found {
                    if ready(&el.text().await.unwrap_or_default()) {
                        return el;
                    }
                }
            }
            if Instant::now() > deadline {
                panic!(
                    "waited {WAIT:?} for {what} ({css}); the page says:\n{}\nconsole: {:#?}",
                    self.text().await,
                    self.console().await
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The attribute `attr` of the first element matching `css` whose
    /// text `ready` takes, read in the same pass (an element the page
    /// re-renders meanwhile is looked up again).
    pub async fn wait_attr(
        &self,
        css: &str,
        attr: &str,
        what: &str,
        ready: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Ok(found) = self.client.find_all(Locator::Css(css)).await {
                for el in found {
                    let Ok(text) = el.text().await else { continue };
                    if ready(&text) {
                        if let Ok(Some(value)) = el.attr(attr).await {
                            return value;
                        }
                    }
                }
            }
            if Instant::now() > deadline {
                panic!(
                    "waited {WAIT:?} for {what} ({css} [{attr}]); the page says:\n{}\nconsole: {:#?}",
                    self.text().await,
                    self.console().await
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `script`'s value once it is truthy, within `bound`.
    pub async fn wait_script(&self, script: &str, what: &str, bound: Duration) -> Value {
        let deadline = Instant::now() + bound;
        loop {
            let value = self
                .client
                .execute(script, vec![])
                .await
                .unwrap_or(Value::Null);
            if !(value.is_null() || value == json!(false)) {
                return value;
            }
            if Instant::now() > deadline {
                panic!(
                    "waited {bound:?} for {what}; the page says:\n{}\nconsole: {:#?}",
                    self.text().await,
                    self.console().await
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Writes a PNG screenshot to `path`.
    pub async fn screenshot(&self, path: &Path) {
        let png = self.client.screenshot().await.expect("a screenshot");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }

    /// Ends the WebDriver session (Chromium quits), then the driver.
    pub async fn close(self) {
        let _ = tokio::time::timeout(WAIT, self.client.clone().close()).await;
    }
}

impl Drop for Browser {
    /// Ends chromedriver and the Chromium it started (their process
    /// group), also when a test fails half-way.
    fn drop(&mut self) {
        let group = format!("-{}", self.driver.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// chromedriver's log endpoint (not part of W3C WebDriver).
#[derive(Debug)]
struct BrowserLog;

impl fantoccini::wd::WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (
            http::Method::POST,
            Some(json!({"type": "browser"}).to_string()),
        )
    }
}

/// A relay serving in this process.
pub struct Served {
    pub base: String,
    pub addr: SocketAddr,
    pub shutdown: ShutdownHandle,
    pub task: tokio::task::JoinHandle<std::io::Result<aep_relay::Drained>>,
}

/// A relay on `addr` (port 0 for any), with `token` when given.
pub async fn relay(addr: &str, token: Option<&str>) -> Served {
    relay_with(addr, token, Config::default()).await
}

/// [`relay`] from `config` (the token and a short grace set here).
pub async fn relay_with(addr: &str, token: Option<&str>, config: Config) -> Served {
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = config
        .token(token.and_then(Token::new))
        .grace(Duration::from_millis(500));
    let relay = Relay::new(config).unwrap();
    let shutdown = relay.shutdown_handle();
    let task = tokio::spawn(relay.serve(listener));
    Served {
        base: format!("http://{addr}"),
        addr,
        shutdown,
        task,
    }
}

impl Served {
    pub async fn stop(self) {
        self.shutdown.shutdown();
        let _ = tokio::time::timeout(WAIT, self.task).await;
    }
}

/// A running `aep demo`, killed if a failing test leaves it behind.
pub struct DemoProcess(Child);

impl Drop for DemoProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `aep demo` against `base`, with `token` when given.
pub fn demo(base: &str, token: Option<&str>, session: &str) -> DemoProcess {
    let mut command = Command::new(env!("CARGO_BIN_EXE_aep"));
    command
        .args([
            "demo",
            "--relay",
            base,
            "--session",
            session,
            "--run",
            "r1",
            "--pace",
            "40",
        ])
        .env_remove("AEP_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(token) = token {
        command.env("AEP_TOKEN", token);
    }
    DemoProcess(command.spawn().expect("the aep binary runs"))
}

/// Stops a demo (SIGTERM, then kill past the bound).
pub fn stop_demo(demo: &mut DemoProcess) {
    let child = &mut demo.0;
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The relay's history of `session`, parsed.
pub async fn history(base: &str, token: Option<&str>, session: &str) -> Vec<Value> {
    let held = tokio::time::timeout(
        WAIT,
        aep_client::history::history(base, token, session, 64 << 20),
    )
    .await
    .expect("the history read finished in time")
    .expect("the history read");
    held.events
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Where the committed screenshots go.
pub fn images() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/images")
}
