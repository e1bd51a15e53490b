//! `downlevel/cases.json`: an event forwarded to a consumer with a lower
//! capture ceiling (`Event::down_level`) must carry exactly the pinned
//! `capture` and `data` (no `data` at all where the pin is `null`).

use aep::{Capture, Event};
use serde_json::Value;

use crate::fixtures::{array, case_name, member, string};
use crate::json;
use crate::report::{Case, Category};
use crate::Context;

const FILE: &str = "downlevel/cases.json";

/// Runs the category.
pub fn run(context: &Context) -> Category {
    let mut category = Category::new("downlevel");
    let fixture = match context.fixtures.json(FILE) {
        Ok(fixture) => fixture,
        Err(e) => return Category::broken("downlevel", e),
    };
    let cases = match array(&fixture, "cases") {
        Ok(cases) => cases,
        Err(e) => return Category::broken("downlevel", format!("{FILE}: {e}")),
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
    let ceiling: Capture = string(case, "ceiling")?
        .parse()
        .map_err(|_| "malformed case: `ceiling` is not a capture level".to_owned())?;
    let event = Event::from_json(&member(case, "event")?.to_string())
        .map_err(|e| format!("the event is refused: {e}"))?;
    let out = serde_json::to_value(event.down_level(ceiling))
        .map_err(|e| format!("the down-levelled event cannot be encoded: {e}"))?;
    let mut failures = Vec::new();
    let expect_capture = member(case, "expect_capture")?;
    let capture = out.get("capture").unwrap_or(&Value::Null);
    if !json::same(expect_capture, capture) {
        failures.push(format!(
            "capture: expected {}, got {}",
            json::show(expect_capture),
            json::show(capture)
        ));
    }
    match (member(case, "expect_data")?, out.get("data")) {
        (Value::Null, None) => {}
        (Value::Null, Some(data)) => {
            failures.push(format!("data: expected none, got {}", json::show(data)));
        }
        (expected, None) => {
            failures.push(format!("data: missing, expected {}", json::show(expected)))
        }
        (expected, Some(data)) => failures.extend(
            json::diff(expected, data)
                .into_iter()
                .map(|d| format!("data{d}")),
        ),
    }
    Ok(failures)
}
