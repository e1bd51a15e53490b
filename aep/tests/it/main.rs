//! The protocol logic's integration tests (bridges, control, corpora,\n//! redaction, properties), one module each, linked as one test binary.

mod bridge_cloudevents;
mod bridge_never_panics;
mod bridge_ocsf;
mod bridge_otlp;
mod control;
mod corpora;
mod emit;
mod parallel;
mod properties;
mod redact;
mod redact_stream;
