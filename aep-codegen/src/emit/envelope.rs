//! The envelope: `Event`, its extension attributes, and its accessors.

use proc_macro2::TokenStream;
use quote::quote;

use super::context::{default_accessor, Context};
use super::items::{self, CatchAll};
use super::tokens::{ident, ty};
use crate::ir::{Field, Ir, Item, Ty};

pub fn module(cx: &Context<'_>) -> TokenStream {
    let ir = cx.ir;
    let env = &ir.envelope;
    let catch_all = CatchAll {
        field: "extensions",
        ty: quote!(Extensions),
        doc: " Extension attributes: every other top-level member, kept as they came.",
        keep: quote!(keep_extension),
        captured: false,
    };
    let event = items::strukt(cx, &env.event, &catch_all);
    let enums = env.items.iter().map(|i| items::item(cx, i));
    let value = items::union(&env.extension_value);
    let pattern = &env.extension_name_pattern;
    let core: Vec<&str> = env.event.fields.iter().map(|f| f.json.as_str()).collect();
    let name_rule = format!("must match `{pattern}` and not be a core attribute");
    let methods = methods(cx);
    quote! {
        //! The event envelope: context attributes, extension attributes and `data`.

        use std::collections::BTreeMap;
        use std::sync::LazyLock;

        #event
        #(#enums)*
        #value

        /// The core attribute names; an extension attribute may not take one.
        pub const CORE_ATTRIBUTES: &[&str] = &[#(#core),*];

        /// Extension attributes by name, in name order.
        pub type Extensions = BTreeMap<ExtensionName, ExtensionValue>;

        #[doc = concat!(" The name of an extension attribute: it ", #name_rule, ".")]
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
        #[serde(transparent)]
        pub struct ExtensionName(String);

        impl ExtensionName {
            /// Checks `name` against the envelope's naming rule.
            pub fn new(name: impl Into<String>) -> Result<ExtensionName, crate::runtime::Error> {
                let name = name.into();
                ExtensionName::check(&name)?;
                Ok(ExtensionName(name))
            }

            /// Checks `name` against the envelope's naming rule without
            /// allocating unless it breaks it.
            pub(crate) fn check(name: &str) -> Result<(), crate::runtime::Error> {
                static PATTERN: LazyLock<crate::runtime::Regex> =
                    LazyLock::new(|| crate::runtime::Regex::new(#pattern).expect("the generator checked the pattern"));
                if CORE_ATTRIBUTES.contains(&name) || !PATTERN.is_match(name) {
                    return Err(crate::runtime::Error::ExtensionName { name: name.to_owned(), reason: #name_rule.to_owned() });
                }
                Ok(())
            }

            /// The name.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for ExtensionName {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::borrow::Borrow<str> for ExtensionName {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl<'de> serde::Deserialize<'de> for ExtensionName {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let name = String::deserialize(deserializer)?;
                ExtensionName::new(name).map_err(serde::de::Error::custom)
            }
        }

        /// Keeps one extension attribute, refusing a bad name, a non-scalar value or a duplicate.
        fn keep_extension<'de, A: serde::de::MapAccess<'de>>(
            extensions: &mut Extensions,
            key: crate::runtime::Key<'de>,
            map: &mut A,
        ) -> Result<(), A::Error> {
            let name = ExtensionName::new(key.into_string()).map_err(serde::de::Error::custom)?;
            let value: ExtensionValue = map.next_value()?;
            if extensions.contains_key(&name) {
                return Err(serde::de::Error::custom(format_args!("duplicate field `{name}`")));
            }
            extensions.insert(name, value);
            Ok(())
        }

        #methods
    }
}

fn field<'a>(ir: &'a Ir, json: &str) -> &'a Field {
    ir.envelope
        .event
        .fields
        .iter()
        .find(|f| f.json == json)
        .expect("lowering checked the envelope's attributes")
}

fn methods(cx: &Context<'_>) -> TokenStream {
    let ir = cx.ir;
    let fields = &ir.envelope.event.fields;
    let type_field = ident(&field(ir, "type").ident);
    let data_field = ident(&field(ir, "data").ident);
    let data_json = &field(ir, "data").json;
    let data_pointer = format!("/{data_json}");

    // `new` takes every required attribute that is not a constant.
    let mut params = Vec::new();
    let mut inits = Vec::new();
    for f in fields {
        let name = ident(&f.ident);
        match (f.required, single_variant(ir, &f.ty)) {
            (true, Some(constant)) => inits.push(quote!(#name: #constant)),
            (true, None) if matches!(f.ty, Ty::String(_)) => {
                params.push(quote!(#name: impl Into<String>));
                inits.push(quote!(#name: #name.into()));
            }
            (true, None) => {
                let t = ty(&f.ty);
                params.push(quote!(#name: #t));
                inits.push(quote!(#name));
            }
            (false, _) => inits.push(quote!(#name: None)),
        }
    }
    let defaults = fields.iter().filter_map(|f| default_accessor(ir, f));
    let copies = fields.iter().filter(|f| f.json != "data").map(|f| {
        let name = ident(&f.ident);
        if cx.is_copy(&f.ty) {
            quote!(#name: self.#name)
        } else {
            quote!(#name: self.#name.clone())
        }
    });
    quote! {
        impl Event {
            /// An event with the given required attributes, no optional
            /// attribute, no extension attribute and no `data`.
            pub fn new(#(#params),*) -> Event {
                Event {
                    #(#inits,)*
                    extensions: Extensions::new(),
                }
            }

            /// Decodes an event from JSON text. Unlike `serde_json::from_str`,
            /// a failure names the offending attribute by its JSON Pointer
            /// ([`Error::pointer`](crate::runtime::Error::pointer)), as a
            /// payload error does.
            pub fn from_json(text: &str) -> Result<Event, crate::runtime::Error> {
                crate::runtime::decode_event_str(text)
            }

            /// Decodes an event and its typed payload from JSON text:
            /// [`from_json`](Event::from_json), then [`payload`](Event::payload).
            /// An `Event` owns a copy of `data` whichever way it is made,
            /// and measured, making it from an
            /// [`EventRef::decode_typed`](super::event_ref::EventRef::decode_typed)
            /// (which reads the text once, without that copy) is slower
            /// than decoding it directly: use `EventRef` where the
            /// envelope need not outlive the text.
            pub fn decode_typed(text: &str) -> Result<(Event, super::payload::Payload), crate::runtime::Error> {
                let event = Event::from_json(text)?;
                let payload = event.payload()?;
                Ok((event, payload))
            }

            /// Decodes an event from JSON bytes, as [`from_json`](Event::from_json).
            pub fn from_slice(bytes: &[u8]) -> Result<Event, crate::runtime::Error> {
                crate::runtime::decode_event(bytes)
            }

            /// The typed payload chosen by the event's type. A type without
            /// a payload schema (reserved, vendor `x.*`, or unknown) gives
            /// [`Payload::Untyped`](super::payload::Payload::Untyped) with
            /// the data as it is. Absent `data` reads as an empty object.
            pub fn payload(&self) -> Result<super::payload::Payload, crate::runtime::Error> {
                super::payload::Payload::from_data(&self.#type_field, self.#data_field.as_ref())
            }

            /// The registered type, if the event's type is one.
            pub fn registered_type(&self) -> Option<super::registry::RegisteredType> {
                self.#type_field.parse().ok()
            }

            /// Checks everything the schemas state: [`validate_schema`](Event::validate_schema)
            /// and [`validate_capture`](Event::validate_capture) together,
            /// decoding the payload once. Every violation is listed with its
            /// JSON Pointer from the event root.
            pub fn validate(&self) -> Result<(), crate::runtime::Violations> {
                self.check(true, true)
            }

            /// Checks what the envelope schema alone states beyond shape:
            /// string lengths, patterns and formats, bounds and the scoping
            /// rules, without decoding `data`. This is what a relay checks
            /// before it admits an event (AEP-0003 §3.2: envelope
            /// validation); payloads are open and the consumer's concern.
            pub fn validate_envelope(&self) -> Result<(), crate::runtime::Violations> {
                let mut v = crate::runtime::Validator::new();
                self.validate_into(&mut v);
                v.finish().into_result()
            }

            /// Checks what the envelope and payload schemas state as JSON
            /// Schema beyond shape: string lengths, patterns and formats,
            /// bounds, the scoping rules, and the payload's own rules. Every
            /// violation is listed with its JSON Pointer from the event root.
            /// Absent `data` is valid (an event down-levelled to `none` has none).
            pub fn validate_schema(&self) -> Result<(), crate::runtime::Violations> {
                self.check(true, false)
            }

            /// Checks the capture rule the schemas state with `x-aep-capture`:
            /// no payload member, at any depth, above the event's declared
            /// capture level ([`capture_or_default`](Event::capture_or_default)).
            /// Members the schema does not describe count as the default
            /// level. Untyped data has no capture table and nothing to
            /// check. Data that does not decode cannot be classified and
            /// fails the check with one violation at `/data` (the decode
            /// error itself is [`validate_schema`](Event::validate_schema)'s).
            pub fn validate_capture(&self) -> Result<(), crate::runtime::Violations> {
                self.check(false, true)
            }

            fn check(&self, schema: bool, capture: bool) -> Result<(), crate::runtime::Violations> {
                let mut v = crate::runtime::Validator::new();
                if schema {
                    self.validate_into(&mut v);
                }
                if let Some(data) = &self.#data_field {
                    match super::payload::Payload::from_data(&self.#type_field, Some(data)) {
                        Ok(payload) => {
                            v.key(#data_json);
                            if schema {
                                payload.validate_into(&mut v);
                            }
                            if capture {
                                payload.capture_into(&mut v, self.capture_or_default());
                            }
                            v.up();
                        }
                        Err(error) => {
                            if schema {
                                let pointer = error.pointer().unwrap_or_default().to_owned();
                                v.report_at(pointer, error.to_string());
                            }
                            if capture {
                                // Unreadable data cannot be shown to stay
                                // within the level: fail rather than pass
                                // members that were never classified.
                                v.report_at(
                                    #data_pointer.to_owned(),
                                    format!(
                                        "the payload does not decode as `{}`, so its capture cannot be verified against the `{}` level",
                                        self.#type_field,
                                        self.capture_or_default()
                                    ),
                                );
                            }
                        }
                    }
                }
                v.finish().into_result()
            }

            /// A copy of the event with `data` replaced (cheaper than
            /// cloning the event and then replacing its `data`).
            pub fn with_data(&self, #data_field: Option<crate::runtime::Data>) -> Event {
                Event {
                    #(#copies,)*
                    #data_field,
                    extensions: self.extensions.clone(),
                }
            }

            /// Sets `data` to the payload's JSON object and `type` to the
            /// payload's event type, so the two always agree; untyped data
            /// keeps the event's type. Fails as
            /// [`Payload::to_data`](super::payload::Payload::to_data) does,
            /// leaving the event unchanged.
            pub fn set_payload(&mut self, payload: &super::payload::Payload) -> Result<(), serde_json::Error> {
                let data = payload.to_data()?;
                if let Some(event_type) = payload.event_type() {
                    event_type.clone_into(&mut self.#type_field);
                }
                self.#data_field = Some(data);
                Ok(())
            }

            #(#defaults)*
        }
    }
}

/// The only value of a one-value enum (a `const`), as an expression.
fn single_variant(ir: &Ir, ty: &Ty) -> Option<TokenStream> {
    let Ty::Named(path) = ty else { return None };
    let e = ir.envelope.items.iter().find_map(|i| match i {
        Item::Enum(e) if e.name == path.name && path.module == "envelope" => Some(e),
        _ => None,
    })?;
    match e.variants.as_slice() {
        [(_, variant)] => {
            let name = ident(&e.name);
            let variant = ident(variant);
            Some(quote!(#name::#variant))
        }
        _ => None,
    }
}
