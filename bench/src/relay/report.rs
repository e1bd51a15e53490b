//! The figures of one run ([`Report`], a table and JSON), and the
//! comparison of several runs of two relays ([`compare`]): medians, their
//! ratio, and whether each aim is met.

use serde::{Deserialize, Serialize};

use super::decode::Decode;
use super::fanout::Fanout;
use super::ingest::Ingest;
use super::latency::Latency;
use super::memory::{Buffered, Idle};
use super::Error;

/// Every figure of one run against one relay.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// What the relay is called.
    pub label: String,
    /// Where it listened.
    pub url: String,
    /// Its replay depth per session, from discovery.
    pub buffer: u64,
    /// Memory per buffered event (with the relay's PID).
    pub buffered: Option<Buffered>,
    /// Memory per idle SSE connection (with the relay's PID).
    pub idle: Option<Idle>,
    /// Ingest.
    pub ingest: Option<Ingest>,
    /// Fan-out, one per subscriber count.
    pub fanout: Vec<Fanout>,
    /// End-to-end latency.
    pub latency: Option<Latency>,
    /// The in-process decode ceiling.
    pub decode: Decode,
}

/// "1 SSE subscriber", "20 SSE subscribers".
fn subscribers(n: usize) -> String {
    format!("{n} SSE subscriber{}", if n == 1 { "" } else { "s" })
}

/// `value` with thousands separators, no decimals.
fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if value < 0.0 && digits != "0" {
        out.insert(0, '-');
    }
    out
}

impl Report {
    /// The run's rows (`label` and figure), in table order.
    pub fn rows(&self) -> Vec<(String, String)> {
        let mut rows = Vec::new();
        let per_cpu = |figure: Option<f64>, unit: &str| {
            figure.map_or(String::new(), |f| {
                format!(" ({} {unit} per relay CPU-second)", thousands(f))
            })
        };
        if let Some(i) = &self.ingest {
            rows.push((
                format!(
                    "ingest: {} events, batches of {}, {} connections",
                    thousands(i.events as f64),
                    thousands(i.batch as f64),
                    i.connections
                ),
                format!(
                    "{} events/s{}",
                    thousands(i.events_per_s),
                    per_cpu(i.events_per_cpu_s(), "events")
                ),
            ));
        }
        for f in &self.fanout {
            rows.push((
                format!(
                    "fan-out to {}: {} events each",
                    subscribers(f.subscribers),
                    thousands(f.events as f64)
                ),
                format!(
                    "{} deliveries/s{}",
                    thousands(f.deliveries_per_s),
                    per_cpu(f.deliveries_per_cpu_s(), "deliveries")
                ),
            ));
        }
        if let Some(l) = &self.latency {
            rows.push((
                format!(
                    "latency at {} events/s for {:.0} s (batches of {}, achieved {} events/s): p50 / p99 / max",
                    thousands(l.rate as f64),
                    l.seconds,
                    l.batch,
                    thousands(l.achieved_rate)
                ),
                format!("{:.2} / {:.2} / {:.2} ms", l.p50_ms, l.p99_ms, l.max_ms),
            ));
        }
        if let Some(b) = &self.buffered {
            rows.push((
                format!(
                    "memory per buffered event ({} sessions x {}): peak RSS / RSS growth",
                    b.sessions,
                    thousands(b.depth as f64)
                ),
                format!(
                    "{} / {} B",
                    thousands(b.peak_bytes_per_event),
                    thousands(b.rss_bytes_per_event)
                ),
            ));
        }
        if let Some(idle) = &self.idle {
            rows.push((
                format!(
                    "memory per idle SSE connection ({}): RSS growth",
                    thousands(idle.connections as f64)
                ),
                format!("{} B", thousands(idle.rss_bytes_per_connection)),
            ));
        }
        rows.push((
            "in process: `EventRef::from_json` of the ingest lines, one thread".to_owned(),
            format!("{} events/s", thousands(self.decode.events_per_s)),
        ));
        rows
    }

    /// The run as a Markdown table.
    pub fn table(&self) -> String {
        let mut out = format!(
            "relay: {} at {} (replay depth {})\n\n| measurement | figure |\n|---|---:|\n",
            self.label, self.url, self.buffer
        );
        for (label, figure) in self.rows() {
            out.push_str(&format!("| {label} | {figure} |\n"));
        }
        out
    }
}

/// Which way a figure is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Better {
    Higher,
    Lower,
}

/// One compared figure.
struct Metric {
    name: String,
    unit: &'static str,
    better: Better,
    /// The aim, as a bound on ours / reference.
    aim: Option<f64>,
    ours: Vec<f64>,
    reference: Vec<f64>,
}

fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[n / 2]),
        n => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

fn figure(value: Option<f64>, unit: &str) -> String {
    match value {
        None => "n/a".to_owned(),
        Some(v) if unit == "ms" => format!("{v:.2} ms"),
        Some(v) => format!("{} {unit}", thousands(v)),
    }
}

