//! The same conversion to and from the `cloudevents-sdk` crate's
//! [`Event`](cloudevents::Event), for its Kafka, NATS and HTTP bindings
//! (cargo feature `cloudevents`).
//!
//! The SDK holds `time` as a UTC `DateTime`, so the instant survives the
//! trip through it but not always its spelling: an AEP `time` comes back
//! in UTC with `Z` and milliseconds, or 6 or 9 fraction digits when the
//! instant needs them (`.31Z` comes back as `.310Z`, `00Z` as `00.000Z`,
//! `+02:00` as the UTC instant). Every other attribute and `data`
//! come back as they went (`data` as the same JSON value; the SDK does not
//! keep its text).
//!
//! ```
//! use aep::bridge::cloudevents::{from_sdk, to_sdk};
//! use cloudevents::AttributesReader;
//!
//! let event: aep::Event = serde_json::from_str(r#"{"aep":"0.1","id":"e1",
//!     "type":"session.started","time":"2026-11-30T12:00:00.310Z",
//!     "source":"aep://host-a/agent/demo","agent":"demo","session":"s1","seq":0}"#)?;
//! let sdk_event = to_sdk(&event)?;
//! assert_eq!(sdk_event.ty(), "dev.aep.session.started");
//! assert_eq!(from_sdk(&sdk_event)?.event, event);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;

use cloudevents::AttributesReader;

use super::{forward, inverse, CloudEvent, ForwardError, Inbound, InverseError};
use crate::Event;

/// Why a conversion to or from the SDK's `Event` failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SdkError {
    /// The forward mapping refused the event.
    Forward(ForwardError),
    /// The inverse mapping refused the CloudEvent.
    Inverse(InverseError),
    /// The SDK refused the CloudEvent, or gave one the bridge cannot read
    /// (an integer attribute beyond 64 bits, binary data).
    Sdk(String),
}

impl fmt::Display for SdkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SdkError::Forward(e) => e.fmt(f),
            SdkError::Inverse(e) => e.fmt(f),
            SdkError::Sdk(message) => write!(f, "cloudevents-sdk: {message}"),
        }
    }
}

impl std::error::Error for SdkError {}

/// The SDK `Event` of an AEP event: [`forward`], in the SDK's type.
pub fn to_sdk(event: &Event) -> Result<cloudevents::Event, SdkError> {
    let ce = forward(event).map_err(SdkError::Forward)?;
    // The SDK reads the structured JSON format; going through it keeps
    // exactly one definition of the mapping.
    let json = serde_json::to_string(&ce).map_err(|e| SdkError::Sdk(e.to_string()))?;
    serde_json::from_str(&json).map_err(|e| SdkError::Sdk(e.to_string()))
}

/// The AEP event of an SDK `Event`: [`inverse`], from the SDK's type.
pub fn from_sdk(event: &cloudevents::Event) -> Result<Inbound, SdkError> {
    let json = serde_json::to_string(event).map_err(|e| SdkError::Sdk(e.to_string()))?;
    let mut ce: CloudEvent =
        serde_json::from_str(&json).map_err(|e| SdkError::Sdk(e.to_string()))?;
    // Milliseconds, the form most emitters write (JavaScript's
    // `toISOString`), and more digits only when the instant needs them.
    ce.time = event.time().map(|time| {
        let format = if time.timestamp_subsec_nanos() % 1_000_000 == 0 {
            chrono::SecondsFormat::Millis
        } else {
            chrono::SecondsFormat::AutoSi
        };
        time.to_rfc3339_opts(format, true)
    });
    inverse(&ce).map_err(SdkError::Inverse)
}
