//! `aep redact`: the AEP-0003 §9.4 redaction pipeline over standard input.

use std::io::{Read, Write};

use aep::redact::{Options, Redactor};

use super::Status;
use crate::diag;
use crate::input::parse_bytes;
use crate::output::{Stdout, WriteError};

const LONG_ABOUT: &str = "\
Reads standard input, passes it through the redaction pipeline of AEP-0003
§9.4 and writes the result to standard output: secrets and credentials
(PEM blocks, AWS key ids, Bearer tokens, password/secret/api_key/token
assignments, JWTs, GitHub, GitLab, Slack, OpenAI-style and Google keys) and
the --secret values become [REDACTED:secret], home directories (--home, and
any /home/<user> or /Users/<user>) become ~, emails and phone numbers become
[REDACTED:pii] unless --no-pii.

With --json the input is one JSON value: every string in it is redacted,
numbers, booleans and null stay, and the value of a credential-named key
(token, password, api_key, Authorization, ...) is replaced whatever it is.";

const AFTER_HELP: &str = "\
Exit status: 0 when the output is written, 2 for usage errors and inputs
that cannot be read (not UTF-8, not JSON with --json, larger than
--max-bytes).

Examples:
  aep redact < transcript.txt
  aep redact --json --home \"$HOME\" --secret-env DB_PASSWORD < args.json";

/// The pipeline's settings, shared with `aep emit`.
#[derive(Debug, Clone, clap::Args)]
pub struct PipelineArgs {
    /// The home directory to replace with `~` (every /home/NAME and
    /// /Users/NAME prefix is replaced anyway).
    #[arg(long, value_name = "DIR")]
    pub home: Option<String>,

    /// A value to redact wherever it occurs (repeatable). It shows in the
    /// process list: prefer --secret-env.
    #[arg(long, value_name = "VALUE")]
    pub secret: Vec<String>,

    /// The name of an environment variable whose value is redacted wherever
    /// it occurs (repeatable); an unset or empty variable is ignored.
    #[arg(long, value_name = "NAME")]
    pub secret_env: Vec<String>,

    /// Leave emails and phone numbers alone.
    #[arg(long)]
    pub no_pii: bool,
}

impl PipelineArgs {
    /// The pipeline these arguments ask for.
    pub fn redactor(&self) -> Redactor {
        let mut options = Options::default().pii(!self.no_pii);
        options.home = self.home.clone();
        options.secrets = self.secret.clone();
        options
            .secrets
            .extend(self.secret_env.iter().filter_map(|n| std::env::var(n).ok()));
        Redactor::new(options)
    }
}

/// The arguments of `aep redact`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Redact secrets, home directories and PII from standard input",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    /// Read one JSON value and redact the strings in it.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub pipeline: PipelineArgs,

    /// The most input read, in bytes (suffixes KiB, MiB, GiB accepted).
    #[arg(
        long,
        value_name = "BYTES",
        default_value = "64MiB",
        value_parser = parse_bytes
    )]
    pub max_bytes: usize,
}

/// Runs `aep redact`.
pub fn run(args: &Args) -> Status {
    let text = match read_stdin(args.max_bytes) {
        Ok(text) => text,
        Err(message) => {
            diag!("aep redact: error: <stdin>: {message}");
            return Status::Failure;
        }
    };
    let redactor = args.pipeline.redactor();
    let output = if args.json {
        let mut value: serde_json::Value = match serde_json::from_str(&text) {
            Ok(value) => value,
            Err(e) => {
                diag!(
                    "aep redact: error: <stdin>:{}:{}: not JSON: {e}",
                    e.line(),
                    e.column()
                );
                return Status::Failure;
            }
        };
        redactor.redact_value(&mut value);
        let mut json = value.to_string();
        json.push('\n');
        json
    } else {
        redactor.redact_str(&text).into_owned()
    };
    let mut out = Stdout::new();
    let written = out
        .writer()
        .write_all(output.as_bytes())
        .map_err(WriteError::from)
        .and_then(|()| out.flush());
    match written {
        Ok(()) | Err(WriteError::Closed) => Status::Clean,
        Err(e) => {
            diag!("aep redact: error: {e}");
            Status::Failure
        }
    }
}

/// Standard input as text, refusing more than `max` bytes and bytes that
/// are not UTF-8 (naming the offset).
fn read_stdin(max: usize) -> Result<String, String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() > max {
        return Err(format!("larger than --max-bytes ({max} bytes)"));
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 at byte {} (the pipeline reads text)",
            e.utf8_error().valid_up_to()
        )
    })
}
