//! Everything outside the subset is refused: each case breaks one file of
//! a scratch copy of the registry and pins the exact diagnostic (file,
//! JSON Pointer, construct). No case may panic or write output.

use aep_tests::{Report, ScratchRegistry};
use serde_json::{json, Value};

const TOOL: &str = "types/tool.requested.schema.json";
const COMMON: &str = "common.schema.json";

/// One refused registry: how to break it and the error it must give.
struct Case {
    name: &'static str,
    breaks: fn(&ScratchRegistry),
    file: &'static str,
    pointer: &'static str,
    message: &'static str,
}

/// Sets (or adds) one property of a schema.
fn property(name: &'static str, schema: Value) -> impl FnOnce(&mut Value) {
    move |doc| doc["properties"][name] = schema
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "oneOf",
            breaks: |r| {
                r.edit(TOOL, property("args_digest", json!({"oneOf": [{"type": "string"}]})));
            },
            file: TOOL,
            pointer: "/properties/args_digest/oneOf",
            message: "unsupported keyword `oneOf`",
        },
        Case {
            name: "anyOf",
            breaks: |r| {
                r.edit(TOOL, property("args_digest", json!({"type": "string", "anyOf": []})));
            },
            file: TOOL,
            pointer: "/properties/args_digest/anyOf",
            message: "unsupported keyword `anyOf`",
        },
        Case {
            name: "not",
            breaks: |r| {
                r.edit(TOOL, property("args_digest", json!({"type": "string", "not": {"const": "x"}})));
            },
            file: TOOL,
            pointer: "/properties/args_digest/not",
            message: "unsupported keyword `not`",
        },
        Case {
            name: "patternProperties",
            breaks: |r| {
                r.edit(TOOL, property("args", json!({"type": "object", "patternProperties": {}})));
            },
            file: TOOL,
            pointer: "/properties/args/patternProperties",
            message: "unsupported keyword `patternProperties`",
        },
        Case {
            name: "unknown-keyword",
            breaks: |r| {
                r.edit(TOOL, property("args_digest", json!({"type": "string", "maxLenght": 3})));
            },
            file: TOOL,
            pointer: "/properties/args_digest/maxLenght",
            message: "unsupported keyword `maxLenght`",
        },
        Case {
            name: "tuple-items",
            breaks: |r| {
                r.edit(TOOL, property("list", json!({"type": "array", "items": [{"type": "string"}]})));
            },
            file: TOOL,
            pointer: "/properties/list/items",
            message: "tuple `items` is outside the subset",
        },
        Case {
            name: "array-without-items",
            breaks: |r| {
                r.edit(TOOL, property("list", json!({"type": "array"})));
            },
            file: TOOL,
            pointer: "/properties/list",
            message: "`array` without `items`",
        },
        Case {
            name: "null-type",
            breaks: |r| {
                r.edit(TOOL, property("args_digest", json!({"type": "null"})));
            },
            file: TOOL,
            pointer: "/properties/args_digest/type",
            message: "type `null` is outside the subset",
        },
        Case {
            name: "null-in-type-list",
            breaks: |r| {
                r.edit(TOOL, property("args_digest", json!({"type": ["string", "null"]})));
            },
            file: TOOL,
            pointer: "/properties/args_digest/type/1",
            message: "type `null` is outside the subset",
        },
        Case {
            name: "array-in-type-list",
            breaks: |r| {
                r.edit(TOOL, property("args_digest", json!({"type": ["string", "array"]})));
            },
            file: TOOL,
            pointer: "/properties/args_digest/type/1",
            message: "type list member `array` is outside the subset",
        },
        Case {
            name: "number-enum",
            breaks: |r| {
                r.edit(TOOL, property("level", json!({"enum": [1, 2]})));
            },
            file: TOOL,
            pointer: "/properties/level/enum/0",
            message: "only string enum values are in the subset",
        },
        Case {
            name: "schema-without-type",
            breaks: |r| {
                r.edit(TOOL, property("args_digest", json!({"description": "no type"})));
            },
            file: TOOL,
            pointer: "/properties/args_digest",
            message: "schema without `type` (the subset needs `type`, `enum`, `const` or `$ref`)",
        },
        Case {
            name: "boolean-schema",
            breaks: |r| {
                r.edit(TOOL, property("args_digest", json!(true)));
            },
            file: TOOL,
            pointer: "/properties/args_digest",
            message: "boolean schema `true` is outside the subset here",
        },
        Case {
            name: "unsupported-format",
            breaks: |r| {
                r.edit(TOOL, property("args_digest", json!({"type": "string", "format": "email"})));
            },
            file: TOOL,
            pointer: "/properties/args_digest/format",
            message: "unsupported `format` \"email\"",
        },
        Case {
            name: "invalid-pattern",
            breaks: |r| {
                r.edit(TOOL, property("args_digest", json!({"type": "string", "pattern": "(["})));
            },
            file: TOOL,
            pointer: "/properties/args_digest/pattern",
            message: "`pattern` is not a valid regular expression: unclosed character class",
        },
        Case {
            name: "bad-capture-level",
            breaks: |r| {
                r.edit(TOOL, property("args_digest", json!({"type": "string", "x-aep-capture": "secret"})));
            },
            file: TOOL,
            pointer: "/properties/args_digest/x-aep-capture",
            message: "`x-aep-capture` \"secret\" is not a capture level (none, metadata, redacted, full)",
        },
        Case {
            name: "required-names-no-property",
            breaks: |r| {
                r.edit(TOOL, |doc| doc["required"] = json!(["tool", "tol"]));
            },
            file: TOOL,
            pointer: "/required/1",
            message: "`required` names `tol`, which is not a property",
        },
        Case {
            name: "remote-ref",
            breaks: |r| {
                r.edit(TOOL, property("tool", json!({"$ref": "https://example.com/tool.json#/$defs/t"})));
            },
            file: TOOL,
            pointer: "/properties/tool/$ref",
            message: "remote `$ref` \"https://example.com/tool.json#/$defs/t\" is outside the subset",
        },
        Case {
            name: "ref-to-missing-file",
            breaks: |r| {
                r.edit(TOOL, property("tool", json!({"$ref": "../nowhere.schema.json#/$defs/t"})));
            },
            file: TOOL,
            pointer: "/properties/tool/$ref",
            message: "`$ref` \"../nowhere.schema.json#/$defs/t\" names no schema file of the registry",
        },
        Case {
            name: "ref-to-missing-definition",
            breaks: |r| {
                r.edit(TOOL, property("tool", json!({"$ref": "../common.schema.json#/$defs/tool"})));
            },
            file: TOOL,
            pointer: "/properties/tool/$ref",
            message: "`$ref` \"../common.schema.json#/$defs/tool\" points at no definition",
        },
        Case {
            name: "ref-not-to-defs",
            breaks: |r| {
                r.edit(TOOL, property("tool", json!({"$ref": "#/properties/args"})));
            },
            file: TOOL,
            pointer: "/properties/tool/$ref",
            message: "`$ref` \"#/properties/args\" must point at `#/$defs/<name>`",
        },
        Case {
            name: "recursive-ref",
            breaks: |r| {
                r.edit(COMMON, |doc| {
                    doc["$defs"]["node"] = json!({
                        "type": "object",
                        "properties": {"child": {"$ref": "#/$defs/node"}}
                    });
                });
            },
            file: COMMON,
            pointer: "/$defs/node/properties/child/$ref",
            message: "recursive `$ref` \"#/$defs/node\": a definition that contains itself is outside the subset",
        },
        Case {
            name: "property-name-collision",
            breaks: |r| {
                r.edit(TOOL, |doc| {
                    doc["properties"]["call-id"] = json!({"type": "string"});
                    doc["properties"]["call_id"] = json!({"type": "string"});
                });
            },
            file: TOOL,
            pointer: "/properties/call_id",
            message: "properties `call-id` and `call_id` both become the Rust field `call_id`",
        },
        Case {
            name: "enum-value-collision",
            breaks: |r| {
                r.edit(TOOL, property("state", json!({"enum": ["in-progress", "in_progress"]})));
            },
            file: TOOL,
            pointer: "/properties/state/enum",
            message: "enum values `in-progress` and `in_progress` both become the Rust variant `InProgress`",
        },
        Case {
            name: "type-name-collision",
            breaks: |r| {
                r.edit(COMMON, |doc| doc["$defs"]["tool_requested"] = json!({"type": "object", "properties": {}}));
            },
            file: TOOL,
            pointer: "",
            message: "the Rust type name `ToolRequested` is already taken by common.schema.json#/$defs/tool_requested",
        },
        Case {
            name: "catch-all-collision",
            breaks: |r| {
                r.edit(TOOL, property("extra", json!({"type": "string"})));
            },
            file: TOOL,
            pointer: "/properties/extra",
            message: "property `extra` becomes the Rust field `extra`, which keeps unknown members",
        },
        Case {
            name: "then-without-if",
            breaks: |r| {
                r.edit(TOOL, |doc| doc["then"] = json!({"required": ["args"]}));
            },
            file: TOOL,
            pointer: "/then",
            message: "`then` without `if`",
        },
        Case {
            name: "bad-default",
            breaks: |r| {
                r.edit("aep-event.schema.json", |doc| doc["properties"]["epoch"]["default"] = json!(-1));
            },
            file: "aep-event.schema.json",
            pointer: "/properties/epoch/default",
            message: "`default` -1 is not a value of the member's type",
        },
        Case {
            name: "envelope-severity-differs-from-registry",
            breaks: |r| {
                r.edit("aep-event.schema.json", |doc| {
                    doc["properties"]["severity"]["enum"] = json!(["debug", "info", "warning", "error", "critical"])
                });
            },
            file: "aep-event.schema.json",
            pointer: "/properties/severity",
            message: "`severity` must list exactly the values of `registry/severity.json`",
        },
        Case {
            name: "object-extension-values",
            breaks: |r| {
                r.edit("aep-event.schema.json", |doc| {
                    doc["additionalProperties"]["type"] = json!(["string", "object"])
                });
            },
            file: "aep-event.schema.json",
            pointer: "/additionalProperties/type",
            message: "extension attributes must be scalars, not `object`",
        },
        Case {
            name: "row-without-file",
            breaks: |r| {
                r.remove(TOOL);
            },
            file: "registry/types.json",
            pointer: "/types/6/schema",
            message: "type `tool.requested` names schema `types/tool.requested.schema.json`, which does not exist",
        },
        Case {
            name: "file-without-row",
            breaks: |r| {
                r.write("types/tool.retried.schema.json", br#"{"type": "object", "properties": {}}"#);
            },
            file: "types/tool.retried.schema.json",
            pointer: "",
            message: "payload schema has no row in `registry/types.json`",
        },
        Case {
            name: "row-with-unknown-category",
            breaks: |r| {
                r.edit("registry/types.json", |doc| doc["types"][0]["type"] = json!("sessions.started"));
            },
            file: "registry/types.json",
            pointer: "/types/0/type",
            message: "type `sessions.started` is not `{category}.{rest}` with a registered category",
        },
        Case {
            name: "row-with-unknown-status",
            breaks: |r| {
                r.edit("registry/types.json", |doc| doc["types"][0]["status"] = json!("required"));
            },
            file: "registry/types.json",
            pointer: "/types/0/status",
            message: "`required` is not one of mandatory, optional, reserved",
        },
        Case {
            name: "truncated-json",
            breaks: |r| {
                r.write(TOOL, br#"{"type": "object", "properties": {"#);
            },
            file: TOOL,
            pointer: "",
            message: "malformed JSON: EOF while parsing an object at line 1 column 34",
        },
        Case {
            name: "invalid-utf8",
            breaks: |r| {
                r.write(TOOL, b"{\"title\": \"caf\xe9\"}");
            },
            file: TOOL,
            pointer: "",
            message: "invalid UTF-8 at byte 14",
        },
        Case {
            name: "deep-nesting",
            breaks: |r| {
                let depth = 10_000;
                let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
                r.write(TOOL, text.as_bytes());
            },
            file: TOOL,
            pointer: "",
            message: "malformed JSON: recursion limit exceeded at line 1 column 128",
        },
        Case {
            name: "ref-chain-too-deep",
            breaks: |r| {
                r.edit(COMMON, |doc| {
                    for i in 0..150 {
                        let next = format!("#/$defs/d{}", i + 1);
                        doc["$defs"][format!("d{i}")] =
                            json!({"type": "object", "properties": {"next": {"$ref": next}}});
                    }
                    doc["$defs"]["d150"] = json!({"type": "string"});
                });
            },
            file: COMMON,
            pointer: "/$defs/d50",
            message: "schemas nested more than 100 deep (counting through `$ref`s)",
        },
        Case {
            name: "ref-into-the-envelope",
            breaks: |r| {
                r.edit(TOOL, property("tool", json!({"$ref": "../aep-event.schema.json#/$defs/x"})));
            },
            file: TOOL,
            pointer: "/properties/tool/$ref",
            message: "`$ref` \"../aep-event.schema.json#/$defs/x\" points at no definition",
        },
        Case {
            name: "prelude-type-name",
            breaks: |r| {
                r.edit(COMMON, |doc| doc["$defs"]["string"] = json!({"type": "object", "properties": {}}));
            },
            file: COMMON,
            pointer: "/$defs/string",
            message: "the Rust type name `String` is already taken by a type of the generated code",
        },
        Case {
            name: "crate-module-name",
            breaks: |r| {
                r.write("serde.schema.json", br#"{"$defs": {}}"#);
            },
            file: "serde.schema.json",
            pointer: "",
            message: "the file name becomes the module `serde`, which the generated code uses",
        },
        Case {
            name: "required-data",
            breaks: |r| {
                r.edit("aep-event.schema.json", |doc| doc["required"] = json!(["aep", "id", "type", "data"]));
            },
            file: "aep-event.schema.json",
            pointer: "/required",
            message: "`data` cannot be required",
        },
        Case {
            name: "optional-type",
            breaks: |r| {
                r.edit("aep-event.schema.json", |doc| doc["required"] = json!(["aep", "id"]));
            },
            file: "aep-event.schema.json",
            pointer: "/properties/type",
            message: "`type` must be a required string",
        },
        Case {
            name: "enum-type",
            breaks: |r| {
                r.edit("aep-event.schema.json", |doc| doc["properties"]["type"] = json!({"enum": ["tool.requested"]}));
            },
            file: "aep-event.schema.json",
            pointer: "/properties/type",
            message: "`type` must be a required string",
        },
        Case {
            name: "types-nested-too-deep",
            breaks: |r| {
                r.edit(COMMON, |doc| {
                    // Leaf first, in name order and in insertion order alike
                    // (whether or not serde_json keeps member order): each
                    // definition is lowered shallowly, but the types still
                    // nest, d{k} k + 1 deep.
                    doc["$defs"]["d000"] = json!({"type": "object", "properties": {}});
                    for k in 1..=150 {
                        let next = format!("#/$defs/d{:03}", k - 1);
                        doc["$defs"][format!("d{k:03}")] = json!({"type": "object", "properties": {"next": {"$ref": next}}});
                    }
                });
            },
            file: COMMON,
            pointer: "/$defs/d064",
            message: "types nested more than 64 deep",
        },
        Case {
            name: "name-too-long",
            breaks: |r| {
                r.edit(TOOL, property("mode", json!({"enum": ["a".repeat(1500)]})));
            },
            file: TOOL,
            pointer: "/properties/mode/enum",
            message: "a name becomes a Rust name of 1500 characters (at most 1024)",
        },
        Case {
            name: "required-member-above-default-capture",
            breaks: |r| {
                r.edit(TOOL, |doc| doc["properties"]["args"]["x-aep-capture"] = json!("full"));
                r.edit(TOOL, |doc| doc["required"] = json!(["tool", "args"]));
            },
            file: TOOL,
            pointer: "/properties/args/x-aep-capture",
            message: "a required member cannot have a capture level above `metadata`",
        },
        Case {
            name: "capture-on-a-definition",
            breaks: |r| {
                r.edit(COMMON, |doc| doc["$defs"]["tool_ref"]["x-aep-capture"] = json!("full"));
            },
            file: COMMON,
            pointer: "/$defs/tool_ref/x-aep-capture",
            message: "`x-aep-capture` belongs where a definition is used, not on the definition",
        },
        Case {
            name: "generic-parameter-name",
            breaks: |r| {
                r.edit(COMMON, |doc| doc["$defs"]["e"] = json!({"type": ["string", "integer"]}));
            },
            file: COMMON,
            pointer: "/$defs/e",
            message: "the Rust type name `E` is already taken by a type of the generated code",
        },
        Case {
            name: "unicode-class-in-pattern",
            breaks: |r| {
                r.edit(TOOL, property("args_digest", json!({"type": "string", "pattern": "^\\d+$"})));
            },
            file: TOOL,
            pointer: "/properties/args_digest/pattern",
            message: "`\\d` means something else in JSON Schema (ECMA-262) than in Rust: write the class out, e.g. `[0-9]`",
        },
        Case {
            name: "schema-not-an-object",
            breaks: |r| {
                r.write(TOOL, b"[]");
            },
            file: TOOL,
            pointer: "",
            message: "expected a schema object",
        },
    ]
}

/// Runs one case through the library and the xtask writer: the exact
/// one-line diagnostic, no panic, nothing written.
fn refuse(case: &Case) -> Result<(), String> {
    let registry = ScratchRegistry::new();
    (case.breaks)(&registry);
    let expected = format!("{}#{}: {}", case.file, case.pointer, case.message);
    let out = tempfile::tempdir().map_err(|e| e.to_string())?;
    let target = out.path().join("generated");
    let outcome = std::panic::catch_unwind(|| {
        (
            aep_codegen::generate(registry.path()),
            xtask::codegen::write(registry.path(), &target),
        )
    });
    let (generated, written) = outcome.map_err(|_| "panicked".to_owned())?;
    match generated {
        Ok(_) => return Err("accepted".to_owned()),
        Err(e) if e.to_string() != expected => {
            return Err(format!("got `{e}`\n  expected `{expected}`"))
        }
        Err(_) => {}
    }
    match written {
        Ok(_) => Err("the writer accepted it".to_owned()),
        Err(_) if target.exists() => Err("the writer created the output directory".to_owned()),
        Err(e) if e.to_string() != expected => Err(format!("the writer said `{e}`")),
        Err(_) => Ok(()),
    }
}

#[test]
fn every_refused_construct_has_its_diagnostic() {
    let mut report = Report::default();
    for case in cases() {
        report.case(case.name, refuse(&case));
    }
    let count = report.finish("fail-loudly corpus");
    assert!(count >= 51, "{count} refused constructs");
}

#[test]
fn a_refused_registry_writes_nothing() {
    let registry = ScratchRegistry::new();
    registry.edit(TOOL, property("args_digest", json!({"oneOf": []})));
    let out = tempfile::tempdir().expect("temporary directory");
    std::fs::write(
        out.path().join("mod.rs"),
        "// @generated by aep-codegen: old\n",
    )
    .expect("write");

    let failure =
        xtask::codegen::write(registry.path(), out.path()).expect_err("the registry is refused");
    assert!(
        failure.to_string().contains("unsupported keyword `oneOf`"),
        "{failure}"
    );
    let files: Vec<_> = std::fs::read_dir(out.path())
        .expect("read")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(files, ["mod.rs"], "nothing added");
    let kept = std::fs::read_to_string(out.path().join("mod.rs")).expect("read");
    assert_eq!(
        kept, "// @generated by aep-codegen: old\n",
        "nothing replaced"
    );
}
