//! `relay-hostile`: drives the attacks of `aep_bench::hostile` against an
//! AEP relay on a loopback address and reports, per attack, the relay's
//! resident memory, its slowest `/healthz` answer and what it said.

use std::path::PathBuf;
use std::process::ExitCode;

use aep_bench::hostile::{self, Relay, Scale, ATTACKS};
use aep_bench::relay::client::Target;

const USAGE: &str = "\
usage: relay-hostile --url http://127.0.0.1:PORT --pid PID [options]

Attacks one AEP relay on a loopback address, as a client holding its
token could, and reports the relay's peak resident memory, its slowest
/healthz answer and what the wire said, per attack. The last attack,
sigterm, sends SIGTERM to PID and times the exit.

options:
  --token TOKEN     the relay's token, sent as access_token [none]
  --attacks LIST    of closing,claims,fanout,batches,filters,replay,hellos,big-events,
                    messages,wide-json,stuck-readers,connections,sigterm [all]
  --scale NAME      full (the hostile review's figures) or small [full]
  --json FILE       also write the outcomes as JSON";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message)) => {
            eprintln!("relay-hostile: error: {message}\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Run(message)) => {
            eprintln!("relay-hostile: error: {message}");
            ExitCode::FAILURE
        }
    }
}

enum Failure {
    Usage(String),
    Run(String),
}

fn run(args: &[String]) -> Result<(), Failure> {
    let (mut url, mut pid, mut token, mut json) = (None, None, None, None::<PathBuf>);
    let mut attacks: Vec<String> = ATTACKS.iter().map(|a| a.to_string()).collect();
    let mut scale = Scale::FULL;
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| Failure::Usage(format!("`{flag}` needs a value")))?;
        match flag.as_str() {
            "--url" => url = Some(value.clone()),
            "--pid" => {
                pid = Some(
                    value
                        .parse::<u32>()
                        .map_err(|e| Failure::Usage(format!("--pid {value:?}: {e}")))?,
                )
            }
            "--token" => token = Some(value.clone()),
            "--json" => json = Some(PathBuf::from(value)),
            "--attacks" => {
                attacks = value.split(',').map(str::to_owned).collect();
                if let Some(bad) = attacks.iter().find(|a| !ATTACKS.contains(&a.as_str())) {
                    return Err(Failure::Usage(format!(
                        "--attacks: no attack {bad:?} (one of {})",
                        ATTACKS.join(",")
                    )));
                }
            }
            "--scale" => {
                scale = match value.as_str() {
                    "full" => Scale::FULL,
                    "small" => Scale::SMALL,
                    _ => return Err(Failure::Usage(format!("--scale {value:?}: full or small"))),
                }
            }
            _ => return Err(Failure::Usage(format!("unknown flag {flag:?}"))),
        }
    }
    let url = url.ok_or_else(|| Failure::Usage("--url is required".into()))?;
    let pid = pid.ok_or_else(|| Failure::Usage("--pid is required".into()))?;
    let target = Target::parse(&url).map_err(|e| Failure::Usage(e.to_string()))?;
    let relay = Relay { target, pid, token };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::Run(format!("starting the runtime: {e}")))?;
    let mut outcomes = Vec::new();
    println!(
        "{:<11} {:>9} {:>9} {:>11}  said",
        "attack", "rss MiB", "peak MiB", "healthz ms"
    );
    for attack in &attacks {
        let outcome = runtime
            .block_on(hostile::run(&relay, attack, scale))
            .map_err(|e| Failure::Run(e.to_string()))?;
        println!(
            "{:<11} {:>9.0} {:>9.0} {:>11.0}  {}",
            outcome.attack,
            outcome.rss_before_mib,
            outcome.rss_peak_mib,
            outcome.healthz_max_ms,
            outcome.said
        );
        outcomes.push(outcome);
    }
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&outcomes).expect("outcomes encode");
        std::fs::write(&path, text)
            .map_err(|e| Failure::Run(format!("{}: {e}", path.display())))?;
    }
    Ok(())
}
