//! The redaction pipeline of AEP-0003 §9.4: what `redacted`-gated free
//! text must pass before an event may claim `capture: "redacted"`.
//!
//! The normative floor, in order:
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
//! value after `--password`/`--token`-style flags) and every
//! `/home/<user>`, `/Users/<user>` and `C:\Users\<user>` prefix, whoever's
//! home it is. It leaves ordinary prose alone: the word "bearer" in a
//! sentence, counts, dates, durations, version numbers like `22.11.0`,
//! `max_tokens: 4096`.
//!
//! Operator secrets go first, in a pass of their own (a literal value may
//! look like anything, so no other rule may cut through it); everything
//! else is one compiled expression and one pass over the text, earlier
//! rules winning where two start at the same place. Every replacement is
//! a fixed point, so redacting twice changes nothing.
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

use std::borrow::Cow;

use regex::{Captures, Regex};
use serde_json::Value;

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
    /// and `/Users/<user>` prefix, which always goes). A trailing `/` is
    /// ignored.
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

/// The rules of the one-pass expression, in priority order. Each is a
/// named group; the replacement depends on which one matched.
const RULES: &[(&str, &str)] = &[
    // A PEM block, up to its END line, or to the end of the text when the
    // block is cut short (a truncated key is still a key).
    (
        "pem",
        r"-----BEGIN [A-Z0-9 ]{1,64}-----(?:[\s\S]*?-----END [A-Z0-9 ]{1,64}-----|[\s\S]*)",
    ),
    // `Authorization: <scheme> <credentials>` as a header line: the whole
    // value goes, whatever the scheme.
    (
        "auth",
        r#"(?i:\b(?:proxy-)?authorization)["']?[ \t]*[:=][ \t]*["']?(?:(?P<scheme>(?i:bearer|basic|digest|token|negotiate))[ \t]+)?(?P<cred>[A-Za-z0-9\-._~+/]+=*)"#,
    ),
    // `Bearer <token>`; whether the word after it is a token or prose is
    // decided in `accept`.
    ("bearer", r"(?i:\bbearer)[ \t]+[A-Za-z0-9\-._~+/]+=*"),
    // Key ids and tokens with an unambiguous shape.
    ("akia", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}"),
    (
        "github",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    ),
    ("gitlab", r"\bglpat-[A-Za-z0-9_\-]{20,}"),
    ("slack", r"\bxox[abeoprs]-[A-Za-z0-9\-]{10,}"),
    ("openai", r"\bsk-[A-Za-z0-9_\-]{20,}"),
    ("stripe", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("google", r"\bAIza[0-9A-Za-z_\-]{35}"),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*",
    ),
    // A command-line flag and its value: `--password hunter2`.
    (
        "flag",
        r#"(?i:(?:^|[\s'"])--?(?:password|passwd|passphrase|token|secret|api[_-]?key|access[_-]?key|auth[_-]?token))[ \t]+(?P<flagvalue>"[^"\n]*"|'[^'\n]*'|[^\s\-'"]\S*)"#,
    ),
    // The password of a URL's user information: `postgres://ada:pw@db`.
    (
        "userinfo",
        r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]+:(?P<pw>[^/\s@]+)@",
    ),
    // `name = value`, `"name": "value"`, `name:\n  value`: the name and the
    // separator stay, the value goes (quoted: up to the closing quote).
    (
        "assign",
        r#"(?i:(?:password|passwd|passphrase|secret(?:[_-]?access)?(?:[_-]?key)?|api[_-]?key|access[_-]?key|private[_-]?key|token))(?P<sep>["']?\s*(?:=>|:=|==?|:)\s*)(?:"(?P<dq>(?:[^"\\\n]|\\.)*)"|'(?P<sq>[^'\n]*)'|(?P<bare>\S+))"#,
    ),
];

/// The home-directory rules, after the secrets.
const HOMES: &[(&str, &str)] = &[(
    "homes",
    r#"(?:/home|/Users)/[^/\s"'`<>|:;,)\]}]+|\b[A-Za-z]:\\Users\\[^\\\s"'`<>|:;,)\]}]+"#,
)];

