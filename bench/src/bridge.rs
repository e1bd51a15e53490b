//! The bridge rows: each AEP-0005 bridge over the decoded corpus, output
//! encoded to JSON as `aep convert` prints it.

use std::hint::black_box;

use aep::bridge::{cloudevents, ocsf, otlp};
use aep_types::Event;

use crate::Measurement;

/// One row per bridge direction, over already-decoded events (compare
/// with the `encode` row, which writes the same events back as AEP).
pub(crate) fn measurements(events: &[Event]) -> Vec<Measurement<'_>> {
    // The CloudEvents the inverse row reads, as a broker delivers them.
    let cloudevents: Vec<String> = events
        .iter()
        .filter_map(|e| cloudevents::forward(e).ok())
        .map(|ce| serde_json::to_string(&ce).expect("a CloudEvent encodes"))
        .collect();
    let mut buffer1 = Vec::with_capacity(64 * 1024);
    let mut buffer2 = Vec::with_capacity(64 * 1024);
    let mut buffer3 = Vec::with_capacity(64 * 1024);
    let otlp_options = otlp::Options::default();
    let ocsf_options = ocsf::Options::default();
    vec![
        Measurement {
            name: "ce_forward",
            what: "cloudevents::forward + CloudEvent to JSON",
            run: Box::new(move || {
                for event in events {
                    if let Ok(ce) = cloudevents::forward(event) {
                        buffer1.clear();
                        serde_json::to_writer(&mut buffer1, &ce).unwrap();
                        black_box(&buffer1);
                    }
                }
            }),
        },
        Measurement {
            name: "ce_inverse",
            what: "CloudEvent JSON decode + cloudevents::inverse",
            run: Box::new(move || {
                for text in &cloudevents {
                    let ce: cloudevents::CloudEvent = serde_json::from_str(text).unwrap();
                    black_box(cloudevents::inverse(&ce).unwrap());
                }
            }),
        },
        Measurement {
            name: "otlp",
            what: "otlp::to_log_record (max_capture metadata) + to JSON",
            run: Box::new(move || {
                for event in events {
                    if let Ok(record) = otlp::to_log_record(event, &otlp_options) {
                        buffer2.clear();
                        serde_json::to_writer(&mut buffer2, &record).unwrap();
                        black_box(&buffer2);
                    }
                }
            }),
        },
        Measurement {
            name: "ocsf",
            what: "ocsf::project (max_capture metadata) + to JSON, per corpus event",
            run: Box::new(move || {
                for event in events {
                    if let Ok(Some(record)) = ocsf::project(event, &ocsf_options) {
                        buffer3.clear();
                        serde_json::to_writer(&mut buffer3, &record).unwrap();
                        black_box(&buffer3);
                    }
                }
            }),
        },
    ]
}
