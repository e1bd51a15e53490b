//! Why an input could not be mapped.

use std::fmt;

/// An input that cannot be mapped: not JSON, not the shape its vocabulary
/// documents (a member of the wrong JSON type, a required member
/// missing), or mapped to an event the schemas refuse. The message names
/// the place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapError {
    message: String,
}

impl MapError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> MapError {
        MapError {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The same error, its message prefixed with `place`.
    pub fn at(self, place: &str) -> MapError {
        MapError::new(format!("{place}: {}", self.message))
    }
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for MapError {}
