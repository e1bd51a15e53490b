//! `nats-ceiling`: what a nats-server on a loopback address sustains
//! itself (see `bench/peers/README.md`), or the medians of saved runs
//! beside `relay-load` reports of relays on NATS.

use std::path::PathBuf;
use std::process::ExitCode;

use aep_bench::nats::{self, Ceiling, Options};
use aep_bench::relay::Report;

const USAGE: &str = "\
usage: nats-ceiling --url nats://127.0.0.1:PORT [options]
       nats-ceiling summary --ceiling FILE... [--relay FILE...]

Measures a nats-server (JetStream enabled) on a loopback address; see
bench/peers/README.md. `summary` prints the medians of saved runs and,
given relay-load reports, each relay's figures as a share of them.

options (defaults in brackets):
  --pid PID                 the server's process: its CPU seconds [none]
  --json FILE               also write the report as JSON
  --events N                JetStream: events published per phase [500000]
  --bytes N                 bytes per message [450]
  --sessions N              JetStream: subjects, one per session [100]
  --batch N                 JetStream: events to a session in a row [1000]
  --window N                JetStream: publishes per window of acks [1024]
  --fanout LIST             core fan-out: subscriber counts [1,20,200]
  --fanout-deliveries N     core fan-out: deliveries per count [400000]
  --fanout-window N         core fan-out: events ahead of the slowest [2000]
  --limit-secs N            time limit of each phase [180]";

enum Failure {
    Usage(String),
    Run(String),
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let result = if args.first().map(String::as_str) == Some("summary") {
        summary(&args[1..])
    } else {
        measure(&args)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message)) => {
            eprintln!("nats-ceiling: error: {message}\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Run(message)) => {
            eprintln!("nats-ceiling: error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, Failure>
where
    T::Err: std::fmt::Display,
{
    value
        .parse()
        .map_err(|e| Failure::Usage(format!("{flag} {value:?}: {e}")))
}

fn measure(args: &[String]) -> Result<(), Failure> {
    let mut options = Options::new(String::new());
    let mut json: Option<PathBuf> = None;
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| Failure::Usage(format!("`{flag}` needs a value")))?;
        match flag.as_str() {
            "--url" => options.url = value.clone(),
            "--pid" => options.pid = Some(number(flag, value)?),
            "--json" => json = Some(PathBuf::from(value)),
            "--events" => options.events = number(flag, value)?,
            "--bytes" => options.bytes = number(flag, value)?,
            "--sessions" => options.sessions = number(flag, value)?,
            "--batch" => options.batch = number(flag, value)?,
            "--window" => options.window = number(flag, value)?,
            "--fanout" => {
                options.fanout = value
                    .split(',')
                    .map(|n| number(flag, n.trim()))
                    .collect::<Result<_, _>>()?
            }
            "--fanout-deliveries" => options.fanout_deliveries = number(flag, value)?,
            "--fanout-window" => options.fanout_window = number(flag, value)?,
            "--limit-secs" => options.limit_secs = number(flag, value)?,
            other => return Err(Failure::Usage(format!("unknown argument `{other}`"))),
        }
    }
    if options.url.is_empty() {
        return Err(Failure::Usage("--url is required".to_owned()));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Run(format!("cannot start the runtime: {e}")))?;
    let ceiling = runtime
        .block_on(nats::run(&options))
        .map_err(|e| Failure::Run(format!("{}: {e}", options.url)))?;
    runtime.shutdown_background();
    print!("{}", ceiling.table());
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&ceiling).expect("the report serialises");
        std::fs::write(&path, text + "\n")
            .map_err(|e| Failure::Run(format!("{}: {e}", path.display())))?;
    }
    Ok(())
}

fn summary(args: &[String]) -> Result<(), Failure> {
    let mut ceilings: Vec<Ceiling> = Vec::new();
    let mut relays: Vec<Report> = Vec::new();
    let mut side = None;
    for arg in args {
        match arg.as_str() {
            "--ceiling" => side = Some(true),
            "--relay" => side = Some(false),
            path => {
                let ceiling = side.ok_or_else(|| {
                    Failure::Usage(format!("`{path}`: --ceiling or --relay first"))
                })?;
                let text = std::fs::read_to_string(path)
                    .map_err(|e| Failure::Run(format!("{path}: {e}")))?;
                let bad = |e: serde_json::Error| Failure::Run(format!("{path}: {e}"));
                if ceiling {
                    ceilings.push(serde_json::from_str(&text).map_err(bad)?);
                } else {
                    relays.push(serde_json::from_str(&text).map_err(bad)?);
                }
            }
        }
    }
    if ceilings.is_empty() {
        return Err(Failure::Usage("no --ceiling report".to_owned()));
    }
    print!("{}", nats::summary(&ceilings, &relays));
    Ok(())
}
