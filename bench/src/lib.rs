//! The measurements behind `cargo xtask bench`: decoding, typing,
//! validating, down-levelling and encoding a JSONL corpus with
//! `aep-types`, validating it as a stream with `aep` (what
//! `aep validate` runs), redacting its text and emitting its events at
//! ceiling `redacted` with `aep`, against serde_json baselines measured in
//! the same run.

pub mod alloc;
mod bridge;
pub mod corpus;
pub mod filter;
pub mod hostile;
#[cfg(feature = "nats")]
pub mod nats;
pub mod relay;

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use aep::filter::Filter;
use aep::stream::{validate_reader, validate_reader_parallel, Options as StreamOptions};
use aep_types::reader::EventReader;
use aep_types::{Capture, Event, EventRef};
use serde::Serialize;
use serde_json::Value;

/// What to measure.
pub struct Options {
    /// The JSONL corpus.
    pub corpus: String,
    /// Timed passes per measurement; the median is reported.
    pub passes: usize,
    /// The registry whose in-process generation is timed.
    pub schemas: std::path::PathBuf,
    /// How many times generation is timed.
    pub codegen_runs: usize,
    /// The wall time of `cargo xtask codegen --check`, measured outside.
    pub codegen_check_ms: Option<f64>,
}

/// One decode-side measurement.
#[derive(Debug, Serialize)]
pub struct Row {
    /// What was measured.
    pub name: &'static str,
    /// What it does to each line.
    pub what: &'static str,
    /// Median seconds for the whole corpus.
    pub seconds: f64,
    /// Megabytes (10^6 bytes) of corpus per second.
    pub mb_per_s: f64,
    /// Events per second.
    pub events_per_s: f64,
    /// Time relative to `floor`.
    pub vs_floor: f64,
    /// Time relative to `value`.
    pub vs_value: f64,
    /// Time relative to `validate`.
    pub vs_validate: f64,
}

/// The stream validator's verdict on the corpus, taken before it is timed:
/// the `stream` row is only measured, and the run only succeeds, when the
/// corpus is a valid stream.
#[derive(Debug, Serialize)]
pub struct StreamCheck {
    /// Lines read.
    pub lines: u64,
    /// Findings of level error.
    pub errors: u64,
    /// Findings of level warning.
    pub warnings: u64,
    /// The first findings (at most 10), as `line N: level[rule]: message`.
    pub first: Vec<String>,
}

/// Every figure of one run.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Corpus size in bytes.
    pub corpus_bytes: usize,
    /// Corpus size in events.
    pub corpus_events: usize,
    /// Lines left out because they do not decode, type or validate.
    pub skipped_lines: usize,
    /// Timed passes per row.
    pub passes: usize,
    /// The rows, `floor` first; `stream` only when the corpus is a valid
    /// stream (see `stream_check`).
    pub rows: Vec<Row>,
    /// What the stream validator found in the corpus.
    pub stream_check: StreamCheck,
    /// Peak heap growth (bytes) of a streaming pass over the first half
    /// of the corpus and over all of it; `None` without the counting
    /// allocator (as in tests).
    pub stream_peak_bytes: Option<(usize, usize)>,
    /// Peak heap growth (bytes) of stream validation over the first half
    /// of the corpus and over all of it (it keeps a fingerprint per seen
    /// id, so it grows with the ids); `None` without the counting
    /// allocator.
    pub validate_stream_peak_bytes: Option<(usize, usize)>,
    /// Median in-process time to generate the registry, in milliseconds.
    pub codegen_ms: f64,
    /// Median wall time of a warm `cargo xtask codegen --check`, in
    /// milliseconds, when `cargo xtask bench` measured it.
    pub codegen_check_ms: Option<f64>,
}

/// One measured operation over the whole corpus.
struct Measurement<'a> {
    name: &'static str,
    what: &'static str,
    run: Box<dyn FnMut() + 'a>,
}

/// Times every measurement `passes` times, round-robin so that noise on a
/// shared machine falls on all of them alike, after one warm-up pass
/// each; returns the medians.
fn medians(passes: usize, measurements: &mut [Measurement<'_>]) -> Vec<Duration> {
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); measurements.len()];
    for pass in 0..=passes.max(1) {
        for (m, t) in measurements.iter_mut().zip(&mut times) {
            let start = Instant::now();
            (m.run)();
            if pass > 0 {
                t.push(start.elapsed());
            }
        }
    }
    times
        .into_iter()
        .map(|mut t| {
            t.sort();
            t[t.len() / 2]
        })
        .collect()
}

