//! Validation on several threads: the per-line part of each check
//! (decoding, the checks of the event alone) runs in parallel over a batch
//! of lines, then the stream part takes the lines in order, so findings
//! and totals are those of one thread.

use std::io::{self, BufRead};
use std::ops::Range;
use std::sync::mpsc;

use aep_types::reader::{Line, LineReader};

use super::{validate_reader, Finding, LineCheck, Options, Summary, Validator};

/// Input bytes per batch, per thread: enough to make starting threads
/// cheap against the work, little enough to bound memory (a batch holds
/// its lines and their decoded events).
const BATCH_BYTES_PER_JOB: usize = 1 << 18;

/// Lines per batch, per thread, whatever their size.
const BATCH_LINES_PER_JOB: usize = 2048;

/// The most threads used, whatever is asked: past this, threads only add
/// memory (each holds its share of a batch) and start-up cost.
pub const MAX_JOBS: usize = 64;

/// Input bytes per batch, whatever the number of threads, so that memory
/// stays bounded on a machine with many cores (a batch stops filling past
/// it, so it may end one line beyond).
const MAX_BATCH_BYTES: usize = 4 << 20;

/// Lines per batch at most, whatever the number of threads.
const MAX_BATCH_LINES: usize = 32 * 1024;

/// [`validate_reader`] on `jobs` threads: the same findings in the same
/// order, the same summary, the same progress calls. Lines are read in
/// batches (about 256 KiB per thread, 4 MiB and a line at most); each batch is
/// decoded and its events checked in parallel, then the stream rules fold
/// it in line order. With `jobs` at most 1 this is [`validate_reader`];
/// more than [`MAX_JOBS`] are not used, and a thread the system refuses to
/// start leaves its share to the calling thread.
///
/// ```
/// use aep::stream::{validate_reader_parallel, Options};
///
/// let stream = concat!(
///     r#"{"aep":"0.1","id":"e1","type":"session.started","time":"2026-12-01T10:00:00Z","source":"urn:a","agent":"a","session":"s","seq":2}"#, "\n",
///     r#"{"aep":"0.1","id":"e2","type":"progress.status","time":"2026-12-01T10:00:01Z","source":"urn:a","agent":"a","session":"s","seq":1,"data":{}}"#, "\n",
/// );
/// let mut findings = Vec::new();
/// let summary = validate_reader_parallel(stream.as_bytes(), Options::default(), 4, |f| findings.push(f), |_| {})?;
/// assert_eq!((summary.lines, summary.errors), (2, 1));
/// assert_eq!((findings[0].line, findings[0].rule.name()), (2, "seq-regression"));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn validate_reader_parallel<R: BufRead>(
    reader: R,
    options: Options,
    jobs: usize,
    mut on_finding: impl FnMut(Finding),
    mut on_progress: impl FnMut(u64),
) -> io::Result<Summary> {
    if jobs <= 1 {
        return validate_reader(reader, options, on_finding, on_progress);
    }
    let jobs = jobs.min(MAX_JOBS);
    let line_options = options.clone();
    // A pipeline of two stages: while a checking thread checks one batch
    // (on `jobs` threads), this thread folds the one before and reads the
    // one after. Batches go round between the two.
    std::thread::scope(|scope| {
        let line_options = &line_options;
        let (to_check, unchecked) = mpsc::sync_channel::<Batch>(1);
        let (to_fold, checked) = mpsc::sync_channel::<Checked>(1);
        let started = std::thread::Builder::new().spawn_scoped(scope, move || {
            for batch in unchecked {
                let lines = batch.check(line_options, jobs);
                if to_fold.send((batch, lines)).is_err() {
                    break;
                }
            }
        });
        let Ok(checker) = started else {
            // No thread to be had: one thread does it all.
            return validate_reader(reader, options, on_finding, on_progress);
        };
        // The checking thread's next result; its panic, if it stopped.
        let mut checker = Some(checker);
        let mut next_checked = || match checked.recv() {
            Ok(done) => done,
            Err(_) => std::panic::resume_unwind(match checker.take().map(|c| c.join()) {
                Some(Err(panic)) => panic,
                _ => Box::new("the checking thread stopped early"),
            }),
        };
        let mut lines = LineReader::new(reader, options.max_line_bytes);
        let mut validator = Validator::new(options);
        let mut findings = Vec::new();
        let mut spare = Batch::default();
        let mut in_flight = false;
        loop {
            let mut batch = std::mem::take(&mut spare);
            batch.clear();
            let filled = batch.fill(&mut lines, jobs);
            if to_check.send(batch).is_err() {
                // The checking thread is gone: drain what it sent, then
                // `next_checked` raises its panic.
                loop {
                    next_checked();
                }
            }
            if in_flight {
                spare = fold(
                    next_checked(),
                    &mut validator,
                    &mut findings,
                    &mut on_finding,
                    &mut on_progress,
                );
            }
            in_flight = true;
            // Lines read before an I/O error are checked, as one thread does.
            match filled {
                Ok(true) => {}
                Ok(false) | Err(_) => {
                    fold(
                        next_checked(),
                        &mut validator,
                        &mut findings,
                        &mut on_finding,
                        &mut on_progress,
                    );
                    return filled.map(|_| validator.finish());
                }
            }
        }
    })
}

