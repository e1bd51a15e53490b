//! Module-local names: inside a payload's module, the types nested in the
//! payload are named without the payload's name in front
//! (`attention_requested::RespondVia`, not
//! `AttentionRequestedRespondViaItem`), since the module already says
//! whose they are. A pass over the IR between lowering and emission.

use std::collections::{BTreeMap, BTreeSet};

use crate::ir::{Ir, Item, Ty, TypePath};

/// Names a shortened type may not take: what generated code or the prelude
/// means by them would change inside the module.
const RESERVED: &[&str] = &[
    "Self",
    "Option",
    "Some",
    "None",
    "Result",
    "Ok",
    "Err",
    "String",
    "Vec",
    "Box",
    "Default",
    "Clone",
    "Copy",
    "Send",
    "Sync",
    "Sized",
    "Drop",
    "Fn",
    "FnMut",
    "FnOnce",
    "Iterator",
    "IntoIterator",
    "Extend",
    "ToString",
    "ToOwned",
    "PartialEq",
    "Eq",
    "PartialOrd",
    "Ord",
    "AsRef",
    "AsMut",
    "Into",
    "From",
    "TryFrom",
    "TryInto",
    "Visitor",
];

/// Shortens the nested type names of every payload module, rewriting every
/// reference to them. A name that would clash, or not be an identifier,
/// keeps its long form.
pub fn local_names(mut ir: Ir) -> Ir {
    let payload_names: BTreeMap<&str, &str> = ir
        .payloads
        .iter()
        .map(|p| (p.module.as_str(), p.name.as_str()))
        .collect();
    let mut renames: BTreeMap<(String, String), String> = BTreeMap::new();
    for module in &ir.modules {
        let Some(prefix) = payload_names.get(module.name.as_str()) else {
            continue;
        };
        let mut taken: BTreeSet<String> = module.items.iter().map(|i| name(i).to_owned()).collect();
        for item in &module.items {
            let long = name(item);
            let Some(rest) = long.strip_prefix(prefix).filter(|r| !r.is_empty()) else {
                continue;
            };
            let candidates = [without_items(rest), rest.to_owned()];
            let usable = |n: &&String| {
                n.starts_with(|c: char| c.is_ascii_uppercase())
                    && !RESERVED.contains(&n.as_str())
                    && !taken.contains(*n)
            };
            if let Some(short) = candidates.iter().find(usable).cloned() {
                taken.insert(short.clone());
                renames.insert((module.name.clone(), long.to_owned()), short);
            }
        }
    }
    let rename = |path: &mut TypePath| {
        if let Some(short) = renames.get(&(path.module.clone(), path.name.clone())) {
            path.name = short.clone();
        }
    };
    for module in &mut ir.modules {
        for item in &mut module.items {
            let mut path = TypePath {
                module: module.name.clone(),
                name: name(item).to_owned(),
            };
            rename(&mut path);
            set_name(item, path.name);
        }
    }
    let items = ir
        .modules
        .iter_mut()
        .flat_map(|m| m.items.iter_mut())
        .chain(ir.envelope.items.iter_mut());
    for item in items {
        if let Item::Struct(s) = item {
            for field in &mut s.fields {
                each_path(&mut field.ty, &rename);
            }
        }
    }
    for field in &mut ir.envelope.event.fields {
        each_path(&mut field.ty, &rename);
    }
    ir
}

/// `name` without its `Item` words (the array-item marker):
/// `CitationsItemOffset` is `CitationsOffset`.
fn without_items(name: &str) -> String {
    let mut out = String::new();
    let mut rest = name;
    while let Some(at) = rest.find("Item") {
        let after = &rest[at + 4..];
        out.push_str(&rest[..at]);
        if !(after.is_empty() || after.starts_with(|c: char| c.is_ascii_uppercase())) {
            out.push_str("Item");
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

fn name(item: &Item) -> &str {
    match item {
        Item::Struct(s) => &s.name,
        Item::Enum(e) => &e.name,
        Item::Union(u) => &u.name,
    }
}

fn set_name(item: &mut Item, name: String) {
    match item {
        Item::Struct(s) => s.name = name,
        Item::Enum(e) => e.name = name,
        Item::Union(u) => u.name = name,
    }
}

fn each_path(ty: &mut Ty, f: &impl Fn(&mut TypePath)) {
    match ty {
        Ty::Named(path) => f(path),
        Ty::Array(item, _) => each_path(item, f),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn names(ir: &Ir, module: &str) -> Vec<String> {
        ir.modules
            .iter()
            .find(|m| m.name == module)
            .expect("module")
            .items
            .iter()
            .map(|i| name(i).to_owned())
            .collect()
    }

    #[test]
    fn nested_types_drop_the_payload_name() {
        let schemas = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas");
        let registry = crate::load::load(&schemas).expect("loads");
        let ir = local_names(crate::lower::lower(&registry).expect("lowers"));
        assert_eq!(
            names(&ir, "attention_requested"),
            ["AttentionRequested", "Kind", "RespondVia"]
        );
        assert!(
            names(&ir, "resource_citation_recorded").contains(&"CitationsOffsetChar".to_owned())
        );
        assert_eq!(without_items("ItemsItem"), "Items");
        assert_eq!(without_items("RespondViaItem"), "RespondVia");
        // Shared definitions keep their names.
        assert!(names(&ir, "common").contains(&"FieldSpecType".to_owned()));
    }
}
