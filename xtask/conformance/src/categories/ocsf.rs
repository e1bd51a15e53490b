//! `ocsf/`: OCSF records (AEP-0005 §4) pinned for some golden events, by
//! index, at the projection's default `max_capture` (`metadata`), in
//! `ocsf-expected.json`. Each pinned event goes through
//! `aep convert --to ocsf` and must give exactly its pin, and the record
//! must fit the OCSF class subset of `ocsf-classes.json`: only attributes
//! of its class, the class's `category_uid`, enum-legal activity,
//! severity, status and disposition ids, and `type_uid` derived from class
//! and activity.

use serde_json::{Map, Value};

use crate::fixtures::by_golden_index;
use crate::json;
use crate::report::{Case, Category};
use crate::Context;

const PINS: &str = "ocsf/ocsf-expected.json";
const CLASSES: &str = "ocsf/ocsf-classes.json";

/// Runs the category.
pub fn run(context: &Context) -> Category {
    let mut category = Category::new("ocsf");
    let pins = match context.fixtures.json(PINS) {
        Ok(Value::Object(pins)) => pins,
        Ok(_) => return Category::broken("ocsf", format!("{PINS}: not an object")),
        Err(e) => return Category::broken("ocsf", e),
    };
    let classes = match context.fixtures.json(CLASSES) {
        Ok(fixture) => match fixture.get("classes") {
            Some(Value::Object(classes)) => classes.clone(),
            _ => return Category::broken("ocsf", format!("{CLASSES}: no `classes` object")),
        },
        Err(e) => return Category::broken("ocsf", e),
    };
    for (key, pin) in by_golden_index(&pins) {
        let (name, result) = match context.fixtures.golden_at(key) {
            Ok(event) => (
                format!("ocsf[{key}] {}", event.type_name()),
                project(context, &event.text),
            ),
            Err(e) => (format!("ocsf[{key}]"), Err(e)),
        };
        category.cases.push(match result {
            Ok(record) => {
                let mut failures = json::diff(pin, &record);
                failures.extend(class_subset(&classes, &record));
                Case::with(name, failures)
            }
            Err(why) => Case::fail(name, why),
        });
    }
    category
}

fn project(context: &Context, line: &str) -> Result<Value, String> {
    let out = context.aep.run(
        &["convert", "--to", "ocsf", "-"],
        format!("{line}\n").as_bytes(),
    )?;
    if out.code != Some(0) {
        return Err(format!(
            "`aep convert --to ocsf` refused it: {}",
            out.status_line()
        ));
    }
    if out.stdout.trim().is_empty() {
        return Err("`aep convert --to ocsf` gave no record".to_owned());
    }
    out.json_line()
}

/// What in `record` the pinned class subset does not allow.
fn class_subset(classes: &Map<String, Value>, record: &Value) -> Vec<String> {
    let uid = |name: &str| record.get(name).and_then(Value::as_u64);
    let Some(class_uid) = uid("class_uid") else {
        return vec!["the record has no integer `class_uid`".to_owned()];
    };
    let Some(class) = classes.get(&class_uid.to_string()) else {
        return vec![format!(
            "class {class_uid} is not in the pinned class subset"
        )];
    };
    let mut failures = Vec::new();
    let attributes: Vec<&str> = class
        .get("attributes")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(members) = record.as_object() {
        let mut unknown: Vec<&str> = members
            .keys()
            .map(String::as_str)
            .filter(|k| !attributes.contains(k))
            .collect();
        unknown.sort_unstable();
        if !unknown.is_empty() {
            failures.push(format!("not attributes of class {class_uid}: {unknown:?}"));
        }
    }
    let category = class.get("category_uid").and_then(Value::as_u64);
    if uid("category_uid") != category {
        failures.push(format!(
            "category_uid {:?} is not the class's {category:?}",
            uid("category_uid")
        ));
    }
    let activity = uid("activity_id");
    if activity.map(|a| class_uid * 100 + a) != uid("type_uid") {
        failures.push(format!(
            "type_uid {:?} is not class_uid * 100 + activity_id",
            uid("type_uid")
        ));
    }
    for (attribute, set, required) in [
        ("activity_id", "activity", true),
        ("severity_id", "severity", true),
        ("status_id", "status", false),
        ("disposition_id", "disposition", false),
    ] {
        let legal = |id: u64| {
            class
                .get(set)
                .and_then(Value::as_object)
                .is_some_and(|values| values.contains_key(&id.to_string()))
        };
        match (record.get(attribute), uid(attribute)) {
            (None, _) if !required => {}
            (_, Some(id)) if legal(id) => {}
            (value, _) => failures.push(format!(
                "{attribute} {} is not in the class's `{set}` values",
                value.map_or_else(|| "(absent)".to_owned(), json::show)
            )),
        }
    }
    failures
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn classes() -> Map<String, Value> {
        let classes = json!({"1007": {
            "category_uid": 1,
            "attributes": ["class_uid", "category_uid", "activity_id", "type_uid",
                           "severity_id", "status_id", "process"],
            "activity": {"1": "Launch", "2": "Terminate"},
            "severity": {"1": "Informational"},
            "status": {"1": "Success"},
            "disposition": {"2": "Blocked"}
        }});
        classes.as_object().cloned().unwrap()
    }

    #[test]
    fn a_record_of_the_subset_passes() {
        let record = json!({"class_uid": 1007, "category_uid": 1, "activity_id": 2,
            "type_uid": 100702, "severity_id": 1, "status_id": 1, "process": {}});
        assert_eq!(class_subset(&classes(), &record), Vec::<String>::new());
    }

    #[test]
    fn everything_outside_the_subset_is_named() {
        let record = json!({"class_uid": 1007, "category_uid": 2, "activity_id": 3,
            "type_uid": 100702, "severity_id": 1, "disposition_id": 16, "extra": 1});
        assert_eq!(
            class_subset(&classes(), &record),
            [
                r#"not attributes of class 1007: ["disposition_id", "extra"]"#,
                "category_uid Some(2) is not the class's Some(1)",
                "type_uid Some(100702) is not class_uid * 100 + activity_id",
                "activity_id 3 is not in the class's `activity` values",
                "disposition_id 16 is not in the class's `disposition` values",
            ]
        );
        let unknown = json!({"class_uid": 9999});
        assert_eq!(
            class_subset(&classes(), &unknown),
            ["class 9999 is not in the pinned class subset"]
        );
    }
}
