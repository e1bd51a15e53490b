//! `validate_reader_parallel` against `validate_reader`: on every stream
//! corpus and on a generated stream spanning several batches, several
//! threads give the same findings in the same order, the same summary and
//! the same progress calls as one.

use std::fs;
use std::path::{Path, PathBuf};

use aep::stream::{validate_reader, validate_reader_parallel, Finding, Options, Summary};

/// Everything a run reports.
#[derive(Debug, PartialEq)]
struct Report {
    findings: Vec<Finding>,
    progress: Vec<u64>,
    summary: Summary,
}

fn sequential(input: &[u8], options: &Options) -> Report {
    let (mut findings, mut progress) = (Vec::new(), Vec::new());
    let summary = validate_reader(
        input,
        options.clone(),
        |f| findings.push(f),
        |p| progress.push(p),
    )
    .unwrap();
    Report {
        findings,
        progress,
        summary,
    }
}

fn parallel(input: &[u8], options: &Options, jobs: usize) -> Report {
    let (mut findings, mut progress) = (Vec::new(), Vec::new());
    let summary = validate_reader_parallel(
        input,
        options.clone(),
        jobs,
        |f| findings.push(f),
        |p| progress.push(p),
    )
    .unwrap();
    Report {
        findings,
        progress,
        summary,
    }
}

fn corpora() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stream");
    let mut paths: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    paths.sort();
    assert!(paths.len() > 10, "the stream corpora are there");
    paths
}

/// The line limit a corpus sets in its `.expected` file, if any.
fn options_of(path: &Path) -> Options {
    let mut options = Options::default();
    let expected = fs::read_to_string(path.with_extension("expected")).unwrap();
    for line in expected.lines() {
        if let Some(limit) = line.strip_prefix("# max-line-bytes ") {
            options.max_line_bytes = limit.trim().parse().unwrap();
        }
    }
    options
}

#[test]
fn every_stream_corpus_gives_the_same_report_on_1_and_4_threads() {
    for path in corpora() {
        let input = fs::read(&path).unwrap();
        let options = options_of(&path);
        let one = sequential(&input, &options);
        assert!(
            one.summary.lines > 0,
            "{}: the corpus has lines",
            path.display()
        );
        for jobs in [1, 2, 4] {
            assert_eq!(
                parallel(&input, &options, jobs),
                one,
                "{} on {jobs} threads",
                path.display()
            );
        }
    }
}

/// A stream with every kind of line, in several sessions, long enough to
/// span several batches: valid events, redeliveries, id collisions, seq
/// and epoch regressions, second terminals, envelope and payload errors,
/// lines that are not JSON, blank lines, long lines, other versions.
fn generated(lines: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut seq = [0u64; 7];
    for n in 0..lines {
        let session = n % 7;
        seq[session] += 1;
        let s = seq[session];
        let head = format!(
            r#""aep":"0.1","time":"2026-12-01T10:00:00Z","source":"urn:gen","agent":"gen","session":"s{session}""#
        );
        let line = match n % 23 {
            0 => format!(
                r#"{{{head},"id":"e{n}","type":"run.started","run":"r{n}","seq":{s},"data":{{"trigger":"user"}}}}"#
            ),
            1 => format!(
                r#"{{{head},"id":"e{}","type":"progress.status","seq":{},"data":{{}}}}"#,
                n - 1,
                s
            ),
            2 => format!(r#"{{{head},"id":"e{n}","type":"progress.status","seq":0,"data":{{}}}}"#),
            3 => format!(
                r#"{{{head},"id":"e{n}","type":"run.finished","run":"r{}","seq":{s},"data":{{}}}}"#,
                n - 3
            ),
            4 => format!(
                r#"{{{head},"id":"e{n}","type":"run.finished","run":"r{}","seq":{s},"data":{{}}}}"#,
                n - 4
            ),
            5 => "not json {".to_owned(),
            6 => String::new(),
            7 => format!(r#"{{"aep":"2.0","id":"v{n}"}}"#),
            8 => format!(r#"{{{head},"id":"e{n}","type":"tool.requested","seq":-1}}"#),
            9 => format!(
                r#"{{{head},"id":"e{n}","type":"run.started","seq":{s},"data":{{"trigger":7}}}}"#
            ),
            10 => "x".repeat(300),
            11 => format!(r#"{{{head},"id":"e{n}","type":"progress.bogus","seq":{s},"epoch":1}}"#),
            12 => format!(
                r#"{{{head},"id":"e{n}","type":"progress.status","seq":{s},"epoch":0,"data":{{}}}}"#
            ),
            _ => format!(
                r#"{{{head},"id":"e{n}","type":"progress.status","seq":{s},"data":{{"message":"step {n}"}}}}"#
            ),
        };
        out.extend_from_slice(line.as_bytes());
        // Redeliver some lines, byte for byte.
        if n % 31 == 0 {
            out.push(b'\n');
            out.extend_from_slice(line.as_bytes());
        }
        out.extend_from_slice(if n % 5 == 0 { b"\r\n" } else { b"\n" });
    }
    out
}

#[test]
fn a_generated_stream_over_several_batches_gives_the_same_report() {
    // More lines than one batch of 4 threads holds (4 x 8192).
    let input = generated(40_000);
    let options = Options {
        max_line_bytes: 256,
    };
    let one = sequential(&input, &options);
    // The stream has findings of many rules, and every line counts.
    let rules: std::collections::BTreeSet<&str> =
        one.findings.iter().map(|f| f.rule.name()).collect();
    assert!(rules.len() >= 9, "{rules:?}");
    assert_eq!(one.progress.len() as u64, one.summary.lines);
    assert_eq!(*one.progress.last().unwrap(), input.len() as u64);
    let four = parallel(&input, &options, 4);
    assert_eq!(four.summary, one.summary);
    assert_eq!(four.findings.len(), one.findings.len());
    for (a, b) in four.findings.iter().zip(&one.findings) {
        assert_eq!(a, b);
    }
    assert_eq!(four.progress, one.progress);
    assert_eq!(parallel(&input, &options, 3), one);
}

#[test]
fn an_io_error_ends_the_parallel_run_after_the_lines_before_it() {
    struct Failing<'a>(&'a [u8]);
    impl std::io::Read for Failing<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() {
                return Err(std::io::Error::other("disk on fire"));
            }
            let n = self.0.len().min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let input = generated(50);
    let reader = std::io::BufReader::new(Failing(&input));
    let mut findings = Vec::new();
    let error =
        validate_reader_parallel(reader, Options::default(), 4, |f| findings.push(f), |_| {})
            .unwrap_err();
    assert_eq!(error.to_string(), "disk on fire");
    let one = sequential(&input, &Options::default());
    assert_eq!(findings, one.findings);
}
