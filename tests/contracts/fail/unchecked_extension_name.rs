//! An extension attribute name can only be made through its check.

use aep_types::{Event, ExtensionName, ExtensionValue};

fn main() {
    let mut event = Event::new("e1", "agent.presence", "2026-11-30T12:00:00Z", "urn:aep:agent:t", "t");
    event.extensions.insert(ExtensionName("Not Valid".to_owned()), ExtensionValue::Boolean(true));
}
