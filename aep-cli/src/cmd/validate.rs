//! `aep validate`: every per-event check and the stream rules over JSONL
//! files, one finding per line of output.

use std::cell::Cell;
use std::io::{self, BufRead, Read};

use aep::stream::{validate_reader_parallel, Finding, Level, Options, Summary};
use serde::Serialize;

use super::Status;
use crate::common::input::{self, Input, InputArgs, InputError, Reader};
use crate::common::output::{Stdout, WriteError};
use crate::common::progress::Progress;
use crate::common::terminal::{self, Newlines};
use crate::diag;

const LONG_ABOUT: &str = "\
Checks JSONL captures of AEP events: each line against the envelope and its
type's payload schema, the type registry and the event's declared capture
level, and the stream as a whole against the protocol's stream rules
(positions per session, deduplication on (source, id), one terminal per run
and per session, attention closed before the session ends, one
acknowledgement per command, form answers that fit their request).

Each FILE is its own stream: state does not carry from one file to the next.
Every finding is reported with its line number and validation continues.

Text findings read `FILE:LINE: error[RULE]: MESSAGE` (or `warning[RULE]`);
a summary line goes to standard error.";

const AFTER_HELP: &str = "\
Exit status:
  0  no errors (warnings allowed)
  1  at least one error
  2  a usage error, or an input that cannot be read (missing, a directory)

Examples:
  aep validate capture.jsonl
  aep validate --format json day1.jsonl day2.jsonl | jq -r .rule | sort | uniq -c
  adapter --emit-jsonl | aep validate -
  aep validate --max-line-bytes 16MiB big.jsonl
  aep validate --jobs 1 capture.jsonl";

/// The most `--jobs` (the library uses no more threads).
const MAX_JOBS: i64 = aep::stream::MAX_JOBS as i64;

/// The arguments of `aep validate`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Check JSONL streams of AEP events against every event and stream rule",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    /// How findings are printed: `text` lines, or `json`, one object per
    /// line with `file`, `line`, `rule`, `severity`, `message` and `id`
    /// (when known).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// Threads for decoding and the per-event checks (the stream rules
    /// run in line order on one), from 1 to 64; the output is the same for
    /// any number. Default: the available cores, at most 64. `--jobs 1`
    /// takes the least CPU time and memory, and is the fastest on a machine
    /// busy with other work.
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u16).range(1..=MAX_JOBS))]
    pub jobs: Option<u16>,

    #[command(flatten)]
    pub input: InputArgs,
}

/// The output format of findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// `FILE:LINE: error[RULE]: MESSAGE`
    Text,
    /// One JSON object per finding per line.
    Json,
}

/// Runs `aep validate`.
pub fn run(args: &Args) -> Status {
    let options = Options {
        max_line_bytes: args.input.limit.max_line_bytes,
    };
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, usize::from),
        usize::from,
    );
    let mut out = Stdout::new();
    let mut totals = Totals::default();
    let mut status = Status::Clean;
    for path in &args.input.files {
        let input = match input::open(path) {
            Ok(input) => input,
            Err(e) => {
                diag!("aep validate: error: {e}");
                status = status.max(Status::Failure);
                continue;
            }
        };
        let name = input.name.clone();
        match validate_one(input, &options, jobs, args.format, &mut out) {
            Ok(summary) => totals.add(&summary),
            Err(Stop::Closed { errors }) => {
                let seen = if errors {
                    Status::Findings
                } else {
                    Status::Clean
                };
                return status.max(totals.status()).max(seen);
            }
            Err(Stop::Read(e)) => {
                diag!("aep validate: error: {}", InputError::read(&name, &e));
                status = status.max(Status::Failure);
            }
            Err(Stop::Write(e)) => {
                diag!("aep validate: error: {e}");
                return Status::Failure;
            }
        }
    }
    match out.flush() {
        Ok(()) => {}
        Err(WriteError::Closed) => return status.max(totals.status()),
        Err(e) => {
            diag!("aep validate: error: {e}");
            return Status::Failure;
        }
    }
    diag!("aep validate: {}", totals.line());
    status.max(totals.status())
}

/// Why validating one input stopped early.
enum Stop {
    /// Standard output went away; `errors` tells whether an error was
    /// found in this input before that.
    Closed { errors: bool },
    /// The input failed to read.
    Read(io::Error),
    /// Standard output failed.
    Write(WriteError),
}

/// Validates one input as its own stream, printing its findings.
fn validate_one(
    input: Input,
    options: &Options,
    jobs: usize,
    format: Format,
    out: &mut Stdout,
) -> Result<Summary, Stop> {
    let progress = Progress::new(&input.name, input.len);
    let stopped = Cell::new(false);
    let mut errors = false;
    let mut write_error = None;
    let reader = UntilStopped {
        inner: input.reader,
        stopped: &stopped,
    };
    let name = input.name.as_str();
    let result = validate_reader_parallel(
        reader,
        options.clone(),
        jobs,
        |finding| {
            if stopped.get() {
                return;
            }
            errors |= finding.level == Level::Error;
            // On a terminal each finding shows at once (and around the
            // progress bar); into a pipe or file they are buffered.
            let mut line = Vec::new();
            write_finding(&mut line, format, name, &finding);
            let written = if out.is_terminal() {
                progress.suspend(|| {
                    out.line(&line, b"")?;
                    out.flush()
                })
            } else {
                out.line(&line, b"")
            };
            if let Err(e) = written {
                write_error = Some(e);
                stopped.set(true);
            }
        },
        |bytes| progress.update(bytes),
    );
    progress.finish();
    match (write_error, result) {
        (Some(WriteError::Closed), _) => Err(Stop::Closed { errors }),
        (Some(e), _) => Err(Stop::Write(e)),
        (None, Err(e)) => Err(Stop::Read(e)),
        (None, Ok(summary)) => Ok(summary),
    }
}

