//! `capture`: the capture relations between payload members (AEP-0003
//! §9), as tables an emitter walks.

use proc_macro2::TokenStream;
use quote::quote;

use crate::ir::Ir;

pub fn module(ir: &Ir) -> TokenStream {
    let option = |value: &Option<String>| match value {
        Some(pointer) => quote!(Some(#pointer)),
        None => quote!(None),
    };
    let siblings = ir.payloads.iter().flat_map(|p| {
        let event_type = &p.event_type;
        p.siblings.iter().map(move |s| {
            let pointer = &s.pointer;
            let digest = option(&s.digest);
            let redacted = option(&s.redacted);
            quote! {
                Sibling { event_type: #event_type, pointer: #pointer, digest: #digest, redacted: #redacted },
            }
        })
    });
    let free_text = ir.payloads.iter().flat_map(|p| {
        let event_type = &p.event_type;
        p.free_text.iter().map(move |f| {
            let pointer = &f.pointer;
            quote!(FreeText { event_type: #event_type, pointer: #pointer },)
        })
    });
    quote! {
        //! The capture relations the payload schemas state between their
        //! members, for an emitter turning full content into an event at a
        //! capture ceiling (AEP-0003 §9).
        //!
        //! Pointers are JSON Pointers into an event's `data`; a `*` token
        //! stands for every item of an array.

        /// A member whose content has a `*_digest` and/or a `*_redacted`
        /// sibling in the same object.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct Sibling {
            /// The event type.
            pub event_type: &'static str,
            /// The member holding the content, e.g. `/args`.
            pub pointer: &'static str,
            /// The digest sibling, e.g. `/args_digest`: a hash of the
            /// original content.
            pub digest: Option<&'static str>,
            /// The redacted sibling, e.g. `/args_redacted`: the content
            /// through the redaction pipeline.
            pub redacted: Option<&'static str>,
        }

        /// Every member with a digest or redacted sibling, by event type
        /// in registry order, then in schema order.
        pub const SIBLINGS: &[Sibling] = &[#(#siblings)*];

        /// A member whose `x-aep-capture` is `redacted`: free text that
        /// must pass the redaction pipeline at capture `redacted`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct FreeText {
            /// The event type.
            pub event_type: &'static str,
            /// The member.
            pub pointer: &'static str,
        }

        /// Every `redacted`-level member other than the `*_redacted`
        /// siblings (which [`SIBLINGS`] lists), by event type in registry
        /// order, then in schema order.
        pub const FREE_TEXT: &[FreeText] = &[#(#free_text)*];

        /// The siblings of one event type's payload.
        pub fn siblings(event_type: &str) -> impl Iterator<Item = &'static Sibling> + '_ {
            SIBLINGS.iter().filter(move |s| s.event_type == event_type)
        }

        /// The free-text members of one event type's payload.
        pub fn free_text(event_type: &str) -> impl Iterator<Item = &'static FreeText> + '_ {
            FREE_TEXT.iter().filter(move |f| f.event_type == event_type)
        }
    }
}
