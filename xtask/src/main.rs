//! `cargo xtask <command>`: the project's developer commands.

use std::path::PathBuf;
use std::process::ExitCode;

use xtask::{codegen, project_root};

const USAGE: &str = "\
usage: cargo xtask codegen [--check] [--schemas DIR] [--out DIR]

  codegen           regenerate the aep-types sources from the schema registry
  --check           write nothing; fail with a diff if the sources are out of date
  --schemas DIR     the registry to read (default: schemas/)
  --out DIR         the directory to write, root module mod.rs (default: aep-types/src/generated/)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.split_first() {
        Some((command, rest)) if command == "codegen" => match CodegenArgs::parse(rest) {
            Ok(parsed) => parsed.run(),
            Err(message) => usage_error(&message),
        },
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
    schemas: PathBuf,
    out: PathBuf,
}

impl CodegenArgs {
    fn parse(args: &[String]) -> Result<CodegenArgs, String> {
        let root = project_root();
        let mut parsed = CodegenArgs {
            check: false,
            schemas: root.join("schemas"),
            out: root.join("aep-types/src/generated"),
        };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--check" => parsed.check = true,
                "--schemas" | "--out" => {
                    let value = args
                        .next()
                        .ok_or_else(|| format!("`{arg}` needs a directory"))?;
                    let slot = if arg == "--schemas" {
                        &mut parsed.schemas
                    } else {
                        &mut parsed.out
                    };
                    *slot = PathBuf::from(value);
                }
                other => return Err(format!("unknown argument `{other}`")),
            }
        }
        Ok(parsed)
    }

    fn run(self) -> ExitCode {
        if self.check {
            match codegen::check(&self.schemas, &self.out) {
                Ok(drift) if drift.is_empty() => {
                    println!(
                        "{} is up to date with {}",
                        self.out.display(),
                        self.schemas.display()
                    );
                    ExitCode::SUCCESS
                }
                Ok(drift) => {
                    eprint!("{}", codegen::report(&drift, &self.out));
                    ExitCode::FAILURE
                }
                Err(failure) => fail(&failure),
            }
        } else {
            match codegen::write(&self.schemas, &self.out) {
                Ok(changed) => {
                    for path in &changed {
                        println!("wrote {}", self.out.join(path).display());
                    }
                    println!("{}: {} file(s) changed", self.out.display(), changed.len());
                    ExitCode::SUCCESS
                }
                Err(failure) => fail(&failure),
            }
        }
    }
}

fn fail(failure: &codegen::Failure) -> ExitCode {
    eprintln!("error: {failure}");
    ExitCode::FAILURE
}
