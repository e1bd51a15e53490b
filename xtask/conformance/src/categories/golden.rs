//! `golden/golden.jsonl`: events that must be valid, one by one
//! (`Event::from_json` and `Event::validate`: envelope, payload, capture),
//! and as one stream (`aep validate`: ordering, deduplication, lifecycle,
//! acknowledgements, form answers).

use aep::Event;

use crate::fixtures::{Line, GOLDEN};
use crate::report::{Case, Category};
use crate::Context;

/// Runs the category.
pub fn run(context: &Context) -> Category {
    let mut category = Category::new("golden");
    let lines = match context.fixtures.golden() {
        Ok(lines) => lines,
        Err(e) => return Category::broken("golden", e),
    };
    category.cases = lines
        .iter()
        .enumerate()
        .map(|(i, line)| event(i, line))
        .collect();
    category.cases.push(stream(context));
    category
}

fn event(index: usize, line: &Line) -> Case {
    let name = format!(
        "golden[{index}] {} (line {})",
        line.type_name(),
        line.number
    );
    let event = match Event::from_json(&line.text) {
        Ok(event) => event,
        Err(e) => return Case::fail(name, format!("refused: {e}")),
    };
    match event.validate() {
        Ok(()) => Case::pass(name),
        Err(violations) => Case::with(name, violations.0.iter().map(ToString::to_string).collect()),
    }
}

fn stream(context: &Context) -> Case {
    let name = "the golden stream passes `aep validate`";
    let path = context.fixtures.path(GOLDEN);
    let Some(path) = path.to_str() else {
        return Case::fail(name, format!("the path {} is not UTF-8", path.display()));
    };
    match context.aep.run(&["validate", "--jobs", "1", path], b"") {
        Ok(out) if out.code == Some(0) => Case::pass(name),
        Ok(out) => {
            let mut failures = vec![out.status_line()];
            failures.extend(out.stdout.lines().take(8).map(str::to_owned));
            Case::with(name, failures)
        }
        Err(e) => Case::fail(name, e),
    }
}
