//! The one error type of the generator: where in the registry, and what.

use std::fmt;

/// A registry the generator refuses, with the place it refuses it.
///
/// `file` is relative to the registry directory, `pointer` is the JSON
/// Pointer (RFC 6901) of the offending schema inside that file (empty for
/// the whole document), and `message` names the construct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The file, relative to the registry directory, with `/` separators.
    pub file: String,
    /// JSON Pointer of the offending value inside `file`.
    pub pointer: String,
    /// What is wrong, naming the construct.
    pub message: String,
}

impl Error {
    pub(crate) fn new(file: &str, pointer: &str, message: impl Into<String>) -> Self {
        Error {
            file: file.to_owned(),
            pointer: pointer.to_owned(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}: {}", self.file, self.pointer, self.message)
    }
}

impl std::error::Error for Error {}

/// Appends one reference token to a JSON Pointer, escaping `~` and `/`.
pub(crate) fn child(pointer: &str, token: &str) -> String {
    let escaped = token.replace('~', "~0").replace('/', "~1");
    format!("{pointer}/{escaped}")
}
