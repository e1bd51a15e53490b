//! The AEP-0006 form toolkit: typed values, the emitter's validation, the
//! capture gate, and the Claude Code and MCP mappings both ways.

use aep_tests::{read_fixture, Report};
use aep_types::form::{self, claude_code, mcp, FormRule, FormValue};
use aep_types::{Capture, Event, FieldSpec, Object, Payload};
use serde_json::{json, Value};

/// A form with all four field types: string, number, boolean, a closed
/// multi-select and a select with `other`.
fn fields() -> Vec<FieldSpec> {
    serde_json::from_value(json!([
        {"id": "name", "type": "string", "label": "Project name", "required": true},
        {"id": "port", "type": "number", "label": "Port", "min": 1, "max": 65535},
        {"id": "tls", "type": "boolean", "label": "Use TLS"},
        {"id": "dbs", "type": "select", "label": "Databases", "multi": true,
         "choices": [{"id": "pg", "label": "PostgreSQL"}, {"id": "sqlite", "label": "SQLite"}]},
        {"id": "region", "type": "select", "label": "Region", "required": true, "other": true,
         "choices": [{"id": "eu", "label": "Europe"}, {"id": "us", "label": "US"}]}
    ]))
    .expect("field specs")
}

fn values(value: Value) -> Object {
    serde_json::from_value(value).expect("an object")
}

fn rules(errors: form::FormErrors) -> Vec<(String, FormRule)> {
    errors.0.into_iter().map(|e| (e.field, e.rule)).collect()
}

#[test]
fn values_decode_and_encode_as_the_seed_specifies() {
    let fields = fields();
    let cases = [
        (0, json!("atlas"), FormValue::Text("atlas".into())),
        (1, json!(5432), FormValue::Number(5432.0)),
        (1, json!(0.5), FormValue::Number(0.5)),
        (2, json!(true), FormValue::Boolean(true)),
        (
            3,
            json!(["pg", "sqlite"]),
            FormValue::Choices(vec!["pg".into(), "sqlite".into()]),
        ),
        (4, json!("eu"), FormValue::Choice("eu".into())),
        (4, json!("Antarctica"), FormValue::Text("Antarctica".into())),
    ];
    for (field, json, expected) in cases {
        let value = FormValue::decode(&fields[field], &json).expect("decodes");
        assert_eq!(value, expected);
        assert_eq!(value.to_json(), json, "encodes back exactly");
        assert_eq!(serde_json::to_value(&value).expect("serialises"), json);
    }
}

#[test]
fn a_complete_answer_validates() {
    let answer = values(
        json!({"name": "atlas", "port": 8080, "tls": false, "dbs": ["pg"], "region": "Antarctica"}),
    );
    assert_eq!(form::validate_values(&fields(), &answer), Ok(()));
    let minimal = values(json!({"name": "", "region": "us"}));
    assert_eq!(form::validate_values(&fields(), &minimal), Ok(()));
}

#[test]
fn each_rule_names_its_field() {
    let cases = [
        (json!({"region": "eu"}), vec![("name", FormRule::Required)]),
        (
            json!({}),
            vec![("name", FormRule::Required), ("region", FormRule::Required)],
        ),
        (
            json!({"name": "a", "region": "eu", "dbs": ["pg", "mysql"]}),
            vec![("dbs", FormRule::NotAChoice("mysql".into()))],
        ),
        (
            json!({"name": "a", "region": "eu", "dbs": "pg"}),
            vec![("dbs", FormRule::WrongType("an array of choice ids"))],
        ),
        (
            json!({"name": "a", "region": ["eu"]}),
            vec![("region", FormRule::NotMulti)],
        ),
        (
            json!({"name": "a", "region": 3}),
            vec![("region", FormRule::WrongType("a choice id"))],
        ),
        (
            json!({"name": 7, "region": "eu"}),
            vec![("name", FormRule::WrongType("a string"))],
        ),
        (
            json!({"name": "a", "region": "eu", "port": "80"}),
            vec![("port", FormRule::WrongType("a number"))],
        ),
        (
            json!({"name": "a", "region": "eu", "tls": "yes"}),
            vec![("tls", FormRule::WrongType("a boolean"))],
        ),
        (
            json!({"name": "a", "region": "eu", "port": 0}),
            vec![(
                "port",
                FormRule::OutOfRange {
                    value: 0.0,
                    min: Some(1.0),
                    max: Some(65535.0),
                },
            )],
        ),
        (
            json!({"name": "a", "region": "eu", "port": 70000}),
            vec![(
                "port",
                FormRule::OutOfRange {
                    value: 70000.0,
                    min: Some(1.0),
                    max: Some(65535.0),
                },
            )],
        ),
        (
            json!({"name": "a", "region": "eu", "color": "red"}),
            vec![("color", FormRule::UnknownField)],
        ),
    ];
    for (answer, expected) in cases {
        let errors = form::validate_values(&fields(), &values(answer.clone()))
            .expect_err(&answer.to_string());
        let expected: Vec<(String, FormRule)> = expected
            .into_iter()
            .map(|(f, r)| (f.to_owned(), r))
            .collect();
        assert_eq!(rules(errors), expected, "{answer}");
    }
}

