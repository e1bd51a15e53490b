//! Running the `aep` binary on one case: arguments, standard input in,
//! exit code and both outputs back.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long one run may take before it is stopped and reported.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The `aep` binary under test.
#[derive(Debug, Clone)]
pub struct Aep {
    path: PathBuf,
}

/// What one run gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// The exit code; `None` when a signal ended the process.
    pub code: Option<i32>,
    /// Standard output, lossily decoded.
    pub stdout: String,
    /// Standard error, lossily decoded.
    pub stderr: String,
}

impl Output {
    /// The one line of JSON standard output holds, or why it is not that.
    pub fn json_line(&self) -> Result<serde_json::Value, String> {
        let lines: Vec<&str> = self.stdout.lines().collect();
        match lines.as_slice() {
            [line] => serde_json::from_str(line).map_err(|e| {
                format!(
                    "the output is not JSON ({e}): {}",
                    crate::json::shorten(line)
                )
            }),
            _ => Err(format!(
                "expected one line of output, got {}: {}",
                lines.len(),
                crate::json::shorten(&self.stdout)
            )),
        }
    }

    /// The exit status and standard error, for a failure message.
    pub fn status_line(&self) -> String {
        let code = match self.code {
            Some(code) => format!("exit {code}"),
            None => "killed by a signal".to_owned(),
        };
        match self.stderr.trim() {
            "" => code,
            stderr => format!("{code}, stderr: {}", crate::json::shorten(stderr)),
        }
    }
}

impl Aep {
    /// The binary at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Aep {
        Aep { path: path.into() }
    }

    /// Where the binary is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `aep ARGS` with `stdin` as standard input; an error says why
    /// it could not run or did not finish in time.
    pub fn run(&self, args: &[&str], stdin: &[u8]) -> Result<Output, String> {
        self.run_with(args, stdin, &[])
    }

    /// [`Aep::run`] with these environment variables set (and no other
    /// `AEP_*` variable of the caller's).
    pub fn run_with(
        &self,
        args: &[&str],
        stdin: &[u8],
        env: &[(&str, &str)],
    ) -> Result<Output, String> {
        let shown = format!("`aep {}`", args.join(" "));
        let mut command = Command::new(&self.path);
        // Only what the case sets: none of the caller's own settings.
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("AEP_") {
                command.env_remove(name);
            }
        }
        let mut child = command
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {shown} ({}): {e}", self.path.display()))?;
        let mut input = child.stdin.take().expect("stdin is piped");
        let bytes = stdin.to_vec();
        // The command may stop reading early; that is not an error here.
        let writer = thread::spawn(move || {
            let _ = input.write_all(&bytes);
        });
        let stdout = reader(child.stdout.take().expect("stdout is piped"));
        let stderr = reader(child.stderr.take().expect("stderr is piped"));
        let code = wait(&mut child).map_err(|e| format!("{shown}: {e}"))?;
        let _ = writer.join();
        Ok(Output {
            code,
            stdout: stdout.join().unwrap_or_default(),
            stderr: stderr.join().unwrap_or_default(),
        })
    }
}

fn reader(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Waits for `child` for at most [`TIMEOUT`], killing it when it takes
/// longer.
fn wait(child: &mut Child) -> Result<Option<i32>, String> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status.code()),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(1)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("did not finish within {} s", TIMEOUT.as_secs()));
            }
            Err(e) => return Err(format!("cannot wait for it: {e}")),
        }
    }
}

/// An `aep relay` on a loopback port of its own, stopped when dropped.
#[derive(Debug)]
pub struct Relay {
    child: Child,
    /// Its base URL.
    pub url: String,
}

impl Relay {
    /// Starts `aep relay` on `127.0.0.1:0` with `token`, and waits (at
    /// most the run timeout, 30 s) for the address it prints.
    pub fn start(aep: &Aep, token: &str) -> Result<Relay, String> {
        let mut command = Command::new(aep.path());
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("AEP_") {
                command.env_remove(name);
            }
        }
        let mut child = command
            .args(["relay", "--listen", "127.0.0.1:0", "--print-ui-url"])
            .env("AEP_TOKEN", token)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run `aep relay` ({}): {e}", aep.path().display()))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, rx) = std::sync::mpsc::channel();
        thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line);
            let _ = tx.send(line);
        });
        let mut relay = Relay {
            child,
            url: String::new(),
        };
        let line = rx
            .recv_timeout(TIMEOUT)
            .map_err(|_| "`aep relay` printed no address".to_owned())?;
        let url = line.trim().split("/#").next().unwrap_or_default();
        if !url.starts_with("http://") {
            return Err(format!("`aep relay` printed {line:?}, not its address"));
        }
        relay.url = url.to_owned();
        Ok(relay)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
