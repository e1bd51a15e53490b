//! The code a schema's keywords turn into beside the types: validation
//! (`minLength`, `pattern`, `format`, `minimum`, `maximum`, `if`/`then`)
//! and the capture table (`x-aep-capture`) that `drop_above` applies.

use proc_macro2::TokenStream;
use quote::quote;

use super::context::Context;
use super::docs::describe_predicate;
use super::tokens::ident;
use crate::ir::{Assertion, Conditional, Field, Struct, Test, Ty};

/// How the struct a `validate_into` belongs to holds its string fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strings {
    /// As `String` (the generated structs).
    Owned,
    /// As `Cow<str>` borrowed from the decoded text (`EventRef`), read as
    /// `&str` through the field's accessor of the same name.
    Borrowed,
}

/// `validate_into` for a struct: its checks, with pointers from wherever
/// the validator stands.
pub fn validate_into(cx: &Context<'_>, s: &Struct) -> TokenStream {
    checks_into(cx, s, Strings::Owned)
}

/// `validate_into` for a borrowed view of `s` whose fields have `s`'s
/// names, its strings held as `Cow<str>` and every other field as `s`
/// holds it (`EventRef` of the envelope): the same checks in the same
/// order, so the two report the same violations.
pub fn validate_borrowed_into(cx: &Context<'_>, s: &Struct) -> TokenStream {
    checks_into(cx, s, Strings::Borrowed)
}