#[test]
fn a_select_without_other_refuses_free_text_with_a_useful_message() {
    let mut fields = fields();
    fields[4].other = None;
    let errors = form::validate_values(&fields, &values(json!({"name": "a", "region": "Mars"})))
        .unwrap_err();
    assert_eq!(
        errors.to_string(),
        "field `region`: `Mars` is not one of its choices, and the field takes no free text"
    );
    let range = form::validate_values(
        &fields,
        &values(json!({"name": "a", "region": "eu", "port": 0})),
    )
    .unwrap_err();
    assert_eq!(range.to_string(), "field `port`: 0 is outside [1, 65535]");
}

#[test]
fn the_gate_depends_on_the_field_type() {
    let answer = values(json!({
        "name": "atlas", "port": 8080, "tls": true, "dbs": ["pg", "sqlite"], "region": "eu", "ghost": 1
    }));
    let free = values(json!({"region": "Antarctica", "dbs": ["pg"], "port": "oops"}));
    let fields = fields();

    assert_eq!(
        Value::Object(form::gate_values(&fields, &answer, Capture::Metadata)),
        json!({"port": 8080, "tls": true, "dbs": ["pg", "sqlite"], "region": "eu"}),
        "string fields go at metadata; unknown keys go everywhere"
    );
    assert_eq!(
        Value::Object(form::gate_values(&fields, &free, Capture::Metadata)),
        json!({"dbs": ["pg"]}),
        "other free text and ill-typed values go at metadata"
    );
    for ceiling in [Capture::Redacted, Capture::Full] {
        let mut expected = answer.clone();
        expected.remove("ghost");
        assert_eq!(
            form::gate_values(&fields, &answer, ceiling),
            expected,
            "{ceiling}"
        );
        assert_eq!(
            form::gate_values(&fields, &free, ceiling),
            free,
            "{ceiling}"
        );
    }
    // The gate knows only the metadata/redacted asymmetry: at `none` it
    // passes what `metadata` passes, and the envelope drops `data` whole.
    assert_eq!(
        form::gate_values(&fields, &answer, Capture::None),
        form::gate_values(&fields, &answer, Capture::Metadata),
    );
    assert_eq!(
        form::gate_values(&fields, &free, Capture::None),
        form::gate_values(&fields, &free, Capture::Metadata),
    );
}

#[test]
fn a_none_ceiling_drops_form_values_with_data() {
    let request = serde_json::json!({
        "aep": "0.1", "id": "a1", "type": "attention.answered", "time": "2026-12-03T09:00:00Z",
        "source": "urn:aep:agent:demo", "agent": "demo", "session": "s1", "seq": 1,
        "capture": "full", "data": {"answer": {"values": {"port": 8080, "name": "atlas"}}}
    });
    let event = aep_types::Event::from_json(&request.to_string()).unwrap();
    let none = event.down_level(Capture::None);
    assert_eq!(none.data, None);
    assert_eq!(none.capture, Some(Capture::None));
}

