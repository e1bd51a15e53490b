//! The redaction pipeline of AEP-0003 §9.4: what `redacted`-gated free
//! text must pass before an event may claim `capture: "redacted"`.
//!
//! The normative floor:
//!
//! 1. secrets and credentials become `[REDACTED:secret]`: PEM blocks,
//!    AWS key ids (`AKIA…`), `Bearer` tokens, `password|passwd|secret|
//!    api_key|token` assignments (with `=` or `:`, spaces and JSON quoting
//!    around the separator, a value on the next line) and JWT-shaped
//!    strings;
//! 2. the values the operator configures as secret ([`Options::secrets`])
//!    become `[REDACTED:secret]`;
//! 3. the home directory ([`Options::home`]) becomes `~`;
//! 4. emails and phone numbers become `[REDACTED:pii]`, unless the
//!    operator switches PII redaction off ([`Options::pii`]).
//!
//! The floor is a floor: the pipeline also replaces credentials whose
//! shape is unambiguous (GitHub `ghp_…`/`github_pat_…`, GitLab `glpat-…`,
//! Slack `xox?-…`, OpenAI-style `sk-…`, Stripe `sk_live_…`, Google
//! `AIza…`, AWS `ASIA…`, the password in a URL's user information, the
//! value after `--password`/`--token`-style flags, any `Authorization`
//! value) and every `/home/<user>`, `/Users/<user>` and `C:\Users\<user>`
//! prefix, whoever's home it is. It leaves ordinary prose alone: "the
//! bearer of this letter", counts, dates, durations, version numbers like
//! `22.11.0`, `max_tokens: 4096`.
//!
//! Every rule reports spans; the spans are painted together, so that the
//! order of the rules decides nothing: secrets that overlap or touch
//! become one marker, a secret wins over PII and PII over a home directory
//! where they meet, and no rule leaves half of a secret behind because
//! another one began first. A secret glued to the end of another
//! (`…EXAMPLEghp_…`) goes too, and a marker already in the text is never
//! cut into. Redacting twice changes nothing on text whose secrets are
//! apart from other redacted spans.
//!
//! The work is linear in the text: one search per line finds where every
//! rule's candidates start, each rule measures what follows by hand, and
//! the runs it measured are remembered, so that no candidate rescans what
//! another measured (`token:token:…` or ten thousand `-----BEGIN` lines
//! cost one pass).
//!
//! Text is redacted a line at a time. Only PEM blocks, the whitespace
//! between a credential's name, operator and value, `Bearer` and its token,
//! and operator values that hold line breaks, cross a line break; a line
//! carries what it leaves open to the next. That is what lets [`Stream`]
//! redact standard input as it arrives, with the same result as
//! [`Redactor::redact_str`] over the whole text.
//!
//! Out of scope, as for any pattern pipeline: secrets encoded (base64,
//! URL-escaped, split across strings), secrets in object keys, and
//! credentials with no recognisable shape or name.
//!
//! ```
//! use aep::redact::{Options, Redactor};
//!
//! let redactor = Redactor::new(Options::default().home("/home/ada"));
//! let text = "curl -H 'Authorization: Bearer abc123.def456' -d @/home/ada/q.json";
//! assert_eq!(
//!     redactor.redact_str(text),
//!     "curl -H 'Authorization: Bearer [REDACTED:secret]' -d @~/q.json"
//! );
//! assert_eq!(redactor.redact_str("node 22.11.0, 3 tokens"), "node 22.11.0, 3 tokens");
//! ```

mod assign;
mod bearer;
mod carry;
mod heads;
mod homes;
mod line;
mod lossy;
mod note;
mod operator;
mod paint;
mod pem;
mod pii;
mod scan;
mod shapes;
mod skip;
mod stream;
#[cfg(test)]
mod tests;

use std::borrow::Cow;

use serde_json::Value;

use self::carry::Carry;
use self::line::Rules;
use self::operator::Operator;
use self::scan::Scan;

pub use self::note::Note;
pub use self::stream::Stream;

/// What a secret becomes.
pub const SECRET: &str = "[REDACTED:secret]";
/// What an email or a phone number becomes.
pub const PII: &str = "[REDACTED:pii]";
/// What a home directory becomes.
pub const HOME: &str = "~";

/// The operator's settings of the pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The home directory to replace with `~` (besides every `/home/<user>`
    /// and `/Users/<user>` prefix, which always goes). A trailing `/` or
    /// `\` is ignored; a root (`/`, `C:\`) or an empty value is no home.
    pub home: Option<String>,
    /// Values the operator lists as secret (environment variables, config
    /// entries), replaced wherever they occur. Empty values are ignored.
    pub secrets: Vec<String>,
    /// Whether emails and phone numbers are redacted: on by default.
    pub pii: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            home: None,
            secrets: Vec::new(),
            pii: true,
        }
    }
}

impl Options {
    /// Sets the home directory.
    pub fn home(mut self, dir: impl Into<String>) -> Self {
        self.home = Some(dir.into());
        self
    }

    /// Adds a secret value.
    pub fn secret(mut self, value: impl Into<String>) -> Self {
        self.secrets.push(value.into());
        self
    }

    /// Switches PII redaction on or off.
    pub fn pii(mut self, on: bool) -> Self {
        self.pii = on;
        self
    }
}