/// Runs every measurement.
pub fn run(options: &Options) -> Report {
    // Every row handles every line the same way, so only lines that decode,
    // type and validate are measured; the others are counted and skipped.
    let all = options
        .corpus
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count();
    let lines: Vec<&str> = options
        .corpus
        .lines()
        .filter(|l| {
            serde_json::from_str::<Event>(l)
                .is_ok_and(|e| e.payload().is_ok() && e.validate().is_ok())
        })
        .collect();
    let skipped = all - lines.len();
    let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
    let passes = options.passes;
    let events: Vec<Event> = lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("the corpus decodes"))
        .collect();
    let values: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("the corpus is JSON"))
        .collect();
    let stream_check = check_stream(options.corpus.as_bytes());
    let lines = &lines;
    let per_line = |name, what, f: fn(&str)| Measurement {
        name,
        what,
        run: Box::new(move || lines.iter().for_each(|l| f(l))),
    };
    let redactor = aep::redact::Redactor::new(aep::redact::Options::default().home("/home/ada"));
    let emitter = aep::emit::Emitter::with_redactor(redactor.clone());
    let jobs = std::thread::available_parallelism().map_or(1, usize::from);
    let bench_filter = filter::filter();
    let mut event_buffer = Vec::with_capacity(64 * 1024);
    let mut value_buffer = Vec::with_capacity(64 * 1024);
    let mut measurements = vec![
        per_line("floor", "serde_json into IgnoredAny", |l| {
            black_box(serde_json::from_str::<serde::de::IgnoredAny>(l).unwrap());
        }),
        per_line("value", "serde_json into Value", |l| {
            black_box(serde_json::from_str::<Value>(l).unwrap());
        }),
        per_line("envelope", "Event decode", |l| {
            black_box(serde_json::from_str::<Event>(l).unwrap());
        }),
        per_line("borrowed", "EventRef decode", |l| {
            black_box(EventRef::from_json(l).unwrap());
        }),
        per_line("typed", "Event decode + payload()", |l| {
            let event: Event = serde_json::from_str(l).unwrap();
            black_box(event.payload().unwrap());
        }),
        per_line("typed_single", "EventRef::decode_typed (one read)", |l| {
            black_box(EventRef::decode_typed(l).unwrap());
        }),
        per_line(
            "validate",
            "Event decode + validate() (which types the payload)",
            |l| {
                let event: Event = serde_json::from_str(l).unwrap();
                event.validate().unwrap();
                black_box(&event);
            },
        ),
        Measurement {
            name: "stream",
            what: "aep::stream::validate_reader over the corpus (every event check and the stream rules)",
            run: Box::new(|| {
                let summary = validate_reader(
                    options.corpus.as_bytes(),
                    StreamOptions::default(),
                    |finding| {
                        black_box(finding);
                    },
                    |_| {},
                )
                .expect("reading from memory does not fail");
                black_box(summary);
            }),
        },
        Measurement {
            name: "stream_parallel",
            what: "aep::stream::validate_reader_parallel on the available cores (`aep validate --jobs N`)",
            run: Box::new(move || {
                let summary = validate_reader_parallel(
                    options.corpus.as_bytes(),
                    StreamOptions::default(),
                    jobs,
                    |finding| {
                        black_box(finding);
                    },
                    |_| {},
                )
                .expect("reading from memory does not fail");
                black_box(summary);
            }),
        },
        per_line(
            "down_level",
            "Event decode + down_level(metadata) (which types the payload)",
            |l| {
                let event: Event = serde_json::from_str(l).unwrap();
                black_box(event.down_level(Capture::Metadata));
            },
        ),
        Measurement {
            name: "redact",
            what: "aep::redact pipeline over each line as text (MB/s of text)",
            run: Box::new(|| {
                for line in lines {
                    black_box(redactor.redact_str(line));
                }
            }),
        },
        Measurement {
            name: "redact_stream",
            what: "aep::redact::Stream over the corpus in 64 KiB chunks (`aep redact`)",
            run: Box::new(|| {
                let mut stream = redactor.stream(aep_types::reader::DEFAULT_MAX_LINE_BYTES);
                let mut written = 0;
                for chunk in options.corpus.as_bytes().chunks(64 * 1024) {
                    stream.write(chunk, &mut |line| written += line.len());
                }
                stream.finish(&mut |line| written += line.len());
                black_box(written);
            }),
        },
        Measurement {
            name: "emit",
            what: "Event decode + aep::emit at ceiling redacted (digests, pipeline, drop)",
            run: Box::new(|| {
                for line in lines {
                    let event: Event = serde_json::from_str(line).unwrap();
                    black_box(emitter.emit(&event, Capture::Redacted).unwrap());
                }
            }),
        },
        Measurement {
            name: "encode",
            what: "Event back to JSON",
            run: Box::new(|| {
                for event in &events {
                    event_buffer.clear();
                    serde_json::to_writer(&mut event_buffer, event).unwrap();
                    black_box(&event_buffer);
                }
            }),
        },
        Measurement {
            name: "encode_value",
            what: "Value back to JSON",
            run: Box::new(|| {
                for value in &values {
                    value_buffer.clear();
                    serde_json::to_writer(&mut value_buffer, value).unwrap();
                    black_box(&value_buffer);
                }
            }),
        },
    ];
    measurements.extend(filter_measurements(lines, &bench_filter));
    if stream_check.errors > 0 {
        // A row for an invalid stream would time the error path.
        measurements.retain(|m| !m.name.starts_with("stream"));
    }
    measurements.extend(bridge::measurements(&events));
    let times = medians(passes, &mut measurements);
    let timings: Vec<(&'static str, &'static str, Duration)> = measurements
        .iter()
        .zip(times)
        .map(|(m, t)| (m.name, m.what, t))
        .collect();
    drop(measurements);
    let floor = timings[0].2.as_secs_f64();
    let value = timings[1].2.as_secs_f64();
    let validate = timings
        .iter()
        .find(|t| t.0 == "validate")
        .expect("the validate row")
        .2
        .as_secs_f64();
    let rows = timings
        .into_iter()
        .map(|(name, what, time)| {
            let seconds = time.as_secs_f64();
            Row {
                name,
                what,
                seconds,
                mb_per_s: bytes as f64 / 1e6 / seconds,
                events_per_s: lines.len() as f64 / seconds,
                vs_floor: seconds / floor,
                vs_value: seconds / value,
                vs_validate: seconds / validate,
            }
        })
        .collect();

    let stream_peak_bytes = alloc::counting().then(|| {
        let corpus = options.corpus.as_bytes();
        let cut = corpus[..corpus.len() / 2]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        (stream_peak(&corpus[..cut]), stream_peak(corpus))
    });
    let validate_stream_peak_bytes = alloc::counting().then(|| {
        let corpus = options.corpus.as_bytes();
        let cut = corpus[..corpus.len() / 2]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        (
            validate_stream_peak(&corpus[..cut]),
            validate_stream_peak(corpus),
        )
    });
    let mut codegen = [Measurement {
        name: "codegen",
        what: "generate the registry",
        run: Box::new(|| {
            black_box(aep_codegen::generate(&options.schemas).expect("the registry generates"));
        }),
    }];
    let codegen = medians(options.codegen_runs, &mut codegen)[0];
    Report {
        corpus_bytes: bytes,
        corpus_events: lines.len(),
        skipped_lines: skipped,
        passes,
        rows,
        stream_check,
        stream_peak_bytes,
        validate_stream_peak_bytes,
        codegen_ms: codegen.as_secs_f64() * 1e3,
        codegen_check_ms: options.codegen_check_ms,
    }
}

