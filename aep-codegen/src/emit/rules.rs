//! The code a schema's keywords turn into beside the types: validation
//! (`minLength`, `pattern`, `format`, `minimum`, `maximum`, `if`/`then`)
//! and the capture table (`x-aep-capture`) that `drop_above` applies.

use proc_macro2::TokenStream;
use quote::quote;

use super::context::Context;
use super::docs::describe_predicate;
use super::tokens::ident;
use crate::ir::{Assertion, Conditional, Field, Struct, Test, Ty};

/// `validate_into` for a struct: its checks, with pointers from wherever
/// the validator stands.
pub fn validate_into(cx: &Context<'_>, s: &Struct) -> TokenStream {
    let checks: Vec<TokenStream> = s
        .fields
        .iter()
        .filter_map(|f| field_check(cx, f))
        .chain(s.rules.iter().map(|r| rule(s, r)))
        .collect();
    let v = if checks.is_empty() {
        quote!(_v)
    } else {
        quote!(v)
    };
    quote! {
        pub(crate) fn validate_into(&self, #v: &mut super::runtime::Validator) {
            #(#checks)*
        }
    }
}

/// The public `validate` of a payload type.
pub fn validate() -> TokenStream {
    quote! {
        /// Checks the schema's validation keywords here and in nested
        /// values, listing every violation with its JSON Pointer (the
        /// shape is already guaranteed by the type).
        pub fn validate(&self) -> Result<(), super::runtime::Violations> {
            let mut validator = super::runtime::Validator::new();
            self.validate_into(&mut validator);
            validator.finish().into_result()
        }
    }
}

