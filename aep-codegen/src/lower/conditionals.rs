//! `if` / `then` / `else` rules over an object's members.

use crate::json::{Map, Value};

use super::keywords::{object, only, pattern_at, strings_at};
use super::{At, Lowerer};
use crate::error::Error;
use crate::ir::*;

impl<'r> Lowerer<'r> {
    /// An `if` test reads a member as a string: it must be a string or a
    /// string enum.
    pub(super) fn check_tests(
        &self,
        at: &At<'_>,
        rules: &[Conditional],
        fields: &[Field],
    ) -> Result<(), Error> {
        for rule in rules {
            for (member, _) in &rule.when.tests {
                let stringy =
                    fields
                        .iter()
                        .find(|f| &f.json == member)
                        .is_some_and(|f| match &f.ty {
                            Ty::String(_) => true,
                            Ty::Named(path) => {
                                self.registry_enums.iter().any(|(_, p)| p == path)
                                    || self.enum_values(path).is_some()
                            }
                            _ => false,
                        });
                if !stringy {
                    return Err(at.child("if").error(format!(
                        "an `if` test on `{member}` needs a string or enum member"
                    )));
                }
            }
            let nested: Vec<Conditional> = std::iter::once(&rule.then)
                .chain(rule.otherwise.as_ref())
                .filter_map(|a| a.nested.as_deref().cloned())
                .collect();
            self.check_tests(at, &nested, fields)?;
        }
        Ok(())
    }
}

/// The `if`/`then`/`else` of an object schema, if it has one.
pub(super) fn conditional(
    at: &At<'_>,
    map: &Map<String, Value>,
    fields: &[String],
) -> Result<Option<Conditional>, Error> {
    let Some(when) = map.get("if") else {
        for key in ["then", "else"] {
            if map.contains_key(key) {
                return Err(at.child(key).error(format!("`{key}` without `if`")));
            }
        }
        return Ok(None);
    };
    let if_at = at.child("if");
    let when_map = object(&if_at, when)?;
    only(&if_at, when_map, &[&["properties", "required", "$comment"]])?;
    let mut predicate = Predicate::default();
    if let Some(props) = when_map.get("properties") {
        let props_at = if_at.child("properties");
        let Value::Object(props) = props else {
            return Err(props_at.error("`properties` must be an object"));
        };
        for (name, test) in props {
            let test_at = props_at.child(name);
            known_member(&test_at, name, fields)?;
            let test_map = object(&test_at, test)?;
            only(&test_at, test_map, &[&["const", "pattern", "$comment"]])?;
            let test = match (test_map.get("const"), test_map.get("pattern")) {
                (Some(Value::String(c)), None) => Test::Const(c.clone()),
                (None, Some(p)) => Test::Pattern(pattern_at(&test_at.child("pattern"), Some(p))?),
                _ => {
                    return Err(test_at.error("an `if` test is one string `const` or one `pattern`"))
                }
            };
            predicate.tests.push((name.clone(), test));
        }
    }
    if let Some(required) = when_map.get("required") {
        predicate.required = strings_at(&if_at.child("required"), required)?;
        for name in &predicate.required {
            known_member(&if_at.child("required"), name, fields)?;
        }
    }
    let then = match map.get("then") {
        Some(then) => assertion(&at.child("then"), then, fields)?,
        None => return Err(if_at.error("`if` without `then`")),
    };
    let otherwise = match map.get("else") {
        Some(otherwise) => Some(assertion(&at.child("else"), otherwise, fields)?),
        None => None,
    };
    Ok(Some(Conditional {
        when: predicate,
        then,
        otherwise,
    }))
}

fn assertion(at: &At<'_>, value: &Value, fields: &[String]) -> Result<Assertion, Error> {
    let map = object(at, value)?;
    only(
        at,
        map,
        &[&["required", "properties", "if", "then", "else", "$comment"]],
    )?;
    let mut out = Assertion::default();
    if let Some(required) = map.get("required") {
        out.required = strings_at(&at.child("required"), required)?;
        for name in &out.required {
            known_member(&at.child("required"), name, fields)?;
        }
    }
    if let Some(props) = map.get("properties") {
        let props_at = at.child("properties");
        let Value::Object(props) = props else {
            return Err(props_at.error("`properties` must be an object"));
        };
        for (name, schema) in props {
            let member_at = props_at.child(name);
            known_member(&member_at, name, fields)?;
            if schema != &Value::Bool(false) {
                return Err(
                    member_at.error("only `false` (the member must be absent) is supported here")
                );
            }
            out.forbidden.push(name.clone());
        }
    }
    out.nested = conditional(at, map, fields)?.map(Box::new);
    Ok(out)
}

fn known_member(at: &At<'_>, name: &str, fields: &[String]) -> Result<(), Error> {
    if fields.iter().any(|f| f == name) {
        Ok(())
    } else {
        Err(at.error(format!("`{name}` is not a property of this object")))
    }
}
