//! The hook's side of the daemon: connect to it (starting it when it is
//! not running), hand it the call, print its decision. Every wait is
//! bounded; when the daemon cannot be reached or started, the caller
//! records the call itself.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::record::{private_dir, Home};
use super::wire::{self, Reply, Request, Serves};
use crate::common::error::{Context, Error, Result};

/// How long a started daemon may take to listen.
const START_WAIT: Duration = Duration::from_secs(3);
/// How much longer than a person's time the hook waits for a decision.
const DECISION_SLACK: Duration = Duration::from_secs(5);
/// How long after a failed start the hooks record their calls themselves
/// rather than start the daemon again.
const RETRY_AFTER: Duration = Duration::from_secs(60);
/// How long a start goes on starting the daemon while another still
/// holds the home on its way out (its last sends are bounded by two
/// seconds).
const RETIRE_WAIT: Duration = Duration::from_secs(5);
/// The first pause between such starts; it doubles up to
/// [`RETIRE_PAUSE_MAX`].
const RETIRE_PAUSE: Duration = Duration::from_millis(25);
/// The longest pause between such starts.
const RETIRE_PAUSE_MAX: Duration = Duration::from_millis(400);
/// How long the daemon may take to record a call.
const RECORD_WAIT: Duration = Duration::from_secs(10);

/// What the daemon did with a call.
#[derive(Debug)]
pub enum Outcome {
    /// Recorded; the hook's standard output (empty: no decision).
    Done(String),
    /// Recorded, and no decision came within the bound.
    NoDecision(String),
    /// The daemon could not record the call; why.
    Failed(String),
    /// The daemon could not be reached or did not record the call; why.
    Unreachable(String),
}

/// Hands one call to the daemon, which holds it at most `attention` for
/// a person's answer; the hook waits a little longer for the decision.
pub fn call(home: &Home, serves: &Serves, request: &Request, attention: Duration) -> Outcome {
    let stream = match connect_or_start(home, serves) {
        Ok(stream) => stream,
        Err(why) => return Outcome::Unreachable(why.to_string()),
    };
    match exchange(stream, request, attention) {
        Ok(outcome) => outcome,
        Err(why) => Outcome::Unreachable(why.to_string()),
    }
}

fn exchange(mut stream: UnixStream, request: &Request, attention: Duration) -> Result<Outcome> {
    let decision_wait = attention + DECISION_SLACK;
    let mut line = serde_json::to_vec(request)?;
    line.push(b'\n');
    stream
        .set_write_timeout(Some(RECORD_WAIT))
        .and_then(|()| stream.write_all(&line))
        .context("cannot hand the call to the daemon")?;
    let mut reader = BufReader::new(stream);
    match read_reply(&mut reader, RECORD_WAIT) {
        Ok(Reply::Recorded) => {}
        Ok(Reply::Failed { error }) => return Ok(Outcome::Failed(error)),
        Ok(Reply::Done { .. }) => return Err("the daemon answered out of turn".into()),
        Err(why) => return Err(why.context("the daemon did not record the call")),
    }
    match read_reply(&mut reader, decision_wait) {
        Ok(Reply::Done { stdout }) => Ok(Outcome::Done(stdout)),
        Ok(other) => Ok(Outcome::NoDecision(format!("unexpected reply {other:?}"))),
        Err(why) => Ok(Outcome::NoDecision(why.to_string())),
    }
}

fn read_reply(reader: &mut BufReader<UnixStream>, wait: Duration) -> Result<Reply> {
    reader
        .get_ref()
        .set_read_timeout(Some(wait.max(Duration::from_millis(1))))?;
    let mut line = String::new();
    let read = reader
        .by_ref()
        .take(wire::MAX_LINE as u64)
        .read_line(&mut line)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                Error::msg(format!("no answer within {wait:?}"))
            }
            _ => Error::from_source(e),
        })?;
    if read == 0 {
        return Err("the daemon closed the connection".into());
    }
    serde_json::from_str(&line).context("a reply that does not read")
}

