//! One module per fixture category, each a function from the fixtures
//! to the category's [`Category`].

pub mod attr_match;
pub mod capture_gating;
pub mod ce_roundtrip;
pub mod downlevel;
pub mod golden;
pub mod hooks;
pub mod invalid;
pub mod mappings;
pub mod ocsf;
pub mod otlp;
pub mod redaction;

use crate::report::Category;
use crate::Context;

/// A category's runner.
pub type Runner = fn(&Context) -> Category;

/// Every category the runner knows, by directory name, in the order
/// they are reported.
pub const ALL: [(&str, Runner); 11] = [
    ("golden", golden::run),
    ("invalid", invalid::run),
    ("downlevel", downlevel::run),
    ("capture-gating", capture_gating::run),
    ("mappings", mappings::run),
    (hooks::NAME, hooks::run),
    ("attr-match", attr_match::run),
    ("ce-roundtrip", ce_roundtrip::run),
    ("otlp", otlp::run),
    ("ocsf", ocsf::run),
    ("redaction", redaction::run),
];

/// The fixture directory a category reads: its name, but for the
/// runtime's pass over the `mappings` pins.
pub fn directory(name: &str) -> &str {
    if name == hooks::NAME {
        "mappings"
    } else {
        name
    }
}
