//! Structs, enums and unions: the named types of the schema modules.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use super::context::Context;
use super::docs::{describe_rule, docs};
use super::rules;
use super::tokens::{holds_numbers, ident, ty};
use crate::ir::{Enum, Field, Item, Primitive, Struct, Ty, Union};

pub fn name(item: &Item) -> &str {
    match item {
        Item::Struct(s) => &s.name,
        Item::Enum(e) => &e.name,
        Item::Union(u) => &u.name,
    }
}

pub fn item(cx: &Context<'_>, item: &Item) -> TokenStream {
    match item {
        Item::Struct(s) => strukt(cx, s, &CatchAll::extra()),
        Item::Enum(e) => enumeration(e),
        Item::Union(u) => union(u),
    }
}

/// Where a struct keeps the members its schema does not describe.
pub struct CatchAll {
    /// The field name.
    pub field: &'static str,
    /// Its type.
    pub ty: TokenStream,
    /// Its documentation.
    pub doc: &'static str,
    /// The function that keeps one member: `(catch_all, key, map)`.
    pub keep: TokenStream,
    /// Whether field docs state capture levels (payload fields have
    /// them; envelope attributes do not).
    pub captured: bool,
}

impl CatchAll {
    fn extra() -> CatchAll {
        CatchAll {
            field: "extra",
            ty: quote!(crate::runtime::Object),
            doc: " Members the schema does not describe, kept as they came (payloads are open).",
            keep: quote!(crate::runtime::keep),
            captured: true,
        }
    }
}

/// A struct with a field per property, the catch-all last, and its
/// validation and (for payload types) capture code.
pub fn strukt(cx: &Context<'_>, s: &Struct, catch_all: &CatchAll) -> TokenStream {
    let name = ident(&s.name);
    let doc = docs(&struct_doc(s));
    let fields = s.fields.iter().map(|f| field(f, catch_all.captured));
    let catch_field = ident(catch_all.field);
    let catch_ty = &catch_all.ty;
    let catch_doc = catch_all.doc;
    let deserialize = deserialize(s, catch_all);
    let serialize = serialize(s, catch_all);
    let validate_into = rules::validate_into(cx, s);
    // The envelope's own `validate` also checks the payload.
    let validate = catch_all.captured.then(rules::validate);
    let drop_above = catch_all
        .captured
        .then(|| rules::drop_above(cx, s, catch_all.field));
    let capture_into = catch_all
        .captured
        .then(|| rules::capture_into(cx, s, catch_all.field));
    let eq = (!s.fields.iter().any(|f| cx.holds_float(&f.ty))).then(|| quote!(Eq, Hash,));
    let all_optional = s.fields.iter().all(|f| !f.required);
    let default = all_optional.then(|| quote!(Default,));
    // The envelope has its own `Event::new`.
    let new = catch_all.captured.then(|| constructor(s, catch_all));
    quote! {
        #doc
        #[derive(Debug, Clone, PartialEq, #eq #default)]
        #[non_exhaustive]
        pub struct #name {
            #(#fields)*
            #[doc = #catch_doc]
            pub #catch_field: #catch_ty,
        }

        impl #name {
            #new
            #validate
            #validate_into
            #drop_above
            #capture_into
        }

        #serialize
        #deserialize
    }
}

