//! A payload cannot be built without a required member (`tool`).

use aep_types::{Object, ToolRequested};

fn main() {
    let _payload = ToolRequested { args_digest: None, args_redacted: None, args: None, extra: Object::new() };
}
