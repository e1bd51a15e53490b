//! `capture-gating/cases.json`: a form answer's `values` gated for a
//! capture ceiling (`form::gate_values`) must be exactly the pinned
//! object.

use aep::form::gate_values;
use aep::{Capture, FieldSpec, Object};
use serde_json::Value;

use crate::fixtures::{array, case_name, member, string};
use crate::json;
use crate::report::{Case, Category};
use crate::Context;

const FILE: &str = "capture-gating/cases.json";

/// Runs the category.
pub fn run(context: &Context) -> Category {
    let mut category = Category::new("capture-gating");
    let fixture = match context.fixtures.json(FILE) {
        Ok(fixture) => fixture,
        Err(e) => return Category::broken("capture-gating", e),
    };
    let cases = match array(&fixture, "cases") {
        Ok(cases) => cases,
        Err(e) => return Category::broken("capture-gating", format!("{FILE}: {e}")),
    };
    for (i, case) in cases.iter().enumerate() {
        let name = case_name(case, i);
        category.cases.push(match one(case) {
            Ok(failures) => Case::with(name, failures),
            Err(why) => Case::fail(name, why),
        });
    }
    category
}

fn one(case: &Value) -> Result<Vec<String>, String> {
    let fields: Vec<FieldSpec> = serde_json::from_value(member(case, "fields")?.clone())
        .map_err(|e| format!("the fields are refused: {e}"))?;
    let values: Object = serde_json::from_value(member(case, "values")?.clone())
        .map_err(|e| format!("malformed case: `values` is not an object: {e}"))?;
    let ceiling: Capture = string(case, "ceiling")?
        .parse()
        .map_err(|_| "malformed case: `ceiling` is not a capture level".to_owned())?;
    let gated = Value::Object(gate_values(&fields, &values, ceiling).into_iter().collect());
    Ok(json::diff(member(case, "expect")?, &gated))
}
