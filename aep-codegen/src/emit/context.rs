//! What emitting one item needs to know about the whole IR.

use proc_macro2::TokenStream;
use quote::quote;

use super::tokens::{self, ident, ty};
use crate::ir::{Field, Ir, Item, Ty, TypePath};

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

/// `{field}_or_default()` for an optional attribute with a `default`
/// (lowering checked that the default is a value of the field's type).
pub fn default_accessor(ir: &Ir, f: &Field) -> Option<TokenStream> {
    let default = f.default.as_ref()?;
    if f.required {
        return None;
    }
    let name = ident(&f.ident);
    let body = match (&f.ty, default) {
        (Ty::Integer(rules), crate::json::Value::Number(n)) if rules.unsigned() => {
            let n = proc_macro2::Literal::u64_unsuffixed(n.as_u64()?);
            quote!(self.#name.unwrap_or(#n))
        }
        (Ty::Integer(_), crate::json::Value::Number(n)) => {
            let n = proc_macro2::Literal::i64_unsuffixed(n.as_i64()?);
            quote!(self.#name.unwrap_or(#n))
        }
        (Ty::Number(_), crate::json::Value::Number(n)) => {
            let n = proc_macro2::Literal::f64_unsuffixed(n.as_f64()?);
            quote!(self.#name.unwrap_or(#n))
        }
        (Ty::Boolean, crate::json::Value::Bool(b)) => quote!(self.#name.unwrap_or(#b)),
        (Ty::String(_), crate::json::Value::String(s)) => {
            quote!(self.#name.clone().unwrap_or_else(|| #s.to_owned()))
        }
        (Ty::Named(path), crate::json::Value::String(s)) => {
            let variant = ident(&enum_variant(ir, path, s)?);
            let t = tokens::path(path);
            quote!(self.#name.unwrap_or(#t::#variant))
        }
        _ => return None,
    };
    let method = quote::format_ident!("{}_or_default", f.ident.trim_end_matches('_'));
    let t = ty(&f.ty);
    let doc = format!(
        " `{}`, or its protocol default `{default}` when absent.",
        f.json
    );
    Some(quote! {
        #[doc = #doc]
        pub fn #method(&self) -> #t {
            #body
        }
    })
}

/// The variant of `value` in the enum at `path`.
fn enum_variant(ir: &Ir, path: &TypePath, value: &str) -> Option<String> {
    let registry = match (path.module.as_str(), path.name.as_str()) {
        ("registry", "Severity") => Some(&ir.registry.severity),
        ("registry", "Capture") => Some(&ir.registry.capture),
        ("registry", "NackReason") => Some(&ir.registry.nack_reasons),
        _ => None,
    };
    let variants = match registry {
        Some(variants) => variants,
        None => {
            let items = if path.module == "envelope" {
                &ir.envelope.items
            } else {
                &ir.modules.iter().find(|m| m.name == path.module)?.items
            };
            items.iter().find_map(|i| match i {
                Item::Enum(e) if e.name == path.name => Some(&e.variants),
                _ => None,
            })?
        }
    };
    variants
        .iter()
        .find(|(v, _)| v == value)
        .map(|(_, variant)| variant.clone())
}