/// The `filter` rows (see [`filter`]), each over every line into an
/// output buffer.
fn filter_measurements<'a>(lines: &'a [&'a str], filter: &'a Filter) -> Vec<Measurement<'a>> {
    let row = |name, what, f: fn(&Filter, &str, &mut Vec<u8>)| {
        let mut out = Vec::with_capacity(1 << 20);
        Measurement {
            name,
            what,
            run: Box::new(move || {
                for line in lines {
                    f(filter, line, &mut out);
                    if out.len() > 1 << 20 {
                        black_box(&out);
                        out.clear();
                    }
                }
                black_box(&out);
                out.clear();
            }),
        }
    };
    vec![
        row(
            "filter",
            "read a line, strict envelope decode, attr-match filter, pass the line on (`aep filter`)",
            filter::strict,
        ),
        row(
            "filter_peek",
            "serde_json peek of the filterable attributes (not a decode), filter, pass on",
            filter::peek_serde_json,
        ),
        row(
            "filter_sonic",
            "sonic-rs (SIMD) peek of the filterable attributes (not a decode), filter, pass on",
            filter::peek_sonic,
        ),
        Measurement {
            name: "sonic_floor",
            what: "sonic-rs into IgnoredAny",
            run: Box::new(move || lines.iter().for_each(|l| filter::sonic_floor(l))),
        },
    ]
}

