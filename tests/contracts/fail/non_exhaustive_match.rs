//! `Payload` is exhaustive: a match that forgets variants does not compile.

use aep_types::Payload;

fn kind(payload: &Payload) -> &'static str {
    match payload {
        Payload::ToolRequested(_) => "tool",
        Payload::Untyped(_) => "untyped",
    }
}

fn main() {
    let _ = kind;
}
