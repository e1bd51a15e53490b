//! `relay-load`: measures an AEP relay on a loopback address (see
//! `bench/peers/README.md`), or compares saved runs of two relays.

use std::path::PathBuf;
use std::process::ExitCode;

use aep_bench::relay::{self, Options, Report};

const USAGE: &str = "\
usage: relay-load --url http://127.0.0.1:PORT [options]
       relay-load compare [--no-aims] --ours FILE... --reference FILE...

Measures one AEP relay on a loopback address; see bench/peers/README.md.

options (defaults in brackets):
  --label NAME              what the relay is called in the report [relay]
  --pid PID                 the relay's process: memory and CPU figures [none]
  --read-url URL            fan-out and latency subscribers read there
                            (another node of a cluster) [--url]
  --json FILE               also write the report as JSON
  --phases LIST             of memory,ingest,fanout,latency [all]
  --events N                ingest: events posted [500000]
  --batch N                 events per POST (ingest, fan-out, memory) [1000]
  --connections N           ingest: connections posting at once [4]
  --sessions N              ingest: sessions the batches go to [100]
  --fanout LIST             fan-out: subscriber counts [1,20,200]
  --fanout-deliveries N     fan-out: deliveries per count [400000]
  --window N                fan-out: batches ahead of the slowest [2]
  --rate N                  latency: events per second [2000]
  --seconds N               latency: seconds [10]
  --latency-batch N         latency: events per POST [10]
  --fill-events N           memory: events buffered [100000]
  --idle N                  memory: idle SSE connections [1000]
  --decode-passes N         in-process decode passes [3]
  --limit-secs N            time limit of each phase [180]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let result = if args.first().map(String::as_str) == Some("compare") {
        compare(&args[1..])
    } else {
        measure(&args)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message)) => {
            eprintln!("relay-load: error: {message}\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Run(message)) => {
            eprintln!("relay-load: error: {message}");
            ExitCode::FAILURE
        }
    }
}

enum Failure {
    Usage(String),
    Run(String),
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
    let mut options = Options::new(String::new(), "relay");
    let mut json: Option<PathBuf> = None;
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| Failure::Usage(format!("`{flag}` needs a value")))?;
        match flag.as_str() {
            "--url" => options.url = value.clone(),
            "--label" => options.label = value.clone(),
            "--read-url" => options.read_url = Some(value.clone()),
            "--pid" => options.pid = Some(number(flag, value)?),
            "--json" => json = Some(PathBuf::from(value)),
            "--events" => options.ingest_events = number(flag, value)?,
            "--batch" => options.batch = number(flag, value)?,
            "--connections" => options.connections = number(flag, value)?,
            "--sessions" => options.ingest_sessions = number(flag, value)?,
            "--fanout" => {
                options.fanout = value
                    .split(',')
                    .map(|n| number(flag, n.trim()))
                    .collect::<Result<_, _>>()?
            }
            "--fanout-deliveries" => options.fanout_deliveries = number(flag, value)?,
            "--window" => options.window = number(flag, value)?,
            "--rate" => options.rate = number(flag, value)?,
            "--seconds" => options.latency_seconds = number(flag, value)?,
            "--latency-batch" => options.latency_batch = number(flag, value)?,
            "--fill-events" => options.fill_events = number(flag, value)?,
            "--idle" => options.idle = number(flag, value)?,
            "--decode-passes" => options.decode_passes = number(flag, value)?,
            "--limit-secs" => options.limit_secs = number(flag, value)?,
            "--phases" => {
                options.phases =
                    relay::Phases::parse(value).map_err(|e| Failure::Usage(e.to_string()))?
            }
            other => return Err(Failure::Usage(format!("unknown argument `{other}`"))),
        }
    }
    if options.url.is_empty() {
        return Err(Failure::Usage("--url is required".to_owned()));
    }
    if options.batch == 0 || options.ingest_events == 0 || options.rate == 0 {
        return Err(Failure::Usage(
            "--batch, --events and --rate must be at least 1".to_owned(),
        ));
    }
    if options.latency_seconds == 0 {
        return Err(Failure::Usage("--seconds must be at least 1".to_owned()));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Run(format!("cannot start the runtime: {e}")))?;
    let report = runtime
        .block_on(relay::run(&options))
        .map_err(|e| Failure::Run(format!("{} at {}: {e}", options.label, options.url)))?;
    // Close what the run left open (finished subscribers' connections)
    // without waiting on anything.
    runtime.shutdown_background();
    print!("{}", report.table());
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&report).expect("the report serialises");
        std::fs::write(&path, text + "\n")
            .map_err(|e| Failure::Run(format!("{}: {e}", path.display())))?;
    }
    Ok(())
}

fn compare(args: &[String]) -> Result<(), Failure> {
    let mut ours = Vec::new();
    let mut reference = Vec::new();
    let mut side: Option<&mut Vec<Report>> = None;
    let mut aims = true;
    for arg in args {
        match arg.as_str() {
            "--no-aims" => aims = false,
            "--ours" => side = Some(&mut ours),
            "--reference" => side = Some(&mut reference),
            path => {
                let side = side.as_mut().ok_or_else(|| {
                    Failure::Usage(format!("`{path}`: --ours or --reference first"))
                })?;
                let text = std::fs::read_to_string(path)
                    .map_err(|e| Failure::Run(format!("{path}: {e}")))?;
                let report: Report = serde_json::from_str(&text)
                    .map_err(|e| Failure::Run(format!("{path}: not a relay-load report: {e}")))?;
                side.push(report);
            }
        }
    }
    let table =
        relay::compare_with(&ours, &reference, aims).map_err(|e| Failure::Usage(e.to_string()))?;
    print!("{table}");
    Ok(())
}
