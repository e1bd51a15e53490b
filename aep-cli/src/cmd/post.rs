//! `aep post`: a JSONL capture sent to a relay's `POST /events` in NDJSON
//! batches. A batch the relay refuses at a bad line loses that line only:
//! it is reported with its line number in the file and the relay's reason,
//! and the rest of the batch is sent again.

use std::collections::VecDeque;
use std::time::Duration;

use aep::reader::{too_long_message, Line, LineReader};
use aep_client::http::{BatchAnswer, BatchPoster};
use aep_client::Backoff;
use serde_json::Value;

use super::Status;
use crate::common::input::{self, OneInputArgs};
use crate::common::terminal::{escape, Newlines};
use crate::diag;
use crate::live::RelayArgs;

const LONG_ABOUT: &str = "\
Sends the events of a JSONL capture to a relay (POST /events, NDJSON
batches), in file order.

A relay refuses a batch whole at its first bad line and names it; that line
is reported with its line number in FILE and the relay's reason, and the
rest of the batch is sent again (a relay that took the lines before the bad
one deduplicates them on (source, id)). A line that is not a JSON object is
reported without being sent. Commands (control.attention.respond,
control.cancel, ...) are skipped with a note: they flow only over the
WebSocket, from a sender to one agent (AEP-0004). A relay that cannot be
reached, or answers 5xx, is retried with backoff for a few seconds before
the command gives up. The summary counts the events new to the relay
(accepted) apart from those it already held (same source and id: a
capture posted again), as the relay's answer says.";

const AFTER_HELP: &str = "\
Exit status:
  0  every event was accepted (commands skipped)
  1  some lines were refused (each reported on standard error)
  2  a usage error, an input that cannot be read, a relay that cannot be
     reached or refuses the token

Examples:
  aep post capture.jsonl
  adapter --emit-jsonl | aep post --relay http://127.0.0.1:8787 -
  AEP_TOKEN=$(cat token) aep post --batch 64 day1.jsonl";

/// The arguments of `aep post`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Send a JSONL capture to a relay in batches",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    #[command(flatten)]
    pub relay: RelayArgs,

    /// Most events in one batch.
    #[arg(long, default_value_t = 256, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub batch: u32,

    #[command(flatten)]
    pub input: OneInputArgs,
}

/// Most bytes in one batch (unless one line is larger).
const BATCH_BYTES: usize = 1 << 20;
/// Attempts at one batch while the relay cannot be reached.
const ATTEMPTS: u32 = 6;

/// One line to send: its number in the file and its text.
struct Pending {
    number: u64,
    text: String,
}

/// What the run counted.
#[derive(Default)]
struct Counts {
    /// New to the relay.
    accepted: u64,
    /// Taken, and already held by the relay (same source and id).
    held: u64,
    refused: u64,
    commands: u64,
}

/// Why the run stopped early.
struct Fatal(String);

/// Runs `aep post`.
pub fn run(args: &Args) -> Status {
    let relay = match args.relay.url() {
        Ok(relay) => relay,
        Err(e) => {
            diag!("aep post: error: {e}");
            return Status::Failure;
        }
    };
    let input = match input::open(&args.input.file) {
        Ok(input) => input,
        Err(e) => {
            diag!("aep post: error: {e}");
            return Status::Failure;
        }
    };
    let Some(runtime) = crate::live::runtime("post") else {
        return Status::Failure;
    };
    let poster = match BatchPoster::new(&relay, args.relay.token(), Duration::from_secs(30)) {
        Ok(poster) => poster,
        Err(e) => {
            diag!("aep post: error: {e}");
            return Status::Failure;
        }
    };
    let name = input.name.clone();
    let mut lines = LineReader::new(input.reader, args.input.limit.max_line_bytes);
    let mut counts = Counts::default();
    let mut batch: Vec<Pending> = Vec::new();
    let mut bytes = 0;
    let result = loop {
        let next = match lines.next_line() {
            Ok(next) => next,
            Err(e) => break Err(Fatal(input::InputError::read(&name, &e).to_string())),
        };
        let Some((number, line)) = next else {
            break runtime.block_on(send(
                &poster,
                &name,
                std::mem::take(&mut batch),
                &mut counts,
            ));
        };
        match admit(line, args.input.limit.max_line_bytes) {
            Admit::Send(text) => {
                bytes += text.len();
                batch.push(Pending { number, text });
            }
            Admit::Blank => {}
            Admit::Command(kind) => {
                counts.commands += 1;
                diag!(
                    "aep post: {name}:{number}: `{kind}` skipped: commands flow only over the WebSocket (AEP-0004)"
                );
            }
            Admit::Refused(why) => {
                counts.refused += 1;
                diag!("aep post: {name}:{number}: not sent: {why}");
            }
        }
        if batch.len() >= args.batch as usize || bytes >= BATCH_BYTES {
            bytes = 0;
            let full = std::mem::take(&mut batch);
            if let Err(fatal) = runtime.block_on(send(&poster, &name, full, &mut counts)) {
                break Err(fatal);
            }
        }
    };
    let summary = format!(
        "{} accepted, {} already held, {} refused, {} command(s) skipped",
        counts.accepted, counts.held, counts.refused, counts.commands
    );
    match result {
        Err(Fatal(why)) => {
            diag!("aep post: error: {why}; {summary} before stopping");
            Status::Failure
        }
        Ok(()) => {
            diag!("aep post: {name} to {relay}: {summary}");
            if counts.refused > 0 {
                Status::Findings
            } else {
                Status::Clean
            }
        }
    }
}