#[test]
fn a_multi_select_with_other_keeps_only_its_choice_ids_at_metadata() {
    let mut fields = fields();
    fields[3].other = Some(true);
    let answer = values(json!({"dbs": ["pg", "my own db", "sqlite"]}));
    assert_eq!(form::validate_values(&fields[3..4], &answer), Ok(()));
    assert_eq!(
        Value::Object(form::gate_values(&fields, &answer, Capture::Metadata)),
        json!({"dbs": ["pg", "sqlite"]})
    );
    let only_free = values(json!({"dbs": ["my own db"]}));
    assert_eq!(
        form::gate_values(&fields, &only_free, Capture::Metadata),
        Object::new()
    );
}

fn ask() -> claude_code::AskUserQuestion {
    serde_json::from_value(json!({"questions": [
        {"question": "Which database?", "header": "Storage", "multiSelect": false,
         "options": [{"label": "PostgreSQL", "description": "server"}, {"label": "SQLite", "description": "file"}]},
        {"question": "Which checks should run?", "header": "CI", "multiSelect": true,
         "options": [{"label": "lint"}, {"label": "test"}, {"label": "bench"}]}
    ]}))
    .expect("tool input")
}

/// The payload as an event's data, validated as the protocol requires.
fn as_event(payload: aep_types::AttentionRequested, capture: Capture) -> Event {
    let mut event = Event::new(
        "e1",
        "attention.requested",
        "2026-11-30T12:00:00Z",
        "urn:aep:agent:cc",
        "cc",
    );
    event.session = Some("s1".into());
    event.seq = Some(4);
    event.capture = Some(capture);
    event
        .set_payload(&Payload::AttentionRequested(payload))
        .expect("encodes");
    event.validate().expect("the mapped payload validates");
    event
}

#[test]
fn ask_user_question_becomes_one_form_request() {
    let request = claude_code::request(&ask(), "claude-code", Capture::Redacted);
    let event = as_event(request, Capture::Redacted);
    assert_eq!(
        serde_json::to_value(&event.data).expect("JSON"),
        json!({
            "kind": "form",
            "prompt": "claude-code asks 2 questions",
            "fields": [
                {"id": "1", "type": "select", "label": "Storage: Which database?", "required": true, "other": true,
                 "choices": [{"id": "1", "label": "PostgreSQL"}, {"id": "2", "label": "SQLite"}]},
                {"id": "2", "type": "select", "label": "CI: Which checks should run?", "required": true, "multi": true,
                 "other": true, "choices": [{"id": "1", "label": "lint"}, {"id": "2", "label": "test"}, {"id": "3", "label": "bench"}]}
            ],
            "respond_via": ["control"]
        })
    );
}

#[test]
fn ask_user_question_at_metadata_labels_are_ids() {
    let single = claude_code::AskUserQuestion {
        questions: ask().questions[..1].to_vec(),
    };
    let request = claude_code::request(&single, "claude-code", Capture::Metadata);
    as_event(request.clone(), Capture::Metadata);
    assert_eq!(request.prompt, "claude-code asks 1 question");
    let field = &request.fields.as_ref().expect("fields")[0];
    assert_eq!((field.label.as_str(), field.multi), ("1", None));
    let labels: Vec<&str> = field
        .choices
        .iter()
        .flatten()
        .map(|c| c.label.as_str())
        .collect();
    assert_eq!(labels, ["1", "2"]);
}

#[test]
fn ask_user_question_answers_map_back() {
    let input = ask();
    let request = claude_code::request(&input, "claude-code", Capture::Full);
    let answer = values(json!({"1": "2", "2": ["1", "3"]}));
    assert_eq!(
        form::validate_values(request.fields.as_deref().unwrap_or_default(), &answer),
        Ok(())
    );
    let answers = claude_code::answers(&input, &answer);
    assert_eq!(answers["Which database?"], "SQLite");
    assert_eq!(answers["Which checks should run?"], "lint, bench");

    let free = values(json!({"1": "DuckDB, embedded", "2": ["2", "fuzz"]}));
    assert_eq!(
        form::validate_values(request.fields.as_deref().unwrap_or_default(), &free),
        Ok(())
    );
    let answers = claude_code::answers(&input, &free);
    assert_eq!(answers["Which database?"], "DuckDB, embedded");
    assert_eq!(answers["Which checks should run?"], "test, fuzz");
}

