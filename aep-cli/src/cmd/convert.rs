//! `aep convert`: JSONL of AEP events to CloudEvents, OTLP log records or
//! OCSF records, and CloudEvents back to AEP events (the AEP-0005
//! bridges).

use aep::aep_types::reader::{too_long_message, unsupported_version, Line, LineReader};
use aep::bridge::cloudevents::{self, CloudEvent};
use aep::bridge::{ocsf, otlp};
use aep::{Capture, Event};

use super::Status;
use crate::common::error::{Context, Error, Result};
use crate::common::input::{self, OneInputArgs};
use crate::common::output::{Stdout, WriteError};
use crate::diag;

const LONG_ABOUT: &str = "\
Converts a JSONL stream with the AEP-0005 bridges, one output line per
converted input line:

  --to cloudevents   each AEP event as a CloudEvents 1.0 event (JSON format,
                     structured mode), losslessly
  --to otlp          each AEP event as an OTLP log record, in the log data
                     model's JSON form
  --to ocsf          each event of the security-relevant families as an OCSF
                     1.8.0 record; other events print nothing
  --from cloudevents each CloudEvent of an AEP type back to the AEP event;
                     attributes AEP cannot carry are dropped with a warning,
                     and events that are not valid AEP events are refused

OTLP and OCSF are egress points of the capture model: an event above
--max-capture (default `metadata`) leaves as its envelope alone, no member
of its payload with it, stating its own capture. The CloudEvents directions
are lossless and down-level (as a forwarding hop does) only when
--max-capture is given.

A line that cannot be converted is reported on standard error with its line
number, and the rest is converted. The input is not validated beyond what
conversion needs; `aep validate` does that.";

const AFTER_HELP: &str = "\
Exit status:
  0  every line converted
  1  at least one line refused (the others are converted)
  2  a usage error, or an input that cannot be read

Examples:
  aep convert --to cloudevents capture.jsonl > ce.jsonl
  aep convert --from cloudevents ce.jsonl | aep validate -
  adapter --emit-jsonl | aep convert --to otlp --max-capture none
  aep convert --to ocsf --max-capture redacted capture.jsonl";

/// The arguments of `aep convert`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Convert AEP events to CloudEvents, OTLP log records or OCSF records, and back",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
#[command(group(clap::ArgGroup::new("direction").required(true).args(["to", "from"])))]
pub struct Args {
    /// The format AEP events are converted to.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub to: Option<Target>,

    /// The format converted back to AEP events.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub from: Option<Origin>,

    /// The capture ceiling: `none`, `metadata`, `redacted` or `full`. Events
    /// above it are exported from their envelope alone (otlp, ocsf) or
    /// down-levelled (cloudevents). Default: `metadata` for otlp and ocsf,
    /// none (lossless) for cloudevents.
    #[arg(long, value_name = "LEVEL", value_parser = parse_capture)]
    pub max_capture: Option<Capture>,

    #[command(flatten)]
    pub input: OneInputArgs,
}

/// What `--to` converts AEP events to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// CloudEvents 1.0, JSON format, structured mode.
    Cloudevents,
    /// OTLP log records, as the log data model's JSON object.
    Otlp,
    /// OCSF 1.8.0 records.
    Ocsf,
}

/// What `--from` converts to AEP events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Origin {
    /// CloudEvents 1.0, JSON format, structured mode, of AEP types.
    Cloudevents,
}

fn parse_capture(text: &str) -> Result<Capture> {
    text.parse().map_err(|_| {
        Error::msg(format_args!(
            "`{text}` is not a capture level (none, metadata, redacted, full)"
        ))
    })
}

/// One input line's outcome.
enum Converted {
    /// A line to print.
    Line(String),
    /// Nothing to print (an event with no OCSF class, a blank line).
    Nothing,
}

/// Converts one line, or says why not. Warnings go to `warn`.
type Converter = Box<dyn FnMut(&[u8], &mut dyn FnMut(String)) -> Result<Converted>>;

