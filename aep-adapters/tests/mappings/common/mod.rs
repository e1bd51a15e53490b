//! Running a mapping in tests.
#![allow(dead_code)]

use aep::Capture;
use aep_adapters::{Mapper, Mode, Posture, Surface, Vocabulary};
use serde_json::Value;

/// The events `input` maps to, as JSON, at `posture`.
pub fn map_at(
    vocabulary: Vocabulary,
    surface: Option<Surface>,
    posture: Posture,
    input: &Value,
) -> Vec<Value> {
    let mapper = Mapper::new(vocabulary, surface, posture).expect("a known surface");
    mapper
        .map(&input.to_string())
        .unwrap_or_else(|e| panic!("{vocabulary} could not map {input}: {e}"))
        .iter()
        .map(|e| serde_json::to_value(e).expect("an event encodes"))
        .collect()
}

/// The events `input` maps to at the default posture.
pub fn map(vocabulary: Vocabulary, input: &Value) -> Vec<Value> {
    map_at(vocabulary, None, Posture::default(), input)
}

/// The one event `input` maps to at the default posture.
pub fn one(vocabulary: Vocabulary, input: &Value) -> Value {
    let mut events = map(vocabulary, input);
    assert_eq!(events.len(), 1, "one event from {input}: {events:?}");
    events.remove(0)
}

/// The one event at one ceiling for every type.
pub fn one_at(vocabulary: Vocabulary, ceiling: Capture, input: &Value) -> Value {
    let mut events = map_at(vocabulary, None, Posture::uniform(ceiling), input);
    assert_eq!(events.len(), 1, "one event from {input}: {events:?}");
    events.remove(0)
}

/// The events in a mode (companion or primary) on a surface.
pub fn map_mode(
    vocabulary: Vocabulary,
    surface: Option<Surface>,
    mode: Mode,
    input: &Value,
) -> Vec<Value> {
    map_at(vocabulary, surface, Posture::default().mode(mode), input)
}

/// Why `input` cannot be mapped at the default posture.
pub fn error(vocabulary: Vocabulary, input: &Value) -> String {
    let mapper = Mapper::new(vocabulary, None, Posture::default()).expect("a known surface");
    match mapper.map(&input.to_string()) {
        Ok(events) => panic!("{input} mapped to {events:?}"),
        Err(e) => e.to_string(),
    }
}
