//! `EventRef`: the envelope borrowed from the JSON text it was read from,
//! decoded as strictly as `Event` (same members, same wrappers, same
//! messages), with accessors and a conversion into `Event`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::context::{default_accessor, Context};
use super::rules;
use super::tokens::{ident, ty};
use crate::ir::{Field, Primitive, Ty};

/// How one attribute is held, read, returned and owned.
struct Shape {
    /// The field's type in `EventRef<'a>`.
    held: TokenStream,
    /// The function that fills its slot from the map.
    fill: TokenStream,
    /// The accessor's return type.
    returned: TokenStream,
    /// The accessor's body.
    read: TokenStream,
    /// The expression giving `Event`'s field.
    owned: TokenStream,
}

fn shape(cx: &Context<'_>, f: &Field, lt: &TokenStream) -> Shape {
    let name = ident(&f.ident);
    let opt = |t: TokenStream| if f.required { t } else { quote!(Option<#t>) };
    let fill_as = |w: TokenStream| quote!(crate::runtime::fill_as::<#w, _, _>);
    match &f.ty {
        Ty::String(_) => Shape {
            held: opt(quote!(Cow<#lt, str>)),
            fill: fill_as(quote!(crate::runtime::Str<'de>)),
            returned: opt(quote!(&str)),
            read: if f.required {
                quote!(&self.#name)
            } else {
                quote!(self.#name.as_deref())
            },
            owned: if f.required {
                quote!(String::from(&*self.#name))
            } else {
                quote!(self.#name.as_deref().map(str::to_owned))
            },
        },
        Ty::PayloadSlot => Shape {
            held: opt(quote!(&#lt RawValue)),
            fill: fill_as(quote!(crate::runtime::RawData<'de>)),
            returned: opt(quote!(&#lt RawValue)),
            read: quote!(self.#name),
            owned: if f.required {
                quote!(crate::runtime::Data::from_raw(self.#name))
            } else {
                quote!(self.#name.map(crate::runtime::Data::from_raw))
            },
        },
        t => {
            let rust = ty(t);
            let fill = match t {
                Ty::Integer(rules) if rules.unsigned() => fill_as(quote!(crate::runtime::Unsigned)),
                Ty::Integer(_) => fill_as(quote!(crate::runtime::Integer)),
                _ => quote!(crate::runtime::fill),
            };
            if cx.is_copy(t) {
                Shape {
                    held: opt(rust.clone()),
                    fill,
                    returned: opt(rust),
                    read: quote!(self.#name),
                    owned: quote!(self.#name),
                }
            } else {
                Shape {
                    held: opt(rust.clone()),
                    fill,
                    returned: opt(quote!(&#rust)),
                    read: if f.required {
                        quote!(&self.#name)
                    } else {
                        quote!(self.#name.as_ref())
                    },
                    owned: quote!(self.#name.clone()),
                }
            }
        }
    }
}

pub fn module(cx: &Context<'_>) -> TokenStream {
    let env = &cx.ir.envelope;
    let fields = &env.event.fields;
    let shapes: Vec<Shape> = fields.iter().map(|f| shape(cx, f, &quote!('a))).collect();
    let de_shapes: Vec<Shape> = fields.iter().map(|f| shape(cx, f, &quote!('de))).collect();
    let names: Vec<_> = fields.iter().map(|f| ident(&f.ident)).collect();
    let jsons: Vec<&str> = fields.iter().map(|f| f.json.as_str()).collect();
    let slots: Vec<_> = (0..fields.len())
        .map(|i| format_ident!("slot_{}", i))
        .collect();
    let held: Vec<_> = shapes.iter().map(|s| &s.held).collect();
    let slot_types = fields.iter().zip(&de_shapes).map(|(f, s)| {
        let held = &s.held;
        if f.required {
            quote!(Option<#held>)
        } else {
            quote!(#held)
        }
    });
    let fills = shapes.iter().map(|s| &s.fill);
    let inits = fields.iter().zip(&slots).map(|(f, slot)| {
        let name = ident(&f.ident);
        let json = &f.json;
        if f.required {
            quote!(#name: crate::runtime::required(#slot, #json)?)
        } else {
            quote!(#name: #slot)
        }
    });
    let accessors = fields.iter().zip(&shapes).map(|(f, s)| {
        let name = ident(&f.ident);
        let returned = &s.returned;
        let read = &s.read;
        let presence = if f.required { "required" } else { "optional" };
        let doc = format!(" `{}` ({presence}), as decoded.", f.json);
        quote! {
            #[doc = #doc]
            pub fn #name(&self) -> #returned {
                #read
            }
        }
    });
    let owned = shapes.iter().map(|s| &s.owned);
    // `{attribute}_or_default()` as `Event` has them, for the attributes
    // held by value (a string default would need an allocation).
    let defaults = fields
        .iter()
        .filter(|f| cx.is_copy(&f.ty))
        .filter_map(|f| default_accessor(cx.ir, f));
    let type_field = ident(&field(cx, "type").ident);
    let data_field = ident(&field(cx, "data").ident);
    // Only an envelope with both attributes, required strings, has the key.
    let key_part = |json: &str| {
        fields
            .iter()
            .find(|f| f.json == json && f.required && matches!(f.ty, Ty::String(_)))
            .map(|f| ident(&f.ident))
    };
    let dedupe = key_part("source").zip(key_part("id")).map(|(source, id)| {
        quote! {
            /// The pair consumers deduplicate on: `(source, id)`.
            pub fn dedupe_key(&self) -> (&str, &str) {
                (&self.#source, &self.#id)
            }
        }
    });
    // The envelope's own checks, emitted from the same rules as
    // `Event::validate_into`.
    let validate_into = rules::validate_borrowed_into(cx, &env.event);
    let value = value_ref(&env.extension_value.members);
    let expecting = format!("a `{}` object", env.event.name);
    quote! {
        //! The event envelope borrowed from the JSON text it was read from.

        use std::borrow::Cow;
        use std::collections::HashMap;

        use serde_json::value::RawValue;

        /// An event whose attributes borrow from the JSON text it was
        /// decoded from: strings as `Cow` (owned only where the text has
        /// escapes), `data` as the raw JSON text, extension attributes
        /// in document order. Decoding refuses exactly what
        /// [`Event`](super::envelope::Event) decoding refuses, with the same
        /// messages and pointers, and [`to_owned`](EventRef::to_owned) gives the
        /// `Event` that decoding the same text gives.
        ///
        /// Reading attributes, matching them and deciding what to do with
        /// the event does not allocate; an event without escapes and
        /// with fewer than sixteen extension attributes decodes without
        /// allocating beyond its extension list.
        #[derive(Debug, Clone)]
        pub struct EventRef<'a> {
            #(#names: #held,)*
            extensions: ExtensionsRef<'a>,
        }

        impl<'a> EventRef<'a> {
            /// Decodes an event from JSON text, borrowing from it. A
            /// failure names the offending attribute by its JSON Pointer,
            /// as [`Event::from_json`](super::envelope::Event::from_json) does.
            pub fn from_json(text: &'a str) -> Result<EventRef<'a>, crate::runtime::Error> {
                crate::runtime::decode_event_str(text)
            }

            /// Decodes an event from UTF-8 JSON bytes, as [`from_json`](EventRef::from_json).
            pub fn from_slice(bytes: &'a [u8]) -> Result<EventRef<'a>, crate::runtime::Error> {
                crate::runtime::decode_event(bytes)
            }

            #(#accessors)*

            /// The extension attributes, in document order.
            pub fn extensions(&self) -> &ExtensionsRef<'a> {
                &self.extensions
            }

            /// The value of the extension attribute `name`, if present.
            pub fn extension(&self, name: &str) -> Option<&ExtensionValueRef<'a>> {
                self.extensions.get(name)
            }

            #dedupe

            /// The registered type, if the event's type is one.
            pub fn registered_type(&self) -> Option<super::registry::RegisteredType> {
                self.#type_field.parse().ok()
            }

            /// The typed payload chosen by the event's type, as
            /// [`Event::payload`](super::envelope::Event::payload) gives it.
            pub fn payload(&self) -> Result<super::payload::Payload, crate::runtime::Error> {
                super::payload::Payload::from_raw(&self.#type_field, self.#data_field)
            }

            /// Decodes the event and its typed payload in one read of
            /// `text`: the envelope borrows from it and `data` is typed
            /// straight from its borrowed slice, whatever the member order
            /// (no copy of `data`, no second decode of the envelope).
            /// Fails as [`from_json`](EventRef::from_json), then
            /// [`payload`](EventRef::payload), would.
            pub fn decode_typed(text: &'a str) -> Result<(EventRef<'a>, super::payload::Payload), crate::runtime::Error> {
                let event = EventRef::from_json(text)?;
                let payload = event.payload()?;
                Ok((event, payload))
            }

            /// Checks what [`Event::validate_envelope`](super::envelope::Event::validate_envelope)
            /// checks, on the borrowed attributes: the same violations, with
            /// the same messages and pointers, in the same order, without
            /// making an `Event`. (Extension attributes were checked when
            /// decoded, as they are for `Event`.)
            pub fn validate_envelope(&self) -> Result<(), crate::runtime::Violations> {
                let mut v = crate::runtime::Validator::new();
                self.validate_into(&mut v);
                v.finish().into_result()
            }

            #validate_into

            /// The owned event: equal to what
            /// [`Event::from_json`](super::envelope::Event::from_json) decodes from the same text.
            pub fn to_owned(&self) -> super::envelope::Event {
                super::envelope::Event {
                    #(#names: #owned,)*
                    extensions: self.extensions.to_owned(),
                }
            }

            #(#defaults)*
        }

        impl<'de> serde::Deserialize<'de> for EventRef<'de> {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl<'de> serde::de::Visitor<'de> for Visitor {
                    type Value = EventRef<'de>;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        // What `Event` says, so both decoders refuse alike.
                        f.write_str(#expecting)
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<EventRef<'de>, A::Error> {
                        #(let mut #slots: #slot_types = None;)*
                        let mut extensions = ExtensionsRef::default();
                        while let Some(key) = map.next_key::<crate::runtime::Key<'de>>()? {
                            match key.as_str() {
                                #(#jsons => #fills(&mut #slots, &mut map, #jsons)?,)*
                                _ => extensions.keep(key, &mut map)?,
                            }
                        }
                        Ok(EventRef {
                            #(#inits,)*
                            extensions,
                        })
                    }
                }
                deserializer.deserialize_map(Visitor)
            }
        }

        /// Beyond this many extension attributes, duplicates are found
        /// through a hash index rather than by scanning.
        const SCAN_LIMIT: usize = 16;

        /// An event's extension attributes, borrowed, in document order.
        #[derive(Debug, Clone, Default)]
        pub struct ExtensionsRef<'a> {
            entries: Vec<(Cow<'a, str>, ExtensionValueRef<'a>)>,
            index: Option<HashMap<Cow<'a, str>, usize>>,
        }

        impl<'a> ExtensionsRef<'a> {
            /// The value of the attribute `name`, if present.
            pub fn get(&self, name: &str) -> Option<&ExtensionValueRef<'a>> {
                match &self.index {
                    Some(index) => index.get(name).map(|&i| &self.entries[i].1),
                    None => self.entries.iter().find(|(n, _)| n == name).map(|(_, v)| v),
                }
            }

            /// The attributes as `(name, value)`, in document order.
            pub fn iter(&self) -> impl Iterator<Item = (&str, &ExtensionValueRef<'a>)> {
                self.entries.iter().map(|(n, v)| (&**n, v))
            }

            /// How many there are.
            pub fn len(&self) -> usize {
                self.entries.len()
            }

            /// Whether there are none.
            pub fn is_empty(&self) -> bool {
                self.entries.is_empty()
            }

            /// The attributes as `Event` holds them. (Every name was
            /// checked when decoded; `ExtensionName::new` checks it again,
            /// so no unchecked name can be made here.)
            pub fn to_owned(&self) -> super::envelope::Extensions {
                self.entries
                    .iter()
                    .filter_map(|(n, v)| {
                        let name = super::envelope::ExtensionName::new(String::from(&**n)).ok()?;
                        Some((name, v.to_owned()))
                    })
                    .collect()
            }

            /// Keeps one extension attribute, refusing a bad name, a bad
            /// value or a duplicate, in that order (as `Event` does).
            fn keep<A: serde::de::MapAccess<'a>>(&mut self, key: crate::runtime::Key<'a>, map: &mut A) -> Result<(), A::Error> {
                super::envelope::ExtensionName::check(key.as_str()).map_err(serde::de::Error::custom)?;
                let value: ExtensionValueRef<'a> = map.next_value()?;
                let name = key.into_cow();
                if self.get(&name).is_some() {
                    return Err(serde::de::Error::custom(format_args!("duplicate field `{name}`")));
                }
                if let Some(index) = &mut self.index {
                    index.insert(name.clone(), self.entries.len());
                }
                self.entries.push((name, value));
                if self.index.is_none() && self.entries.len() > SCAN_LIMIT {
                    let index = self.entries.iter().enumerate().map(|(i, (n, _))| (n.clone(), i)).collect();
                    self.index = Some(index);
                }
                Ok(())
            }
        }

        #value
    }
}

fn field<'a>(cx: &'a Context<'_>, json: &str) -> &'a Field {
    cx.ir
        .envelope
        .event
        .fields
        .iter()
        .find(|f| f.json == json)
        .expect("lowering checked the envelope's attributes")
}

/// `ExtensionValueRef`: the extension value union with its string borrowed.
fn value_ref(members: &[Primitive]) -> TokenStream {
    let mut variants = Vec::new();
    let mut visits = Vec::new();
    let mut owned = Vec::new();
    let integer = members.contains(&Primitive::Integer);
    for member in members {
        let (variant, rust, doc) = match member {
            Primitive::Object => ("Object", quote!(crate::runtime::Object), " A JSON object."),
            Primitive::String => ("String", quote!(Cow<'a, str>), " A string."),
            Primitive::Integer => ("Integer", quote!(i64), " An integer."),
            Primitive::Number => ("Number", quote!(f64), " A number."),
            Primitive::Boolean => ("Boolean", quote!(bool), " A boolean."),
        };
        let v = ident(variant);
        variants.push(quote!(#[doc = #doc] #v(#rust),));
        owned.push(match member {
            Primitive::String => quote!(ExtensionValueRef::#v(value) => super::envelope::ExtensionValue::#v(String::from(&**value)),),
            Primitive::Object => quote!(ExtensionValueRef::#v(value) => super::envelope::ExtensionValue::#v(value.clone()),),
            _ => quote!(ExtensionValueRef::#v(value) => super::envelope::ExtensionValue::#v(*value),),
        });
        visits.push(match member {
            Primitive::Object => quote! {
                fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<ExtensionValueRef<'de>, A::Error> {
                    serde::Deserialize::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(ExtensionValueRef::Object)
                }
            },
            Primitive::String => quote! {
                fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<ExtensionValueRef<'de>, E> {
                    Ok(ExtensionValueRef::String(Cow::Borrowed(v)))
                }
                fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ExtensionValueRef<'de>, E> {
                    Ok(ExtensionValueRef::String(Cow::Owned(v.to_owned())))
                }
                fn visit_string<E: serde::de::Error>(self, v: String) -> Result<ExtensionValueRef<'de>, E> {
                    Ok(ExtensionValueRef::String(Cow::Owned(v)))
                }
            },
            Primitive::Integer => quote! {
                fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ExtensionValueRef<'de>, E> {
                    Ok(ExtensionValueRef::Integer(v))
                }
                fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ExtensionValueRef<'de>, E> {
                    i64::try_from(v)
                        .map(ExtensionValueRef::Integer)
                        .map_err(|_| E::invalid_value(serde::de::Unexpected::Unsigned(v), &self))
                }
            },
            Primitive::Number => {
                let ints = (!integer).then(|| {
                    quote! {
                        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ExtensionValueRef<'de>, E> {
                            Ok(ExtensionValueRef::Number(v as f64))
                        }
                        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ExtensionValueRef<'de>, E> {
                            Ok(ExtensionValueRef::Number(v as f64))
                        }
                    }
                });
                quote! {
                    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<ExtensionValueRef<'de>, E> {
                        Ok(ExtensionValueRef::Number(v))
                    }
                    #ints
                }
            }
            Primitive::Boolean => quote! {
                fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<ExtensionValueRef<'de>, E> {
                    Ok(ExtensionValueRef::Boolean(v))
                }
            },
        });
    }
    let names: Vec<&str> = members.iter().map(|m| m.json_name()).collect();
    let expecting = match names.split_last() {
        Some((last, [])) => format!("a JSON {last}"),
        Some((last, rest)) => format!("a JSON {} or {last}", rest.join(", ")),
        None => String::new(),
    };
    let as_str = members.contains(&Primitive::String).then(|| {
        quote! {
            /// The string, if the value is one.
            pub fn as_str(&self) -> Option<&str> {
                match self {
                    ExtensionValueRef::String(value) => Some(value),
                    _ => None,
                }
            }
        }
    });
    quote! {
        /// The value of an extension attribute, its string borrowed.
        #[derive(Debug, Clone, PartialEq)]
        pub enum ExtensionValueRef<'a> {
            #(#variants)*
        }

        impl ExtensionValueRef<'_> {
            /// The value as `Event` holds it.
            pub fn to_owned(&self) -> super::envelope::ExtensionValue {
                match self {
                    #(#owned)*
                }
            }

            #as_str
        }

        impl<'de> serde::Deserialize<'de> for ExtensionValueRef<'de> {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl<'de> serde::de::Visitor<'de> for Visitor {
                    type Value = ExtensionValueRef<'de>;
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