/// Runs `aep convert`.
pub fn run(args: &Args) -> Status {
    let input = match input::open(&args.input.file) {
        Ok(input) => input,
        Err(e) => {
            diag!("aep convert: error: {e}");
            return Status::Failure;
        }
    };
    let mut convert = converter(args);
    let mut out = Stdout::new();
    let mut lines = LineReader::new(input.reader, args.input.limit.max_line_bytes);
    let (mut converted, mut refused) = (0u64, 0u64);
    loop {
        // Before a read that may wait, what is decided leaves.
        if !input::line_ready(lines.get_ref()) {
            match out.flush() {
                Ok(()) => {}
                Err(WriteError::Closed) => return status(refused),
                Err(e) => {
                    diag!("aep convert: error: {e}");
                    return Status::Failure;
                }
            }
        }
        let (number, result) = match lines.next_line() {
            Ok(None) => break,
            Ok(Some((number, Line::TooLong { bytes }))) => (
                number,
                Err(Error::msg(too_long_message(
                    bytes,
                    args.input.limit.max_line_bytes,
                ))),
            ),
            Ok(Some((number, Line::Text(text)))) => {
                let name = &input.name;
                let mut warn =
                    |message: String| diag!("aep convert: {name}:{number}: warning: {message}");
                (number, convert(text, &mut warn))
            }
            Err(e) => {
                diag!(
                    "aep convert: error: {}",
                    input::InputError::read(&input.name, &e)
                );
                return Status::Failure;
            }
        };
        match result {
            Ok(Converted::Line(line)) => {
                converted += 1;
                match out.line(line.as_bytes(), b"\n") {
                    Ok(()) => {}
                    Err(WriteError::Closed) => return status(refused),
                    Err(e) => {
                        diag!("aep convert: error: {e}");
                        return Status::Failure;
                    }
                }
            }
            Ok(Converted::Nothing) => {}
            Err(message) => {
                refused += 1;
                diag!("aep convert: {}:{number}: error: {message}", input.name);
            }
        }
    }
    match out.flush() {
        Ok(()) | Err(WriteError::Closed) => {}
        Err(e) => {
            diag!("aep convert: error: {e}");
            return Status::Failure;
        }
    }
    if refused > 0 {
        diag!("aep convert: {converted} converted, {refused} refused");
    }
    status(refused)
}

fn status(refused: u64) -> Status {
    if refused > 0 {
        Status::Findings
    } else {
        Status::Clean
    }
}

/// The conversion the arguments ask for.
fn converter(args: &Args) -> Converter {
    let ceiling = args.max_capture;
    let egress = ceiling.unwrap_or(Capture::Metadata);
    match (args.to, args.from) {
        (Some(Target::Cloudevents), _) => Box::new(move |line, _| {
            let Some(event) = read_event(line, ceiling)? else {
                return Ok(Converted::Nothing);
            };
            let ce = cloudevents::forward(&event).map_err(Error::from_source)?;
            Ok(Converted::Line(encode(&ce)?))
        }),
        (Some(Target::Otlp), _) => {
            let options = otlp::Options {
                max_capture: egress,
                ..otlp::Options::default()
            };
            Box::new(move |line, _| {
                let Some(event) = read_event(line, None)? else {
                    return Ok(Converted::Nothing);
                };
                let record = otlp::to_log_record(&event, &options).map_err(Error::from_source)?;
                Ok(Converted::Line(encode(&record)?))
            })
        }
        (Some(Target::Ocsf), _) => {
            let options = ocsf::Options {
                max_capture: egress,
            };
            Box::new(move |line, _| {
                let Some(event) = read_event(line, None)? else {
                    return Ok(Converted::Nothing);
                };
                match ocsf::project(&event, &options).map_err(Error::from_source)? {
                    Some(record) => Ok(Converted::Line(encode(&record)?)),
                    None => Ok(Converted::Nothing),
                }
            })
        }
        (None, _) => Box::new(move |line, warn| from_cloudevent(line, ceiling, warn)),
    }
}

/// The event on a line (`None` for a blank line), down-levelled to
/// `ceiling` when there is one.
fn read_event(line: &[u8], ceiling: Option<Capture>) -> Result<Option<Event>> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    if let Some(version) = unsupported_version(line) {
        return Err(Error::msg(format_args!(
            "`aep` version `{version}` is not supported (this tool reads 0.x)"
        )));
    }
    let event: Event = serde_json::from_slice(line).context("not an AEP event")?;
    Ok(Some(match ceiling {
        Some(ceiling) => event.down_level(ceiling),
        None => event,
    }))
}

fn from_cloudevent(
    line: &[u8],
    ceiling: Option<Capture>,
    warn: &mut dyn FnMut(String),
) -> Result<Converted> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(Converted::Nothing);
    }
    let ce: CloudEvent = serde_json::from_slice(line).context("not a CloudEvent")?;
    let inbound = cloudevents::inverse(&ce).map_err(Error::from_source)?;
    for dropped in &inbound.dropped {
        warn(dropped.to_string());
    }
    if let Err(violations) = inbound.event.validate() {
        let list: Vec<String> = violations.0.iter().map(ToString::to_string).collect();
        return Err(Error::msg(format_args!(
            "not a valid AEP event: {}",
            list.join("; ")
        )));
    }
    let event = match ceiling {
        Some(ceiling) => inbound.event.down_level(ceiling),
        None => inbound.event,
    };
    Ok(Converted::Line(encode(&event)?))
}

fn encode(value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(value).context("cannot encode")
}
