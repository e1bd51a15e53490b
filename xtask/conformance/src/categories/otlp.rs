//! `otlp/otlp-expected.json`: OTLP log records (AEP-0005 §3) pinned for
//! some golden events, by index, at the exporter's default `max_capture`
//! (`metadata`). Each pinned event goes through `aep convert --to otlp`
//! and must give exactly its pin.

use serde_json::Value;

use crate::fixtures::by_golden_index;
use crate::json;
use crate::report::{Case, Category};
use crate::Context;

const FILE: &str = "otlp/otlp-expected.json";

/// Runs the category.
pub fn run(context: &Context) -> Category {
    let mut category = Category::new("otlp");
    let pins = match context.fixtures.json(FILE) {
        Ok(Value::Object(pins)) => pins,
        Ok(_) => return Category::broken("otlp", format!("{FILE}: not an object")),
        Err(e) => return Category::broken("otlp", e),
    };
    for (key, pin) in by_golden_index(&pins) {
        let (name, result) = match context.fixtures.golden_at(key) {
            Ok(event) => (
                format!("otlp[{key}] {}", event.type_name()),
                export(context, &event.text),
            ),
            Err(e) => (format!("otlp[{key}]"), Err(e)),
        };
        category.cases.push(match result {
            Ok(record) => Case::with(name, json::diff(pin, &record)),
            Err(why) => Case::fail(name, why),
        });
    }
    category
}

fn export(context: &Context, line: &str) -> Result<Value, String> {
    let out = context.aep.run(
        &["convert", "--to", "otlp", "-"],
        format!("{line}\n").as_bytes(),
    )?;
    if out.code != Some(0) {
        return Err(format!(
            "`aep convert --to otlp` refused it: {}",
            out.status_line()
        ));
    }
    out.json_line()
}