/// Connects to the daemon, starting it first when nobody listens, unless
/// a start failed less than [`RETRY_AFTER`] ago (see
/// [`wire::failed_path`]). A started daemon that finds the home still
/// held by one on its way out (idling out, or stepping down for another
/// relay, token or capture) exits at once with nothing wrong; it is
/// started again, for at most [`RETIRE_WAIT`], and that is never taken
/// for a failed start. Only a started daemon that itself failed (exited
/// with an error, or never listened) leaves the failure marker.
fn connect_or_start(home: &Home, serves: &Serves) -> Result<UnixStream> {
    let socket = wire::socket_path(home);
    if let Ok(stream) = UnixStream::connect(&socket) {
        return Ok(stream);
    }
    let marker = wire::failed_path(home);
    let log = home.0.join("logs").join("adapter.log");
    let now = aep_client::session::now_ms();
    if let Some(until) = std::fs::read_to_string(&marker)
        .ok()
        .and_then(|text| retry_at(&text, now))
    {
        return Err(Error::msg(format!(
            "the adapter daemon failed to start lately (why: {}); the daemon start is skipped \
             and retried after {} (remove {} to retry sooner)",
            log.display(),
            aep::control::rfc3339(until),
            marker.display()
        )));
    }
    let retire_deadline = Instant::now() + RETIRE_WAIT;
    let mut pause = RETIRE_PAUSE;
    loop {
        let mut child = start(home, serves)?;
        let why = match started(&socket, &mut child) {
            Started::Listening(stream) => {
                let _ = std::fs::remove_file(&marker);
                return Ok(stream);
            }
            Started::Failed(why) => why,
            Started::StoodDown => {
                // Someone else may listen by now (a daemon another hook
                // started); if not, the old one is still letting go.
                if let Ok(stream) = UnixStream::connect(&socket) {
                    let _ = std::fs::remove_file(&marker);
                    return Ok(stream);
                }
                if Instant::now() + pause >= retire_deadline {
                    return Err(Error::msg(format!(
                        "another adapter daemon still held {} and nobody listened on {} \
                         within {RETIRE_WAIT:?} (why: {}); the next hook starts one again",
                        home.0.display(),
                        socket.display(),
                        log.display()
                    )));
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(RETIRE_PAUSE_MAX);
                continue;
            }
        };
        let failed = aep_client::session::now_ms();
        let written = private_dir(&wire::run_dir(home))
            .and_then(|()| std::fs::write(&marker, format!("{failed}\n")));
        let remembered = match written {
            Ok(()) => format!(
                "; the next start is tried after {}",
                aep::control::rfc3339(failed.saturating_add(retry_after_ms()))
            ),
            Err(e) => format!("; cannot write {}: {e}", marker.display()),
        };
        return Err(Error::msg(format!(
            "{why} (why: {}){remembered}",
            log.display()
        )));
    }
}

/// How a started daemon's start went.
enum Started {
    /// It listens; a connection to it.
    Listening(UnixStream),
    /// It exited with nothing wrong before it listened: another daemon
    /// holds the home (one on its way out, or one another hook started).
    StoodDown,
    /// It exited with an error, or did not listen within [`START_WAIT`];
    /// what happened.
    Failed(String),
}

/// Waits, within [`START_WAIT`], for the daemon `child` to listen on
/// `socket`, or to exit.
fn started(socket: &Path, child: &mut Child) -> Started {
    let deadline = Instant::now() + START_WAIT;
    loop {
        let refused = match UnixStream::connect(socket) {
            Ok(stream) => return Started::Listening(stream),
            Err(e) => e,
        };
        if let Ok(Some(status)) = child.try_wait() {
            return match UnixStream::connect(socket) {
                Ok(stream) => Started::Listening(stream),
                Err(_) if status.success() => Started::StoodDown,
                Err(e) => Started::Failed(format!(
                    "the daemon exited ({status}) before it listened on {}: {e}",
                    socket.display()
                )),
            };
        }
        if Instant::now() >= deadline {
            return Started::Failed(format!(
                "the daemon did not listen on {} within {START_WAIT:?}: {refused}",
                socket.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// [`RETRY_AFTER`] in milliseconds.
fn retry_after_ms() -> u64 {
    u64::try_from(RETRY_AFTER.as_millis()).unwrap_or(u64::MAX)
}

/// When the daemon may be started again, given the failure marker's
/// text (the failed start's Unix time in milliseconds) and the time now;
/// `None` when it may be started now. A marker that does not read, or
/// that lies in the future (a clock set back), is ignored rather than
/// trusted to hold the start off.
fn retry_at(marker: &str, now_ms: u64) -> Option<u64> {
    let failed: u64 = marker.trim().parse().ok()?;
    let until = failed.saturating_add(retry_after_ms());
    (failed <= now_ms && now_ms < until).then_some(until)
}

/// Starts `aep adapter serve` in a session of its own (so neither the
/// vendor's end of the hook nor a signal to the hook's process group or
/// terminal ends it), with no descriptor of the hook's past standard
/// error (a pipe the vendor reads to its end stays the hook's alone), its
/// standard error appended to `logs/adapter.log`.
fn start(home: &Home, serves: &Serves) -> Result<Child> {
    use std::os::unix::process::CommandExt;
    let program = std::env::current_exe().context("cannot find aep")?;
    let logs = home.0.join("logs");
    private_dir(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    let log = open_log(&logs.join("adapter.log"))?;
    let inherited = open_descriptors();
    let mut command = Command::new(program);
    // The hook's settings, whatever the daemon would find in the
    // environment: a `--relay` given to the hook included.
    for (name, value) in [
        ("AEP_RELAY", &serves.relay),
        ("AEP_TOKEN", &serves.token),
        ("AEP_CAPTURE", &serves.capture),
    ] {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command
        .args(["adapter", "serve"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    // SAFETY: the closure runs in the child between fork and exec; it
    // calls only async-signal-safe functions (setsid, syscall, fcntl) and
    // allocates nothing (the descriptors were listed before the fork).
    unsafe {
        command.pre_exec(move || detach(&inherited));
    }
    command.spawn().context("cannot start the daemon")
}

/// The most descriptors tried one by one when they cannot be listed.
const FD_BOUND: libc::c_int = 1 << 16;

/// This process's open descriptors past standard error, listed before a
/// fork (from `/proc/self/fd`, or `/dev/fd`); when neither lists, every
/// number below the open-files limit (at most [`FD_BOUND`]).
fn open_descriptors() -> Vec<libc::c_int> {
    for dir in ["/proc/self/fd", "/dev/fd"] {
        if let Ok(entries) = std::fs::read_dir(dir) {
            return entries
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .filter(|fd: &libc::c_int| *fd > 2)
                .collect();
        }
    }
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the limit into the struct it is given.
    let bound = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        libc::c_int::try_from(limit.rlim_cur)
            .unwrap_or(FD_BOUND)
            .min(FD_BOUND)
    } else {
        FD_BOUND
    };
    (3..bound).collect()
}

/// In the started daemon, between fork and exec: a new session (which
/// also leaves the hook's process group and terminal), and every
/// descriptor past standard error marked close-on-exec, so the exec
/// closes them all. Marking rather than closing keeps the pipe by which
/// the standard library reports a failed exec open until the exec.
fn detach(listed: &[libc::c_int]) -> std::io::Result<()> {
    // SAFETY: setsid takes no arguments; the child of a fork is never a
    // process group leader, so it succeeds unless the system refuses.
    if unsafe { libc::setsid() } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: close_range only sets flags on this process's
        // descriptors; a kernel without it (before 5.11) says ENOSYS or
        // EINVAL, and the list below does the same one by one.
        let all = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC as libc::c_uint,
            )
        };
        if all == 0 {
            return Ok(());
        }
    }
    for &fd in listed {
        // SAFETY: fcntl on a number that is not an open descriptor fails
        // with EBADF and changes nothing.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
    Ok(())
}

fn open_log(path: &Path) -> Result<std::fs::File> {
    super::record::open_capped(path, super::record::LOG_CAP)
        .with_context(|| format!("cannot open {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_start_holds_the_next_off_for_a_while() {
        let failed = 1_000_000;
        let until = failed + retry_after_ms();
        assert_eq!(retry_at("1000000\n", failed), Some(until));
        assert_eq!(retry_at("1000000", until - 1), Some(until));
        assert_eq!(retry_at("1000000", until), None, "retried after the pause");
        assert_eq!(
            retry_at("1000000", failed - 1),
            None,
            "a marker from the future"
        );
        assert_eq!(retry_at("", failed), None);
        assert_eq!(retry_at("yesterday", failed), None);
        assert_eq!(retry_at("-5", failed), None);
    }

    #[test]
    fn the_listed_descriptors_are_past_standard_error() {
        let listed = open_descriptors();
        assert!(listed.iter().all(|fd| *fd > 2), "{listed:?}");
    }
}
