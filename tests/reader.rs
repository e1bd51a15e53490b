//! The JSONL reader: every good line is an event, every bad line an error
//! with its line number, and the stream goes on after it.

use std::io::{self, BufRead, BufReader, Read};

use aep_tests::read_fixture;
use aep_types::reader::EventReader;

#[test]
fn the_whole_corpus_streams() {
    let text = read_fixture("valid.jsonl");
    let events: Vec<_> = EventReader::new(text.as_bytes())
        .collect::<Result<_, _>>()
        .expect("every line decodes");
    assert_eq!(
        events.len(),
        text.lines().filter(|l| !l.trim().is_empty()).count()
    );
}

#[test]
fn bad_lines_are_reported_and_skipped() {
    let good = read_fixture("valid.jsonl")
        .lines()
        .next()
        .expect("a line")
        .to_owned();
    let mut stream = Vec::new();
    stream.extend_from_slice(format!("{good}\r\n\n   \n{{\"aep\":\"0.1\"}}\n").as_bytes());
    stream.extend_from_slice(b"\xff\xfe not UTF-8\n");
    stream.extend_from_slice(good.as_bytes()); // no final newline

    let results: Vec<_> = EventReader::new(stream.as_slice()).collect();
    let summary: Vec<Result<usize, usize>> = results
        .iter()
        .map(|r| r.as_ref().map(|_| 0).map_err(|e| e.line()))
        .collect();
    assert_eq!(summary, [Ok(0), Err(4), Err(5), Ok(0)]);
    let message = results[1].as_ref().unwrap_err().to_string();
    assert!(
        message.starts_with("line 4: invalid event: missing field `id` at column "),
        "{message}"
    );
}

/// Fails once after its first line.
struct Flaky {
    first: Option<Vec<u8>>,
}

impl Read for Flaky {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.first.take() {
            Some(line) => {
                buf[..line.len()].copy_from_slice(&line);
                Ok(line.len())
            }
            None => Err(io::Error::other("disk on fire")),
        }
    }
}

#[test]
fn an_io_error_is_reported_once_and_ends_the_stream() {
    let good = format!(
        "{}\n",
        read_fixture("valid.jsonl").lines().next().expect("a line")
    );
    let reader: Box<dyn BufRead> = Box::new(BufReader::new(Flaky {
        first: Some(good.into_bytes()),
    }));
    let results: Vec<_> = EventReader::new(reader).collect();
    assert_eq!(results.len(), 2);
    assert!(results[0].is_ok());
    let error = results[1].as_ref().unwrap_err();
    assert!(error.is_io() && error.line() == 2, "{error}");
    assert_eq!(error.to_string(), "line 2: read error: disk on fire");
}
