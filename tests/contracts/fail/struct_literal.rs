//! Generated structs are `#[non_exhaustive]` (a schema may gain optional
//! members): user code builds them with `new`, not a struct literal.

use aep_types::{Object, ToolRef};

fn main() {
    let _tool = ToolRef { name: "Bash".into(), call_id: None, extra: Object::new() };
}
