//! Stage 3: the IR as Rust tokens, one token stream per module.
//!
//! Emission cannot fail: every name in the IR is already a valid, unique
//! Rust identifier. It knows nothing of files; `lib.rs` lays the modules
//! out.

mod envelope;
mod items;
mod payload;
mod registry;
mod rules;

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::quote;

use crate::ir::{Ir, Item, Ty, TypePath};

/// What emission needs to know about the whole IR while emitting one item.
pub(crate) struct Context<'a> {
    pub ir: &'a Ir,
}

impl Context<'_> {
    /// Whether a named type is a struct (which has `validate_into` and
    /// `drop_above`), not an enum or union.
    pub fn is_struct(&self, path: &TypePath) -> bool {
        self.items(path)
            .any(|i| matches!(i, Item::Struct(s) if s.name == path.name))
    }

    /// The items of the module a path points into.
    fn items<'p>(&'p self, path: &'p TypePath) -> impl Iterator<Item = &'p Item> + 'p {
        let envelope = (path.module == "envelope").then_some(&self.ir.envelope.items);
        let modules = self
            .ir
            .modules
            .iter()
            .filter(move |m| m.name == path.module)
            .map(|m| &m.items);
        envelope.into_iter().chain(modules).flatten()
    }

    /// Whether a value of the type holds an `f64` anywhere (so the type
    /// cannot be `Eq` or `Hash`).
    pub fn holds_float(&self, ty: &Ty) -> bool {
        self.holds_float_within(ty, &mut Vec::new())
    }

    fn holds_float_within<'p>(&'p self, ty: &'p Ty, seen: &mut Vec<&'p TypePath>) -> bool {
        match ty {
            Ty::Number(_) => true,
            Ty::Array(item, _) => self.holds_float_within(item, seen),
            Ty::Named(path) if seen.contains(&path) => false,
            Ty::Named(path) => {
                seen.push(path);
                self.items(path).any(|item| match item {
                    Item::Struct(s) if s.name == path.name => s
                        .fields
                        .iter()
                        .any(|f| self.holds_float_within(&f.ty, seen)),
                    Item::Union(u) if u.name == path.name => {
                        u.members.contains(&crate::ir::Primitive::Number)
                    }
                    _ => false,
                })
            }
            _ => false,
        }
    }

    /// Whether a type is `Copy` (numbers, booleans and string enums).
    pub fn is_copy(&self, ty: &Ty) -> bool {
        match ty {
            Ty::Integer(_) | Ty::Number(_) | Ty::Boolean => true,
            Ty::Named(path) if path.module == "registry" => true,
            Ty::Named(path) => self
                .items(path)
                .any(|i| matches!(i, Item::Enum(e) if e.name == path.name)),
            _ => false,
        }
    }

    /// A capture level as a `Capture` variant.
    pub fn capture(&self, level: &str) -> TokenStream {
        let variant = self
            .ir
            .registry
            .capture
            .iter()
            .find(|(value, _)| value == level)
            .map(|(_, variant)| ident(variant))
            .expect("lowering checked every capture level");
        quote!(super::registry::Capture::#variant)
    }

    /// The position of a capture level in the registry's scale.
    pub fn capture_rank(&self, level: &str) -> usize {
        self.ir
            .registry
            .capture
            .iter()
            .position(|(value, _)| value == level)
            .expect("lowering checked every capture level")
    }

    /// The position of the level of members without `x-aep-capture`
    /// in the registry's capture scale.
    pub fn capture_default_index(&self) -> usize {
        let registry = &self.ir.registry;
        registry
            .capture
            .iter()
            .position(|(_, variant)| *variant == registry.capture_default)
            .expect("lowering checked the default capture level")
    }
}

/// The support module, emitted as written.
const RUNTIME: &str = include_str!("../../templates/runtime.rs");

/// One generated module: its name (`mod` for the root) and its tokens.
pub struct EmittedModule {
    /// `mod` for the root module, else the module name.
    pub name: String,
    /// What it is generated from.
    pub source: String,
    /// The module's contents.
    pub tokens: TokenStream,
}

/// All modules of the generated tree, root first.
pub fn emit(ir: &Ir) -> Vec<EmittedModule> {
    let cx = Context { ir };
    let runtime: TokenStream = RUNTIME.parse().expect("the runtime template is valid Rust");
    let mut modules = vec![
        EmittedModule {
            name: "mod".to_owned(),
            source: "the whole registry".to_owned(),
            tokens: root(ir),
        },
        EmittedModule {
            name: "runtime".to_owned(),
            source: "the generator's runtime template".to_owned(),
            tokens: runtime,
        },
        EmittedModule {
            name: "registry".to_owned(),
            source: "registry/*.json".to_owned(),
            tokens: registry::module(&ir.registry),
        },
        EmittedModule {
            name: "envelope".to_owned(),
            source: crate::load::ENVELOPE_FILE.to_owned(),
            tokens: envelope::module(&cx),
        },
        EmittedModule {
            name: "payload".to_owned(),
            source: "registry/types.json".to_owned(),
            tokens: payload::module(ir),
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

        pub(crate) mod runtime;
        mod registry;
        mod envelope;
        mod payload;
        #(pub mod #schema_modules;)*

        pub use runtime::{Data, Error, Object, Violation, Violations};
        pub use registry::*;
        pub use envelope::{Event, ExtensionName, ExtensionValue, Extensions, CORE_ATTRIBUTES #(, #envelope_names)*};
        pub use payload::Payload;
        #(#exports)*
    }
}

pub(crate) fn ident(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}

/// A path to a named type from a sibling module.
pub(crate) fn path(path: &TypePath) -> TokenStream {
    let module = ident(&path.module);
    let name = ident(&path.name);
    quote!(super::#module::#name)
}

/// The Rust type of a value.
pub(crate) fn ty(ty: &Ty) -> TokenStream {
    match ty {
        Ty::String(_) => quote!(String),
        Ty::Integer(rules) if rules.unsigned() => quote!(u64),
        Ty::Integer(_) => quote!(i64),
        Ty::Number(_) => quote!(f64),
        Ty::Boolean => quote!(bool),
        Ty::FreeObject => quote!(super::runtime::Object),
        Ty::Array(item, _) => {
            let item = self::ty(item);
            quote!(Vec<#item>)
        }
        Ty::Named(p) => path(p),
        Ty::PayloadSlot => quote!(super::runtime::Data),
    }
}

/// Whether a value's Rust type holds `f64`s directly (not inside a
/// named type, which writes its own).
pub(crate) fn holds_numbers(ty: &Ty) -> bool {
    match ty {
        Ty::Number(_) => true,
        Ty::Array(item, _) => holds_numbers(item),
        _ => false,
    }
}

/// Doc attributes, one paragraph each.
pub(crate) fn docs(paragraphs: &[String]) -> TokenStream {
    let mut out = TokenStream::new();
    for (i, paragraph) in paragraphs.iter().enumerate() {
        if i > 0 {
            out.extend(doc_attr(""));
        }
        out.extend(doc_attr(
            &paragraph.split_whitespace().collect::<Vec<_>>().join(" "),
        ));
    }
    out
}

fn doc_attr(text: &str) -> TokenStream {
    let line = doc_line(text);
    quote!(#[doc = #line])
}

/// A doc line as prettyplease prints it after `///`.
pub(crate) fn doc_line(text: &str) -> Literal {
    if text.is_empty() {
        Literal::string("")
    } else {
        Literal::string(&format!(" {text}"))
    }
}
