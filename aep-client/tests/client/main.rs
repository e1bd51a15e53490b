//! The client library's integration tests (batching, resume, control,
//! junk peers), each against an in-process relay or a scripted peer on
//! 127.0.0.1, linked as one test binary.

mod common;

mod consume;
mod control;
mod garbage;
mod http;
mod sessions;
