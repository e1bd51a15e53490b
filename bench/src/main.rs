//! `aep-bench`: run through `cargo xtask bench`, which builds it in release.

use std::path::PathBuf;
use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: aep_bench::alloc::Counting = aep_bench::alloc::Counting;

const USAGE: &str = "usage: aep-bench [--corpus FILE] [--json FILE] [--passes N] [--size MB] [--check-ms MS]\n       \
     aep-bench [--size MB] --write-corpus FILE   (write the generated corpus and stop)";

fn main() -> ExitCode {
    let mut corpus = None;
    let mut json = None;
    let mut passes = 5;
    let mut size_mb = 20;
    let mut check_ms = None;
    let mut write_corpus = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("`{arg}` needs a value"));
        let parsed = match arg.as_str() {
            "--corpus" => value().map(|v| corpus = Some(PathBuf::from(v))),
            "--json" => value().map(|v| json = Some(PathBuf::from(v))),
            "--write-corpus" => value().map(|v| write_corpus = Some(PathBuf::from(v))),
            "--passes" => value().and_then(|v| {
                v.parse()
                    .map(|n| passes = n)
                    .map_err(|e| format!("--passes: {e}"))
            }),
            "--size" => value().and_then(|v| {
                v.parse()
                    .map(|n| size_mb = n)
                    .map_err(|e| format!("--size: {e}"))
            }),
            "--check-ms" => value().and_then(|v| {
                v.parse()
                    .map(|n| check_ms = Some(n))
                    .map_err(|e| format!("--check-ms: {e}"))
            }),
            other => Err(format!("unknown argument `{other}`")),
        };
        if let Err(message) = parsed {
            eprintln!("error: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    }
    let corpus = match corpus {
        Some(path) => match aep_bench::read_corpus(&path) {
            Ok(text) => text,
            Err(e) => {
                eprintln!("error: {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        },
        None => aep_bench::corpus::generate(size_mb * 1_000_000, 0xAE90_0001),
    };
    if let Some(path) = write_corpus {
        return match std::fs::write(&path, &corpus) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {}: {e}", path.display());
                ExitCode::FAILURE
            }
        };
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let options = aep_bench::Options {
        corpus,
        passes,
        schemas: root.join("schemas"),
        codegen_runs: 21,
        codegen_check_ms: check_ms,
    };
    let report = aep_bench::run(&options);
    print!("{}", report.table());
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&report).expect("the report serialises");
        if let Err(e) = std::fs::write(&path, text + "\n") {
            eprintln!("error: {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    if report.stream_check.errors > 0 {
        eprintln!("error: the corpus is not a valid stream, so the `stream` row was not measured");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
