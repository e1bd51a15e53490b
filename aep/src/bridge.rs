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
//! both take a `max_capture` ceiling (default `metadata`) and down-level
//! events above it with [`Event::down_level`](crate::Event::down_level)
//! before anything leaves.
//!
//! The CloudEvents and OTLP bridges name AEP types under one exported
//! root, [`TYPE_ROOT`]: `tool.completed` is `dev.aep.tool.completed`.

pub mod cloudevents;
pub mod ocsf;
pub mod otlp;
mod time;

use std::borrow::Cow;

use aep_types::{Capture, Event};

/// `event` at capture `max` at most: the event itself when it is at or
/// below, else its down-levelled copy (the exporters' ceilings).
fn at_most(event: &Event, max: Capture) -> Cow<'_, Event> {
    if event.capture_or_default() > max {
        Cow::Owned(event.down_level(max))
    } else {
        Cow::Borrowed(event)
    }
}

/// The reverse-DNS root AEP types carry outside AEP streams (AEP-0001 §6):
/// the CloudEvents `type` and the OTLP `event_name` are this root followed
/// by the bare AEP type.
pub const TYPE_ROOT: &str = "dev.aep.";
