//! Counters and gauges, rendered as Prometheus text at `/metrics`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::budget::Budget;

/// A monotonically increasing count.
#[derive(Debug, Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    pub fn inc(&self) {
        self.add(1);
    }

    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A value that goes up and down.
#[derive(Debug, Default)]
pub(crate) struct Gauge(AtomicU64);

impl Gauge {
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    pub fn dec(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }

    pub fn set(&self, value: u64) {
        self.0.store(value, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Why the relay refused something, for the `refused` counter.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Refusal {
    Unauthorized,
    Version,
    ContentType,
    TooLarge,
    TooManyEvents,
    InvalidEvent,
    InvalidFilter,
    Limit,
    Connections,
    Command,
}

impl Refusal {
    const ALL: [Refusal; 10] = [
        Refusal::Unauthorized,
        Refusal::Version,
        Refusal::ContentType,
        Refusal::TooLarge,
        Refusal::TooManyEvents,
        Refusal::InvalidEvent,
        Refusal::InvalidFilter,
        Refusal::Limit,
        Refusal::Connections,
        Refusal::Command,
    ];

    fn label(self) -> &'static str {
        match self {
            Refusal::Unauthorized => "unauthorized",
            Refusal::Version => "version",
            Refusal::ContentType => "content-type",
            Refusal::TooLarge => "payload-too-large",
            Refusal::TooManyEvents => "too-many-events",
            Refusal::InvalidEvent => "invalid-event",
            Refusal::InvalidFilter => "invalid-filter",
            Refusal::Limit => "limit-exceeded",
            Refusal::Connections => "connections",
            Refusal::Command => "command",
        }
    }
}

/// Everything `/metrics` and `/healthz` report.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    pub events_in: Counter,
    pub duplicates: Counter,
    pub delivered: Counter,
    pub dropped_backpressure: Counter,
    pub disconnected_backpressure: Counter,
    pub commands_routed: Counter,
    refused: [Counter; 10],
    pub websockets: Gauge,
    pub sse: Gauge,
    pub subscriptions: Gauge,
    pub sessions: Gauge,
    pub buffered_events: Gauge,
    pub buffered_bytes: Gauge,
    /// Bytes queued toward all consumers (`--max-queued-bytes`).
    pub queued: Arc<Budget>,
    /// Bytes of commands waiting in all command queues
    /// (`--max-command-bytes`).
    pub commands: Arc<Budget>,
    /// Bytes of WebSocket connections' hellos, subscriptions and
    /// positions (`--max-state-bytes`).
    pub state: Arc<Budget>,
}

impl Metrics {
    pub fn refuse(&self, why: Refusal) {
        self.refused[why as usize].inc();
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut one = |name: &str, kind: &str, help: &str, value: u64| {
            let _ = writeln!(out, "# HELP aep_relay_{name} {help}");
            let _ = writeln!(out, "# TYPE aep_relay_{name} {kind}");
            let _ = writeln!(out, "aep_relay_{name} {value}");
        };
        one(
            "events_in_total",
            "counter",
            "Events accepted for fan-out (POST and WebSocket).",
            self.events_in.get(),
        );
        one(
            "duplicates_total",
            "counter",
            "Events not buffered again: same (source, id) already held.",
            self.duplicates.get(),
        );
        one(
            "delivered_total",
            "counter",
            "Events queued toward subscribers.",
            self.delivered.get(),
        );
        one(
            "commands_routed_total",
            "counter",
            "Commands forwarded to their one owner.",
            self.commands_routed.get(),
        );
        one(
            "disconnected_total",
            "counter",
            "Consumers cut off at the hard queue bound.",
            self.disconnected_backpressure.get(),
        );
        one(
            "websocket_connections",
            "gauge",
            "Open WebSocket connections.",
            self.websockets.get(),
        );
        one("sse_streams", "gauge", "Open SSE streams.", self.sse.get());
        one(
            "subscriptions",
            "gauge",
            "Live subscriptions (SSE and WebSocket).",
            self.subscriptions.get(),
        );
        one(
            "sessions",
            "gauge",
            "Sessions with a replay buffer.",
            self.sessions.get(),
        );
        one(
            "buffered_events",
            "gauge",
            "Events held in replay buffers.",
            self.buffered_events.get(),
        );
        one(
            "buffered_bytes",
            "gauge",
            "Bytes held in replay buffers.",
            self.buffered_bytes.get(),
        );
        one(
            "queued_bytes",
            "gauge",
            "Bytes queued toward all consumers (bounded by --max-queued-bytes).",
            self.queued.held() as u64,
        );
        one(
            "command_bytes",
            "gauge",
            "Bytes of commands waiting in all command queues (bounded by --max-command-bytes).",
            self.commands.held() as u64,
        );
        one(
            "state_bytes",
            "gauge",
            "Bytes of WebSocket connections' hellos, subscriptions and remembered positions (bounded by --max-state-bytes).",
            self.state.held() as u64,
        );
        let _ = writeln!(
            out,
            "# HELP aep_relay_dropped_total Events not delivered to a subscriber, by reason."
        );
        let _ = writeln!(out, "# TYPE aep_relay_dropped_total counter");
        let _ = writeln!(
            out,
            "aep_relay_dropped_total{{reason=\"backpressure\"}} {}",
            self.dropped_backpressure.get()
        );
        let _ = writeln!(
            out,
            "# HELP aep_relay_refused_total Requests, frames and connections refused, by reason."
        );
        let _ = writeln!(out, "# TYPE aep_relay_refused_total counter");
        for why in Refusal::ALL {
            let _ = writeln!(
                out,
                "aep_relay_refused_total{{reason=\"{}\"}} {}",
                why.label(),
                self.refused[why as usize].get()
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_family_once() {
        let m = Metrics::default();
        m.refuse(Refusal::InvalidFilter);
        m.refuse(Refusal::InvalidFilter);
        m.dropped_backpressure.add(3);
        let text = m.render();
        assert!(text.contains("aep_relay_refused_total{reason=\"invalid-filter\"} 2"));
        assert!(text.contains("aep_relay_dropped_total{reason=\"backpressure\"} 3"));
        for line in text.lines().filter(|l| l.starts_with("# TYPE")) {
            let name = line.split(' ').nth(2).unwrap();
            assert_eq!(
                text.matches(&format!("# TYPE {name} ")).count(),
                1,
                "{name}"
            );
        }
    }
}
