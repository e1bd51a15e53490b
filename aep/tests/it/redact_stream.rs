//! The redaction pipeline as a stream (`aep::redact::Stream`): the same
//! output as redacting the whole text, whatever the chunks, each line
//! handed on whole as soon as it is read, bounded memory, and bytes that
//! are not UTF-8.

use aep::redact::{Note, Options, Redactor, SECRET};

/// What a stream gave: the output, the pieces it was handed on in, the
/// notes.
struct Streamed {
    out: String,
    pieces: Vec<String>,
    notes: Vec<Note>,
}

/// `input` through a stream of `redactor` holding lines of up to `max`
/// bytes, written in the chunks `cuts` makes.
fn stream(redactor: &Redactor, input: &[u8], cuts: &[usize], max: usize) -> Streamed {
    let mut stream = redactor.stream(max);
    let mut pieces = Vec::new();
    let mut from = 0;
    for &cut in cuts.iter().chain([&input.len()]) {
        let cut = cut.clamp(from, input.len());
        stream.write(&input[from..cut], &mut |piece| {
            pieces.push(piece.to_owned())
        });
        from = cut;
    }
    stream.finish(&mut |piece| pieces.push(piece.to_owned()));
    let notes = stream.take_notes();
    for (i, piece) in pieces.iter().enumerate() {
        assert!(
            piece.ends_with('\n') || i + 1 == pieces.len(),
            "piece {i} is not a whole line: {piece:?}"
        );
    }
    Streamed {
        out: pieces.concat(),
        pieces,
        notes,
    }
}

/// xorshift64*: a small, seedable generator, so every failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
    fn word(&mut self, len: usize) -> String {
        const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..len)
            .map(|_| ALNUM[self.below(ALNUM.len())] as char)
            .collect()
    }
}

const OPERATOR: &str = "op-value-1\nop-value-2";

/// A secret that crosses line breaks or sits at the end of a line, and
/// the part of it that must not survive.
fn plant(rng: &mut Rng) -> (String, String) {
    let len = 10 + rng.below(20);
    let token = format!("{}7", rng.word(len));
    let breaks = ["\n", "\n\n", "\r\n", " \n  ", "\n\t"];
    let planted = match rng.below(12) {
        0 => {
            let body: Vec<String> = (0..1 + rng.below(4)).map(|_| rng.word(40)).collect();
            format!(
                "-----BEGIN {} KEY-----\n{}\n-----END {0} KEY-----",
                rng.pick(&["RSA PRIVATE", "EC PRIVATE", "OPENSSH PRIVATE"]),
                body.join("\n")
            )
        }
        1 => format!(
            "{}{}{}{token}",
            rng.pick(&["password", "token", "API_KEY", "\"secret\""]),
            rng.pick(&[":", "=", " =", "\n="]),
            rng.pick(&breaks)
        ),
        2 => format!("password{}={}{token}", rng.pick(&breaks), rng.pick(&breaks)),
        3 => format!("Authorization: Bearer{}{token}", rng.pick(&breaks)),
        4 => format!("Authorization:{}Basic {token}", rng.pick(&breaks)),
        5 => format!(
            "{}{}{token}",
            rng.pick(&["Bearer", "bearer"]),
            rng.pick(&breaks)
        ),
        6 => {
            let len = 20 + rng.below(30);
            format!("ghp_{}", rng.word(len))
        }
        7 => format!("AKIA{}", rng.word(16).to_uppercase()),
        8 => format!("eyJ{}.eyJ{}.{}", rng.word(10), rng.word(20), rng.word(30)),
        9 => OPERATOR.to_owned(),
        10 => format!("postgres://ada:{token}@db/app"),
        _ => format!("mail {}@example.org", rng.word(8)),
    };
    let core = if planted.starts_with("-----") {
        planted.lines().nth(1).expect("a key line").to_owned()
    } else if planted.starts_with("postgres") {
        token
    } else if planted == OPERATOR || planted.starts_with("mail") {
        planted.trim_start_matches("mail ").to_owned()
    } else {
        planted
            .rsplit(|c: char| c.is_whitespace() || c == '=' || c == ':')
            .next()
            .expect("a last word")
            .to_owned()
    };
    (planted, core)
}

const FILLERS: &[&str] = &[
    " ",
    "\n",
    "\r\n",
    "\n\n",
    ", ",
    " the ",
    "node 22.11.0 ",
    "é ",
    "日本\n",
    "(",
    ")",
    "\"",
    "\t",
    "max_tokens: 10\n",
    "/home/ada/x ",
    "",
];

/// Cut points: none, every byte, or a few at random (inside characters
/// too).
fn cuts(rng: &mut Rng, len: usize) -> Vec<usize> {
    match rng.below(4) {
        0 => Vec::new(),
        1 => (1..len).collect(),
        _ => {
            let mut cuts: Vec<usize> = (0..rng.below(8)).map(|_| rng.below(len + 1)).collect();
            cuts.sort_unstable();
            cuts
        }
    }
}

