//! Rust names and types as tokens: the smallest pieces every emitter uses.

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

use crate::ir::{Ty, TypePath};

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
        Ty::FreeObject => quote!(crate::runtime::Object),
        Ty::Array(item, _) => {
            let item = self::ty(item);
            quote!(Vec<#item>)
        }
        Ty::Named(p) => path(p),
        Ty::PayloadSlot => quote!(crate::runtime::Data),
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
