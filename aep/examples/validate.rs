//! Validates the JSONL files named on the command line and prints each
//! finding as `FILE:LINE: level[rule]: message`.
//!
//! ```sh
//! cargo run -p aep --example validate -- capture.jsonl
//! ```

use std::fs::File;
use std::io::BufReader;
use std::process::ExitCode;

use aep::stream::{validate_reader, Options};

fn main() -> ExitCode {
    let mut failed = false;
    for path in std::env::args().skip(1) {
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(e) => {
                eprintln!("{path}: {e}");
                return ExitCode::from(2);
            }
        };
        let print = |f: aep::stream::Finding| {
            println!("{path}:{}: {}[{}]: {}", f.line, f.level, f.rule, f.message)
        };
        match validate_reader(BufReader::new(file), Options::default(), print, |_| {}) {
            Ok(summary) => {
                eprintln!(
                    "{path}: {} lines, {} events, {} errors, {} warnings",
                    summary.lines, summary.events, summary.errors, summary.warnings
                );
                failed |= summary.errors > 0;
            }
            Err(e) => {
                eprintln!("{path}: {e}");
                return ExitCode::from(2);
            }
        }
    }
    ExitCode::from(u8::from(failed))
}
