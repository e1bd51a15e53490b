//! `attr-match/cases.json`: filters over envelope attributes (AEP-0003
//! §6). A `match` case's filter must be accepted by `filter::Filter` and
//! give the pinned verdict on its event (a bare set of attributes, not a
//! whole event); an `invalid` filter must be refused by `aep filter` with
//! exit status 2, before it reads anything.

use aep::filter::{AttrValue, Attributes, Filter};
use serde_json::{Map, Value};

use crate::fixtures::{array, case_name, member};
use crate::report::{Case, Category};
use crate::Context;

const FILE: &str = "attr-match/cases.json";

/// Runs the category.
pub fn run(context: &Context) -> Category {
    let mut category = Category::new("attr-match");
    let fixture = match context.fixtures.json(FILE) {
        Ok(fixture) => fixture,
        Err(e) => return Category::broken("attr-match", e),
    };
    let (matching, invalid) = match (array(&fixture, "match"), array(&fixture, "invalid")) {
        (Ok(m), Ok(i)) => (m, i),
        (Err(e), _) | (_, Err(e)) => return Category::broken("attr-match", format!("{FILE}: {e}")),
    };
    for (i, case) in matching.iter().enumerate() {
        let name = format!("match: {}", case_name(case, i));
        category.cases.push(match verdict(case) {
            Ok(()) => Case::pass(name),
            Err(why) => Case::fail(name, why),
        });
    }
    for (i, case) in invalid.iter().enumerate() {
        let name = format!("refuse: {}", case_name(case, i));
        category.cases.push(match refused(context, case) {
            Ok(()) => Case::pass(name),
            Err(why) => Case::fail(name, why),
        });
    }
    category
}

fn verdict(case: &Value) -> Result<(), String> {
    let filter = member(case, "filter")?;
    let event = member(case, "event")?
        .as_object()
        .ok_or("malformed case: `event` is not an object")?;
    let expected = member(case, "match")?
        .as_bool()
        .ok_or("malformed case: `match` is not a boolean")?;
    let filter = Filter::from_value(filter).map_err(|e| format!("the filter is refused: {e}"))?;
    let got = filter.matches(&Attrs(event));
    if got == expected {
        Ok(())
    } else {
        Err(format!("expected match = {expected}, got {got}"))
    }
}

fn refused(context: &Context, case: &Value) -> Result<(), String> {
    let filter = member(case, "filter")?.to_string();
    let out = context.aep.run(&["filter", &filter, "-"], b"")?;
    if out.code == Some(2) && out.stderr.contains("invalid filter") {
        Ok(())
    } else {
        Err(format!(
            "`aep filter '{filter}'` was not refused as an invalid filter: {}",
            out.status_line()
        ))
    }
}

/// The attributes of a fixture event: its members, read as scalars.
struct Attrs<'a>(&'a Map<String, Value>);

impl Attributes for Attrs<'_> {
    fn attr(&self, name: &str) -> Option<AttrValue<'_>> {
        match self.0.get(name)? {
            Value::String(s) => Some(AttrValue::Str(s)),
            Value::Bool(b) => Some(AttrValue::Bool(*b)),
            Value::Number(n) => n
                .as_i64()
                .map(i128::from)
                .or_else(|| n.as_u64().map(i128::from))
                .map(AttrValue::Int),
            _ => None,
        }
    }
}
