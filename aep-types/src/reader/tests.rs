use std::io::{BufReader, Read};

use super::*;

const EVENT: &str = r#"{"aep":"0.1","id":"e1","type":"agent.heartbeat","time":"2026-11-30T12:00:00Z","source":"urn:a:b","agent":"a"}"#;

/// `len` bytes of `a`, produced on demand, then `tail`.
struct Endless {
    left: u64,
    tail: &'static [u8],
}

impl Read for Endless {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left > 0 {
            let n = buf
                .len()
                .min(usize::try_from(self.left).unwrap_or(usize::MAX));
            buf[..n].fill(b'a');
            self.left -= n as u64;
            return Ok(n);
        }
        let n = buf.len().min(self.tail.len());
        buf[..n].copy_from_slice(&self.tail[..n]);
        self.tail = &self.tail[n..];
        Ok(n)
    }
}

fn lines(input: &[u8], limit: usize) -> Vec<(u64, Result<Vec<u8>, u64>)> {
    let mut reader = LineReader::new(input, limit);
    let mut out = Vec::new();
    while let Some((n, line)) = reader.next_line().unwrap() {
        out.push((
            n,
            match line {
                Line::Text(text) => Ok(text.to_vec()),
                Line::TooLong { bytes } => Err(bytes),
            },
        ));
    }
    assert_eq!(reader.bytes_read(), input.len() as u64);
    out
}

#[test]
fn a_huge_line_is_skipped_in_chunks_not_held() {
    let huge = 64 * 1024 * 1024;
    let input = BufReader::new(Endless {
        left: huge,
        tail: b"\nafter\n",
    });
    let mut reader = LineReader::new(input, 1024);
    assert_eq!(
        reader.next_line().unwrap(),
        Some((1, Line::TooLong { bytes: huge }))
    );
    assert!(
        reader.buffer.capacity() < 64 * 1024,
        "the buffer grew to {}",
        reader.buffer.capacity()
    );
    assert_eq!(reader.next_line().unwrap(), Some((2, Line::Text(b"after"))));
    assert_eq!(reader.next_line().unwrap(), None);
    assert_eq!(reader.bytes_read(), huge + 7);
}

#[test]
fn the_limit_counts_content_not_the_line_ending() {
    assert_eq!(
        lines(b"1234\n12345\n1234\r\n12345\r\n1234", 4),
        [
            (1, Ok(b"1234".to_vec())),
            (2, Err(5)),
            (3, Ok(b"1234".to_vec())),
            // The length without the `\r\n`, as with `\n`.
            (4, Err(5)),
            (5, Ok(b"1234".to_vec())),
        ]
    );
    // A torn last line over the limit, and one exactly at the chunk size.
    assert_eq!(lines(b"123456", 4), [(1, Err(6))]);
    assert_eq!(lines(b"12345\n", 4), [(1, Err(5))]);
}

#[test]
fn crlf_torn_last_lines_and_empty_input() {
    assert_eq!(lines(b"", 8), []);
    assert_eq!(lines(b"\n", 8), [(1, Ok(vec![]))]);
    assert_eq!(
        lines(b"a\r\nb\nc\r", 8),
        [
            (1, Ok(b"a".to_vec())),
            (2, Ok(b"b".to_vec())),
            (3, Ok(b"c".to_vec()))
        ]
    );
    // A lone `\r` inside a line stays.
    assert_eq!(lines(b"a\rb\n", 8), [(1, Ok(b"a\rb".to_vec()))]);
}

#[test]
fn an_io_error_while_skipping_is_returned() {
    struct Failing(bool);
    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if std::mem::replace(&mut self.0, true) {
                return Err(io::Error::other("gone"));
            }
            buf.fill(b'x');
            Ok(buf.len())
        }
    }
    let mut reader = LineReader::new(BufReader::with_capacity(16, Failing(false)), 4);
    assert_eq!(reader.next_line().unwrap_err().to_string(), "gone");
    // The line is not counted as read, and the bytes taken are.
    assert_eq!(reader.line(), 0);
    assert_eq!(reader.bytes_read(), 16);
    // So the event reader says the error is on line 1.
    let mut events =
        EventReader::with_max_line_bytes(BufReader::with_capacity(16, Failing(false)), 4);
    let error = events.next().unwrap().unwrap_err();
    assert!(error.is_io());
    assert!(error.to_string().starts_with("line 1: "), "{error}");
}

fn events(input: &[u8]) -> (Vec<Result<String, String>>, u64) {
    let mut reader = EventReader::with_max_line_bytes(input, 1024);
    let results = reader
        .by_ref()
        .map(|r| r.map(|e| e.id).map_err(|e| e.to_string()))
        .collect();
    (results, reader.skipped())
}

