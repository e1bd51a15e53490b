//! One way for every live command to say what went wrong with a relay:
//! the cause in words, the URL, a wrong token told apart from a missing
//! one, the relay's own `error`/`detail` as a sentence, and `aep doctor`
//! for the rest. A relay never reached is tried a bounded number of times
//! and then given up on; one reached and lost is tried again for ever.

use aep_client::Error;
use serde_json::Value;

use crate::diag;

/// What went wrong talking to the relay at `relay`, as a sentence;
/// `token_given` tells a wrong token from a missing one.
pub fn explain(error: &Error, relay: &str, token_given: bool) -> String {
    match error {
        Error::Network(cause) => format!(
            "cannot reach the relay at {relay}: {cause}. Is `aep relay` running there? \
             `aep doctor` checks the address and the token"
        ),
        Error::Timeout => format!("the relay at {relay} did not answer in time"),
        Error::Http {
            status: 401 | 403, ..
        } if token_given => format!(
            "the relay at {relay} refused the token: it is not the one the relay was \
             started with (AEP_TOKEN of `aep relay`)"
        ),
        Error::Http {
            status: 401 | 403, ..
        } => format!(
            "the relay at {relay} needs a token: set AEP_TOKEN to the token the relay was \
             started with"
        ),
        Error::Http { status: 404, .. } => format!(
            "{relay} answers, but not as an AEP relay (404): give the relay's base URL, \
             such as http://127.0.0.1:8787"
        ),
        Error::Http { status, body } => match said(body) {
            Some(said) => format!("the relay at {relay} refused ({status}): {said}"),
            None => format!("the relay at {relay} answered HTTP {status}"),
        },
        Error::Refused { code, detail } if detail.is_empty() => {
            format!("the relay at {relay} refused: {code}")
        }
        Error::Refused { code, detail } => {
            format!("the relay at {relay} refused: {code}: {detail}")
        }
        other => other.to_string(),
    }
}

/// A relay's JSON error body (`{"error": ..., "detail": ...}`) as words.
fn said(body: &str) -> Option<String> {
    let value: Value = serde_json::from_str(body).ok()?;
    let error = value.get("error").and_then(Value::as_str)?;
    Some(match value.get("detail").and_then(Value::as_str) {
        Some(detail) if !detail.is_empty() => format!("{error}: {detail}"),
        _ => error.to_owned(),
    })
}

/// How many times a relay never reached is tried before the command gives
/// up (about ten seconds with the clients' backoff).
pub const TRIES: u32 = 5;

/// A long-running command's connection news.
#[derive(Debug)]
pub struct Reach {
    command: &'static str,
    relay: String,
    ever: bool,
    failures: u32,
}

impl Reach {
    /// Nothing reached yet.
    pub fn new(command: &'static str, relay: &str) -> Reach {
        Reach {
            command,
            relay: relay.to_owned(),
            ever: false,
            failures: 0,
        }
    }

    /// The connection is up.
    pub fn connected(&mut self) {
        self.ever = true;
        self.failures = 0;
    }

    /// The connection failed or dropped for `why`: said, and `true` when
    /// the command should give up (the relay was never reached, [`TRIES`]
    /// times).
    pub fn lost(&mut self, why: &str) -> bool {
        let (command, relay) = (self.command, &self.relay);
        if self.ever {
            diag!("aep {command}: disconnected from {relay} ({why}); reconnecting");
            return false;
        }
        self.failures += 1;
        if self.failures >= TRIES {
            diag!(
                "aep {command}: error: never reached the relay at {relay} ({why}), {TRIES} tries. \
                 Is `aep relay` running there? `aep doctor` checks the address and the token"
            );
            return true;
        }
        diag!(
            "aep {command}: cannot reach the relay at {relay} ({why}); trying again ({}/{TRIES})",
            self.failures
        );
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RELAY: &str = "http://127.0.0.1:8787";

    #[test]
    fn a_wrong_token_is_told_from_a_missing_one() {
        let refused = Error::Http {
            status: 401,
            body: r#"{"error":"unauthorized"}"#.into(),
        };
        assert!(explain(&refused, RELAY, true).contains("refused the token"));
        assert!(explain(&refused, RELAY, false).contains("needs a token"));
    }

    #[test]
    fn the_relays_words_are_a_sentence_and_the_url_is_named() {
        let busy = Error::Http {
            status: 503,
            body: r#"{"error":"busy","detail":"too many bodies in flight"}"#.into(),
        };
        assert_eq!(
            explain(&busy, RELAY, true),
            "the relay at http://127.0.0.1:8787 refused (503): busy: too many bodies in flight"
        );
        let down = Error::Network("connection refused (nothing listens there)".into());
        let said = explain(&down, RELAY, true);
        assert!(
            said.contains(RELAY) && said.contains("connection refused"),
            "{said}"
        );
        assert!(said.contains("aep doctor"), "{said}");
        let lost = explain(
            &Error::Http {
                status: 404,
                body: String::new(),
            },
            RELAY,
            true,
        );
        assert!(lost.contains("base URL"), "{lost}");
    }

    #[test]
    fn a_relay_never_reached_is_given_up_on_one_reached_never() {
        let mut reach = Reach::new("tail", RELAY);
        for _ in 1..TRIES {
            assert!(!reach.lost("connection refused"));
        }
        assert!(reach.lost("connection refused"), "given up after {TRIES}");
        let mut reach = Reach::new("tail", RELAY);
        reach.connected();
        for _ in 0..TRIES * 3 {
            assert!(!reach.lost("connection reset"));
        }
    }
}