fn metrics(ours: &[Report], reference: &[Report]) -> Vec<Metric> {
    let take = |runs: &[Report], f: &dyn Fn(&Report) -> Option<f64>| -> Vec<f64> {
        runs.iter().filter_map(f).collect()
    };
    let metric = |name: String,
                  unit: &'static str,
                  better: Better,
                  aim: Option<f64>,
                  f: &dyn Fn(&Report) -> Option<f64>| Metric {
        name,
        unit,
        better,
        aim,
        ours: take(ours, f),
        reference: take(reference, f),
    };
    let mut out = vec![
        metric(
            "ingest".to_owned(),
            "events/s",
            Better::Higher,
            Some(4.0),
            &|r| r.ingest.as_ref().map(|i| i.events_per_s),
        ),
        metric(
            "ingest per relay CPU-second".to_owned(),
            "events",
            Better::Higher,
            None,
            &|r| r.ingest.as_ref().and_then(Ingest::events_per_cpu_s),
        ),
    ];
    let counts: Vec<usize> = ours
        .first()
        .map(|r| r.fanout.iter().map(|f| f.subscribers).collect())
        .unwrap_or_default();
    for n in counts {
        let find = move |r: &Report| r.fanout.iter().find(|f| f.subscribers == n).cloned();
        out.push(metric(
            format!("fan-out to {}", subscribers(n)),
            "deliveries/s",
            Better::Higher,
            Some(3.0),
            &move |r| find(r).map(|f| f.deliveries_per_s),
        ));
        out.push(metric(
            format!("fan-out to {} per relay CPU-second", subscribers(n)),
            "deliveries",
            Better::Higher,
            None,
            &move |r| find(r).and_then(|f| f.deliveries_per_cpu_s()),
        ));
    }
    out.push(metric(
        "latency p50".to_owned(),
        "ms",
        Better::Lower,
        None,
        &|r| r.latency.as_ref().map(|l| l.p50_ms),
    ));
    out.push(metric(
        "latency p99".to_owned(),
        "ms",
        Better::Lower,
        Some(0.25),
        &|r| r.latency.as_ref().map(|l| l.p99_ms),
    ));
    out.push(metric(
        "peak RSS per buffered event".to_owned(),
        "B",
        Better::Lower,
        Some(0.5),
        &|r| r.buffered.as_ref().map(|b| b.peak_bytes_per_event),
    ));
    out.push(metric(
        "RSS per idle SSE connection".to_owned(),
        "B",
        Better::Lower,
        None,
        &|r| r.idle.as_ref().map(|i| i.rss_bytes_per_connection),
    ));
    out
}

/// Compares runs of our relay with runs of the reference relay: the
/// median of each figure, their ratio (ours / reference) and whether
/// each aim holds, then ingest against the in-process decode ceiling.
pub fn compare(ours: &[Report], reference: &[Report]) -> Result<String, Error> {
    compare_with(ours, reference, true)
}

/// [`compare`], with the aims left out when `aims` is false (two builds or
/// setups of our own relay, which the aims are not about).
pub fn compare_with(ours: &[Report], reference: &[Report], aims: bool) -> Result<String, Error> {
    if ours.is_empty() || reference.is_empty() {
        return Err(Error::new(
            "compare needs at least one report of each relay",
        ));
    }
    let mut out = format!(
        "{} run(s) of {}, {} of {}; every figure is the median of its runs.\n\n\
         | measurement | {} | {} | ratio | aim | met |\n|---|---:|---:|---:|---|---|\n",
        ours.len(),
        ours[0].label,
        reference.len(),
        reference[0].label,
        ours[0].label,
        reference[0].label,
    );
    for m in metrics(ours, reference) {
        let (o, r) = (median(&m.ours), median(&m.reference));
        let ratio = match (o, r) {
            (Some(o), Some(r)) if r != 0.0 => Some(o / r),
            _ => None,
        };
        let (aim, met) = match m.aim.filter(|_| aims) {
            None => ("".to_owned(), "".to_owned()),
            Some(bound) => {
                let aim = match m.better {
                    Better::Higher => format!("at least {bound}x"),
                    Better::Lower => format!("at most {bound}x"),
                };
                let met = match ratio {
                    None => "n/a",
                    Some(x) if (m.better == Better::Higher) == (x >= bound) => "yes",
                    Some(_) => "no",
                };
                (aim, met.to_owned())
            }
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {aim} | {met} |\n",
            m.name,
            figure(o, m.unit),
            figure(r, m.unit),
            ratio.map_or("n/a".to_owned(), |x| format!("{x:.2}x")),
        ));
    }
    let ingest = median(
        &ours
            .iter()
            .filter_map(|r| r.ingest.as_ref().map(|i| i.events_per_s))
            .collect::<Vec<_>>(),
    );
    let decode = median(
        &ours
            .iter()
            .map(|r| r.decode.events_per_s)
            .collect::<Vec<_>>(),
    );
    if let (Some(ingest), Some(decode), true) = (ingest, decode, aims) {
        let ratio = ingest / decode;
        out.push_str(&format!(
            "| ingest ceiling: in-process `EventRef::from_json` of the same lines, one thread | {} | | {ratio:.2}x of it | at least 0.33x (within 3x) | {} |\n",
            figure(Some(decode), "events/s"),
            if ratio >= 1.0 / 3.0 { "yes" } else { "no" },
        ));
    }
    out.push_str("\nEach run:\n\n");
    for run in ours.iter().chain(reference) {
        out.push_str(&format!("- {}:", run.label));
        for (label, figure) in run.rows() {
            let short = label.split(':').next().unwrap_or(&label);
            out.push_str(&format!(" {short} {figure};"));
        }
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_and_medians() {
        assert_eq!(thousands(1_234_567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(-1_000.0), "-1,000");
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }
}