/// Heap growth at the peak of a streaming, typing pass over `input`.
fn stream_peak(input: &[u8]) -> usize {
    alloc::peak_growth(|| {
        for event in EventReader::new(input).flatten() {
            let _ = black_box(event.payload());
        }
    })
}

/// Heap growth at the peak of stream validation over `input`.
fn validate_stream_peak(input: &[u8]) -> usize {
    alloc::peak_growth(|| {
        let summary = validate_reader(input, StreamOptions::default(), |_| {}, |_| {});
        black_box(summary.expect("reading from memory does not fail"));
    })
}

/// Validates the corpus as one stream, keeping the first findings.
fn check_stream(corpus: &[u8]) -> StreamCheck {
    let mut first = Vec::new();
    let summary = validate_reader(
        corpus,
        StreamOptions::default(),
        |f| {
            if first.len() < 10 {
                first.push(format!(
                    "line {}: {}[{}]: {}",
                    f.line,
                    f.level.name(),
                    f.rule.name(),
                    f.message
                ));
            }
        },
        |_| {},
    )
    .expect("reading from memory does not fail");
    StreamCheck {
        lines: summary.lines,
        errors: summary.errors,
        warnings: summary.warnings,
        first,
    }
}

impl Report {
    /// The figures as a Markdown table.
    pub fn table(&self) -> String {
        let skipped = match self.skipped_lines {
            0 => String::new(),
            n => format!(" ({n} lines that do not decode, type or validate left out)"),
        };
        let mut text = format!(
            "corpus: {:.1} MB, {} events{skipped}; median of {} passes\n\n\
             | measurement | what | MB/s | events/s | time vs floor | time vs value | time vs validate |\n\
             |---|---|---:|---:|---:|---:|---:|\n",
            self.corpus_bytes as f64 / 1e6,
            self.corpus_events,
            self.passes
        );
        for row in &self.rows {
            text.push_str(&format!(
                "| `{}` | {} | {:.0} | {:.0} | {:.2} | {:.2} | {:.2} |\n",
                row.name,
                row.what,
                row.mb_per_s,
                row.events_per_s,
                row.vs_floor,
                row.vs_value,
                row.vs_validate
            ));
        }
        let check = &self.stream_check;
        if check.errors > 0 {
            text.push_str(&format!(
                "\nno `stream` row: the corpus is not a valid stream ({} errors, {} warnings); first findings:\n",
                check.errors, check.warnings
            ));
            for finding in &check.first {
                text.push_str(&format!("  {finding}\n"));
            }
        } else {
            text.push_str(&format!(
                "\nstream validation of the corpus: {} lines, 0 errors, {} warnings\n",
                check.lines, check.warnings
            ));
        }
        if let Some((half, full)) = self.stream_peak_bytes {
            text.push_str(&format!(
                "\nstreaming pass peak heap growth: {:.1} KiB over half the corpus, {:.1} KiB over all of it\n",
                half as f64 / 1024.0,
                full as f64 / 1024.0
            ));
        }
        if let Some((half, full)) = self.validate_stream_peak_bytes {
            text.push_str(&format!(
                "stream validation peak heap growth: {:.1} KiB over half the corpus, {:.1} KiB over all of it\n",
                half as f64 / 1024.0,
                full as f64 / 1024.0
            ));
        }
        text.push_str(&format!(
            "in-process codegen of the registry: {:.1} ms (median)\n",
            self.codegen_ms
        ));
        if let Some(ms) = self.codegen_check_ms {
            text.push_str(&format!(
                "`cargo xtask codegen --check`, warm: {ms:.0} ms wall (median)\n"
            ));
        }
        text
    }
}

/// Reads a corpus file.
pub fn read_corpus(path: &Path) -> std::io::Result<String> {
    std::fs::read_to_string(path)
}
