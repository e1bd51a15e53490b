//! The generated capture tables (`aep_types::capture`) against the schemas
//! they come from: a few rows pinned by hand, and every top-level member of
//! every payload schema checked both ways.

use std::fs;

use aep_tests::root;
use aep_types::capture::{self, FreeText, Sibling, FREE_TEXT, SIBLINGS};
use serde_json::Value;

#[test]
fn pinned_rows() {
    let row = |event_type, pointer| {
        SIBLINGS
            .iter()
            .find(|s| s.event_type == event_type && s.pointer == pointer)
            .copied()
    };
    assert_eq!(
        row("tool.requested", "/args"),
        Some(Sibling {
            event_type: "tool.requested",
            pointer: "/args",
            digest: Some("/args_digest"),
            redacted: Some("/args_redacted"),
        })
    );
    assert_eq!(
        row("tool.completed", "/result").map(|s| (s.digest, s.redacted)),
        Some((Some("/result_digest"), Some("/result_redacted")))
    );
    // Through a shared definition and an array.
    assert_eq!(
        row("resource.retrieval.returned", "/documents/*/content").map(|s| s.redacted),
        Some(Some("/documents/*/content_redacted"))
    );
    assert_eq!(
        row("resource.citation.recorded", "/citations/*/cited_text").map(|s| s.redacted),
        Some(Some("/citations/*/cited_text_redacted"))
    );
    // A digest without a redacted sibling.
    assert_eq!(
        row("resource.retrieval.requested", "/query").map(|s| (s.digest, s.redacted)),
        Some((Some("/query_digest"), None))
    );
    let free: Vec<&str> = capture::free_text("attention.answered")
        .map(|f| f.pointer)
        .collect();
    assert_eq!(free, ["/answer/text"]);
    assert!(FREE_TEXT.contains(&FreeText {
        event_type: "run.started",
        pointer: "/prompt"
    }));
    // Siblings are not free text of their own.
    assert!(!FREE_TEXT.iter().any(|f| f.pointer.ends_with("_redacted")));
}

#[test]
fn every_top_level_member_both_ways() {
    let dir = root().join("schemas/types");
    let mut files: Vec<_> = fs::read_dir(&dir)
        .expect("schemas/types")
        .map(|e| e.expect("an entry").path())
        .collect();
    files.sort();
    let mut checked = 0;
    for path in files {
        let text = fs::read_to_string(&path).expect("a schema");
        let schema: Value = serde_json::from_str(&text).expect("JSON");
        let name = path.file_name().unwrap().to_str().unwrap();
        let event_type = name.trim_end_matches(".schema.json");
        let Some(properties) = schema["properties"].as_object() else {
            continue;
        };
        for (member, spec) in properties {
            let pointer = format!("/{member}");
            let digest = properties.contains_key(&format!("{member}_digest"));
            let redacted = properties.contains_key(&format!("{member}_redacted"));
            let row = capture::siblings(event_type).find(|s| s.pointer == pointer);
            assert_eq!(row.is_some(), digest || redacted, "{event_type} {pointer}");
            if let Some(row) = row {
                assert_eq!(row.digest.is_some(), digest, "{event_type} {pointer}");
                assert_eq!(row.redacted.is_some(), redacted, "{event_type} {pointer}");
                checked += 1;
            }
            let is_sibling = ["_digest", "_redacted"].iter().any(|suffix| {
                member
                    .strip_suffix(suffix)
                    .is_some_and(|base| properties.contains_key(base))
            });
            let free = spec["x-aep-capture"] == "redacted" && !is_sibling;
            let listed = capture::free_text(event_type).any(|f| f.pointer == pointer);
            assert_eq!(listed, free, "{event_type} {pointer} as free text");
        }
    }
    assert!(
        checked >= 4,
        "only {checked} top-level sibling rows checked"
    );
}
