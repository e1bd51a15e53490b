//! `invalid/cases.json`: events that must fail validation, one event
//! (`event`) or a stream whose cross-event rules are broken (`events`).
//! Each goes through `aep validate -` as JSONL and must be refused with
//! exit status 1.

use serde_json::Value;

use crate::fixtures::{array, case_name, member};
use crate::report::{Case, Category};
use crate::Context;

const FILE: &str = "invalid/cases.json";

/// Runs the category.
pub fn run(context: &Context) -> Category {
    let mut category = Category::new("invalid");
    let cases = match context.fixtures.json(FILE) {
        Ok(fixture) => fixture,
        Err(e) => return Category::broken("invalid", e),
    };
    let cases = match array(&cases, "cases") {
        Ok(cases) => cases,
        Err(e) => return Category::broken("invalid", format!("{FILE}: {e}")),
    };
    for (i, case) in cases.iter().enumerate() {
        let name = case_name(case, i);
        category.cases.push(match one(context, case) {
            Ok(()) => Case::pass(name),
            Err(why) => Case::fail(name, why),
        });
    }
    category
}

fn one(context: &Context, case: &Value) -> Result<(), String> {
    let events: Vec<&Value> = match case.get("events") {
        Some(Value::Array(events)) => events.iter().collect(),
        Some(_) => return Err("malformed case: `events` is not an array".to_owned()),
        None => vec![member(case, "event")?],
    };
    let mut jsonl = String::new();
    for event in events {
        jsonl.push_str(&event.to_string());
        jsonl.push('\n');
    }
    let out = context
        .aep
        .run(&["validate", "--jobs", "1", "-"], jsonl.as_bytes())?;
    match out.code {
        Some(1) => Ok(()),
        Some(0) => {
            let rule = case.get("rule").and_then(Value::as_str).unwrap_or("?");
            Err(format!(
                "`aep validate` accepted it, but it violates {rule}{}",
                warnings(&out.stdout)
            ))
        }
        _ => Err(format!("`aep validate` failed: {}", out.status_line())),
    }
}

/// The findings `aep validate` printed (warnings only, since it passed).
fn warnings(stdout: &str) -> String {
    let lines: Vec<&str> = stdout.lines().take(4).collect();
    if lines.is_empty() {
        String::new()
    } else {
        format!(" (it said: {})", lines.join("; "))
    }
}
