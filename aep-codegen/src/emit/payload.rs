//! `Payload`: one variant per payload schema, chosen by the event type.

use proc_macro2::TokenStream;
use quote::quote;

use super::tokens::ident;
use crate::ir::Ir;

pub fn module(ir: &Ir) -> TokenStream {
    let variants: Vec<_> = ir.payloads.iter().map(|p| ident(&p.name)).collect();
    let paths: Vec<_> = ir
        .payloads
        .iter()
        .map(|p| {
            let module = ident(&p.module);
            let name = ident(&p.name);
            quote!(super::#module::#name)
        })
        .collect();
    let types: Vec<&str> = ir.payloads.iter().map(|p| p.event_type.as_str()).collect();
    let docs = ir.payloads.iter().map(|p| {
        let summary = ir
            .registry
            .types
            .iter()
            .find(|row| row.name == p.event_type)
            .map(|row| row.summary.as_str())
            .unwrap_or_default();
        format!(" `{}`: {summary}.", p.event_type)
    });
    quote! {
        //! The typed payload of an event, chosen by its type.

        /// An event's `data`, typed by the schema its event type names.
        ///
        /// Serialising a payload yields exactly the `data` object.
        #[derive(Debug, Clone, PartialEq)]
        #[allow(clippy::large_enum_variant)] // boxing would cost an allocation per decode
        pub enum Payload {
            #(
                #[doc = #docs]
                #variants(#paths),
            )*
            /// The data of a type without a payload schema (reserved,
            /// vendor `x.*`, or not registered), as it is: the exact JSON
            /// text, whatever numbers or nesting it holds
            /// ([`Data::to_object`](crate::runtime::Data::to_object) reads it
            /// as a free-form object).
            Untyped(crate::runtime::Data),
        }

        impl Payload {
            /// Decodes `data` (absent reads as `{}`) by the schema `event_type` names.
            pub fn from_data(event_type: &str, data: Option<&crate::runtime::Data>) -> Result<Payload, crate::runtime::Error> {
                Payload::from_raw(event_type, data.map(crate::runtime::Data::raw))
            }

            /// [`from_data`](Payload::from_data) on `data` as raw JSON text
            /// (an object, as [`Data`](crate::runtime::Data) holds).
            pub(crate) fn from_raw(event_type: &str, data: Option<&serde_json::value::RawValue>) -> Result<Payload, crate::runtime::Error> {
                let text = data.map_or("{}", serde_json::value::RawValue::get);
                Ok(match event_type {
                    #(#types => Payload::#variants(crate::runtime::decode(event_type, text)?),)*
                    _ => Payload::Untyped(match data {
                        Some(data) => crate::runtime::Data::from_raw(data),
                        None => crate::runtime::Data::empty(),
                    }),
                })
            }

            /// The event type whose schema this payload follows; `None` for [`Payload::Untyped`].
            pub fn event_type(&self) -> Option<&'static str> {
                match self {
                    #(Payload::#variants(_) => Some(#types),)*
                    Payload::Untyped(_) => None,
                }
            }

            /// Checks the payload schema's validation keywords, listing every
            /// violation with its JSON Pointer from the payload root.
            pub fn validate(&self) -> Result<(), crate::runtime::Violations> {
                let mut validator = crate::runtime::Validator::new();
                self.validate_into(&mut validator);
                validator.finish().into_result()
            }

            pub(crate) fn validate_into(&self, v: &mut crate::runtime::Validator) {
                match self {
                    #(Payload::#variants(payload) => payload.validate_into(v),)*
                    Payload::Untyped(_) => {}
                }
            }

            /// Drops every member whose capture level is above `level`
            /// (see each payload type's `drop_above`); untyped data has no
            /// capture table and is left as it is.
            pub(crate) fn drop_above(&mut self, level: super::registry::Capture) {
                match self {
                    #(Payload::#variants(payload) => payload.drop_above(level),)*
                    Payload::Untyped(_) => {}
                }
            }

            /// Reports every member whose capture level is above `level`;
            /// untyped data has no capture table and nothing to report.
            pub(crate) fn capture_into(&self, v: &mut crate::runtime::Validator, level: super::registry::Capture) {
                match self {
                    #(Payload::#variants(payload) => payload.capture_into(v, level),)*
                    Payload::Untyped(_) => {}
                }
            }

            /// The payload as an event's `data`. Fails, naming the member by
            /// its JSON Pointer from the event root (`/data/fields/1/max`),
            /// where writing would give what no reader
            /// accepts: a non-finite number, or an `extra` entry named like
            /// a member the schema describes.
            pub fn to_data(&self) -> Result<crate::runtime::Data, serde_json::Error> {
                crate::runtime::Data::from_serialize(self)
            }
        }

        impl serde::Serialize for Payload {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    #(Payload::#variants(payload) => payload.serialize(serializer),)*
                    Payload::Untyped(data) => data.serialize(serializer),
                }
            }
        }
    }
}
