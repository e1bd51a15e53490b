//! `ce-roundtrip/`: the CloudEvents bridge (AEP-0005 §1, §2) through
//! `aep convert`.
//!
//! - forward: each golden event through `--to cloudevents` must be its
//!   pin in `ce-expected.jsonl` (line `i` pins golden event `i`);
//! - inverse: each pin through `--from cloudevents` must give back its
//!   golden event (round-trip identity);
//! - inbound: each CloudEvent of `inbound-cases.json` through
//!   `--from cloudevents` must be the `expected` event.

use serde_json::Value;

use crate::fixtures::{array, case_name, member};
use crate::json;
use crate::report::{Case, Category};
use crate::Context;

const PINS: &str = "ce-roundtrip/ce-expected.jsonl";
const INBOUND: &str = "ce-roundtrip/inbound-cases.json";

/// Runs the category.
pub fn run(context: &Context) -> Category {
    let mut category = Category::new("ce-roundtrip");
    let (golden, pins) = match (context.fixtures.golden(), context.fixtures.jsonl(PINS)) {
        (Ok(golden), Ok(pins)) => (golden, pins),
        (Err(e), _) | (_, Err(e)) => return Category::broken("ce-roundtrip", e),
    };
    if pins.len() != golden.len() {
        category.cases.push(Case::fail(
            "one pin per golden event",
            format!("{} pins for {} golden events", pins.len(), golden.len()),
        ));
    }
    for (i, (event, pin)) in golden.iter().zip(&pins).enumerate() {
        let name = format!("forward[{i}] {}", event.type_name());
        category
            .cases
            .push(converted(context, name, "--to", &event.text, &pin.value));
    }
    for (i, (event, pin)) in golden.iter().zip(&pins).enumerate() {
        let name = format!("inverse[{i}] {}", event.type_name());
        category
            .cases
            .push(converted(context, name, "--from", &pin.text, &event.value));
    }
    match context.fixtures.json(INBOUND) {
        Ok(fixture) => match array(&fixture, "cases") {
            Ok(cases) => {
                for (i, case) in cases.iter().enumerate() {
                    category.cases.push(inbound(context, case, i));
                }
            }
            Err(e) => category.error = Some(format!("{INBOUND}: {e}")),
        },
        Err(e) => category.error = Some(e),
    }
    category
}

fn inbound(context: &Context, case: &Value, index: usize) -> Case {
    let name = format!("inbound: {}", case_name(case, index));
    match (member(case, "ce"), member(case, "expected")) {
        (Ok(ce), Ok(expected)) => converted(context, name, "--from", &ce.to_string(), expected),
        (Err(e), _) | (_, Err(e)) => Case::fail(name, e),
    }
}

/// The case of converting `input` (one JSON line) in `direction` and
/// expecting `expected`.
fn converted(
    context: &Context,
    name: String,
    direction: &str,
    input: &str,
    expected: &Value,
) -> Case {
    match convert(context, direction, input) {
        Ok(got) => Case::with(name, json::diff(expected, &got)),
        Err(why) => Case::fail(name, why),
    }
}

/// One line through `aep convert DIRECTION cloudevents -`.
fn convert(context: &Context, direction: &str, input: &str) -> Result<Value, String> {
    let args = ["convert", direction, "cloudevents", "-"];
    let out = context.aep.run(&args, format!("{input}\n").as_bytes())?;
    if out.code != Some(0) {
        return Err(format!(
            "`aep {}` refused it: {}",
            args.join(" "),
            out.status_line()
        ));
    }
    out.json_line()
}
