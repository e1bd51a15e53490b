//! The bridges of AEP-0005: AEP events as CloudEvents, as OpenTelemetry
//! log records, and as OCSF security findings.
//!
//! One submodule per target:
//!
//! - [`cloudevents`]: CloudEvents 1.0, JSON format, structured mode, both
//!   ways and lossless (§1, §2): [`cloudevents::forward`] and
//!   [`cloudevents::inverse`]. With the `cloudevents` cargo feature, the
//!   same conversion to and from the `cloudevents-sdk` crate's `Event`.
//! - [`otlp`]: export as OTLP log records (§3): [`otlp::to_log_record`]
//!   gives the log record data model as JSON; with the `otlp-proto` cargo
//!   feature, `opentelemetry-proto`'s `LogRecord` too.
//! - [`ocsf`]: the projection of the security-relevant families onto OCSF
//!   1.8.0 classes (§4): [`ocsf::project`].
//!
//! The OTLP and OCSF directions are egress points of the capture model:
//! both take a `max_capture` ceiling (default `metadata`), and an event
//! above it is exported from its envelope alone: no member of its payload
//! leaves, not even the ones a down-levelled copy would keep, and the
//! record states the event's own `capture` (AEP-0005 §3.3, §4.3, §4.6, as
//! the published conformance pins read them). The event is not rewritten:
//! [`Event::down_level`](crate::Event::down_level) is the rule of a hop
//! that forwards AEP events, not of an exporter.
//!
//! The CloudEvents and OTLP bridges name AEP types under one exported
//! root, [`TYPE_ROOT`]: `tool.completed` is `dev.aep.tool.completed`.

pub mod cloudevents;
pub mod ocsf;
pub mod otlp;
mod time;

pub use time::unix_nanos;

use aep_types::{Capture, Data, Event};

/// The payload an exporter with ceiling `max` may read from `event`: its
/// `data` when the event's capture is at or below the ceiling and above
/// `none`, nothing otherwise.
fn exported_data(event: &Event, max: Capture) -> Option<&Data> {
    let level = event.capture_or_default();
    if level > Capture::None && level <= max {
        event.data.as_ref()
    } else {
        None
    }
}

/// The reverse-DNS root AEP types carry outside AEP streams (AEP-0001 §6):
/// the CloudEvents `type` and the OTLP `event_name` are this root followed
/// by the bare AEP type.
pub const TYPE_ROOT: &str = "dev.aep.";