#[test]
fn streaming_gives_the_whole_text_redaction_at_any_cut() {
    let redactor = Redactor::new(Options::default().secret(OPERATOR).home("/srv/ada"));
    let mut rng = Rng(0x5eed_5eed_0000_0001);
    for case in 0..2000 {
        let mut text = String::new();
        let mut cores = Vec::new();
        for _ in 0..1 + rng.below(5) {
            text.push_str(rng.pick(FILLERS));
            let (planted, core) = plant(&mut rng);
            text.push_str(&planted);
            cores.push(core);
            text.push_str(rng.pick(FILLERS));
        }
        let whole = redactor.redact_str(&text);
        for core in &cores {
            assert!(
                !whole.contains(core.as_str()),
                "case {case}: {core:?} survived in {whole:?} (from {text:?})"
            );
        }
        let cuts = cuts(&mut rng, text.len());
        let streamed = stream(&redactor, text.as_bytes(), &cuts, 1 << 20);
        assert_eq!(
            streamed.out, whole,
            "case {case}: stream and text disagree on {text:?} cut at {cuts:?}"
        );
        assert_eq!(streamed.notes, [], "case {case}");
    }
}

#[test]
fn a_line_is_handed_on_when_its_line_break_arrives() {
    // A live reader (`tail -f log | aep redact`) sees each line as soon as
    // it is complete: a value owed to the next line does not hold the line
    // that owes it.
    let redactor = Redactor::default();
    let lines = [
        "plain line\n",
        "password:\n",
        "   hunter2\n",
        "Authorization: Bearer\n",
        "  abc123\n",
        "mail ada@example.com\n",
        "token=\"abc\" and ghp_AbCdEfGhIjKlMnOpQrStUvWxYz012345\n",
        "last line without a break",
    ];
    let mut stream = redactor.stream(1 << 20);
    let mut out = String::new();
    let mut sent = String::new();
    for line in lines {
        sent.push_str(line);
        stream.write(line.as_bytes(), &mut |piece| out.push_str(piece));
        if line.ends_with('\n') {
            assert_eq!(out, redactor.redact_str(&sent), "after {line:?}");
        }
    }
    stream.finish(&mut |piece| out.push_str(piece));
    assert_eq!(out, redactor.redact_str(&sent));
    assert_eq!(
        out,
        "plain line\npassword:\n   [REDACTED:secret]\nAuthorization: Bearer\n  [REDACTED:secret]\n\
         mail [REDACTED:pii]\ntoken=\"[REDACTED:secret]\" and [REDACTED:secret]\n\
         last line without a break"
    );
}

#[test]
fn a_pem_block_split_anywhere_never_leaks() {
    let redactor = Redactor::default();
    let text = "config follows\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq\nZzz999\n-----END RSA PRIVATE KEY-----\ndone\n";
    for cut in 0..=text.len() {
        let streamed = stream(&redactor, text.as_bytes(), &[cut], 1 << 20);
        assert_eq!(
            streamed.out,
            format!("config follows\n{SECRET}\ndone\n"),
            "cut at {cut}"
        );
        // The block's line is handed on whole, with the line after the block.
        assert!(
            streamed.pieces.contains(&format!("{SECRET}\n")),
            "cut at {cut}"
        );
    }
}

#[test]
fn a_line_over_the_limit_is_replaced_not_held() {
    let redactor = Redactor::default();
    let long = "x".repeat(100);
    let input = format!("short\n{long}\nafter password:\n {long}\nend");
    let streamed = stream(&redactor, input.as_bytes(), &[3, 40, 110], 64);
    assert_eq!(
        streamed.out,
        format!("short\n{SECRET}\nafter password:\n{SECRET}\nend")
    );
    assert_eq!(
        streamed.notes,
        [
            Note::LineTooLong {
                line: 2,
                bytes: 100
            },
            Note::LineTooLong {
                line: 4,
                bytes: 101
            },
        ]
    );
    // The last line, over the limit with no line break.
    let streamed = stream(&redactor, format!("a\n{long}").as_bytes(), &[], 64);
    assert_eq!(streamed.out, format!("a\n{SECRET}"));
}

#[test]
fn a_line_over_the_limit_passes_on_what_it_leaves_open() {
    let redactor = Redactor::default();
    let long = "x".repeat(100);
    // A value owed to the next line.
    let streamed = stream(
        &redactor,
        format!("{long} password:\n  hunter2\nok\n").as_bytes(),
        &[],
        64,
    );
    assert_eq!(streamed.out, format!("{SECRET}\n  {SECRET}\nok\n"));
    // A PEM block that starts in it: dropped up to its END line.
    let streamed = stream(
        &redactor,
        format!("{long} -----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----\nok\n")
            .as_bytes(),
        &[],
        64,
    );
    assert_eq!(streamed.out, format!("{SECRET}\nok\n"));
    // And one that ends in it.
    let streamed = stream(
        &redactor,
        format!("-----BEGIN PRIVATE KEY-----\nMIIEvQ\n{long}-----END PRIVATE KEY-----\nok\n")
            .as_bytes(),
        &[],
        64,
    );
    assert_eq!(streamed.out, format!("{SECRET}{SECRET}\nok\n"));
    // Whitespace that could hide a name before it: the next word goes.
    let spaces = " ".repeat(10_000);
    let streamed = stream(
        &redactor,
        format!("password{spaces}:{spaces}\nhunter2 rest\n").as_bytes(),
        &[],
        64,
    );
    assert_eq!(streamed.out, format!("{SECRET}\n{SECRET} rest\n"));
}