/// `elicitation/create` params as text, properties deliberately out of
/// name order (the mapping reads the order from the text).
fn elicitation() -> &'static str {
    r#"{
        "message": "Configure the deployment",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "service": {"type": "string", "title": "Service name", "minLength": 1},
                "tier": {"type": "string", "enum": ["s", "m", "l"], "enumNames": ["Small", "Medium", "Large"]},
                "replicas": {"type": "integer", "title": "Replicas", "minimum": 1, "maximum": 10},
                "ratio": {"type": "number", "minimum": 0.0},
                "canary": {"type": "boolean", "default": false},
                "zone": {"type": "string", "enum": ["a", "b"]}
            },
            "required": ["service", "replicas"]
        }
    }"#
}

#[test]
fn an_elicitation_becomes_a_form_request() {
    let request = mcp::request(elicitation(), "claude-code", Capture::Redacted).expect("maps");
    let event = as_event(request, Capture::Redacted);
    assert_eq!(
        serde_json::to_value(&event.data).expect("JSON"),
        json!({
            "kind": "form",
            "prompt": "Configure the deployment",
            "fields": [
                {"id": "service", "type": "string", "label": "Service name", "required": true},
                {"id": "tier", "type": "select", "label": "tier", "required": false,
                 "choices": [{"id": "s", "label": "Small"}, {"id": "m", "label": "Medium"}, {"id": "l", "label": "Large"}]},
                {"id": "replicas", "type": "number", "label": "Replicas", "required": true, "min": 1, "max": 10},
                {"id": "ratio", "type": "number", "label": "ratio", "required": false, "min": 0},
                {"id": "canary", "type": "boolean", "label": "canary", "required": false},
                {"id": "zone", "type": "select", "label": "zone", "required": false,
                 "choices": [{"id": "a", "label": "a"}, {"id": "b", "label": "b"}]}
            ],
            "respond_via": ["control"]
        })
    );
}

#[test]
fn an_elicitation_at_metadata_keeps_no_model_text() {
    let request = mcp::request(elicitation(), "claude-code", Capture::Metadata).expect("maps");
    as_event(request.clone(), Capture::Metadata);
    assert_eq!(request.prompt, "claude-code requests input (6 fields)");
    let fields = request.fields.expect("fields");
    let labels: Vec<&str> = fields.iter().map(|f| f.label.as_str()).collect();
    assert_eq!(
        labels,
        ["service", "tier", "replicas", "ratio", "canary", "zone"]
    );
    let tiers: Vec<&str> = fields[1]
        .choices
        .iter()
        .flatten()
        .map(|c| c.label.as_str())
        .collect();
    assert_eq!(tiers, ["s", "m", "l"]);
    assert!(
        fields.iter().all(|f| f.other.is_none()),
        "MCP enums are closed"
    );
}

#[test]
fn elicitation_answers_come_back_verbatim() {
    let elicitation = mcp::map(elicitation(), "claude-code", Capture::Full).expect("maps");
    let request = elicitation.request.clone();
    let answer = values(json!({"service": "api", "replicas": 3, "tier": "m", "canary": true}));
    assert_eq!(
        form::validate_values(request.fields.as_deref().unwrap_or_default(), &answer),
        Ok(())
    );
    assert_eq!(
        elicitation.result(&answer),
        Ok(
            json!({"action": "accept", "content": {"service": "api", "replicas": 3, "tier": "m", "canary": true}})
        )
    );
    let closed = values(json!({"service": "api", "replicas": 3, "zone": "c"}));
    let errors =
        form::validate_values(request.fields.as_deref().unwrap_or_default(), &closed).unwrap_err();
    assert_eq!(
        rules(errors),
        [("zone".to_owned(), FormRule::NotAChoice("c".into()))]
    );
}

#[test]
fn an_integer_property_keeps_integer_ness() {
    let elicitation = mcp::map(elicitation(), "claude-code", Capture::Full).expect("maps");
    assert_eq!(elicitation.integers, ["replicas"]);
    for whole in [json!(3), json!(3.0)] {
        let answer = values(json!({"service": "api", "replicas": whole}));
        assert_eq!(elicitation.validate_values(&answer), Ok(()), "{answer:?}");
    }
    let answer = values(json!({"service": "api", "replicas": 3.5, "ratio": 0.5}));
    let errors = elicitation.result(&answer).expect_err("3.5 is no integer");
    assert_eq!(
        rules(errors),
        [("replicas".to_owned(), FormRule::WrongType("an integer"))]
    );
}

