//! Decoding a plain event (no escapes, few extension attributes) into an
//! `EventRef` and reading its attributes does not allocate. Alone in its
//! binary: the counting allocator sees every thread.

use aep_bench::alloc;
use aep_types::{Capture, Event, EventRef, Severity};

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

const BASE: &str = r#""aep":"0.1","id":"e1","type":"run.started","time":"2026-11-30T12:00:00Z","source":"urn:aep:agent:t","agent":"t","session":"s","seq":0"#;

#[test]
fn reading_a_plain_event_does_not_allocate() {
    let line = format!(r#"{{{BASE},"severity":"warning","data":{{"trigger":"user"}}}}"#);
    let mut seen = None;
    let growth = alloc::peak_growth(|| {
        let event = EventRef::from_json(&line).expect("valid");
        seen = Some((
            event.type_().starts_with("run."),
            event.severity_or_default() >= Severity::Warning,
            event.capture_or_default(),
            event.dedupe_key() == ("urn:aep:agent:t", "e1"),
            event.session() == Some("s"),
            event.data().map(|d| d.get().len()),
        ));
    });
    assert_eq!(
        seen,
        Some((true, true, Capture::Metadata, true, true, Some(18)))
    );
    assert!(alloc::counting(), "the counting allocator is installed");
    assert_eq!(growth, 0, "decoding and reading allocated {growth} bytes");
    // The same reads on an owned event do allocate: the check can fail.
    let owned = alloc::peak_growth(|| {
        std::hint::black_box(Event::from_json(&line).expect("valid"));
    });
    assert!(owned > 0);
}
