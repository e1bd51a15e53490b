//! What the relay process uses, read from `/proc/PID`: resident memory
//! (`status`) and CPU time (`stat`), so figures can be given per event
//! and per CPU-second, which a machine busy with other work disturbs
//! less than wall time.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::Error;

/// Resident memory of a process, in KiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resident {
    /// Peak resident set (`VmHWM`).
    pub peak_kib: u64,
    /// Current resident set (`VmRSS`).
    pub current_kib: u64,
}

/// Reads `VmHWM` and `VmRSS` of `pid`.
pub fn resident(pid: u32) -> Result<Resident, Error> {
    let path = format!("/proc/{pid}/status");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::new(format!("{path}: {e}")))?;
    parse_status(&text).ok_or_else(|| Error::new(format!("{path}: no VmHWM and VmRSS lines")))
}

fn parse_status(text: &str) -> Option<Resident> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))?
            .trim()
            .strip_suffix("kB")?
            .trim()
            .parse::<u64>()
            .ok()
    };
    Some(Resident {
        peak_kib: field("VmHWM:")?,
        current_kib: field("VmRSS:")?,
    })
}

/// User plus system CPU seconds `pid` has used, all its threads.
pub fn cpu_seconds(pid: u32) -> Result<f64, Error> {
    let path = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::new(format!("{path}: {e}")))?;
    let ticks = parse_stat(&text)
        .ok_or_else(|| Error::new(format!("{path}: no utime and stime fields")))?;
    Ok(ticks as f64 / ticks_per_second())
}

/// `utime + stime` (fields 14 and 15) of a `stat` line, in clock ticks.
/// The command name (field 2) may hold spaces and parentheses, so the
/// fields are counted from its closing parenthesis.
fn parse_stat(text: &str) -> Option<u64> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// The kernel's clock tick rate (`getconf CLK_TCK`; 100 where that
/// cannot be run, the value on every common Linux platform).
fn ticks_per_second() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|r| *r > 0.0)
            .unwrap_or(100.0)
    })
}

/// CPU seconds of the relay over a stretch of the run.
#[derive(Debug, Clone, Copy)]
pub struct CpuMeter {
    pid: Option<u32>,
    start: Option<f64>,
}

impl CpuMeter {
    /// Starts metering `pid` (nothing without one).
    pub fn start(pid: Option<u32>) -> CpuMeter {
        CpuMeter {
            pid,
            start: pid.and_then(|p| cpu_seconds(p).ok()),
        }
    }

    /// CPU seconds since the start, when they could be read.
    pub fn seconds(&self) -> Option<f64> {
        let now = cpu_seconds(self.pid?).ok()?;
        Some(now - self.start?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_status_lines() {
        let text = "Name:\taep\nVmPeak:\t  100 kB\nVmHWM:\t   5120 kB\nVmRSS:\t    4096 kB\n";
        assert_eq!(
            parse_status(text),
            Some(Resident {
                peak_kib: 5120,
                current_kib: 4096
            })
        );
        assert_eq!(parse_status("VmRSS:\t1 kB\n"), None);
    }

    #[test]
    fn reads_stat_lines_whatever_the_command_name() {
        let line = "4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 6063 0 0 0 \
                    250 31 0 0 20 0 3 0 1234 5678 900 18446744073709551615";
        assert_eq!(parse_stat(line), Some(281));
        assert_eq!(parse_stat("4242 (x) S 1"), None);
    }

    #[test]
    fn reads_this_process() {
        let me = resident(std::process::id()).unwrap();
        assert!(me.peak_kib >= me.current_kib && me.current_kib > 0);
        let busy: u64 = (0..5_000_000u64).map(std::hint::black_box).sum();
        assert!(busy > 0);
        assert!(cpu_seconds(std::process::id()).unwrap() > 0.0);
    }
}
