//! The work of the pipeline, measured: linear in the text on inputs made
//! to defeat it. The work is counted, not timed: bytes looked at by hand
//! and bytes searched by each expression. Quadratic work on `n` bytes
//! grows sixteenfold when `n` grows fourfold; linear work fourfold.

use super::{Options, Redactor};

/// Fragments that, repeated, make one candidate start inside another's
/// span, a search run to the end of the text, or a rule walk back.
const FRAGMENTS: &[&str] = &[
    "-----BEGIN A-----\n",
    "-----BEGIN A-----",
    "-----BEGIN ",
    "-----BEGIN A-----\n-----END A-----",
    "token:",
    "token=",
    "token ",
    "password\n",
    "password \n\n",
    "token: \"",
    "token='",
    "\"token\":\"",
    "token=\\\"",
    "token=[REDACTED:secret]",
    "Authorization: Bearer ",
    "authorization: \"",
    "Authorization: Basic\n",
    "sk-",
    "xsk-",
    "eyJ-",
    "eyJa.",
    "eyJa.b.",
    ".eyJa",
    "ghp_",
    "AKIA",
    "AKIAIOSFODNN7EXAMPLE",
    "github_pat_",
    "xoxb-",
    "AIza",
    "glpat-",
    "bearer ",
    "Bearer\n",
    "xbearer ",
    "a@",
    "a.a@",
    "@a.",
    "://a:",
    "x://",
    "a://b:c@",
    "/home/",
    "/home/a",
    "x/home/",
    "C:\\Users\\",
    "--token ",
    "--token \"",
    " --password '",
    "+1 ",
    "1-",
    "(415) 555-",
    "a",
    " ",
    "\t",
    "\n",
];

/// The work of redacting `text`, whole and as a stream cut at every
/// 1,000th byte (checking the two agree).
fn work(redactor: &Redactor, text: &str) -> (u64, u64) {
    let mut whole = 0;
    let expected = redactor.redact_counting(text, &mut whole).into_owned();
    let mut stream = redactor.stream(1 << 30);
    let mut out = String::new();
    for chunk in text.as_bytes().chunks(1000) {
        stream.write(chunk, &mut |line| out.push_str(line));
    }
    stream.finish(&mut |line| out.push_str(line));
    assert_eq!(out, expected, "stream and text disagree");
    (whole, stream.work())
}

/// `fragment` repeated to about `bytes` bytes.
fn repeated(fragment: &str, bytes: usize) -> String {
    fragment.repeat(bytes / fragment.len() + 1)
}

fn redactors() -> Vec<Redactor> {
    vec![
        Redactor::default(),
        Redactor::new(
            Options::default()
                .home("/home/a")
                .secret("ab")
                .secret("a\nb")
                .secret("token: \"\ntoken"),
        ),
    ]
}

#[track_caller]
fn assert_linear(what: &str, small: (u64, u64), large: (u64, u64), bytes: usize) {
    for (how, s, l) in [("text", small.0, large.0), ("stream", small.1, large.1)] {
        assert!(
            l <= 5 * s + 1024,
            "{what} ({how}): work {s} on {bytes} bytes, {l} on four times as many"
        );
        assert!(
            l <= 80 * 4 * bytes as u64,
            "{what} ({how}): work {l} on {} bytes",
            4 * bytes
        );
    }
}

#[test]
fn repeated_fragments_cost_linear_work() {
    let bytes = 8 * 1024;
    for redactor in redactors() {
        for fragment in FRAGMENTS {
            let small = work(&redactor, &repeated(fragment, bytes));
            let large = work(&redactor, &repeated(fragment, 4 * bytes));
            assert_linear(&format!("{fragment:?} repeated"), small, large, bytes);
        }
    }
}

#[test]
fn pairs_of_fragments_cost_linear_work() {
    // Two rules interleaved: each candidate of one inside the other's.
    // Every fragment meets every seventh other (all pairs take minutes
    // unoptimised).
    let bytes = 1024;
    let redactor = Redactor::default();
    for (i, a) in FRAGMENTS.iter().enumerate() {
        for b in FRAGMENTS.iter().skip(i % 7).step_by(7) {
            let pair = format!("{a}{b}");
            let small = work(&redactor, &repeated(&pair, bytes));
            let large = work(&redactor, &repeated(&pair, 4 * bytes));
            assert_linear(&format!("{pair:?} repeated"), small, large, bytes);
        }
    }
}

#[test]
fn random_mixes_cost_linear_work() {
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let redactors = redactors();
    for _ in 0..40 {
        let picks: Vec<&str> = (0..1 + next() % 6)
            .map(|_| FRAGMENTS[(next() % FRAGMENTS.len() as u64) as usize])
            .collect();
        let unit: String = picks.concat();
        let redactor = &redactors[(next() % 2) as usize];
        let bytes = 4 * 1024;
        let small = work(redactor, &repeated(&unit, bytes));
        let large = work(redactor, &repeated(&unit, 4 * bytes));
        assert_linear(&format!("{unit:?} repeated"), small, large, bytes);
    }
}

#[test]
fn the_work_counter_counts() {
    // A test that cannot fail is no test: the counter sees the text.
    let redactor = Redactor::default();
    let (small, _) = work(&redactor, &repeated("token:", 1024));
    let (large, _) = work(&redactor, &repeated("token:", 4096));
    assert!(
        small >= 1024 && large >= 4 * 1024 && large > 3 * small,
        "{small} {large}"
    );
}