fn checks_into(cx: &Context<'_>, s: &Struct, strings: Strings) -> TokenStream {
    let checks: Vec<TokenStream> = s
        .fields
        .iter()
        .filter_map(|f| field_check(cx, f))
        .chain(s.rules.iter().map(|r| rule(s, r, strings)))
        .collect();
    let v = if checks.is_empty() {
        quote!(_v)
    } else {
        quote!(v)
    };
    quote! {
        pub(crate) fn validate_into(&self, #v: &mut crate::runtime::Validator) {
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
        pub fn validate(&self) -> Result<(), crate::runtime::Violations> {
            let mut validator = crate::runtime::Validator::new();
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
            let meaning = match &rules.meaning {
                Some(m) => quote!(Some(#m)),
                None => quote!(None),
            };
            let (statics, pattern) = match &rules.pattern {
                Some(p) => (regex_static(p), quote!(Some((&*PATTERN, #p, #meaning)))),
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
        static PATTERN: std::sync::LazyLock<crate::runtime::Regex> = std::sync::LazyLock::new(|| {
            crate::runtime::Regex::new(#pattern).expect("the generator checked the pattern")
        });
    }
}

/// The literal a pattern of the form `^literal` matches at the start
/// (letters, digits, `_`, `-`, space and escaped punctuation); `None` for
/// any other pattern.
fn literal_prefix(pattern: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = pattern.strip_prefix('^')?.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next().filter(char::is_ascii_punctuation)?),
            c if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' ') => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}

/// An `if`/`then`/`else` rule as an `if` statement.
fn rule(s: &Struct, rule: &Conditional, strings: Strings) -> TokenStream {
    let when = describe_predicate(rule);
    let mut conditions = Vec::new();
    for (member, test) in &rule.when.tests {
        let f = member_field(s, member);
        let name = ident(&f.ident);
        let check = |x: TokenStream| match test {
            Test::Const(c) => quote!(#x == #c),
            // A literal prefix needs no regular expression.
            Test::Pattern(p) => match literal_prefix(p) {
                Some(prefix) => quote!(#x.starts_with(#prefix)),
                None => {
                    let statics = regex_static(p);
                    quote!({ #statics PATTERN.is_match(#x) })
                }
            },
        };
        // JSON Schema: a test on an absent member holds.
        conditions.push(match (&f.ty, f.required) {
            (Ty::String(_), true) if strings == Strings::Borrowed => check(quote!(self.#name())),
            (_, true) => check(quote!(self.#name.as_str())),
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
    let then = assertion(
        s,
        &rule.then,
        quote!(holds),
        &format!("when {when}"),
        strings,
    );
    let otherwise = rule
        .otherwise
        .as_ref()
        .map(|a| assertion(s, a, quote!(!holds), &format!("unless {when}"), strings));
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
fn assertion(
    s: &Struct,
    a: &Assertion,
    guard: TokenStream,
    when: &str,
    strings: Strings,
) -> TokenStream {
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
        let nested = rule(s, nested, strings);
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

/// The capture levels that have members in `s`, lowest first, with the
/// fields at each (members the schema does not describe sit at the default
/// level, which `unknown` marks).
fn by_level<'s>(cx: &Context<'_>, s: &'s Struct) -> Vec<(TokenStream, Vec<&'s Field>, bool)> {
    let default = &cx.ir.registry.capture[cx.capture_default_index()].0;
    cx.ir
        .registry
        .capture
        .iter()
        .filter_map(|(value, _)| {
            let fields: Vec<&Field> = s.fields.iter().filter(|f| &f.capture == value).collect();
            let unknown = value == default;
            (!fields.is_empty() || unknown).then(|| (cx.capture(value), fields, unknown))
        })
        .collect()
}

/// `drop_above` for a payload struct: the generated capture table, one
/// `if` per capture level.
pub fn drop_above(cx: &Context<'_>, s: &Struct, catch_all: &str) -> TokenStream {
    let catch_all = ident(catch_all);
    let mut steps = Vec::new();
    for (level_tokens, fields, unknown) in by_level(cx, s) {
        let mut drops: Vec<TokenStream> = fields
            .iter()
            .filter(|f| !f.required)
            .map(|f| {
                let name = ident(&f.ident);
                quote!(self.#name = None;)
            })
            .collect();
        if unknown {
            drops.push(quote!(self.#catch_all.clear();));
        }
        if !drops.is_empty() {
            steps.push(quote!(if #level_tokens > level { #(#drops)* }));
        }
    }
    // What is kept may hold members of its own to drop.
    for f in &s.fields {
        let name = ident(&f.ident);
        if let Some(nested) = nested_drop(cx, &f.ty, &f.capture, &quote!(value)) {
            steps.push(if f.required {
                quote!({ let value = &mut self.#name; #nested })
            } else {
                quote!(if let Some(value) = &mut self.#name { #nested })
            });
        }
    }
    quote! {
        /// Drops every member (nested ones too) whose capture level is
        /// above `level`; members the schema does not describe count as
        /// the default level. Required members are kept.
        pub(crate) fn drop_above(&mut self, level: super::registry::Capture) {
            #(#steps)*
        }
    }
}

/// What `drop_above` does inside a value (an expression of type `&mut T`).
fn nested_drop(
    cx: &Context<'_>,
    ty: &Ty,
    within: &str,
    value: &TokenStream,
) -> Option<TokenStream> {
    match ty {
        Ty::Named(path) if cx.is_struct(path) => Some(quote!(#value.drop_above(level);)),
        Ty::Array(item, capture) => {
            let capture = items_above(cx, capture, within);
            let clear = capture.map(|c| {
                let c = cx.capture(c);
                quote!(if #c > level { #value.clear(); })
            });
            let each = nested_drop(cx, item, within, &quote!(item))
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

/// The items' capture level of an array inside a member at level
/// `within`, when it is above it (else the member's own check covers them).
fn items_above<'a>(cx: &Context<'_>, items: &'a Option<String>, within: &str) -> Option<&'a str> {
    items
        .as_deref()
        .filter(|c| cx.capture_rank(c) > cx.capture_rank(within))
}

/// `capture_into` for a payload struct: reports every member present above
/// `level`, one `if` per capture level; the members at or below it are
/// searched in turn.
pub fn capture_into(cx: &Context<'_>, s: &Struct, catch_all: &str) -> TokenStream {
    let catch_all = ident(catch_all);
    let mut steps = Vec::new();
    for (level_tokens, fields, unknown) in by_level(cx, s) {
        let mut above = Vec::new();
        let mut within = Vec::new();
        for f in &fields {
            let name = ident(&f.ident);
            let json = &f.json;
            let present = if f.required {
                quote!(true)
            } else {
                quote!(self.#name.is_some())
            };
            above.push(quote!(v.capture_member(#present, #json, #level_tokens, level);));
            if let Some(nested) = nested_capture(cx, &f.ty, &f.capture, &quote!(value)) {
                let body = quote!(v.key(#json); #nested v.up(););
                within.push(if f.required {
                    quote!({ let value = &self.#name; #body })
                } else {
                    quote!(if let Some(value) = &self.#name { #body })
                });
            }
        }
        if unknown {
            above.push(quote! {
                for key in self.#catch_all.keys() {
                    v.capture_member(true, key, #level_tokens, level);
                }
            });
        }
        steps.push(match (above.is_empty(), within.is_empty()) {
            (true, true) => continue,
            (false, true) => quote!(if #level_tokens > level { #(#above)* }),
            (true, false) => quote!(if #level_tokens <= level { #(#within)* }),
            (false, false) => quote!(if #level_tokens > level { #(#above)* } else { #(#within)* }),
        });
    }
    let v = if steps.is_empty() {
        quote!(_v)
    } else {
        quote!(v)
    };
    let level = if steps.is_empty() {
        quote!(_level)
    } else {
        quote!(level)
    };
    quote! {
        /// Reports every member (nested ones too) whose capture level is
        /// above `level`; members the schema does not describe count as
        /// the default level.
        pub(crate) fn capture_into(&self, #v: &mut crate::runtime::Validator, #level: super::registry::Capture) {
            #(#steps)*
        }
    }
}

/// What `capture_into` checks inside a present value (an expression of
/// type `&T`) whose own level is allowed.
fn nested_capture(
    cx: &Context<'_>,
    ty: &Ty,
    within: &str,
    value: &TokenStream,
) -> Option<TokenStream> {
    match ty {
        Ty::Named(path) if cx.is_struct(path) => Some(quote!(#value.capture_into(v, level);)),
        Ty::Array(item, capture) => {
            let capture = items_above(cx, capture, within);
            let each = nested_capture(cx, item, within, &quote!(item));
            let walk = |check: TokenStream| {
                quote! {
                    for (index, item) in #value.iter().enumerate() {
                        v.index(index);
                        #check
                        v.up();
                    }
                }
            };
            let report = |c: &TokenStream| {
                quote! {
                    for index in 0..#value.len() {
                        v.index(index);
                        v.capture_item(#c, level);
                        v.up();
                    }
                }
            };
            let items_level = capture.map(|c| cx.capture(c));
            match (items_level, each) {
                (None, None) => None,
                (None, Some(each)) => Some(walk(each)),
                (Some(c), None) => {
                    let report = report(&c);
                    Some(quote!(if #c > level { #report }))
                }
                (Some(c), Some(each)) => {
                    let report = report(&c);
                    let each = walk(each);
                    Some(quote!(if #c > level { #report } else { #each }))
                }
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::literal_prefix;

    #[test]
    fn only_literal_prefixes_become_starts_with() {
        assert_eq!(literal_prefix("^agent\\.").as_deref(), Some("agent."));
        assert_eq!(literal_prefix("^x-y_z 1").as_deref(), Some("x-y_z 1"));
        for other in [
            "agent", "^agent.", "^a$", "^(a|b)", "^a+", "^[a]", "^\\d", "^a?",
        ] {
            assert_eq!(literal_prefix(other), None, "{other}");
        }
    }
}
