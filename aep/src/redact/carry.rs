//! What one line leaves open for the next: a PEM block, or a credential
//! whose value, operator or token is still to come (`password:\n  hunter2`,
//! `Authorization: Bearer\n  abc`).
//!
//! The rules look at one line at a time; these are the only constructs of
//! the pipeline that cross a line break, so a line's redaction depends on
//! the text before it only through a [`Carry`]. That is what lets a stream
//! write each line as soon as it has read it.

/// The state carried from one line to the next.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Carry {
    /// Inside a PEM block: everything up to an END marker is secret.
    pub pem: bool,
    /// The unfinished constructs, `OWE_*` bits.
    pub owed: u8,
}

impl std::ops::BitOr for Carry {
    type Output = Carry;

    fn bitor(self, other: Carry) -> Carry {
        Carry {
            pem: self.pem || other.pem,
            owed: self.owed | other.owed,
        }
    }
}

/// A credential name (and its quote) then whitespace: an operator next.
pub(crate) const OWE_OP: u8 = 1;
/// A credential name and its operator, then whitespace: the value next.
pub(crate) const OWE_VALUE: u8 = 1 << 1;
/// As [`OWE_OP`], for `Authorization`.
pub(crate) const OWE_AUTH_OP: u8 = 1 << 2;
/// As [`OWE_VALUE`], for `Authorization`.
pub(crate) const OWE_AUTH_VALUE: u8 = 1 << 3;
/// `Authorization:` and a scheme (`Bearer`, `Basic`, ...): the credentials next.
pub(crate) const OWE_CRED: u8 = 1 << 4;
/// `bearer` then a line break: a token-looking word next.
pub(crate) const OWE_BEARER: u8 = 1 << 5;
/// `Bearer` in a header (after `:`, `=` or a quote) then a line break: any
/// word next.
pub(crate) const OWE_BEARER_ANY: u8 = 1 << 6;
