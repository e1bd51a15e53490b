//! `redaction/cases.json`: the AEP-0003 §9.4 pipeline through `aep redact`
//! (`text_cases`, standard input as text) and `aep redact --json`
//! (`value_cases`, one JSON value). The output must contain every
//! `must_contain` string and none of the `must_not_contain` ones; a
//! value's output is read in the text form the corpus is written against
//! ([`python_dumps`](crate::json::python_dumps)).
//!
//! A case's `opts` become options: `home` (default `/nonexistent-home`,
//! so no case depends on the machine) `--home`, each of `secretValues`
//! `--secret`, `pii: false` `--no-pii`. An option the runner does not
//! know fails the case rather than being ignored.

use serde_json::Value;

use crate::fixtures::{array, case_name, member};
use crate::json;
use crate::report::{Case, Category};
use crate::Context;

const FILE: &str = "redaction/cases.json";

/// The home directory of a case that names none.
const DEFAULT_HOME: &str = "/nonexistent-home";

/// Runs the category.
pub fn run(context: &Context) -> Category {
    let mut category = Category::new("redaction");
    let fixture = match context.fixtures.json(FILE) {
        Ok(fixture) => fixture,
        Err(e) => return Category::broken("redaction", e),
    };
    for (list, as_json) in [("text_cases", false), ("value_cases", true)] {
        let cases = match array(&fixture, list) {
            Ok(cases) => cases,
            Err(e) => return Category::broken("redaction", format!("{FILE}: {e}")),
        };
        let kind = if as_json { "value" } else { "text" };
        for (i, case) in cases.iter().enumerate() {
            let name = format!("{kind}: {}", case_name(case, i));
            category.cases.push(match one(context, case, as_json) {
                Ok(failures) => Case::with(name, failures),
                Err(why) => Case::fail(name, why),
            });
        }
    }
    category
}

fn one(context: &Context, case: &Value, as_json: bool) -> Result<Vec<String>, String> {
    let input = member(case, "input")?;
    let stdin = match (as_json, input) {
        (false, Value::String(text)) => text.clone(),
        (false, _) => return Err("malformed case: a text case's `input` is not a string".into()),
        (true, value) => value.to_string(),
    };
    let mut args: Vec<String> = vec!["redact".into()];
    if as_json {
        args.push("--json".into());
    }
    args.extend(options(case.get("opts"))?);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = context.aep.run(&args, stdin.as_bytes())?;
    if out.code != Some(0) {
        return Err(format!(
            "`aep {}` failed: {}",
            args.join(" "),
            out.status_line()
        ));
    }
    let output = if as_json {
        json::python_dumps(&out.json_line()?)
    } else {
        out.stdout
    };
    let mut failures = Vec::new();
    for (list, wanted) in [("must_contain", true), ("must_not_contain", false)] {
        for needle in strings(case, list)? {
            if output.contains(needle) != wanted {
                let verb = if wanted { "lacks" } else { "contains" };
                failures.push(format!(
                    "the output {verb} {needle:?}: {:?}",
                    json::shorten(&output)
                ));
            }
        }
    }
    Ok(failures)
}

/// The command-line options of a case's `opts`: secrets, then PII, then
/// the home directory.
fn options(opts: Option<&Value>) -> Result<Vec<String>, String> {
    let mut home = DEFAULT_HOME.to_owned();
    let mut secrets = Vec::new();
    let mut pii = true;
    let empty = serde_json::Map::new();
    let opts = match opts {
        None => &empty,
        Some(Value::Object(opts)) => opts,
        Some(_) => return Err("malformed case: `opts` is not an object".into()),
    };
    for (key, value) in opts {
        match (key.as_str(), value) {
            ("home", Value::String(dir)) => home = dir.clone(),
            ("secretValues", Value::Array(values)) => {
                for value in values {
                    let secret = value
                        .as_str()
                        .ok_or("malformed case: a secret value is not a string")?;
                    secrets.push(format!("--secret={secret}"));
                }
            }
            ("pii", Value::Bool(on)) => pii = *on,
            _ => {
                return Err(format!(
                    "option `{key}`: {value} is not an option the runner knows"
                ))
            }
        }
    }
    let mut args = secrets;
    if !pii {
        args.push("--no-pii".into());
    }
    args.push(format!("--home={home}"));
    Ok(args)
}

fn strings<'a>(case: &'a Value, list: &str) -> Result<Vec<&'a str>, String> {
    match case.get(list) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .ok_or_else(|| format!("malformed case: `{list}` holds a non-string"))
            })
            .collect(),
        Some(_) => Err(format!("malformed case: `{list}` is not an array")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_map_to_flags_and_unknown_ones_fail() {
        assert_eq!(options(None).unwrap(), ["--home=/nonexistent-home"]);
        assert_eq!(
            options(Some(
                &json!({"home": "/home/op", "secretValues": ["a-b"], "pii": false})
            ))
            .unwrap(),
            ["--secret=a-b", "--no-pii", "--home=/home/op"]
        );
        assert!(options(Some(&json!({"locale": "fr"}))).is_err());
        assert!(options(Some(&json!({"pii": "no"}))).is_err());
    }
}
