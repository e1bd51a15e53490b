//! The integration tests of the generated types and the file tools, one
//! module per concern, linked as one test binary.

mod bench_smoke;
mod borrowed;
mod capture;
mod capture_tables;
mod conformance;
mod differential;
mod down_level;
mod drift;
mod encode;
mod envelope;
mod fail_loudly;
mod forms;
mod never_panics;
mod reader;
mod validate;
