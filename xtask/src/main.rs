//! `cargo xtask <command>`: the project's developer commands.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use xtask::{codegen, project_root};

const USAGE: &str = "\
usage: cargo xtask codegen [--check] [--schemas DIR] [--out DIR]
       cargo xtask bench [--corpus FILE] [--json FILE] [--passes N] [--size MB]
       cargo xtask conformance FIXTURES

  codegen           regenerate every generated tree from its registry:
                    schemas/ -> aep-types/src/generated/ and
                    tests/oddities/schemas/ -> tests/oddities/src/generated/
  --check           write nothing; fail with a diff if any tree is out of date
  --schemas DIR     generate from this registry only (default: schemas/)
  --out DIR         into this directory only, root module mod.rs
                    (default: aep-types/src/generated/)

  bench             build the benchmark in release and measure decoding, typing,
                    validating, down-levelling and encoding against serde_json
                    baselines, and the code generator; options go to the benchmark

  conformance       build the `aep` binary and the conformance runner, and run
                    every fixture category the project implements from
                    FIXTURES, a checkout of the published conformance
                    `fixtures/` directory: one line per category
                    (`passed/total`), every failing case with what differed;
                    exit 1 on any failure, 2 when FIXTURES cannot be read";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.split_first() {
        Some((command, rest)) if command == "codegen" => match CodegenArgs::parse(rest) {
            Ok(parsed) => parsed.run(),
            Err(message) => usage_error(&message),
        },
        Some((command, rest)) if command == "bench" => xtask::bench::run(rest),
        Some((command, rest)) if command == "conformance" => {
            match xtask::conformance::parse(rest) {
                Ok(fixtures) => xtask::conformance::run(&fixtures),
                Err(message) => usage_error(&message),
            }
        }
        Some((command, _)) if command == "--help" || command == "-h" => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Some((command, _)) => usage_error(&format!("unknown command `{command}`")),
        None => usage_error("no command given"),
    }
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("error: {message}\n\n{USAGE}");
    ExitCode::from(2)
}

struct CodegenArgs {
    check: bool,
    /// `(registry, output directory)` pairs.
    targets: Vec<(PathBuf, PathBuf)>,
}

impl CodegenArgs {
    fn parse(args: &[String]) -> Result<CodegenArgs, String> {
        let mut check = false;
        let mut schemas = None;
        let mut out = None;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--check" => check = true,
                "--schemas" | "--out" => {
                    let value = args
                        .next()
                        .ok_or_else(|| format!("`{arg}` needs a directory"))?;
                    let slot = if arg == "--schemas" {
                        &mut schemas
                    } else {
                        &mut out
                    };
                    *slot = Some(PathBuf::from(value));
                }
                other => return Err(format!("unknown argument `{other}`")),
            }
        }
        let root = project_root();
        let mut targets: Vec<(PathBuf, PathBuf)> = codegen::TARGETS
            .iter()
            .map(|(s, o)| (root.join(s), root.join(o)))
            .collect();
        if schemas.is_some() || out.is_some() {
            let (default_schemas, default_out) = targets.swap_remove(0);
            targets = vec![(
                schemas.unwrap_or(default_schemas),
                out.unwrap_or(default_out),
            )];
        }
        Ok(CodegenArgs { check, targets })
    }

    fn run(self) -> ExitCode {
        let mut status = ExitCode::SUCCESS;
        for (schemas, out) in &self.targets {
            let outcome = if self.check {
                check(schemas, out)
            } else {
                write(schemas, out)
            };
            if let Err(code) = outcome {
                status = code;
            }
        }
        status
    }
}

fn check(schemas: &Path, out: &Path) -> Result<(), ExitCode> {
    match codegen::check(schemas, out) {
        Ok(drift) if drift.is_empty() => {
            println!("{} is up to date with {}", out.display(), schemas.display());
            Ok(())
        }
        Ok(drift) => {
            eprint!("{}", codegen::report(&drift, out));
            Err(ExitCode::FAILURE)
        }
        Err(failure) => Err(fail(&failure)),
    }
}

fn write(schemas: &Path, out: &Path) -> Result<(), ExitCode> {
    match codegen::write(schemas, out) {
        Ok(changed) => {
            for path in &changed {
                println!("wrote {}", out.join(path).display());
            }
            println!("{}: {} file(s) changed", out.display(), changed.len());
            Ok(())
        }
        Err(failure) => Err(fail(&failure)),
    }
}

fn fail(failure: &codegen::Failure) -> ExitCode {
    eprintln!("error: {failure}");
    ExitCode::FAILURE
}