#[test]
fn schemas_outside_the_flat_subset_name_the_property() {
    let cases = [
        (
            "address",
            json!({"type": "object", "properties": {}}),
            "nested objects",
        ),
        (
            "tags",
            json!({"type": "array", "items": {"type": "string"}}),
            "arrays",
        ),
        ("blob", json!({"type": "null"}), "type `null`"),
        (
            "code",
            json!({"type": "string", "pattern": "^[0-9]+$"}),
            "`pattern` is outside",
        ),
        ("size", json!({"enum": ["s"]}), "needs a `type`"),
        (
            "mood",
            json!({"type": "string", "enum": ["a", "b"], "enumNames": ["A"]}),
            "`enumNames` must be an array as long as `enum`",
        ),
    ];
    for (property, schema, message) in cases {
        let params = json!({"message": "m", "requestedSchema": {"type": "object", "properties": {property: schema}}});
        let error = mcp::request(&params.to_string(), "a", Capture::Full).expect_err(property);
        assert_eq!(error.property.as_deref(), Some(property));
        assert!(error.to_string().contains(message), "{error}");
    }
    let flat = mcp::request(
        r#"{"message": "m", "requestedSchema": {"type": "array"}}"#,
        "a",
        Capture::Full,
    );
    assert!(flat
        .expect_err("not an object")
        .to_string()
        .contains("\"type\": \"object\""));
}

#[test]
fn gating_cases() {
    let cases: Vec<Value> =
        serde_json::from_str(&read_fixture("form-gating.json")).expect("fixture is JSON");
    let mut report = Report::default();
    for case in &cases {
        let outcome = (|| -> Result<(), String> {
            let fields: Vec<FieldSpec> =
                serde_json::from_value(case["fields"].clone()).map_err(|e| e.to_string())?;
            let answer = values(case["values"].clone());
            let ceiling: Capture = case["ceiling"]
                .as_str()
                .unwrap_or_default()
                .parse()
                .map_err(|e| format!("{e}"))?;
            let gated = Value::Object(form::gate_values(&fields, &answer, ceiling));
            if gated == case["expected"] {
                Ok(())
            } else {
                Err(format!("got {gated}, expected {}", case["expected"]))
            }
        })();
        report.case(case["name"].as_str().unwrap_or("?"), outcome);
    }
    report.finish("form-gating.json");
}

#[test]
fn a_non_finite_answer_does_not_serialize() {
    for n in [f64::NAN, f64::INFINITY] {
        let error = serde_json::to_string(&FormValue::Number(n)).expect_err("no JSON form");
        assert!(error.to_string().contains("not a JSON number"), "{error}");
    }
    assert_eq!(
        serde_json::to_string(&FormValue::Number(2.5)).expect("finite"),
        "2.5"
    );
}

#[test]
fn errors_come_in_the_forms_order_then_unknown_keys() {
    // (Unknown keys follow the map's own order; one is enough here.)
    let answer = json!({"zone": 1, "dbs": "pg", "port": 0});
    let errors = form::validate_values(&fields(), &values(answer)).expect_err("refused");
    let fields: Vec<String> = errors.0.into_iter().map(|e| e.field).collect();
    assert_eq!(fields, ["name", "port", "dbs", "region", "zone"]);
}

#[test]
fn a_repeated_field_id_is_checked_as_its_first_field() {
    let fields: Vec<FieldSpec> = serde_json::from_value(json!([
        {"id": "port", "type": "number", "label": "Port", "required": true},
        {"id": "port", "type": "boolean", "label": "Port again", "required": true}
    ]))
    .expect("field specs");
    assert_eq!(
        form::validate_values(&fields, &values(json!({"port": 5}))),
        Ok(())
    );
    let errors = form::validate_values(&fields, &values(json!({}))).expect_err("required");
    assert_eq!(
        rules(errors),
        [("port".to_owned(), FormRule::Required)],
        "one error for the id, not one per field"
    );
}
