//! The crate's error: what went wrong, said the way the command says it,
//! with the error that caused it kept underneath.
//!
//! An [`Error`] is a message and an optional source. Its `Display` is the
//! message followed by each cause, joined with `": "`, the way the
//! commands print an error after their name
//! (`aep sink: error: --out dir: Permission denied (os error 13)`): every
//! message added with [`Context`], then the error that started it. That
//! error's own sources are left out (the errors of `aep-client` already
//! sum theirs up in their words); `{:#}` prints them too, and
//! [`Error::causes`] walks them all.
//! [`Context`] adds a message over a failure:
//!
//! ```ignore
//! let text = std::fs::read_to_string(&path)
//!     .with_context(|| path.display().to_string())?;
//! ```
//!
//! A cause is printed once: one whose text ends what is already written
//! (an error that prints its source in its own message) is skipped.

use std::error::Error as StdError;
use std::fmt;

/// A boxed cause.
type Source = Box<dyn StdError + Send + Sync + 'static>;

/// `Result` with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A message and the error that caused it, if any.
pub struct Error {
    message: String,
    source: Option<Source>,
}

impl Error {
    /// An error with a message and no cause.
    pub fn msg(message: impl fmt::Display) -> Error {
        Error {
            message: message.to_string(),
            source: None,
        }
    }

    /// An error that is only its cause: it prints as the cause does.
    pub fn from_source(source: impl StdError + Send + Sync + 'static) -> Error {
        Error {
            message: String::new(),
            source: Some(Box::new(source)),
        }
    }

    /// This error under a message of its own: `message: self`.
    pub fn context(self, message: impl fmt::Display) -> Error {
        Error {
            message: message.to_string(),
            source: Some(Box::new(self)),
        }
    }

    /// Each cause, nearest first.
    pub fn causes(&self) -> impl Iterator<Item = &(dyn StdError + 'static)> {
        let first: Option<&(dyn StdError + 'static)> = match &self.source {
            Some(source) => Some(source.as_ref()),
            None => None,
        };
        std::iter::successors(first, |&cause| cause.source())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut written = self.message.clone();
        let mut say = |text: &str| {
            if text.is_empty() || written.ends_with(text) {
                return;
            }
            if !written.is_empty() {
                written.push_str(": ");
            }
            written.push_str(text);
        };
        for cause in self.causes() {
            // A nested `Error` says its own message here; its causes
            // follow in the chain.
            if let Some(inner) = cause.downcast_ref::<Error>() {
                say(&inner.message);
                continue;
            }
            say(&cause.to_string());
            if !f.alternate() {
                break;
            }
        }
        f.write_str(&written)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `{:?}` (a test's `unwrap`) shows the whole text too.
        fmt::Debug::fmt(&self.to_string(), f)
    }
}

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match &self.source {
            Some(source) => Some(source.as_ref()),
            None => None,
        }
    }
}

impl From<String> for Error {
    fn from(message: String) -> Error {
        Error::msg(message)
    }
}

impl From<&str> for Error {
    fn from(message: &str) -> Error {
        Error::msg(message)
    }
}

impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Error {
        Error::from_source(error)
    }
}

impl From<serde_json::Error> for Error {
    fn from(error: serde_json::Error) -> Error {
        Error::from_source(error)
    }
}

/// Adds a message over the failure of a `Result` or the absence of an
/// `Option` value.
pub trait Context<T> {
    /// Fails with `message`, over the error if there is one.
    fn context(self, message: impl fmt::Display) -> Result<T>;

    /// As [`context`](Context::context), the message made only on failure.
    fn with_context<M: fmt::Display>(self, message: impl FnOnce() -> M) -> Result<T>;
}

impl<T, E: StdError + Send + Sync + 'static> Context<T> for std::result::Result<T, E> {
    fn context(self, message: impl fmt::Display) -> Result<T> {
        self.map_err(|source| Error {
            message: message.to_string(),
            source: Some(Box::new(source)),
        })
    }

    fn with_context<M: fmt::Display>(self, message: impl FnOnce() -> M) -> Result<T> {
        self.map_err(|source| Error {
            message: message().to_string(),
            source: Some(Box::new(source)),
        })
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, message: impl fmt::Display) -> Result<T> {
        self.ok_or_else(|| Error::msg(message))
    }

    fn with_context<M: fmt::Display>(self, message: impl FnOnce() -> M) -> Result<T> {
        self.ok_or_else(|| Error::msg(message()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    fn not_found() -> io::Error {
        io::Error::new(io::ErrorKind::NotFound, "No such file or directory")
    }

    #[test]
    fn a_message_alone() {
        assert_eq!(Error::msg("bad flag").to_string(), "bad flag");
        let none: Option<u8> = None;
        assert_eq!(
            none.context("no value").unwrap_err().to_string(),
            "no value"
        );
    }

    #[test]
    fn the_context_then_the_cause() {
        let error = Err::<(), _>(not_found()).context("a.jsonl").unwrap_err();
        assert_eq!(error.to_string(), "a.jsonl: No such file or directory");
        assert_eq!(error.message, "a.jsonl");
        assert!(error
            .source()
            .unwrap()
            .downcast_ref::<io::Error>()
            .is_some());
    }

    #[test]
    fn nested_contexts_print_each_once() {
        let error = Err::<(), _>(not_found())
            .with_context(|| "a.jsonl")
            .context("--out dir")
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "--out dir: a.jsonl: No such file or directory"
        );
        assert_eq!(error.causes().count(), 2);
        let wrapped = Error::msg("inner").context("outer");
        assert_eq!(wrapped.to_string(), "outer: inner");
    }

    /// Keeps its source apart from its own message.
    #[derive(Debug)]
    struct Summing(io::Error);

    impl fmt::Display for Summing {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("cannot reach the relay")
        }
    }

    impl StdError for Summing {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn the_sources_of_a_foreign_error_show_with_the_alternate_form() {
        let error = Err::<(), _>(Summing(not_found()))
            .context("post")
            .unwrap_err();
        assert_eq!(error.to_string(), "post: cannot reach the relay");
        assert_eq!(
            format!("{error:#}"),
            "post: cannot reach the relay: No such file or directory"
        );
    }

    #[test]
    fn a_bare_cause_prints_as_itself() {
        assert_eq!(
            Error::from(not_found()).to_string(),
            "No such file or directory"
        );
    }

    /// Says its source in its own message, as some errors do.
    #[derive(Debug)]
    struct Wrapping(io::Error);

    impl fmt::Display for Wrapping {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "cannot open: {}", self.0)
        }
    }

    impl StdError for Wrapping {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_already_said_is_not_repeated() {
        let error = Err::<(), _>(Wrapping(not_found()))
            .context("a.jsonl")
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "a.jsonl: cannot open: No such file or directory"
        );
        assert_eq!(
            format!("{error:#}"),
            "a.jsonl: cannot open: No such file or directory"
        );
        assert_eq!(error.causes().count(), 2);
    }
}