/// One finding as its line of output.
fn write_finding(w: &mut Vec<u8>, format: Format, file: &str, finding: &Finding) {
    match format {
        Format::Text => {
            let severity = severity_name(finding.level);
            let message = one_line(&finding.message);
            let place = if finding.line == 0 {
                format!("{}: ", one_line(file))
            } else {
                format!("{}:{}: ", one_line(file), finding.line)
            };
            let rule = finding.rule.name();
            w.extend_from_slice(format!("{place}{severity}[{rule}]: {message}\n").as_bytes());
        }
        Format::Json => {
            let record = JsonFinding {
                file,
                line: (finding.line > 0).then_some(finding.line),
                rule: finding.rule.name(),
                severity: severity_name(finding.level),
                message: &finding.message,
                id: finding.id.as_deref(),
            };
            // Plain strings and numbers: encoding cannot fail.
            if serde_json::to_writer(&mut *w, &record).is_err() {
                w.clear();
            }
            w.push(b'\n');
        }
    }
}

/// A finding as `--format json` prints it.
#[derive(Serialize)]
struct JsonFinding<'a> {
    file: &'a str,
    /// 1-based; `null` for a finding about the whole stream.
    line: Option<u64>,
    rule: &'static str,
    severity: &'static str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
}

fn severity_name(level: Level) -> &'static str {
    match level {
        Level::Error => "error",
        Level::Warning => "warning",
    }
}

/// Event text on one output line, its control characters escaped.
fn one_line(message: &str) -> std::borrow::Cow<'_, str> {
    terminal::escape(message, Newlines::Escape)
}

/// The totals over every file.
#[derive(Default)]
struct Totals {
    files: u64,
    lines: u64,
    events: u64,
    errors: u64,
    warnings: u64,
    skipped: u64,
}

impl Totals {
    fn add(&mut self, summary: &Summary) {
        self.files += 1;
        self.lines += summary.lines;
        self.events += summary.events;
        self.errors += summary.errors;
        self.warnings += summary.warnings;
        self.skipped += summary.skipped;
    }

    fn status(&self) -> Status {
        if self.errors > 0 {
            Status::Findings
        } else {
            Status::Clean
        }
    }

    /// The summary line: `2 files, 40 lines, 39 events: 1 error, 0 warnings`,
    /// and how many lines of an unsupported version were skipped, if any.
    fn line(&self) -> String {
        let mut line = format!(
            "{}, {}, {}: {}, {}",
            plural(self.files, "file"),
            plural(self.lines, "line"),
            plural(self.events, "event"),
            plural(self.errors, "error"),
            plural(self.warnings, "warning"),
        );
        if self.skipped > 0 {
            line.push_str(&format!(
                "; {} of an unsupported version skipped",
                plural(self.skipped, "line")
            ));
        }
        line
    }
}

fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A reader that reports end of input once `stopped` is set, so that
/// validation ends soon after standard output goes away.
struct UntilStopped<'a> {
    inner: Reader,
    stopped: &'a Cell<bool>,
}

impl Read for UntilStopped<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.stopped.get() {
            return Ok(0);
        }
        self.inner.read(buf)
    }
}

impl BufRead for UntilStopped<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.stopped.get() {
            return Ok(&[]);
        }
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.inner.consume(amount);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_line_counts_in_words() {
        let mut totals = Totals::default();
        totals.add(&Summary {
            lines: 1,
            events: 1,
            warnings: 2,
            ..Summary::default()
        });
        assert_eq!(
            totals.line(),
            "1 file, 1 line, 1 event: 0 errors, 2 warnings"
        );
        totals.skipped = 3;
        assert_eq!(
            totals.line(),
            "1 file, 1 line, 1 event: 0 errors, 2 warnings; 3 lines of an unsupported version skipped"
        );
        assert_eq!(totals.status(), Status::Clean);
        totals.errors = 1;
        assert_eq!(totals.status(), Status::Findings);
    }

    fn printed(format: Format, line: u64, id: Option<&str>) -> String {
        let finding = Finding {
            line,
            rule: aep::stream::Rule::Duplicate,
            level: Level::Warning,
            message: "two\nlines".to_owned(),
            id: id.map(str::to_owned),
        };
        let mut out = Vec::new();
        write_finding(&mut out, format, "f.jsonl", &finding);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn findings_print_as_documented() {
        assert_eq!(
            printed(Format::Text, 3, Some("e1")),
            "f.jsonl:3: warning[duplicate]: two\\nlines\n"
        );
        assert_eq!(
            printed(Format::Json, 3, Some("e1")),
            concat!(
                r#"{"file":"f.jsonl","line":3,"rule":"duplicate","severity":"warning","#,
                r#""message":"two\nlines","id":"e1"}"#,
                "\n"
            )
        );
        // A finding about the whole stream has no line; no id, no member.
        assert_eq!(
            printed(Format::Text, 0, None),
            "f.jsonl: warning[duplicate]: two\\nlines\n"
        );
        assert_eq!(
            printed(Format::Json, 0, None),
            concat!(
                r#"{"file":"f.jsonl","line":null,"rule":"duplicate","severity":"warning","#,
                r#""message":"two\nlines"}"#,
                "\n"
            )
        );
    }

    #[test]
    fn messages_stay_on_one_line() {
        assert_eq!(one_line("a\nb\r\nc"), "a\\nb\\r\\nc");
        assert_eq!(one_line("s\u{1b}]0;owned\u{7}"), "s\\x1b]0;owned\\x07");
        assert_eq!(one_line("plain"), "plain");
    }
}