fn field_check(cx: &Context<'_>, f: &Field) -> Option<TokenStream> {
    let name = ident(&f.ident);
    let json = &f.json;
    let check = value_check(cx, &f.ty, &quote!(value))?;
    let body = quote! {
        v.key(#json);
        #check
        v.up();
    };
    Some(if f.required {
        quote!({ let value = &self.#name; #body })
    } else {
        quote!(if let Some(value) = &self.#name { #body })
    })
}

/// Checks of one value (an expression of type `&T`); `None` when the
/// type alone guarantees everything.
fn value_check(cx: &Context<'_>, ty: &Ty, value: &TokenStream) -> Option<TokenStream> {
    match ty {
        Ty::String(rules)
            if rules.min_length.is_some() || rules.pattern.is_some() || rules.format.is_some() =>
        {
            let min = match rules.min_length {
                Some(n) => {
                    let n = n as usize;
                    quote!(Some(#n))
                }
                None => quote!(None),
            };
            let format = match &rules.format {
                Some(f) => quote!(Some(#f)),
                None => quote!(None),
            };
            let (statics, pattern) = match &rules.pattern {
                Some(p) => (regex_static(p), quote!(Some((&*PATTERN, #p)))),
                None => (quote!(), quote!(None)),
            };
            Some(quote! {
                #statics
                v.string(#value, #min, #pattern, #format);
            })
        }
        Ty::Integer(rules) | Ty::Number(rules) => {
            let bound = |n: &Option<serde_json::Number>| n.as_ref().and_then(|n| n.as_f64());
            // A `u64` cannot be below a minimum of zero or less.
            let unsigned = matches!(ty, Ty::Integer(_)) && rules.unsigned();
            let min = bound(&rules.minimum).filter(|m| !unsigned || *m > 0.0);
            let max = bound(&rules.maximum);
            if min.is_none() && max.is_none() {
                return None;
            }
            let option = |x: Option<f64>| match x {
                Some(x) => quote!(Some(#x)),
                None => quote!(None),
            };
            let (min, max) = (option(min), option(max));
            let number = match ty {
                Ty::Number(_) => quote!(*#value),
                _ => quote!(*#value as f64),
            };
            Some(quote!(v.number(#number, #min, #max);))
        }
        Ty::Array(item, _) => {
            let check = value_check(cx, item, &quote!(item))?;
            Some(quote! {
                for (index, item) in #value.iter().enumerate() {
                    v.index(index);
                    #check
                    v.up();
                }
            })
        }
        Ty::Named(path) if cx.is_struct(path) => Some(quote!(#value.validate_into(v);)),
        _ => None,
    }
}

/// `static PATTERN`, compiled on first use.
fn regex_static(pattern: &str) -> TokenStream {
    quote! {
        static PATTERN: std::sync::LazyLock<super::runtime::Regex> = std::sync::LazyLock::new(|| {
            super::runtime::Regex::new(#pattern).expect("the generator checked the pattern")
        });
    }
}

/// An `if`/`then`/`else` rule as an `if` statement.
fn rule(s: &Struct, rule: &Conditional) -> TokenStream {
    let when = describe_predicate(rule);
    let mut conditions = Vec::new();
    for (member, test) in &rule.when.tests {
        let f = member_field(s, member);
        let name = ident(&f.ident);
        let check = |x: TokenStream| match test {
            Test::Const(c) => quote!(#x == #c),
            Test::Pattern(p) => {
                let statics = regex_static(p);
                quote!({ #statics PATTERN.is_match(#x) })
            }
        };
        // JSON Schema: a test on an absent member holds.
        conditions.push(match (&f.ty, f.required) {
            (Ty::String(_), true) | (_, true) => check(quote!(self.#name.as_str())),
            (Ty::String(_), false) => {
                let test = check(quote!(x));
                quote!(self.#name.as_deref().is_none_or(|x| #test))
            }
            (_, false) => {
                let test = check(quote!(x.as_str()));
                quote!(self.#name.is_none_or(|x| #test))
            }
        });
    }
    for member in &rule.when.required {
        let f = member_field(s, member);
        if !f.required {
            let name = ident(&f.ident);
            conditions.push(quote!(self.#name.is_some()));
        }
    }
    let condition = if conditions.is_empty() {
        quote!(true)
    } else {
        quote!(#(#conditions)&&*)
    };
    let then = assertion(s, &rule.then, quote!(holds), &format!("when {when}"));
    let otherwise = rule
        .otherwise
        .as_ref()
        .map(|a| assertion(s, a, quote!(!holds), &format!("unless {when}")));
    // Each check is its own `if` on `holds`, so no `if` nests in another.
    quote! {
        {
            let holds = #condition;
            #then
            #otherwise
        }
    }
}

/// The checks of a `then` or `else`, each guarded by `guard`.
fn assertion(s: &Struct, a: &Assertion, guard: TokenStream, when: &str) -> TokenStream {
    let mut out = TokenStream::new();
    for member in &a.required {
        let f = member_field(s, member);
        if !f.required {
            let name = ident(&f.ident);
            let message = format!("missing member `{member}`, required {when}");
            out.extend(
                quote!(if #guard && self.#name.is_none() { v.report(None, #message.to_owned()); }),
            );
        }
    }
    for member in &a.forbidden {
        let f = member_field(s, member);
        let message = format!("must be absent {when}");
        let present = if f.required {
            quote!()
        } else {
            let name = ident(&f.ident);
            quote!(&& self.#name.is_some())
        };
        out.extend(quote!(if #guard #present { v.report(Some(#member), #message.to_owned()); }));
    }
    if let Some(nested) = &a.nested {
        let nested = rule(s, nested);
        out.extend(quote!(if #guard #nested));
    }
    out
}

fn member_field<'a>(s: &'a Struct, json: &str) -> &'a Field {
    s.fields
        .iter()
        .find(|f| f.json == json)
        .expect("lowering checked rule members are properties")
}

/// `drop_above` for a payload struct: the generated capture table.
pub fn drop_above(cx: &Context<'_>, s: &Struct, catch_all: &str) -> TokenStream {
    let mut steps = Vec::new();
    for f in &s.fields {
        let name = ident(&f.ident);
        let level = cx.capture(&f.capture);
        if !f.required {
            steps.push(quote!(if #level > level { self.#name = None; }));
        }
        if let Some(nested) = nested_drop(cx, &f.ty, &quote!(value)) {
            steps.push(if f.required {
                quote!({ let value = &mut self.#name; #nested })
            } else {
                quote!(if let Some(value) = &mut self.#name { #nested })
            });
        }
    }
    let unknown = cx.capture_default();
    let catch_all = ident(catch_all);
    quote! {
        /// Drops every member (nested ones too) whose capture level is
        /// above `level`; members the schema does not describe count as
        /// the default level. Required members are kept.
        pub fn drop_above(&mut self, level: super::registry::Capture) {
            #(#steps)*
            if #unknown > level {
                self.#catch_all.clear();
            }
        }
    }
}

/// What `drop_above` does inside a value (an expression of type `&mut T`).
fn nested_drop(cx: &Context<'_>, ty: &Ty, value: &TokenStream) -> Option<TokenStream> {
    match ty {
        Ty::Named(path) if cx.is_struct(path) => Some(quote!(#value.drop_above(level);)),
        Ty::Array(item, capture) => {
            let clear = capture.as_ref().map(|c| {
                let c = cx.capture(c);
                quote!(if #c > level { #value.clear(); })
            });
            let each = nested_drop(cx, item, &quote!(item))
                .map(|inner| quote!(for item in #value.iter_mut() { #inner }));
            if clear.is_none() && each.is_none() {
                None
            } else {
                Some(quote!(#clear #each))
            }
        }
        _ => None,
    }
}
