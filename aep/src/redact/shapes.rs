//! Credentials with an unambiguous shape: a known prefix and a run of
//! token characters (AWS key ids, GitHub, GitLab, Slack, OpenAI-style,
//! Stripe and Google keys), JWTs, and the password of a URL's user
//! information.
//!
//! A token goes whole: from its prefix to the end of its run, however
//! long (a minimum length decides whether it is one). Prefixes that could
//! end an ordinary word (`sk-` in `task-…`, `eyJ` in `honeyJar`) must not
//! follow a letter or a digit, unless those are part of a secret; the
//! distinctive ones (`AKIA`, `ghp_`, `glpat-`, `xoxb-`) may.

use super::heads::{Head, HeadKind};
use super::line::Deferred;
use super::scan::{Class, Kind, Scan, Slot};
use super::SECRET;

/// One shape: its prefix (an expression), whether a letter or a digit may
/// come before it, the class of its run and the run's least length.
struct Shape {
    prefix: &'static str,
    glued: bool,
    class: Class,
    least: usize,
}

const fn shape(prefix: &'static str, glued: bool, class: Class, least: usize) -> Shape {
    Shape {
        prefix,
        glued,
        class,
        least,
    }
}

/// The shapes. The last one, `eyJ`, is the JWT, measured apart.
const SHAPES: &[Shape] = &[
    // AEP-0003 §9.4(a): `AKIA[0-9A-Z]{16}`, wherever it is.
    shape("AKIA", true, Class::UpperDigit, 16),
    shape("ASIA", false, Class::UpperDigit, 16),
    // GitHub: classic, OAuth, user-to-server, server-to-server, refresh.
    shape("gh[pousr]_", true, Class::Alnum, 20),
    shape("github_pat_", true, Class::AlnumUnderscore, 20),
    // GitLab: personal, deploy, runner, pipeline trigger, CI build, feed,
    // incoming mail, agent, OAuth, SCIM, feature flags tokens.
    shape(
        "gl(?:pat|dt|rtr|rt|ptt|cbt|ft|imt|agent|oas|soat|ffct)-",
        true,
        Class::Base64Url,
        20,
    ),
    // Slack: bot, user, app-level and the other xox tokens.
    shape("xox[abeoprs]-", true, Class::AlnumDash, 10),
    shape("xapp-", true, Class::AlnumDash, 10),
    // OpenAI-style (`sk-proj-`, `sk-ant-`), Stripe keys and webhook secrets.
    shape("sk-", false, Class::Base64Url, 20),
    shape("[rs]k_(?:live|test)_", false, Class::Alnum, 10),
    shape("whsec_", true, Class::Alnum, 20),
    // Google API keys.
    shape("AIza", true, Class::Base64Url, 35),
    // JWT: `eyJ…` `.` `…` `.` `…`, and up to two more parts (JWE).
    shape("eyJ", false, Class::Base64Url, 0),
];

/// The prefixes of the shapes, as expressions, for the heads.
pub(crate) fn prefixes() -> Vec<&'static str> {
    SHAPES.iter().map(|s| s.prefix).collect()
}

/// Marks the tokens and URL passwords of the line; a prefix glued to a
/// word before it waits in `deferred`.
pub(crate) fn scan(scan: &mut Scan<'_>, heads: &[Head], deferred: &mut Vec<Deferred>) {
    for head in heads {
        match head.kind {
            HeadKind::Shape(index) => token(scan, head, index, deferred),
            HeadKind::Scheme => userinfo(scan, head.start),
            _ => {}
        }
    }
}

/// A token whose prefix is `head`, of shape `index`.
fn token(scan: &mut Scan<'_>, head: &Head, index: usize, deferred: &mut Vec<Deferred>) {
    let shape = &SHAPES[index];
    let (start, end) = (head.start, head.end);
    let token_end = if index == SHAPES.len() - 1 {
        jwt_end(scan, end)
    } else {
        let run = scan.run_end(Slot::Shape(index), shape.class, end);
        (run - end >= shape.least).then_some(run)
    };
    let Some(token_end) = token_end else {
        return;
    };
    let glue = start > 0 && scan.text.as_bytes()[start - 1].is_ascii_alphanumeric();
    if !shape.glued && glue {
        deferred.push(Deferred {
            at: start,
            span: Some((start, token_end)),
            owes: 0,
        });
    } else {
        scan.push(start, token_end, Kind::Secret);
    }
}

/// The end of a JWT whose `eyJ` ends at `at`: two dots, each after a
/// non-empty part, a third part that may be empty (`alg: none`), and up to
/// two more `.`-parts.
fn jwt_end(scan: &mut Scan<'_>, at: usize) -> Option<usize> {
    let first = scan.run_end(Slot::Jwt(0), Class::Base64Url, at);
    if first == at || scan.byte(first) != Some(b'.') {
        return None;
    }
    let second = scan.run_end(Slot::Jwt(1), Class::Base64Url, first + 1);
    if second == first + 1 || scan.byte(second) != Some(b'.') {
        return None;
    }
    let mut end = scan.run_end(Slot::Jwt(2), Class::Base64Url, second + 1);
    for part in 3..5 {
        if scan.byte(end) != Some(b'.') {
            break;
        }
        let next = scan.run_end(Slot::Jwt(part), Class::Base64Url, end + 1);
        if next == end + 1 {
            break;
        }
        end = next;
    }
    Some(end)
}

/// The password of a URL's user information: `scheme://user:password@`,
/// `at` being where `://` is.
fn userinfo(scan: &mut Scan<'_>, at: usize) {
    {
        // A scheme: letters, digits, `+`, `.`, `-`, a letter among them.
        let bytes = scan.text.as_bytes();
        let mut scheme = at;
        let mut letter = false;
        while scheme > 0 && is_scheme(bytes[scheme - 1]) {
            scheme -= 1;
            letter |= bytes[scheme].is_ascii_alphabetic();
        }
        scan.work += (at - scheme) as u64;
        if !letter {
            return;
        }
        let user_end = end_of(scan, at + 3, |c| !matches!(c, '/' | ':' | '@'));
        if user_end == at + 3 || scan.byte(user_end) != Some(b':') {
            return;
        }
        let password_end = end_of(scan, user_end + 1, |c| !matches!(c, '/' | '@'));
        if password_end == user_end + 1 || scan.byte(password_end) != Some(b'@') {
            return;
        }
        if &scan.text[user_end + 1..password_end] != SECRET {
            scan.push(user_end + 1, password_end, Kind::Secret);
        }
    }
}

fn is_scheme(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'.' | b'-')
}

/// The end of the run of non-space characters `keep` accepts, from `at`.
fn end_of(scan: &mut Scan<'_>, at: usize, keep: impl Fn(char) -> bool) -> usize {
    let mut end = at;
    for c in scan.text[at..].chars() {
        scan.work += 1;
        if c.is_whitespace() || !keep(c) {
            break;
        }
        end += c.len_utf8();
    }
    end
}