/// The compiled pipeline. Build it once (compiling is the expensive part)
/// and share it: redacting takes `&self`.
#[derive(Debug, Clone)]
pub struct Redactor {
    /// The operator's values.
    operator: Option<Operator>,
    /// Every other rule.
    rules: Rules,
    /// The configured home directory, without a trailing separator.
    home: Option<String>,
}

impl Redactor {
    /// Compiles the pipeline for `options`.
    pub fn new(options: Options) -> Redactor {
        let home = options
            .home
            .as_deref()
            .and_then(home_dir)
            .map(str::to_owned);
        Redactor {
            operator: Operator::new(&options.secrets),
            rules: Rules::new(home.clone(), options.pii),
            home,
        }
    }

    /// Redacts a text. Borrows it back when nothing matched.
    pub fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.redact_counting(text, &mut 0)
    }

    /// [`Redactor::redact_str`], adding the work done (bytes looked at and
    /// searched) to `work`.
    fn redact_counting<'a>(&self, text: &'a str, work: &mut u64) -> Cow<'a, str> {
        let operator = match &self.operator {
            Some(operator) => operator.find_all(text, work),
            None => Vec::new(),
        };
        let mut out = String::new();
        let mut changed = false;
        let (mut carry, mut continuing) = (Carry::default(), false);
        let (mut start, mut next_value) = (0, 0);
        let mut values = Vec::new();
        for line in text.split_inclusive('\n') {
            let end = start + line.len();
            clip(&operator, &mut next_value, start, end, &mut values);
            let mut scan = Scan::new(line);
            carry = self.rules.scan_line(&mut scan, carry, &values);
            *work += scan.work;
            if !scan.spans.is_empty() && !changed {
                out.reserve(text.len());
                out.push_str(&text[..start]);
                changed = true;
            }
            if changed {
                continuing = paint::paint(line, &scan.spans, continuing, &mut out);
            }
            start = end;
        }
        if changed {
            Cow::Owned(out)
        } else {
            Cow::Borrowed(text)
        }
    }

    /// Redacts a JSON value in place: every string at any depth goes
    /// through [`Redactor::redact_str`], numbers, booleans and `null` stay,
    /// and the value under a credential-named key ([`is_credential_key`])
    /// becomes `"[REDACTED:secret]"` whatever it is. Object keys are kept.
    pub fn redact_value(&self, value: &mut Value) {
        match value {
            Value::String(text) => {
                if let Cow::Owned(redacted) = self.redact_str(text) {
                    *text = redacted;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_value(v)),
            Value::Object(members) => {
                for (key, member) in members.iter_mut() {
                    if is_credential_key(key) {
                        *member = Value::String(SECRET.to_owned());
                    } else {
                        self.redact_value(member);
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// A [`Stream`] over this pipeline, holding no line longer than
    /// `max_line_bytes`.
    pub fn stream(&self, max_line_bytes: usize) -> Stream<'_> {
        Stream::new(self, max_line_bytes)
    }

    /// The configured home directory, if any.
    pub fn home(&self) -> Option<&str> {
        self.home.as_deref()
    }
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor::new(Options::default())
    }
}

/// The home directory `dir` names, without its trailing separators; none
/// for an empty value or a root (`/`, `C:\`), which would turn every path
/// into `~`.
fn home_dir(dir: &str) -> Option<&str> {
    let dir = dir.trim_end_matches(['/', '\\']);
    let drive = dir.len() == 2 && dir.as_bytes()[0].is_ascii_alphabetic() && dir.ends_with(':');
    (!dir.is_empty() && !drive).then_some(dir)
}

/// The operator values of the line `[start, end)` of a text, from the
/// values of the whole text (`all`, in order), in the line's positions.
/// `next` is the first value that may still reach this line.
fn clip(
    all: &[(usize, usize)],
    next: &mut usize,
    start: usize,
    end: usize,
    out: &mut Vec<(usize, usize)>,
) {
    out.clear();
    while *next < all.len() && all[*next].1 <= start {
        *next += 1;
    }
    for &(s, e) in &all[*next..] {
        if s >= end {
            break;
        }
        out.push((s.max(start) - start, e.min(end) - start));
    }
}

/// Whether a JSON member named `key` holds a credential, whatever its
/// value looks like: compared case-insensitively with `-` and `_`
/// ignored, the name is, or ends with, `token`, `password`, `passwd`,
/// `passphrase`, `secret`, `apikey`, `authorization`, `cookie`,
/// `credential(s)`, `privatekey`, `secretkey` or `accesskey`
/// (`access_token`, `X-Api-Key`, `client_secret`). Counters such as
/// `max_tokens` or `token_count` are not credentials.
pub fn is_credential_key(key: &str) -> bool {
    const NAMES: &[&str] = &[
        "token",
        "password",
        "passwd",
        "passphrase",
        "secret",
        "apikey",
        "authorization",
        "cookie",
        "credential",
        "credentials",
        "privatekey",
        "secretkey",
        "accesskey",
    ];
    let normalized: String = key
        .chars()
        .filter(|c| !matches!(c, '-' | '_'))
        .flat_map(char::to_lowercase)
        .collect();
    NAMES.iter().any(|name| normalized.ends_with(name))
}