/// `new`, taking the required members in schema order; the optional ones
/// start absent and the catch-all empty, so a schema that gains an
/// optional member does not change it.
fn constructor(s: &Struct, catch_all: &CatchAll) -> TokenStream {
    let mut params = Vec::new();
    let mut inits = Vec::new();
    for f in &s.fields {
        let name = ident(&f.ident);
        match (&f.ty, f.required) {
            (Ty::String(_), true) => {
                params.push(quote!(#name: impl Into<String>));
                inits.push(quote!(#name: #name.into()));
            }
            (field_ty, true) => {
                let t = ty(field_ty);
                params.push(quote!(#name: #t));
                inits.push(quote!(#name));
            }
            (_, false) => inits.push(quote!(#name: None)),
        }
    }
    let catch_field = ident(catch_all.field);
    let doc = if params.is_empty() {
        format!(" A `{}` with every member absent.", s.name)
    } else {
        let names: Vec<String> = s
            .fields
            .iter()
            .filter(|f| f.required)
            .map(|f| format!("`{}`", f.json))
            .collect();
        format!(
            " A `{}` with its required members ({}); the optional ones absent.",
            s.name,
            names.join(", ")
        )
    };
    let allow = (params.len() > 7).then(|| quote!(#[allow(clippy::too_many_arguments)]));
    quote! {
        #[doc = #doc]
        #allow
        pub fn new(#(#params),*) -> Self {
            Self {
                #(#inits,)*
                #catch_field: Default::default(),
            }
        }
    }
}

fn struct_doc(s: &Struct) -> Vec<String> {
    let mut doc = s.doc.clone();
    for rule in &s.rules {
        doc.push(format!("Rule: {}.", describe_rule(rule)));
    }
    doc.push(origin(&s.origin));
    doc
}

/// The last doc paragraph of every named type: where its schema is.
fn origin(origin: &str) -> String {
    format!("Schema: `{origin}`.")
}

fn field(f: &Field, captured: bool) -> TokenStream {
    let ident = ident(&f.ident);
    let mut rust_ty = ty(&f.ty);
    if !f.required {
        rust_ty = quote!(Option<#rust_ty>);
    }
    let doc = docs(&field_doc(f, captured));
    quote! {
        #doc
        pub #ident: #rust_ty,
    }
}

/// A `Serialize` impl that writes each present member once, numbers
/// through `Numbers` (integral ones as integers, non-finite ones refused),
/// and refuses a catch-all entry that a field owns, so what is written can
/// always be read back. Errors name the member by its JSON Pointer.
fn serialize(s: &Struct, catch_all: &CatchAll) -> TokenStream {
    let name = ident(&s.name);
    let entries = s.fields.iter().map(|f| {
        let ident = ident(&f.ident);
        let json = &f.json;
        let value = if holds_numbers(&f.ty) {
            quote!(&crate::runtime::AsNumbers(value))
        } else if matches!(f.ty, Ty::Array(..)) {
            quote!(&crate::runtime::Items(value))
        } else {
            quote!(value)
        };
        let entry = quote!(crate::runtime::entry(&mut map, #json, #value)?;);
        if f.required {
            quote!({ let value = &self.#ident; #entry })
        } else {
            quote!(if let Some(value) = &self.#ident { #entry })
        }
    });
    let jsons = s.fields.iter().map(|f| f.json.as_str());
    let catch_field = ident(catch_all.field);
    // Extension names are checked when made; free-form members are not.
    let unclaimed = catch_all.captured.then(|| {
        quote!(crate::runtime::unclaimed::<S::Error>(self.#catch_field.keys(), &[#(#jsons),*])?;)
    });
    quote! {
        impl serde::Serialize for #name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap as _;
                #unclaimed
                let mut map = serializer.serialize_map(None)?;
                #(#entries)*
                for (key, value) in &self.#catch_field {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

/// The schema's words, then the facts: wire name, requiredness, capture
/// level and constraints.
fn field_doc(f: &Field, captured: bool) -> Vec<String> {
    let mut facts = vec![
        format!("`{}`", f.json),
        if f.required { "required" } else { "optional" }.to_owned(),
    ];
    if captured {
        facts.push(format!("capture `{}`", f.capture));
    }
    facts.extend(constraints(&f.ty));
    if let Some(default) = &f.default {
        facts.push(format!("default `{default}`"));
    }
    let mut doc = f.doc.clone();
    doc.push(format!("{}.", facts.join(", ")));
    doc
}

fn constraints(ty: &Ty) -> Vec<String> {
    let mut out = Vec::new();
    match ty {
        Ty::String(rules) => {
            match rules.min_length {
                Some(1) => out.push("non-empty".to_owned()),
                Some(n) => out.push(format!("at least {n} characters")),
                None => {}
            }
            if let Some(format) = &rules.format {
                out.push(format!("format `{format}`"));
            }
            if let Some(pattern) = &rules.pattern {
                out.push(format!("pattern `{pattern}`"));
            }
        }
        Ty::Integer(rules) | Ty::Number(rules) => {
            if let Some(min) = &rules.minimum {
                out.push(format!("minimum {min}"));
            }
            if let Some(max) = &rules.maximum {
                out.push(format!("maximum {max}"));
            }
        }
        Ty::Array(item, capture) => {
            let inner = constraints(item);
            if !inner.is_empty() {
                out.push(format!("items: {}", inner.join(", ")));
            }
            if let Some(level) = capture {
                out.push(format!("items capture `{level}`"));
            }
        }
        _ => {}
    }
    out
}

/// A `Deserialize` impl that reads each member once, refuses `null`s and
/// duplicates, and keeps unknown members in the catch-all.
fn deserialize(s: &Struct, catch_all: &CatchAll) -> TokenStream {
    let name = ident(&s.name);
    let expecting = format!("a `{}` object", s.name);
    let slots: Vec<_> = (0..s.fields.len())
        .map(|i| format_ident!("slot_{}", i))
        .collect();
    let types = s.fields.iter().map(|f| ty(&f.ty));
    let jsons: Vec<&str> = s.fields.iter().map(|f| f.json.as_str()).collect();
    let inits = s.fields.iter().zip(&slots).map(|(f, slot)| {
        let ident = ident(&f.ident);
        if f.required {
            let json = &f.json;
            quote!(#ident: crate::runtime::required(#slot, #json)?)
        } else {
            quote!(#ident: #slot)
        }
    });
    // Integers are read through a wrapper that says in words what it expects.
    let fills = s.fields.iter().map(|f| match &f.ty {
        Ty::Integer(rules) if rules.unsigned() => {
            quote!(crate::runtime::fill_as::<crate::runtime::Unsigned, _, _>)
        }
        Ty::Integer(_) => quote!(crate::runtime::fill_as::<crate::runtime::Integer, _, _>),
        _ => quote!(crate::runtime::fill),
    });
    let catch_field = ident(catch_all.field);
    let catch_ty = &catch_all.ty;
    let keep = &catch_all.keep;
    let dispatch = if s.fields.is_empty() {
        quote!(#keep(&mut #catch_field, key, &mut map)?;)
    } else {
        quote! {
            match key.as_str() {
                #(#jsons => #fills(&mut #slots, &mut map, #jsons)?,)*
                _ => #keep(&mut #catch_field, key, &mut map)?,
            }
        }
    };
    quote! {
        impl<'de> serde::Deserialize<'de> for #name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl<'de> serde::de::Visitor<'de> for Visitor {
                    type Value = #name;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(#expecting)
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<#name, A::Error> {
                        #(let mut #slots: Option<#types> = None;)*
                        let mut #catch_field = <#catch_ty>::default();
                        while let Some(key) = map.next_key::<crate::runtime::Key<'de>>()? {
                            #dispatch
                        }
                        Ok(#name {
                            #(#inits,)*
                            #catch_field,
                        })
                    }
                }
                deserializer.deserialize_map(Visitor)
            }
        }
    }
}

/// A string enum with `as_str`, `ALL`, `Display` and `FromStr`.
pub fn enumeration(e: &Enum) -> TokenStream {
    let name = ident(&e.name);
    let doc = docs(&[e.doc.clone(), vec![origin(&e.origin)]].concat());
    let variants: Vec<_> = e.variants.iter().map(|(_, v)| ident(v)).collect();
    let values: Vec<&str> = e.variants.iter().map(|(v, _)| v.as_str()).collect();
    let variant_docs = values.iter().map(|v| format!(" `\"{v}\"`"));
    let count = Literal::usize_unsuffixed(variants.len());
    let expected = format!("`{}` value", e.name);
    quote! {
        #doc
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum #name {
            #(
                #[doc = #variant_docs]
                #variants,
            )*
        }

        impl serde::Serialize for #name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        // A JSON string and nothing else (not serde's `{"value": null}` form).
        impl<'de> serde::Deserialize<'de> for #name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                crate::runtime::enum_value(deserializer, &[#(#values),*], |s| s.parse().ok())
            }
        }

        impl #name {
            /// Every value, in schema order.
            pub const ALL: [#name; #count] = [#(#name::#variants),*];

            /// The value as it is written on the wire.
            pub const fn as_str(self) -> &'static str {
                match self {
                    #(#name::#variants => #values,)*
                }
            }
        }

        impl std::fmt::Display for #name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for #name {
            type Err = crate::runtime::Error;
            // Not `Self::Err`: a variant may be called `Err`.
            fn from_str(s: &str) -> Result<Self, crate::runtime::Error> {
                match s {
                    #(#values => Ok(#name::#variants),)*
                    _ => Err(crate::runtime::Error::UnknownValue { expected: #expected, value: s.to_owned() }),
                }
            }
        }
    }
}

/// A primitive type list as an enum with one variant per member.
pub fn union(u: &Union) -> TokenStream {
    let name = ident(&u.name);
    let doc = docs(&[u.doc.clone(), vec![origin(&u.origin)]].concat());
    let mut variants = Vec::new();
    let mut serialize = Vec::new();
    let mut visits = Vec::new();
    let integer = u.members.contains(&Primitive::Integer);
    let visit_f64 = quote! {
        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<#name, E> {
            Ok(#name::Number(v))
        }
    };
    for member in &u.members {
        let (variant, rust, doc) = match member {
            Primitive::Object => ("Object", quote!(crate::runtime::Object), " A JSON object."),
            Primitive::String => ("String", quote!(String), " A string."),
            Primitive::Integer => ("Integer", quote!(i64), " An integer."),
            Primitive::Number => ("Number", quote!(f64), " A number."),
            Primitive::Boolean => ("Boolean", quote!(bool), " A boolean."),
        };
        let v = ident(variant);
        variants.push(quote!(#[doc = #doc] #v(#rust),));
        serialize.push(match member {
            Primitive::Number => {
                quote!(#name::#v(value) => crate::runtime::Numbers::write(value, serializer),)
            }
            _ => quote!(#name::#v(value) => serde::Serialize::serialize(value, serializer),),
        });
        visits.push(match member {
            Primitive::Object => quote! {
                fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<#name, A::Error> {
                    serde::Deserialize::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(#name::Object)
                }
            },
            Primitive::String => quote! {
                fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<#name, E> {
                    Ok(#name::String(v.to_owned()))
                }
                fn visit_string<E: serde::de::Error>(self, v: String) -> Result<#name, E> {
                    Ok(#name::String(v))
                }
            },
            Primitive::Integer => quote! {
                fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<#name, E> {
                    Ok(#name::Integer(v))
                }
                fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<#name, E> {
                    i64::try_from(v)
                        .map(#name::Integer)
                        .map_err(|_| E::invalid_value(serde::de::Unexpected::Unsigned(v), &self))
                }
            },
            // An integer is a number too, unless the list has `integer`.
            Primitive::Number if integer => visit_f64.clone(),
            Primitive::Number => quote! {
                #visit_f64
                fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<#name, E> {
                    Ok(#name::Number(v as f64))
                }
                fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<#name, E> {
                    Ok(#name::Number(v as f64))
                }
            },
            Primitive::Boolean => quote! {
                fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<#name, E> {
                    Ok(#name::Boolean(v))
                }
            },
        });
    }
    let names: Vec<&str> = u.members.iter().map(|m| m.json_name()).collect();
    let expecting = match names.split_last() {
        Some((last, [])) => format!("a JSON {last}"),
        Some((last, rest)) => format!("a JSON {} or {last}", rest.join(", ")),
        None => String::new(),
    };
    let eq = (!u.members.contains(&Primitive::Number)).then(|| quote!(, Eq, Hash));
    let froms = u.members.iter().map(|member| {
        let (v, from) = match member {
            Primitive::Object => ("Object", quote!(crate::runtime::Object)),
            Primitive::String => ("String", quote!(String)),
            Primitive::Integer => ("Integer", quote!(i64)),
            Primitive::Number => ("Number", quote!(f64)),
            Primitive::Boolean => ("Boolean", quote!(bool)),
        };
        let v = ident(v);
        let str_from = (*member == Primitive::String).then(|| {
            quote! {
                impl From<&str> for #name {
                    fn from(value: &str) -> #name {
                        #name::#v(value.to_owned())
                    }
                }
            }
        });
        quote! {
            impl From<#from> for #name {
                fn from(value: #from) -> #name {
                    #name::#v(value)
                }
            }
            #str_from
        }
    });
    quote! {
        #doc
        #[derive(Debug, Clone, PartialEq #eq)]
        pub enum #name {
            #(#variants)*
        }

        #(#froms)*

        impl serde::Serialize for #name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    #(#serialize)*
                }
            }
        }

        impl<'de> serde::Deserialize<'de> for #name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl<'de> serde::de::Visitor<'de> for Visitor {
                    type Value = #name;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(#expecting)
                    }
                    #(#visits)*
                }
                deserializer.deserialize_any(Visitor)
            }
        }
    }
}
