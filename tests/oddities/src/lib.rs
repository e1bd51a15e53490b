//! Types generated from `tests/oddities/schemas`, a registry of legal but
//! unusual schemas (keyword and non-identifier names, deep nesting, arrays
//! of arrays, every primitive type list). Nothing here is hand-written but
//! this file.
#![deny(missing_docs)]

#[rustfmt::skip]
mod generated;

pub use generated::*;
