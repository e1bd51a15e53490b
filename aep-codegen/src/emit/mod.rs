//! Stage 3: the IR as Rust tokens, one token stream per module.
//!
//! Emission cannot fail: every name in the IR is already a valid, unique
//! Rust identifier. It knows nothing of files; `lib.rs` lays the modules
//! out.
//!
//! Dependencies between the submodules point one way, from the modules
//! that emit whole generated modules down to the shared pieces:
//!
//! ```text
//! mod ─▶ envelope, borrowed, registry, payload, capture ─▶ items ─▶ rules ─▶ context, docs ─▶ tokens
//! ```
//!
//! - `envelope`, `borrowed`, `registry`, `payload`, `capture`: one generated
//!   module each (`borrowed` is `event_ref`, the envelope borrowed from its text);
//! - `items`: the named types of the schema modules (structs, enums, unions);
//! - `rules`: validation and the capture table beside a struct;
//! - `context`: what emitting one item needs to know about the whole IR;
//! - `docs`: doc attributes and the schemas' rules in words;
//! - `tokens`: Rust names and types as tokens.
//!
//! A module uses only modules to its right, not necessarily the next
//! ones, and never one to its left or in its own group;
//! `aep-codegen/tests/layers.rs` checks it.

mod borrowed;
mod capture;
mod context;
mod docs;
mod envelope;
mod items;
mod payload;
mod registry;
mod rules;
mod tokens;

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use crate::ir::Ir;
use context::Context;
use docs::doc_line;
use tokens::ident;

/// One generated module: its name (`mod` for the root) and its tokens.
pub struct EmittedModule {
    /// `mod` for the root module, else the module name.
    pub name: String,
    /// What it is generated from.
    pub source: String,
    /// The module's contents.
    pub tokens: TokenStream,
}

/// All generated modules of the tree, root first. The support code they
/// call is not generated: the crate holding the tree provides it as
/// `crate::runtime` (in `aep-types`, the hand-written `src/runtime.rs`).
pub fn emit(ir: &Ir) -> Vec<EmittedModule> {
    let cx = Context { ir };
    let mut modules = vec![
        EmittedModule {
            name: "mod".to_owned(),
            source: "the whole registry".to_owned(),
            tokens: root(ir),
        },
        EmittedModule {
            name: "registry".to_owned(),
            source: "registry/*.json".to_owned(),
            tokens: registry::module(&ir.registry),
        },
        EmittedModule {
            name: "envelope".to_owned(),
            source: ir.envelope.source.clone(),
            tokens: envelope::module(&cx),
        },
        EmittedModule {
            name: "event_ref".to_owned(),
            source: ir.envelope.source.clone(),
            tokens: borrowed::module(&cx),
        },
        EmittedModule {
            name: "payload".to_owned(),
            source: "registry/types.json".to_owned(),
            tokens: payload::module(ir),
        },
        EmittedModule {
            name: "capture".to_owned(),
            source: "the payload schemas' capture siblings".to_owned(),
            tokens: capture::module(ir),
        },
    ];
    for module in &ir.modules {
        let doc = doc_line(&format!("Types of `{}`.", module.source));
        let items = module.items.iter().map(|i| items::item(&cx, i));
        modules.push(EmittedModule {
            name: module.name.clone(),
            source: module.source.clone(),
            tokens: quote! {
                #![doc = #doc]
                #(#items)*
            },
        });
    }
    modules
}

/// `mod.rs`: declares the modules and re-exports what users name from the
/// root: the envelope, the registry, the payload structs and the shared
/// definitions; types nested in a payload are named through its module.
fn root(ir: &Ir) -> TokenStream {
    let schema_modules: Vec<Ident> = ir.modules.iter().map(|m| ident(&m.name)).collect();
    let exports = ir.modules.iter().map(|m| {
        let module = ident(&m.name);
        let payloads: Vec<Ident> = ir
            .payloads
            .iter()
            .filter(|p| p.module == m.name)
            .map(|p| ident(&p.name))
            .collect();
        let names: Vec<Ident> = if payloads.is_empty() {
            m.items.iter().map(|i| ident(items::name(i))).collect()
        } else {
            payloads
        };
        quote!(pub use #module::{#(#names),*};)
    });
    let envelope_names = ir.envelope.items.iter().map(|i| ident(items::name(i)));
    quote! {
        //! The AEP registry as Rust types.

        mod registry;
        mod envelope;
        mod event_ref;
        mod payload;
        pub mod capture;
        #(pub mod #schema_modules;)*

        pub use crate::runtime::{pointer_token, Data, Error, Object, Violation, Violations};
        pub use registry::*;
        pub use envelope::{Event, ExtensionName, ExtensionValue, Extensions, CORE_ATTRIBUTES #(, #envelope_names)*};
        pub use event_ref::{EventRef, ExtensionValueRef, ExtensionsRef};
        pub use payload::Payload;
        #(#exports)*
    }
}
