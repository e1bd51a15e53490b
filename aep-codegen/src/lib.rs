//! `aep-codegen` turns an AEP JSON Schema registry into the Rust source of
//! the `aep-types` crate.
//!
//! Data flows one way through four stages, one module each:
//!
//! 1. [`load`]: read the registry directory and check it is one consistent
//!    registry (every `types.json` row has its file and every file its row);
//! 2. [`lower`]: lower each schema to the [`ir`], which is the single
//!    definition of the accepted subset; anything outside it is an
//!    [`Error`] naming the file, the JSON Pointer and the construct;
//! 3. `emit`: turn the IR, and nothing else, into tokens with `quote`
//!    (after `scope` names the types nested in a payload within its module);
//! 4. `format`: print the tokens with `prettyplease`, under a header.
//!
//! The generated code calls support code it does not contain (the error
//! type, the payload slot, the decoding and validation helpers) at
//! `crate::runtime`: the crate that includes the generated tree provides
//! that module. In `aep-types` it is the hand-written `src/runtime.rs`,
//! tested there.
//!
//! ```no_run
//! let files = aep_codegen::generate(std::path::Path::new("schemas"))?;
//! for file in &files {
//!     println!("{} ({} bytes)", file.path, file.contents.len());
//! }
//! # Ok::<(), aep_codegen::Error>(())
//! ```

mod emit;
mod error;
mod format;
pub mod ir;
pub mod json;
pub mod load;
pub mod lower;
mod naming;
mod scope;

use std::path::Path;

pub use error::Error;

/// One generated source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// Path relative to the output directory (`mod.rs` is the root module).
    pub path: String,
    /// What the file is generated from, for messages: a schema file
    /// relative to the registry, or a description.
    pub source: String,
    /// The formatted Rust source.
    pub contents: String,
}

/// Generates the Rust modules for the registry in `schemas`.
///
/// The output is deterministic: the same registry gives the same files,
/// byte for byte, in the same order. Nothing is written; the caller
/// decides where the files go.
pub fn generate(schemas: &Path) -> Result<Vec<GeneratedFile>, Error> {
    let registry = load::load(schemas)?;
    let ir = scope::local_names(lower::lower(&registry)?);
    emit::emit(&ir).into_iter().map(format::file).collect()
}
