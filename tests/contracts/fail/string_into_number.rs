//! A number member takes a number, not a string.

use aep_types::ProgressStatus;

fn main() {
    let mut status: ProgressStatus = serde_json::from_str("{}").unwrap();
    status.percent = Some("fifty".to_owned());
}
