//! The project's developer commands, as a library so tests can run them.

pub mod bench;
pub mod codegen;
pub mod conformance;

use std::path::PathBuf;

/// The workspace root.
pub fn project_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .expect("xtask sits in the workspace root")
        .to_path_buf()
}
