//! `aep emit` on the events an adapter may hand it: levels it must not
//! raise, events without `data`.

use crate::common;

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

/// The bytes the binary writes do not depend on how it was built: free-form
/// objects (here `args`, unknown payload members and the members of
/// `tool` the schema does not describe) are written in name order, the
/// envelope in its fixed order with extension attributes after `data` in
/// name order. Only the opt-in `preserve_order` feature keeps input order.
#[test]
fn the_member_order_written_is_pinned() {
    let input = format!(
        r#"{{"aep":"0.1","id":"e1","type":"tool.requested",{H},"seq":1,"zz":"last","aa":"first","data":{{"zeta":1,"tool":{{"name":"Bash","y":2,"b":3}},"args":{{"b":1,"a":{{"d":1,"c":2}}}},"alpha":2}}}}"#
    );
    let out = run(&["emit", "--ceiling", "full", "-"], Some(input.as_bytes()));
    assert_eq!(out.code, 0, "{out:?}");
    let expected = concat!(
        r#"{"aep":"0.1","id":"e1","type":"tool.requested","time":"2026-12-03T09:00:00Z","#,
        r#""source":"urn:a","agent":"a","session":"s","seq":1,"capture":"full","#,
        r#""data":{"alpha":2,"args":{"a":{"c":2,"d":1},"b":1},"#,
        r#""args_digest":"b6cb1b7b79793877cd08cdf90d45801f","tool":{"b":3,"name":"Bash","y":2},"#,
        r#""zeta":1},"aa":"first","zz":"last"}"#,
        "\n"
    );
    if cfg!(feature = "preserve_order") {
        let got: Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(got, serde_json::from_str::<Value>(expected).unwrap());
    } else {
        assert_eq!(out.stdout, expected);
    }
}
