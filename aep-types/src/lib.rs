//! Typed AEP events.
#[rustfmt::skip]
mod generated;
pub use generated::*;