/// The PII rules, last.
const PIIS: &[(&str, &str)] = &[
    (
        "email",
        r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}",
    ),
    // International: `+` country code, then digit groups.
    (
        "phone",
        r"\+[1-9][0-9]{0,2}(?:[ .\-]?\(?[0-9]{1,4}\)?){2,5}|\(?\b[2-9][0-9]{2}\)?[ .\-][0-9]{3}[ .\-][0-9]{4}\b",
    ),
];

/// The compiled pipeline. Build it once (compiling is the expensive part)
/// and share it: redacting takes `&self`.
#[derive(Debug, Clone)]
pub struct Redactor {
    /// The operator's values, as one alternation, longest first.
    operator: Option<Regex>,
    /// Every other rule, as one alternation in priority order.
    rules: Regex,
    /// The names of the groups of `rules`, in order.
    names: Vec<&'static str>,
    /// The configured home directory, without a trailing `/`.
    home: Option<String>,
}

impl Redactor {
    /// Compiles the pipeline for `options`.
    pub fn new(options: Options) -> Redactor {
        let mut secrets: Vec<&str> = options
            .secrets
            .iter()
            .map(String::as_str)
            .filter(|s| !s.is_empty())
            .collect();
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        let operator = (!secrets.is_empty()).then(|| {
            let alternation: Vec<String> = secrets.iter().map(|s| regex::escape(s)).collect();
            Regex::new(&alternation.join("|")).expect("escaped literals compile")
        });

        let home = options
            .home
            .as_deref()
            .map(|h| h.trim_end_matches(['/', '\\']))
            .filter(|h| !h.is_empty())
            .map(str::to_owned);
        let home_rule = home.as_deref().map(|h| ("home", regex::escape(h)));

        let mut names = Vec::new();
        let mut parts = Vec::new();
        let mut add = |name: &'static str, pattern: &str| {
            names.push(name);
            // ASCII word boundaries keep the fast engines on non-ASCII text.
            let pattern = pattern.replace(r"\b", r"(?-u:\b)");
            parts.push(format!("(?P<{name}>{pattern})"));
        };
        RULES.iter().for_each(|(n, p)| add(n, p));
        if let Some((name, pattern)) = &home_rule {
            add(name, pattern);
        }
        HOMES.iter().for_each(|(n, p)| add(n, p));
        if options.pii {
            PIIS.iter().for_each(|(n, p)| add(n, p));
        }
        let rules = Regex::new(&parts.join("|")).expect("the pipeline's rules compile");
        Redactor {
            operator,
            rules,
            names,
            home,
        }
    }

    /// Redacts a text. Borrows it back when nothing matched.
    pub fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let text: Cow<'a, str> = match &self.operator {
            Some(operator) => operator.replace_all(text, SECRET),
            None => Cow::Borrowed(text),
        };
        match text {
            Cow::Borrowed(text) => self.rules_pass(text),
            // Keep the operator pass's string when the rules change nothing.
            Cow::Owned(text) => match self.rules_pass(&text) {
                Cow::Owned(redacted) => Cow::Owned(redacted),
                Cow::Borrowed(_) => Cow::Owned(text),
            },
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

    /// The one pass of the compiled rules.
    ///
    /// A candidate the context rejects (prose after "bearer", a digit run
    /// inside a longer number) is skipped one character at a time, so it
    /// hides nothing that starts inside it. A redacted span that another
    /// secret starts inside and outlasts (a `Bearer` token glued to an
    /// assignment's value) grows to cover it: no rule leaves half of a
    /// secret behind because an earlier one began first.
    fn rules_pass<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = String::new();
        let mut changed = false;
        let mut copied = 0;
        let mut next = self.rules.captures_at(text, 0);
        while let Some(caps) = next {
            let whole = caps.get(0).expect("group 0 is the match");
            let after_start = whole.start() + char_len(text, whole.start());
            let Some(replacement) = self.replacement(text, &caps) else {
                next = self.rules.captures_at(text, after_start);
                continue;
            };
            let mut end = whole.end();
            let mut probe = self.rules.captures_at(text, after_start);
            while let Some(inner) = probe.as_ref().and_then(|c| c.get(0)) {
                if inner.start() >= end {
                    break;
                }
                let inner_caps = probe.as_ref().expect("probed");
                // Only a secret is worth growing over: the rest of an email
                // or a path cut by a secret is no secret itself.
                let secret = || {
                    self.replacement(text, inner_caps)
                        .is_some_and(|r| r.contains(SECRET))
                };
                if inner.end() > end && secret() {
                    end = inner.end();
                }
                probe = self
                    .rules
                    .captures_at(text, inner.start() + char_len(text, inner.start()));
            }
            changed = true;
            out.push_str(&text[copied..whole.start()]);
            out.push_str(&replacement);
            copied = end;
            // The probe stopped at the first candidate past the span.
            next = probe;
        }
        if !changed {
            return Cow::Borrowed(text);
        }
        out.push_str(&text[copied..]);
        Cow::Owned(out)
    }

    /// What a match becomes, or `None` when the context shows it is not one.
    fn replacement(&self, text: &str, caps: &Captures<'_>) -> Option<String> {
        let name = self
            .names
            .iter()
            .find(|name| caps.name(name).is_some())
            .expect("one rule matched");
        let whole = caps.get(0).expect("group 0 is the match");
        let found = whole.as_str();
        let before = text[..whole.start()].chars().next_back();
        let after = text[whole.end()..].chars().next();
        match *name {
            "bearer" => {
                let token = found.split_whitespace().nth(1).unwrap_or_default();
                let scheme = &found[..found.find([' ', '\t']).unwrap_or(found.len())];
                looks_like_token(token).then(|| format!("{scheme} {SECRET}"))
            }
            "auth" => {
                let cred = caps.name("cred").expect("the rule has credentials");
                // Without a scheme, only something token-like is a credential
                // ("authorization: required" is prose).
                if caps.name("scheme").is_none() && !looks_like_token(cred.as_str()) {
                    return None;
                }
                Some(format!("{}{SECRET}", &text[whole.start()..cred.start()]))
            }
            "flag" => {
                let value = caps.name("flagvalue").expect("the rule has a value");
                if value.as_str().starts_with(SECRET) {
                    return None;
                }
                Some(format!("{}{SECRET}", &text[whole.start()..value.start()]))
            }
            "userinfo" => {
                let password = caps.name("pw").expect("the rule has a password");
                if password.as_str() == SECRET {
                    return None;
                }
                Some(format!(
                    "{}{SECRET}@",
                    &text[whole.start()..password.start()]
                ))
            }
            "assign" => {
                let value = ["dq", "sq", "bare"]
                    .iter()
                    .find_map(|g| caps.name(g))
                    .expect("one value form matched");
                // Already redacted (a bare value runs to the next space, so
                // what follows the marker is left to the other rules).
                if value.as_str().starts_with(SECRET) {
                    return None;
                }
                let mut out = found[..value.start() - whole.start()].to_owned();
                out.push_str(SECRET);
                out.push_str(&found[value.end() - whole.start()..]);
                Some(out)
            }
            "home" => (!after.is_some_and(is_path_char)).then(|| HOME.to_owned()),
            "homes" => {
                (!before.is_some_and(|c| c.is_alphanumeric() || c == '_')).then(|| HOME.to_owned())
            }
            "email" => Some(PII.to_owned()),
            "phone" => {
                let digits = found.chars().filter(char::is_ascii_digit).count();
                // Part of a longer number, version or word: not a phone number.
                let glued_before = before.is_some_and(|c| c.is_alphanumeric() || c == '.');
                let next_is_digit = text[whole.end()..]
                    .chars()
                    .nth(1)
                    .is_some_and(|c| c.is_ascii_digit());
                let glued_after = after.is_some_and(char::is_alphanumeric)
                    || (matches!(after, Some('-' | '.')) && next_is_digit);
                ((7..=15).contains(&digits) && !glued_before && !glued_after)
                    .then(|| PII.to_owned())
            }
            _ => Some(SECRET.to_owned()),
        }
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

/// Whether the word after `Bearer` is a credential rather than prose
/// ("the bearer of", "bearer bonds"): long enough and not a plain word.
fn looks_like_token(token: &str) -> bool {
    let word = token.trim_end_matches(['.', ',', ';', ':', '!', '?']);
    let plain = word.chars().all(|c| c.is_ascii_alphabetic());
    (!plain && word.len() >= 6) || word.len() >= 24
}

/// The length in bytes of the character at `at` (1 at the end).
fn char_len(text: &str, at: usize) -> usize {
    text[at..].chars().next().map_or(1, char::len_utf8)
}

fn is_path_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.')
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