/// What happens to one line of the file.
enum Admit {
    Send(String),
    Blank,
    Command(String),
    Refused(String),
}

fn admit(line: Line<'_>, limit: usize) -> Admit {
    let bytes = match line {
        Line::TooLong { bytes } => return Admit::Refused(too_long_message(bytes, limit)),
        Line::Text(bytes) => bytes,
    };
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Admit::Refused("not UTF-8".into());
    };
    if text.trim().is_empty() {
        return Admit::Blank;
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => return Admit::Refused(format!("not JSON: {e}")),
    };
    let Some(kind) = value.get("type") else {
        return match value {
            Value::Object(_) => Admit::Send(text.trim().to_owned()),
            _ => Admit::Refused("not a JSON object".into()),
        };
    };
    match kind.as_str() {
        Some(kind) if aep::control::is_command_type(kind) => Admit::Command(kind.to_owned()),
        _ => Admit::Send(text.trim().to_owned()),
    }
}

/// Sends one batch until every line is accepted or reported.
async fn send(
    poster: &BatchPoster,
    name: &str,
    batch: Vec<Pending>,
    counts: &mut Counts,
) -> Result<(), Fatal> {
    let mut parts: VecDeque<Vec<Pending>> = VecDeque::from([batch]);
    let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(3));
    while let Some(mut part) = parts.pop_front() {
        let mut failures = 0;
        while !part.is_empty() {
            let lines: Vec<&str> = part.iter().map(|p| p.text.as_str()).collect();
            let (answer, duplicates) = poster.post_counted(&lines).await;
            match answer {
                BatchAnswer::Accepted => {
                    // A relay that does not say how many it held already
                    // counts them all as accepted.
                    let taken = part.len() as u64;
                    let held = duplicates.unwrap_or(0).min(taken);
                    counts.accepted += taken - held;
                    counts.held += held;
                    backoff.reset();
                    break;
                }
                BatchAnswer::Retry(why) => {
                    failures += 1;
                    if failures >= ATTEMPTS {
                        return Err(Fatal(format!("the relay cannot be reached ({why})")));
                    }
                    tokio::time::sleep(backoff.next_wait()).await;
                }
                BatchAnswer::BadLine {
                    index: Some(index),
                    code,
                    detail,
                } if index < part.len() => {
                    let bad = part.remove(index);
                    refused(name, &bad, &code, &detail, counts);
                }
                BatchAnswer::BadLine { code, detail, .. }
                | BatchAnswer::TooLarge { code, detail }
                    if part.len() == 1 =>
                {
                    refused(name, &part[0], &code, &detail, counts);
                    break;
                }
                BatchAnswer::BadLine { .. } | BatchAnswer::TooLarge { .. } => {
                    // No line named, or too large: halve until the bad
                    // line stands alone.
                    let rest = part.split_off(part.len() / 2);
                    parts.push_front(rest);
                }
                BatchAnswer::Refused {
                    status,
                    code,
                    detail,
                } => {
                    let what = match status {
                        401 | 403 => "the relay refused the token (--token, AEP_TOKEN)",
                        _ => "the relay refused the request",
                    };
                    return Err(Fatal(format!(
                        "{what}: HTTP {status} {}",
                        one_line(&format!("{code} {detail}"))
                    )));
                }
                other => return Err(Fatal(format!("unexpected answer: {other:?}"))),
            }
        }
    }
    Ok(())
}

fn refused(name: &str, line: &Pending, code: &str, detail: &str, counts: &mut Counts) {
    counts.refused += 1;
    let code = if code.is_empty() { "refused" } else { code };
    diag!(
        "aep post: {name}:{}: refused by the relay: {code}: {}",
        line.number,
        one_line(detail)
    );
}

fn one_line(text: &str) -> String {
    escape(text.trim(), Newlines::Escape).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_sorted_before_sending() {
        let limit = 1024;
        assert!(matches!(admit(Line::Text(b"  "), limit), Admit::Blank));
        assert!(
            matches!(admit(Line::Text(b"{\"a\""), limit), Admit::Refused(w) if w.starts_with("not JSON"))
        );
        assert!(
            matches!(admit(Line::Text(b"[1]"), limit), Admit::Refused(w) if w == "not a JSON object")
        );
        assert!(matches!(admit(Line::Text(b"\xff"), limit), Admit::Refused(w) if w == "not UTF-8"));
        assert!(matches!(
            admit(Line::TooLong { bytes: 5000 }, limit),
            Admit::Refused(_)
        ));
        assert!(matches!(
            admit(Line::Text(br#"{"type":"control.cancel"}"#), limit),
            Admit::Command(t) if t == "control.cancel"
        ));
        assert!(matches!(
            admit(Line::Text(br#"{"type":"x.acme.control.reboot"}"#), limit),
            Admit::Command(_)
        ));
        // The acks are events of their session, not commands.
        assert!(matches!(
            admit(Line::Text(br#" {"type":"control.accepted"} "#), limit),
            Admit::Send(t) if t == r#"{"type":"control.accepted"}"#
        ));
    }
}
