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