/// A batch and what the checks of its lines found.
type Checked = (Batch, Vec<Option<LineCheck>>);

/// The stream part of a checked batch, in line order; gives the batch back
/// for reuse.
fn fold(
    (batch, checked): Checked,
    validator: &mut Validator,
    findings: &mut Vec<Finding>,
    on_finding: &mut impl FnMut(Finding),
    on_progress: &mut impl FnMut(u64),
) -> Batch {
    for (item, checked) in batch.items.iter().zip(checked) {
        match checked {
            Some(checked) => validator.check_decoded(checked, findings),
            // Only a line over the limit goes unchecked.
            None => validator.too_long(item.number, item.too_long.unwrap_or(0), findings),
        }
        findings.drain(..).for_each(&mut *on_finding);
        on_progress(item.read);
    }
    batch
}

/// Lines read ahead, in one buffer.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    items: Vec<Item>,
}

/// One line of a batch.
struct Item {
    number: u64,
    /// The line's bytes in the batch buffer (empty for a long line).
    text: Range<usize>,
    /// The length of a line over the limit, which was not read.
    too_long: Option<u64>,
    /// The input bytes read once this line was.
    read: u64,
}

impl Batch {
    fn clear(&mut self) {
        self.bytes.clear();
        self.items.clear();
    }

    /// Reads lines until the batch is full; `Ok(false)` at the end of the
    /// input.
    fn fill<R: BufRead>(&mut self, lines: &mut LineReader<R>, jobs: usize) -> io::Result<bool> {
        let max_bytes = BATCH_BYTES_PER_JOB
            .saturating_mul(jobs)
            .min(MAX_BATCH_BYTES);
        let max_lines = BATCH_LINES_PER_JOB
            .saturating_mul(jobs)
            .min(MAX_BATCH_LINES);
        while self.bytes.len() < max_bytes && self.items.len() < max_lines {
            let Some((number, line)) = lines.next_line()? else {
                return Ok(false);
            };
            let start = self.bytes.len();
            let too_long = match line {
                Line::Text(text) => {
                    self.bytes.extend_from_slice(text);
                    None
                }
                Line::TooLong { bytes } => Some(bytes),
            };
            self.items.push(Item {
                number,
                text: start..self.bytes.len(),
                too_long,
                read: lines.bytes_read(),
            });
        }
        Ok(true)
    }

    /// The per-line part of every line, `None` for a long line, in line
    /// order, on `jobs` threads.
    fn check(&self, options: &Options, jobs: usize) -> Vec<Option<LineCheck>> {
        let check_items = |items: &[Item]| -> Vec<Option<LineCheck>> {
            items
                .iter()
                .map(|item| {
                    item.too_long.is_none().then(|| {
                        let text = &self.bytes[item.text.clone()];
                        LineCheck::decode_and_check(options, item.number, text)
                    })
                })
                .collect()
        };
        if self.items.len() < 2 {
            return check_items(&self.items);
        }
        let chunks = split_by_bytes(&self.items, jobs);
        std::thread::scope(|scope| {
            // A chunk whose thread the system refuses is checked here.
            let parts: Vec<_> = chunks[1..]
                .iter()
                .map(|chunk| {
                    std::thread::Builder::new()
                        .spawn_scoped(scope, || check_items(chunk))
                        .map_err(|_| chunk)
                })
                .collect();
            let mut checked = check_items(chunks[0]);
            for part in parts {
                match part {
                    Ok(handle) => match handle.join() {
                        Ok(part) => checked.extend(part),
                        Err(panic) => std::panic::resume_unwind(panic),
                    },
                    Err(chunk) => checked.extend(check_items(chunk)),
                }
            }
            checked
        })
    }
}

/// `items` in at most `parts` consecutive chunks of about equal bytes.
fn split_by_bytes(items: &[Item], parts: usize) -> Vec<&[Item]> {
    let total: usize = items.iter().map(|i| i.text.len() + 1).sum();
    let share = total.div_ceil(parts.max(1));
    let mut chunks = Vec::with_capacity(parts);
    let mut start = 0;
    let mut size = 0;
    for (at, item) in items.iter().enumerate() {
        size += item.text.len() + 1;
        if size >= share && chunks.len() + 1 < parts {
            chunks.push(&items[start..=at]);
            start = at + 1;
            size = 0;
        }
    }
    if start < items.len() || chunks.is_empty() {
        chunks.push(&items[start..]);
    }
    chunks
}
