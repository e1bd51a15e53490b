//! The benchmark on a tiny corpus, so it cannot rot: every row is
//! measured and the generated corpus is valid AEP. No timing is asserted.

use aep_tests::root;
use aep_types::reader::EventReader;

#[test]
fn the_benchmark_runs_on_a_tiny_corpus() {
    let corpus = aep_bench::corpus::generate(50_000, 7);
    let report = aep_bench::run(&aep_bench::Options {
        corpus,
        passes: 1,
        schemas: root().join("schemas"),
        codegen_runs: 1,
        codegen_check_ms: None,
    });
    let names: Vec<&str> = report.rows.iter().map(|r| r.name).collect();
    assert_eq!(
        names,
        [
            "floor",
            "value",
            "envelope",
            "borrowed",
            "typed",
            "typed_single",
            "validate",
            "down_level",
            "encode",
            "encode_value"
        ]
    );
    assert!(report
        .rows
        .iter()
        .all(|r| r.seconds > 0.0 && r.events_per_s.is_finite()));
    assert!(report.corpus_events > 50);
    assert!(report.table().contains("| `typed` |"));
    serde_json::to_string(&report).expect("the JSON report serialises");
}

#[test]
fn the_generated_corpus_is_valid_and_deterministic() {
    let corpus = aep_bench::corpus::generate(200_000, 11);
    assert_eq!(corpus, aep_bench::corpus::generate(200_000, 11));
    let mut types = std::collections::BTreeSet::new();
    for (i, event) in EventReader::new(corpus.as_bytes()).enumerate() {
        let event = event.unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
        event
            .validate()
            .unwrap_or_else(|v| panic!("line {}: {v}", i + 1));
        types.insert(event.type_.clone());
    }
    assert!(types.len() >= 15, "a realistic mix: {types:?}");
}
