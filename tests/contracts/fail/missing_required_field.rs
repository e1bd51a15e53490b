//! A payload cannot be built without a required member (`tool`): its
//! constructor takes it.

use aep_types::ToolRequested;

fn main() {
    let _payload = ToolRequested::new();
}
