//! The capture relations between members, found in the lowered structs:
//! which members have `*_digest` and `*_redacted` siblings, and which carry
//! `redacted`-level free text. An emitter holding full content needs them
//! (AEP-0003 §9); the schemas state them, so they are not kept by hand.

use crate::error::child;
use crate::ir::{FreeText, Item, Module, PayloadIr, Sibling, Struct, Ty, TypePath};

/// The suffix of a digest sibling.
const DIGEST: &str = "_digest";
/// The suffix of a redacted sibling.
const REDACTED: &str = "_redacted";

/// Fills `siblings` and `free_text` of every payload.
pub(super) fn relations(modules: &[Module], payloads: &mut [PayloadIr]) {
    for payload in payloads {
        let path = TypePath {
            module: payload.module.clone(),
            name: payload.name.clone(),
        };
        let mut walk = Walk {
            modules,
            seen: Vec::new(),
            siblings: Vec::new(),
            free_text: Vec::new(),
        };
        if let Some(s) = walk.find(&path) {
            walk.seen.push(path.clone());
            walk.walk_struct(s, "");
        }
        payload.siblings = walk.siblings;
        payload.free_text = walk.free_text;
    }
}

struct Walk<'m> {
    modules: &'m [Module],
    /// The structs on the current path, so a recursive type ends.
    seen: Vec<TypePath>,
    siblings: Vec<Sibling>,
    free_text: Vec<FreeText>,
}

impl<'m> Walk<'m> {
    fn find(&self, path: &TypePath) -> Option<&'m Struct> {
        self.modules
            .iter()
            .filter(|m| m.name == path.module)
            .flat_map(|m| &m.items)
            .find_map(|item| match item {
                Item::Struct(s) if s.name == path.name => Some(s),
                _ => None,
            })
    }

    fn walk_struct(&mut self, s: &'m Struct, pointer: &str) {
        let has = |name: &str| s.fields.iter().any(|f| f.json == name);
        for field in &s.fields {
            let at = child(pointer, &field.json);
            let digest = format!("{}{DIGEST}", field.json);
            let redacted = format!("{}{REDACTED}", field.json);
            let is_sibling = [DIGEST, REDACTED]
                .iter()
                .any(|suffix| field.json.strip_suffix(suffix).is_some_and(&has));
            if has(&digest) || has(&redacted) {
                let sibling = |name: &str| has(name).then(|| child(pointer, name));
                self.siblings.push(Sibling {
                    pointer: at.clone(),
                    digest: sibling(&digest),
                    redacted: sibling(&redacted),
                });
            }
            if field.capture == "redacted" && !is_sibling {
                self.free_text.push(FreeText {
                    pointer: at.clone(),
                });
            }
            self.walk_ty(&field.ty, &at);
        }
    }

    fn walk_ty(&mut self, ty: &'m Ty, pointer: &str) {
        match ty {
            Ty::Array(item, _) => self.walk_ty(item, &format!("{pointer}/*")),
            Ty::Named(path) if !self.seen.contains(path) => {
                if let Some(s) = self.find(path) {
                    self.seen.push(path.clone());
                    self.walk_struct(s, pointer);
                    self.seen.pop();
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Field, StringRules};

    fn field(json: &str, capture: &str, ty: Ty) -> Field {
        Field {
            json: json.to_owned(),
            ident: json.to_owned(),
            ty,
            required: false,
            capture: capture.to_owned(),
            default: None,
            doc: Vec::new(),
        }
    }

    fn text(json: &str, capture: &str) -> Field {
        field(json, capture, Ty::String(StringRules::default()))
    }

    fn named(name: &str) -> Ty {
        Ty::Named(TypePath {
            module: "m".to_owned(),
            name: name.to_owned(),
        })
    }

    fn object(name: &str, fields: Vec<Field>) -> Item {
        Item::Struct(Struct {
            name: name.to_owned(),
            doc: Vec::new(),
            origin: String::new(),
            fields,
            rules: Vec::new(),
        })
    }

    #[test]
    fn finds_siblings_and_free_text_at_depth() {
        let modules = vec![Module {
            name: "m".to_owned(),
            source: "m.json".to_owned(),
            items: vec![
                object(
                    "P",
                    vec![
                        text("args_digest", "metadata"),
                        field("args_redacted", "redacted", Ty::FreeObject),
                        field("args", "full", Ty::FreeObject),
                        text("query", "redacted"),
                        text("query_digest", "metadata"),
                        // A digest-like name without its base is no sibling.
                        text("orphan_redacted", "redacted"),
                        field("docs", "metadata", Ty::Array(Box::new(named("D")), None)),
                        field("node", "metadata", named("P")),
                    ],
                ),
                object(
                    "D",
                    vec![
                        text("content_redacted", "redacted"),
                        text("content", "full"),
                        text("a/b", "redacted"),
                    ],
                ),
            ],
        }];
        let mut payloads = vec![PayloadIr {
            event_type: "x.test".to_owned(),
            name: "P".to_owned(),
            module: "m".to_owned(),
            siblings: Vec::new(),
            free_text: Vec::new(),
        }];
        relations(&modules, &mut payloads);
        let sibling = |pointer: &str, digest: Option<&str>, redacted: Option<&str>| Sibling {
            pointer: pointer.to_owned(),
            digest: digest.map(str::to_owned),
            redacted: redacted.map(str::to_owned),
        };
        assert_eq!(
            payloads[0].siblings,
            vec![
                sibling("/args", Some("/args_digest"), Some("/args_redacted")),
                sibling("/query", Some("/query_digest"), None),
                sibling("/docs/*/content", None, Some("/docs/*/content_redacted")),
            ]
        );
        let free: Vec<&str> = payloads[0]
            .free_text
            .iter()
            .map(|f| f.pointer.as_str())
            .collect();
        // The recursive `node` is walked once, not forever.
        assert_eq!(free, ["/query", "/orphan_redacted", "/docs/*/a~1b"]);
    }
}
