//! What emitting one item needs to know about the whole IR.

use proc_macro2::TokenStream;
use quote::quote;

use super::tokens::ident;
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

    /// The level of members without `x-aep-capture`.
    pub fn capture_default(&self) -> TokenStream {
        let variant = ident(&self.ir.registry.capture_default);
        quote!(super::registry::Capture::#variant)
    }
}
