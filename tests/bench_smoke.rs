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
            "stream",
            "stream_parallel",
            "down_level",
            "redact",
            "redact_stream",
            "emit",
            "encode",
            "encode_value",
            "filter",
            "filter_peek",
            "filter_sonic",
            "sonic_floor",
            "ce_forward",
            "ce_inverse",
            "otlp",
            "ocsf"
        ]
    );
    assert!(report
        .rows
        .iter()
        .all(|r| r.seconds > 0.0 && r.events_per_s.is_finite()));
    assert!(report.corpus_events > 50);
    assert!(report.table().contains("| `typed` |"));
    assert_eq!(
        report.stream_check.errors, 0,
        "{:?}",
        report.stream_check.first
    );
    assert_eq!(report.stream_check.warnings, 0);
    let validate = report.rows.iter().find(|r| r.name == "validate").unwrap();
    assert_eq!(validate.vs_validate, 1.0);
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

#[test]
fn an_invalid_stream_gets_no_stream_row() {
    // Every line valid on its own, but the last one repeats the first
    // one's id with other content: an id collision.
    let mut corpus = aep_bench::corpus::generate(20_000, 3);
    let mut first: serde_json::Value =
        serde_json::from_str(corpus.lines().next().unwrap()).unwrap();
    first["data"]["client"]["version"] = "9.9.9".into();
    corpus.push_str(&first.to_string());
    corpus.push('\n');
    let report = aep_bench::run(&aep_bench::Options {
        corpus,
        passes: 1,
        schemas: root().join("schemas"),
        codegen_runs: 1,
        codegen_check_ms: None,
    });
    assert_eq!(report.skipped_lines, 0, "each line is valid alone");
    assert_eq!(
        report.stream_check.errors, 1,
        "{:?}",
        report.stream_check.first
    );
    assert!(
        report.stream_check.first[0].contains("error[id-collision]"),
        "{:?}",
        report.stream_check.first
    );
    assert!(report.rows.iter().all(|r| !r.name.starts_with("stream")));
    assert!(report.table().contains("no `stream` row"));
}

#[test]
fn the_generated_corpus_is_a_valid_stream() {
    let corpus = aep_bench::corpus::generate(300_000, 13);
    let mut findings = Vec::new();
    let summary = aep::stream::validate_reader(
        corpus.as_bytes(),
        aep::stream::Options::default(),
        |f| findings.push(format!("line {}: {}: {}", f.line, f.rule.name(), f.message)),
        |_| {},
    )
    .unwrap();
    assert_eq!(findings, Vec::<String>::new());
    assert!(summary.events > 500);
}
