//! `aep emit` on the events an adapter may hand it: levels it must not
//! raise, events without `data`.

mod common;

use common::run;
use serde_json::Value;

const H: &str = r#""time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a","session":"s""#;

fn lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn an_event_without_data_is_emitted_not_skipped() {
    let input = format!(
        r#"{{"aep":"0.1","id":"n2","type":"attention.requested",{H},"seq":1,"capture":"none"}}"#
    );
    let check = run(&["validate", "-"], Some(input.as_bytes()));
    assert_eq!(check.code, 0, "{check:?}");
    for ceiling in ["none", "metadata", "redacted", "full"] {
        let out = run(&["emit", "--ceiling", ceiling, "-"], Some(input.as_bytes()));
        assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{ceiling}");
        let events = lines(&out.stdout);
        assert_eq!(events.len(), 1, "{ceiling}: {}", out.stdout);
        assert_eq!(events[0]["id"], "n2");
        assert_eq!(events[0]["capture"], "none", "{ceiling}");
        assert_eq!(events[0].get("data"), None);
    }
}

#[test]
fn the_ceiling_never_raises_a_declared_level() {
    for declared in ["none", "metadata"] {
        let input = format!(
            r#"{{"aep":"0.1","id":"e1","type":"tool.requested",{H},"seq":1,"capture":"{declared}","data":{{"tool":{{"name":"Bash"}}}}}}"#
        );
        let out = run(&["emit", "--ceiling", "full", "-"], Some(input.as_bytes()));
        assert_eq!(out.code, 0, "{out:?}");
        assert_eq!(lines(&out.stdout)[0]["capture"], declared, "{out:?}");
    }
}
