//! `$ref`s and the `$defs` they point at, each lowered once.

use crate::json::Value;

use super::names::module_name;
use super::{At, Lowerer};
use crate::error::{child, Error};
use crate::ir::Ty;
use crate::naming;

impl<'r> Lowerer<'r> {
    /// Resolves a `$ref` to a definition and lowers it once.
    pub(super) fn reference(&mut self, at: &At<'r>, value: &Value) -> Result<Ty, Error> {
        let ref_at = at.child("$ref");
        let Value::String(reference) = value else {
            return Err(ref_at.error("`$ref` must be a string"));
        };
        let scheme = reference
            .split_once(':')
            .is_some_and(|(s, _)| !s.contains(['/', '#']));
        if scheme {
            return Err(ref_at.error(format!(
                "remote `$ref` \"{reference}\" is outside the subset"
            )));
        }
        let (file, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let target = if file.is_empty() {
            at.file.to_owned()
        } else {
            resolve(at.file, file)
                .filter(|t| self.registry.documents.contains_key(t))
                .ok_or_else(|| {
                    ref_at.error(format!(
                        "`$ref` \"{reference}\" names no schema file of the registry"
                    ))
                })?
        };
        let name = fragment
            .strip_prefix("/$defs/")
            .filter(|n| !n.is_empty() && !n.contains('/'))
            .ok_or_else(|| {
                ref_at.error(format!(
                    "`$ref` \"{reference}\" must point at `#/$defs/<name>`"
                ))
            })?
            .replace("~1", "/")
            .replace("~0", "~");
        let key = (target.clone(), name.clone());
        match self.defs.get(&key) {
            Some(Some(ty)) => Ok(ty.clone()),
            Some(None) => Err(ref_at.error(format!(
                "recursive `$ref` \"{reference}\": a definition that contains itself is outside the subset"
            ))),
            None => {
                let exists = self.registry.documents[&target]
                    .value
                    .get("$defs")
                    .and_then(|d| d.get(&name))
                    .is_some();
                if !exists {
                    return Err(ref_at.error(format!("`$ref` \"{reference}\" points at no definition")));
                }
                let def_at = At {
                    file: &self.registry.documents[&target].path,
                    pointer: child("/$defs", &name),
                    module: module_name(&target),
                };
                self.definition(def_at.file, &name, &def_at)
            }
        }
    }

    /// Lowers `$defs/<name>` of `file` unless it already is.
    pub(super) fn definition(
        &mut self,
        file: &'r str,
        name: &str,
        at: &At<'r>,
    ) -> Result<Ty, Error> {
        let key = (file.to_owned(), name.to_owned());
        if let Some(Some(ty)) = self.defs.get(&key) {
            return Ok(ty.clone());
        }
        let doc = &self.registry.documents[file];
        let value = &doc.value["$defs"][name];
        if value.get("x-aep-capture").is_some() {
            // A level is a fact of a use site; one on the definition would apply nowhere.
            return Err(at.child("x-aep-capture").error(
                "`x-aep-capture` belongs where a definition is used, not on the definition",
            ));
        }
        self.defs.insert(key.clone(), None);
        let ty = self.schema(at, value, &naming::type_name(name))?;
        self.defs.insert(key, Some(ty.clone()));
        Ok(ty)
    }
}

/// Resolves a relative file reference against the referring file.
fn resolve(from: &str, reference: &str) -> Option<String> {
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for segment in reference.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}
