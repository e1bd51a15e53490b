//! The registry tables as Rust: the type list, categories, the ordered
//! severity and capture scales, and the nack reasons.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::items;
use super::tokens::ident;
use crate::ir::{Enum, RegistryIr, TypeEntry};

pub fn module(r: &RegistryIr) -> TokenStream {
    let version = &r.aep;
    let types = types(r);
    let categories = categories(r);
    let severity = ordered(
        "Severity",
        &["How serious an event is; ordered, lowest first.".to_owned()],
        &r.severity,
        &r.severity_default,
    );
    let severity_bridges = severity_bridges(r);
    let capture = ordered(
        "Capture",
        &["How much content an event may carry; ordered, lowest first. A field may appear only when its capture level is at or below the event's.".to_owned()],
        &r.capture,
        &r.capture_default,
    );
    let nack = items::enumeration(&Enum {
        name: "NackReason".to_owned(),
        doc: vec!["Why a command was rejected (`control.rejected` `reason`).".to_owned()],
        origin: "registry/nack-reasons.json".to_owned(),
        variants: r.nack_reasons.clone(),
    });
    quote! {
        //! The registry tables: registered types, categories, severity, capture and nack reasons.

        /// The protocol version this registry describes.
        pub const AEP_VERSION: &str = #version;

        #types
        #categories
        #severity
        #severity_bridges
        #capture
        #nack
    }
}

fn fixed_enum(name: &str, doc: &str, values: &[(String, String)]) -> TokenStream {
    items::enumeration(&Enum {
        name: name.to_owned(),
        doc: vec![doc.to_owned()],
        origin: "registry/types.json".to_owned(),
        variants: values.to_vec(),
    })
}