#[test]
fn a_pem_block_without_end_is_dropped_past_the_limit() {
    // Nothing of the block is held: its first line is written once the
    // block has run past the limit, and the rest goes, however long,
    // until an END line.
    let redactor = Redactor::default();
    let mut stream = redactor.stream(64);
    let mut out = String::new();
    stream.write(
        b"before\nkey: -----BEGIN RSA PRIVATE KEY-----\n",
        &mut |piece| out.push_str(piece),
    );
    assert_eq!(out, "before\n");
    for _ in 0..1000 {
        stream.write(
            b"MIIEowIBAAKCAQEA7bqZzz999MIIEowIBAAKCAQEA7bq\nnot a key, still dropped\n",
            &mut |piece| out.push_str(piece),
        );
    }
    assert_eq!(out, format!("before\nkey: {SECRET}\n"));
    assert_eq!(stream.take_notes(), [Note::BlockPastLimit { line: 2 }]);
    stream.write(b"-----END RSA PRIVATE KEY-----\nafter\n", &mut |piece| {
        out.push_str(piece)
    });
    stream.finish(&mut |piece| out.push_str(piece));
    assert_eq!(out, format!("before\nkey: {SECRET}\nafter\n"));
    assert_eq!(stream.take_notes(), []);

    // To the end of the input.
    let streamed = stream_text(&redactor, "a\n-----BEGIN A-----\nkey\nmore", 64);
    assert_eq!(streamed.out, format!("a\n{SECRET}"));
    assert_eq!(streamed.notes, [Note::BlockUnended { line: 2 }]);
}

fn stream_text(redactor: &Redactor, text: &str, max: usize) -> Streamed {
    stream(redactor, text.as_bytes(), &[], max)
}

#[test]
fn bytes_that_are_not_utf8_become_replacement_characters() {
    let redactor = Redactor::default();
    let streamed = stream(&redactor, b"caf\xe9 ok\nnext \xff\xfe line\n", &[], 1 << 20);
    assert_eq!(streamed.out, "caf\u{fffd} ok\nnext \u{fffd}\u{fffd} line\n");
    assert_eq!(
        streamed.notes,
        [
            Note::InvalidUtf8 { line: 1, bytes: 1 },
            Note::InvalidUtf8 { line: 2, bytes: 2 },
        ]
    );
}

#[test]
fn bytes_that_are_not_utf8_hide_no_secret() {
    // A secret cut by invalid bytes is found with them removed; one that
    // only shows with them read as a separator is found that way.
    let redactor = Redactor::new(Options::default().secret("hunter2"));
    for (input, expected) in [
        (
            &b"id AKIA\xffIOSFODNN7EXAMPLE x"[..],
            format!("id {SECRET} x"),
        ),
        (
            b"pass\xffword=hunter3 x",
            format!("pass\u{fffd}word={SECRET} x"),
        ),
        (b"hun\xc3ter2 x", format!("{SECRET} x")),
        (
            b"foo\xffsk-abcdefghijklmnopqrstuvwxyz x",
            format!("foo\u{fffd}{SECRET} x"),
        ),
        // Removed, the invalid bytes leave the value to the next line.
        (b"token=\xff\xfe\nnext", format!("token={SECRET}\n{SECRET}")),
        (
            b"password:\xff\n  hunter3\n",
            format!("password:{SECRET}\n  {SECRET}\n"),
        ),
    ] {
        let streamed = stream(&redactor, input, &[5], 1 << 20);
        assert_eq!(streamed.out, expected, "{input:?}");
    }
}

#[test]
fn an_operator_value_across_lines_is_found_in_any_chunks() {
    let value = "-----key line one\nkey line two\nkey line three";
    let redactor = Redactor::new(Options::default().secret(value));
    let text = format!("a\nx {value} y\nkey line one\nkey line two\n{value}");
    let whole = redactor.redact_str(&text);
    assert_eq!(
        whole,
        format!("a\nx {SECRET} y\nkey line one\nkey line two\n{SECRET}")
    );
    for cut in 0..=text.len() {
        let streamed = stream(&redactor, text.as_bytes(), &[cut], 1 << 20);
        assert_eq!(streamed.out, whole, "cut at {cut}");
    }
    // A line over the limit cuts a value short: what was read of it goes.
    let long = "z".repeat(100);
    let streamed = stream_text(
        &redactor,
        &format!("-----key line one\nkey line two\n{long}\nend\n"),
        64,
    );
    assert_eq!(streamed.out, format!("{SECRET}{SECRET}\nend\n"));
}
