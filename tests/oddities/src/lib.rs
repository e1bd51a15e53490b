//! Types generated from `tests/oddities/schemas`, a registry of legal but
//! unusual schemas (keyword and non-identifier names, deep nesting, arrays
//! of arrays, every primitive type list). Nothing here is hand-written but
//! this file.
#![deny(missing_docs)]

// The capture tables (`drop_above`, `capture_into`) are crate-private;
// aep-types calls them from its down-levelling, this crate has none.
#[rustfmt::skip]
#[allow(dead_code)]
mod generated;

// The support code the generated modules call: aep-types' own module,
// compiled into this crate too (its tests run here as well).
#[path = "../../../aep-types/src/runtime.rs"]
mod runtime;

pub use generated::*;