#[test]
fn event_reader_reports_long_lines_invalid_utf8_and_nul_bytes() {
    let mut input = format!("{EVENT}\r\n").into_bytes();
    input.extend_from_slice(format!("{{\"x\":\"{}\"}}\n", "y".repeat(2000)).as_bytes());
    input.extend_from_slice(b"{\"aep\":\"\xff\"}\n");
    input.extend_from_slice(b"{\"aep\":\"0.1\"\x00}\n");
    input.extend_from_slice(EVENT.as_bytes()); // torn: no final newline
    let (results, skipped) = events(&input);
    assert_eq!(skipped, 0);
    assert_eq!(results.len(), 5, "{results:?}");
    assert_eq!(results[0].as_deref(), Ok("e1"));
    assert_eq!(
        results[1].as_ref().unwrap_err(),
        "line 2: the line is 2008 bytes, over the line limit of 1024 bytes; skipped unread"
    );
    assert!(results[2].as_ref().unwrap_err().starts_with("line 3: "));
    assert!(results[3].as_ref().unwrap_err().starts_with("line 4: "));
    assert_eq!(results[4].as_deref(), Ok("e1"));
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let depth = 100_000;
    let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    // The deep value inside `data` (kept as raw text), then as an extension.
    let head = &EVENT[..EVENT.len() - 1];
    let line = format!("{head},\"data\":{{\"a\":{deep}}}}}\n{head},\"ext\":{deep}}}\n");
    let mut reader = EventReader::with_max_line_bytes(line.as_bytes(), 1 << 20);
    // Inside `data` the value is kept as text; typing it is what fails.
    let first = reader.next().unwrap().unwrap();
    let violations = first.validate().unwrap_err().to_string();
    assert!(violations.contains("recursion limit"), "{violations}");
    // As an extension attribute it is refused at its first `[`.
    let second = reader.next().unwrap().unwrap_err();
    assert!(
        second
            .to_string()
            .starts_with("line 2: invalid event at `/ext`: invalid type: sequence"),
        "{second}"
    );
    assert!(reader.next().is_none());
}

#[test]
fn unsupported_major_versions_are_skipped_and_reported_once() {
    let input = format!(
        "{}\n{}\n{EVENT}\n{}\n{}\n",
        r#"{"aep":"1.0","id":"x1","whatever":true}"#,
        r#"{"aep":"2.3"}"#,
        r#"{"aep":"0.2","id":"e2"}"#,
        r#"{"aep":"10.0"}"#,
    );
    let (results, skipped) = events(input.as_bytes());
    assert_eq!(skipped, 3);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results[0]
        .as_ref()
        .unwrap_err()
        .starts_with("line 1: `aep` version \"1.0\" has an unsupported major version"));
    assert_eq!(results[1].as_deref(), Ok("e1"));
    // 0.2 shares the major: judged by 0.1's rules, and refused by them.
    assert!(results[2].as_ref().unwrap_err().starts_with("line 4: "));
}

#[test]
fn version_probe() {
    for (line, expected) in [
        (r#"{"aep":"1.0"}"#, Some("1.0")),
        (r#"{"aep":"00.1"}"#, None),
        (r#"{"aep":"0.1"}"#, None),
        (
            r#"{"aep":"99999999999999999999999.0"}"#,
            Some("99999999999999999999999.0"),
        ),
        (r#"{"aep":"1"}"#, None),
        (r#"{"aep":"1.x"}"#, None),
        (r#"{"aep":1.0}"#, None),
        (r#"["aep","1.0"]"#, None),
        (r#"{"aep":"1.0""#, None),
        ("", None),
    ] {
        assert_eq!(
            unsupported_version(line.as_bytes()).as_deref(),
            expected,
            "{line}"
        );
    }
}

#[test]
fn an_empty_input_has_no_lines_and_no_events() {
    let (results, skipped) = events(b"");
    assert!(results.is_empty());
    assert_eq!(skipped, 0);
    // Blank lines are skipped by the event reader, CRLF ones too.
    let (results, _) = events(b"\n\r\n  \n");
    assert!(results.is_empty(), "{results:?}");
}

/// Each line as `text|ending`, or `too long: N`.
fn lines_with_endings(input: &[u8], limit: usize) -> Vec<String> {
    let mut reader = LineReader::new(input, limit);
    let mut out = Vec::new();
    while let Some((_, line, ending)) = reader.next_line_with_ending().unwrap() {
        out.push(match line {
            Line::Text(text) => format!(
                "{}|{}",
                String::from_utf8_lossy(text),
                String::from_utf8_lossy(ending).escape_debug()
            ),
            Line::TooLong { bytes } => format!("too long: {bytes}"),
        });
    }
    out
}

#[test]
fn lines_keep_their_endings_and_long_ones_are_skipped() {
    assert_eq!(
        lines_with_endings(b"ab\r\ncd\nmuch too long\r\nlast", 8),
        ["ab|\\r\\n", "cd|\\n", "too long: 13", "last|"]
    );
    // Exactly at the limit with CRLF, and one over; a torn `\r` last.
    assert_eq!(
        lines_with_endings(b"12345678\r\n123456789\nend\r", 8),
        ["12345678|\\r\\n", "too long: 9", "end|\\r"]
    );
    // The same lines as `next_line` reads them.
    let input = b"ab\r\ncd\nmuch too long\r\nlast\r";
    let mut with = LineReader::new(&input[..], 8);
    let mut without = LineReader::new(&input[..], 8);
    while let Some((number, line, _)) = with.next_line_with_ending().unwrap() {
        assert_eq!(without.next_line().unwrap(), Some((number, line)));
    }
    assert_eq!(without.next_line().unwrap(), None);
}
