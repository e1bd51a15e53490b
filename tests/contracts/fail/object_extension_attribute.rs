//! Extension attributes are scalars: there is no way to put an object in one.

use aep_types::{Event, ExtensionName, ExtensionValue, Object};

fn main() {
    let mut event = Event::new("e1", "agent.presence", "2026-11-30T12:00:00Z", "urn:aep:agent:t", "t");
    event.extensions.insert(ExtensionName::new("meta").unwrap(), ExtensionValue::Object(Object::new()));
}