fn types(r: &RegistryIr) -> TokenStream {
    let enumeration = items::enumeration(&Enum {
        name: "RegisteredType".to_owned(),
        doc: vec!["An event type of the registry.".to_owned()],
        origin: "registry/types.json".to_owned(),
        variants: r
            .types
            .iter()
            .map(|row| (row.name.clone(), row.variant.clone()))
            .collect(),
    });
    let status = fixed_enum(
        "Status",
        "Whether emitters must support a type.",
        &r.statuses,
    );
    let scope = fixed_enum(
        "Scope",
        "Which envelope attributes a type's events carry.",
        &r.type_scopes,
    );
    let variant = |v: &str| ident(v);
    let arms = |f: &dyn Fn(&TypeEntry) -> TokenStream| -> Vec<TokenStream> {
        r.types
            .iter()
            .map(|row| {
                let v = variant(&row.variant);
                let value = f(row);
                quote!(RegisteredType::#v => #value,)
            })
            .collect()
    };
    let status_arms = arms(&|row| {
        let s = ident(&row.status);
        quote!(Status::#s)
    });
    let scope_arms = arms(&|row| {
        let s = ident(&row.scope);
        quote!(Scope::#s)
    });
    let summary_arms = arms(&|row| {
        let s = &row.summary;
        quote!(#s)
    });
    let schema_arms = arms(&|row| match &row.schema {
        Some(file) => quote!(Some(#file)),
        None => quote!(None),
    });
    let mandatory: Vec<_> = r
        .types
        .iter()
        .filter(|row| row.mandatory)
        .map(|row| variant(&row.variant))
        .collect();
    let count = Literal::usize_unsuffixed(mandatory.len());
    quote! {
        #enumeration
        #status
        #scope

        impl RegisteredType {
            /// Whether emitters must support the type.
            pub const fn status(self) -> Status {
                match self { #(#status_arms)* }
            }

            /// Which envelope attributes the type's events carry.
            pub const fn scope(self) -> Scope {
                match self { #(#scope_arms)* }
            }

            /// The registry's one-line summary.
            pub const fn summary(self) -> &'static str {
                match self { #(#summary_arms)* }
            }

            /// The payload schema file, relative to the registry, if the type has one.
            pub const fn schema(self) -> Option<&'static str> {
                match self { #(#schema_arms)* }
            }
        }

        /// The types every emitter must support.
        pub const MANDATORY: [RegisteredType; #count] = [#(RegisteredType::#mandatory),*];
    }
}

fn categories(r: &RegistryIr) -> TokenStream {
    let enumeration = items::enumeration(&Enum {
        name: "Category".to_owned(),
        doc: vec!["The closed set of event categories: the first segment of a type.".to_owned()],
        origin: "registry/categories.json".to_owned(),
        variants: r
            .categories
            .iter()
            .map(|row| (row.name.clone(), row.variant.clone()))
            .collect(),
    });
    let scope = fixed_enum(
        "CategoryScope",
        "Which events a category's types are.",
        &r.category_scopes,
    );
    let scope_arms = r.categories.iter().map(|row| {
        let v = ident(&row.variant);
        let s = ident(&row.scope);
        quote!(Category::#v => CategoryScope::#s,)
    });
    let summary_arms = r.categories.iter().map(|row| {
        let v = ident(&row.variant);
        let s = &row.summary;
        quote!(Category::#v => #s,)
    });
    quote! {
        #enumeration
        #scope

        impl Category {
            /// The category's scope.
            pub const fn scope(self) -> CategoryScope {
                match self { #(#scope_arms)* }
            }

            /// The registry's one-line summary.
            pub const fn summary(self) -> &'static str {
                match self { #(#summary_arms)* }
            }

            /// The category of a type name: its first dot-separated segment.
            pub fn of(event_type: &str) -> Option<Category> {
                event_type.split('.').next()?.parse().ok()
            }
        }
    }
}

/// An enum whose variant order is the protocol's order, with its default.
fn ordered(name: &str, doc: &[String], values: &[(String, String)], default: &str) -> TokenStream {
    let base = items::enumeration(&Enum {
        name: name.to_owned(),
        doc: doc.to_vec(),
        origin: format!("registry/{}.json", name.to_lowercase()),
        variants: values.to_vec(),
    });
    let ty = ident(name);
    let default_variant = ident(default);
    let ranks = values.iter().enumerate().map(|(i, (_, v))| {
        let v = ident(v);
        let i = Literal::usize_unsuffixed(i);
        quote!(#ty::#v => #i,)
    });
    let default_doc = format!(
        " The protocol default, `{}`.",
        values
            .iter()
            .find(|(_, v)| v == default)
            .map(|(j, _)| j.as_str())
            .unwrap_or("")
    );
    quote! {
        #base

        impl #ty {
            /// The position in the order, lowest first.
            pub const fn rank(self) -> usize {
                match self { #(#ranks)* }
            }
        }

        impl PartialOrd for #ty {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl Ord for #ty {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                self.rank().cmp(&other.rank())
            }
        }

        impl Default for #ty {
            #[doc = #default_doc]
            fn default() -> Self {
                #ty::#default_variant
            }
        }
    }
}

fn severity_bridges(r: &RegistryIr) -> TokenStream {
    let text = r
        .severity
        .iter()
        .zip(&r.severity_otlp)
        .map(|((_, v), (text, _))| {
            let v = ident(v);
            quote!(Severity::#v => #text,)
        });
    let number = r
        .severity
        .iter()
        .zip(&r.severity_otlp)
        .map(|((_, v), (_, n))| {
            let v = ident(v);
            let n = Literal::u64_unsuffixed(*n);
            quote!(Severity::#v => #n,)
        });
    let ocsf = r.severity.iter().zip(&r.severity_ocsf).map(|((_, v), n)| {
        let v = ident(v);
        let n = Literal::u64_unsuffixed(*n);
        quote!(Severity::#v => #n,)
    });
    quote! {
        impl Severity {
            /// The OTLP log record `severity_text`.
            pub const fn otlp_severity_text(self) -> &'static str {
                match self { #(#text)* }
            }

            /// The OTLP log record `severity_number`.
            pub const fn otlp_severity_number(self) -> u64 {
                match self { #(#number)* }
            }

            /// The OCSF `severity_id`.
            pub const fn ocsf_severity_id(self) -> u64 {
                match self { #(#ocsf)* }
            }
        }
    }
}
