//! The filter's legal and illegal cases, from AEP-0003 §6.1 to §6.2 and
//! the envelope rules of AEP-0001 §5.

use super::*;

/// An event from its JSON members beyond the required ones.
fn event(extra: &str) -> Event {
    let base = r#""aep":"0.1","id":"e1","time":"2026-12-01T10:00:00Z","source":"aep://h/agent/claude-code/session/s1","agent":"claude-code""#;
    let text = format!("{{{base},{extra}}}");
    Event::from_json(&text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn session_event(type_: &str, extra: &str) -> Event {
    let sep = if extra.is_empty() { "" } else { "," };
    event(&format!(
        r#""type":"{type_}","session":"s_8f2c","seq":3{sep}{extra}"#
    ))
}

fn filter(json: &str) -> Filter {
    Filter::parse(json).unwrap_or_else(|e| panic!("{json}: {e}"))
}

fn refused(json: &str) -> FilterError {
    match Filter::parse(json) {
        Ok(f) => panic!("{json} was accepted as {f:?}"),
        Err(e) => e,
    }
}

#[test]
fn the_empty_filter_matches_every_event() {
    let f = filter("{}");
    assert!(f.is_empty());
    assert!(f.matches(&session_event("tool.denied", "")));
    assert!(Filter::all().matches(&event(r#""type":"agent.started""#)));
}

#[test]
fn the_section_6_3_examples_parse_and_match() {
    let attention =
        filter(r#"{ "type": ["attention.*", "error.*"], "severity": { "gte": "notice" } }"#);
    assert!(attention.matches(&session_event(
        "attention.requested",
        r#""severity":"notice""#
    )));
    assert!(attention.matches(&session_event("error.raised", r#""severity":"critical""#)));
    // Below the bound, and the default `info` is below too.
    assert!(!attention.matches(&session_event(
        "attention.requested",
        r#""severity":"info""#
    )));
    assert!(!attention.matches(&session_event("attention.requested", "")));
    // Type outside both patterns.
    assert!(!attention.matches(&session_event("tool.denied", r#""severity":"error""#)));

    let session = filter(r#"{ "session": "s_8f2c" }"#);
    assert!(session.matches(&session_event("tool.denied", "")));
    assert!(!session.matches(&event(
        r#""type":"tool.denied","session":"s_other","seq":0"#
    )));

    let agents = filter(r#"{ "agent": ["claude-code", "codex"], "type": "tool.denied" }"#);
    assert!(agents.matches(&session_event("tool.denied", "")));
    assert!(!agents.matches(&session_event("tool.requested", "")));
}

#[test]
fn a_type_pattern_needs_something_after_the_dot() {
    let f = filter(r#"{"type": "attention.*"}"#);
    assert!(f.matches(&session_event("attention.requested", "")));
    assert!(f.matches(&session_event("attention.answered", "")));
    // `attention.*` does not match a type that merely starts with `attention`.
    assert!(!f.matches(&AttrsOf(&[("type", AttrValue::Str("attention"))])));
    assert!(!f.matches(&AttrsOf(&[("type", AttrValue::Str("attention."))])));
    assert!(!f.matches(&AttrsOf(&[("type", AttrValue::Str("attentional.x"))])));
    // Vendor types too.
    let vendor = filter(r#"{"type": "x.acme.*"}"#);
    assert!(vendor.matches(&session_event("x.acme.tool.scan", "")));
    assert!(!vendor.matches(&session_event("x.acmecorp.tool.scan", "")));
}

#[test]
fn patterns_are_only_type_globs_of_the_prefix_form() {
    for bad in [
        r#"{"type": "*"}"#,
        r#"{"type": ".*"}"#,
        r#"{"type": "attention*"}"#,
        r#"{"type": "*.requested"}"#,
        r#"{"type": "attention.*.x"}"#,
        r#"{"type": "a.*.*"}"#,
        r#"{"type": ["tool.denied", "*"]}"#,
    ] {
        let e = refused(bad);
        assert_eq!(e.key(), Some("type"), "{bad}");
        assert!(
            matches!(e.reason(), Reason::BadTypePattern(_)),
            "{bad}: {e}"
        );
    }
}

#[test]
fn a_type_pattern_prefix_is_made_of_type_segments() {
    // The segments of a type: lowercase letters, digits, `_` and `-`.
    for good in [
        r#"{"type": "x.acme-corp.*"}"#,
        r#"{"type": "x.acme_2.tool.*"}"#,
        r#"{"type": ["tool.*", "error.*"]}"#,
    ] {
        filter(good);
    }
    for bad in [
        r#"{"type": "Tool.*"}"#,
        r#"{"type": "a..*"}"#,
        r#"{"type": "..*"}"#,
        r#"{"type": "x.acme corp.*"}"#,
        r#"{"type": "tool.é.*"}"#,
        r#"{"type": "tool.**"}"#,
    ] {
        let e = refused(bad);
        assert!(
            matches!(e.reason(), Reason::BadTypePattern(_)),
            "{bad}: {e}"
        );
    }
}

#[test]
fn a_star_on_any_other_attribute_is_refused_not_taken_literally() {
    // A glob outside `type` would match nothing (no literal `*` in an id)
    // or be read as a pattern the dialect does not have: fail closed.
    for (bad, key) in [
        (r#"{"agent": "claude*"}"#, "agent"),
        (r#"{"subject": "read.*"}"#, "subject"),
        (r#"{"session": "*"}"#, "session"),
        (r#"{"agent": ["codex", "claude*"]}"#, "agent"),
        (r#"{"acmeregion": "eu-*"}"#, "acmeregion"),
        (r#"{"type": "tool.*", "source": "aep://h/*"}"#, "source"),
    ] {
        let e = refused(bad);
        assert_eq!(e.key(), Some(key), "{bad}");
        assert!(
            matches!(e.reason(), Reason::PatternNotOnType(_)),
            "{bad}: {e}"
        );
        assert!(e.to_string().contains("only on `type`"), "{bad}: {e}");
    }
    let value = serde_json::json!({"agent": ["codex", "claude*"]});
    assert!(matches!(
        Filter::from_value(&value).unwrap_err().reason(),
        Reason::PatternNotOnType(_)
    ));
    // Without a `*` the same keys are plain equality.
    let plain = filter(r#"{"subject": "read.file"}"#);
    assert!(plain.matches(&session_event("tool.requested", r#""subject":"read.file""#)));
}

#[test]
fn unfilterable_core_attributes_are_refused_with_their_reason() {
    for key in ["time", "seq", "aep", "traceparent", "data"] {
        let e = refused(&format!(r#"{{"{key}": "x"}}"#));
        assert_eq!(e.key(), Some(key));
        assert!(matches!(e.reason(), Reason::NotFilterable(_)), "{e}");
        assert!(e.to_string().contains("not filterable"), "{e}");
    }
}

#[test]
fn every_filterable_core_attribute_is_accepted() {
    for key in FILTERABLE {
        let value = if key == "epoch" { "0" } else { r#""x""# };
        filter(&format!(r#"{{"{key}": {value}}}"#));
    }
}

#[test]
fn unknown_keys_fail_closed_and_legal_extension_names_pass() {
    for key in [
        "Session",
        "x-acme",
        "acme_tenant",
        "",
        "a23456789012345678901",
        "type ",
    ] {
        let e = refused(&format!(r#"{{"{key}": "x"}}"#));
        assert_eq!((e.key(), e.reason()), (Some(key), &Reason::UnknownKey));
    }
    // A legal name no event carries is valid and matches nothing.
    let f = filter(r#"{"acmetenant": "t1"}"#);
    assert!(!f.matches(&session_event("tool.denied", "")));
    assert!(f.matches(&session_event("tool.denied", r#""acmetenant":"t1""#)));
    filter(r#"{"a2345678901234567890": true}"#);
}

#[test]
fn severity_comparisons_take_only_gte_and_lte_with_levels() {
    for (bad, reason) in [
        (
            r#"{"severity": {"gt": "info"}}"#,
            Reason::SeverityOperator("gt".into()),
        ),
        (
            r#"{"severity": {"gte": "info", "eq": "info"}}"#,
            Reason::SeverityOperator("eq".into()),
        ),
        (
            r#"{"severity": {"gte": "warn"}}"#,
            Reason::SeverityLevel("\"warn\"".into()),
        ),
        (
            r#"{"severity": {"lte": 3}}"#,
            Reason::SeverityLevel("3".into()),
        ),
        (r#"{"severity": {}}"#, Reason::EmptySeverityComparison),
    ] {
        let e = refused(bad);
        assert_eq!((e.key(), e.reason()), (Some("severity"), &reason), "{bad}");
    }
    // A comparison on any other attribute is not a predicate.
    let e = refused(r#"{"epoch": {"gte": 1}}"#);
    assert_eq!(e.reason(), &Reason::ComparisonNotOnSeverity);
}

#[test]
fn severity_bounds_are_inclusive_in_the_protocol_order() {
    let band = filter(r#"{"severity": {"gte": "notice", "lte": "error"}}"#);
    let at = |level: &str| session_event("progress.status", &format!(r#""severity":"{level}""#));
    assert!(!band.matches(&at("debug")));
    assert!(!band.matches(&at("info")));
    assert!(band.matches(&at("notice")));
    assert!(band.matches(&at("warning")));
    assert!(band.matches(&at("error")));
    assert!(!band.matches(&at("critical")));
    let upto = filter(r#"{"severity": {"lte": "info"}}"#);
    assert!(upto.matches(&session_event("progress.status", "")));
    assert!(upto.matches(&at("debug")));
    assert!(!upto.matches(&at("notice")));
    // Equality and inclusion on severity compare the (defaulted) value.
    assert!(filter(r#"{"severity": "info"}"#).matches(&session_event("progress.status", "")));
    assert!(filter(r#"{"severity": ["debug", "error"]}"#).matches(&at("error")));
}

#[test]
fn inclusion_arrays_must_hold_scalars_and_not_be_empty() {
    let e = refused(r#"{"agent": []}"#);
    assert_eq!(
        (e.key(), e.reason()),
        (Some("agent"), &Reason::EmptyInclusion)
    );
    for (bad, kind) in [
        (r#"{"agent": null}"#, "null"),
        (r#"{"agent": ["a", null]}"#, "null"),
        (r#"{"agent": [["a"]]}"#, "a nested array"),
        (r#"{"agent": [{"a": 1}]}"#, "an object"),
        (r#"{"epoch": 1.5}"#, "a number that is not an integer"),
        (r#"{"type": [{"gte": "info"}]}"#, "an object"),
        (r#"{"severity": [{"gte": "info"}]}"#, "an object"),
    ] {
        let e = refused(bad);
        assert_eq!(e.reason(), &Reason::NotScalar(kind), "{bad}");
    }
    let e = refused(r#"{"subject": {"eq": "x"}}"#);
    assert_eq!(e.reason(), &Reason::ComparisonNotOnSeverity);
}

#[test]
fn a_filter_is_one_json_object_with_distinct_keys() {
    for bad in ["[]", "\"type\"", "null", "3"] {
        assert_eq!(refused(bad).reason(), &Reason::NotAnObject, "{bad}");
    }
    assert!(matches!(
        refused("{\"type\": ").reason(),
        Reason::NotJson(_)
    ));
    let e = refused(r#"{"agent": "a", "agent": "b"}"#);
    assert_eq!(
        (e.key(), e.reason()),
        (Some("agent"), &Reason::DuplicateKey)
    );
    // The first bad key is the one named.
    assert_eq!(refused(r#"{"Type": 1, "seq": 1}"#).key(), Some("Type"));
}

#[test]
fn equality_is_exact_without_coercion() {
    let e = session_event("tool.denied", r#""epoch":2,"acmeflag":true,"acmen":7"#);
    assert!(filter(r#"{"epoch": 2}"#).matches(&e));
    assert!(!filter(r#"{"epoch": "2"}"#).matches(&e));
    assert!(filter(r#"{"acmeflag": true}"#).matches(&e));
    assert!(!filter(r#"{"acmeflag": "true"}"#).matches(&e));
    assert!(!filter(r#"{"acmeflag": 1}"#).matches(&e));
    assert!(filter(r#"{"acmen": [1, 7]}"#).matches(&e));
    assert!(!filter(r#"{"acmen": "7"}"#).matches(&e));
    // Strings compare by their decoded value, case included.
    assert!(!filter(r#"{"agent": "Claude-Code"}"#).matches(&e));
    assert!(filter(r#"{"agent": "claude\u002dcode"}"#).matches(&e));
}

#[test]
fn absent_attributes_never_match_except_the_three_defaults() {
    let bare = session_event("tool.denied", "");
    for f in [
        r#"{"subject": "x"}"#,
        r#"{"run": ["r1", "r2"]}"#,
        r#"{"step": "s"}"#,
        r#"{"cause": "e0"}"#,
        r#"{"acmetenant": true}"#,
    ] {
        assert!(!filter(f).matches(&bare), "{f}");
    }
    assert!(filter(r#"{"capture": "metadata"}"#).matches(&bare));
    assert!(!filter(r#"{"capture": "full"}"#).matches(&bare));
    assert!(filter(r#"{"epoch": 0}"#).matches(&bare));
    assert!(!filter(r#"{"epoch": 1}"#).matches(&bare));
    // A present value replaces the default.
    let full = session_event("tool.denied", r#""capture":"full","epoch":1"#);
    assert!(!filter(r#"{"capture": "metadata"}"#).matches(&full));
    assert!(filter(r#"{"capture": "full", "epoch": 1}"#).matches(&full));
    // `session` is absent on agent-scoped events: no match.
    assert!(!filter(r#"{"session": "s_8f2c"}"#).matches(&event(r#""type":"agent.started""#)));
}

#[test]
fn every_member_must_match() {
    let f = filter(r#"{"agent": "claude-code", "session": "s_8f2c", "type": "tool.*"}"#);
    assert!(f.matches(&session_event("tool.denied", "")));
    assert!(!f.matches(&event(r#""type":"tool.denied","session":"s_9","seq":0"#)));
    assert_eq!(f.keys().collect::<Vec<_>>(), ["agent", "session", "type"]);
}

#[test]
fn from_value_applies_the_same_rules() {
    let value: Value = serde_json::json!({"seq": 1});
    assert!(matches!(
        Filter::from_value(&value).unwrap_err().reason(),
        Reason::NotFilterable(_)
    ));
    let value: Value = serde_json::json!({"type": "tool.*", "severity": {"gte": "notice"}});
    let from_value = Filter::from_value(&value).unwrap();
    // A `Value` object's key order depends on serde_json's features.
    let mut keys: Vec<&str> = from_value.keys().collect();
    keys.sort_unstable();
    assert_eq!(keys, ["severity", "type"]);
    assert!(from_value.matches(&session_event("tool.denied", r#""severity":"error""#)));
    assert!(!from_value.matches(&session_event("tool.denied", "")));
    assert!(!from_value.matches(&session_event("error.raised", r#""severity":"error""#)));
}

/// A bare attribute list, to match values no valid event carries.
struct AttrsOf<'a>(&'a [(&'a str, AttrValue<'a>)]);

impl Attributes for AttrsOf<'_> {
    fn attr(&self, name: &str) -> Option<AttrValue<'_>> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }
}

#[test]
fn the_borrowed_and_the_owned_event_match_alike() {
    let filters = [
        "{}",
        r#"{"type": ["attention.*", "error.*"], "severity": {"gte": "notice"}}"#,
        r#"{"session": "s_8f2c", "agent": ["claude-code", "codex"]}"#,
        r#"{"capture": "metadata", "epoch": 0}"#,
        r#"{"capture": "full", "epoch": 2}"#,
        r#"{"acmetenant": "t\u0031", "acmeflag": true, "acmen": 7}"#,
        r#"{"subject": "Bash", "cause": "e0", "run": "r1", "step": "p1"}"#,
        r#"{"id": "e1", "source": "aep://h/agent/claude-code/session/s1"}"#,
    ];
    let events = [
        session_event("attention.requested", r#""severity":"error""#),
        session_event(
            "tool.denied",
            r#""subject":"Bash","cause":"e0","run":"r1","step":"p1""#,
        ),
        session_event(
            "error.raised",
            r#""capture":"full","epoch":2,"acmetenant":"t1","acmeflag":true,"acmen":7"#,
        ),
        event(r#""type":"agent.started""#),
    ];
    // With escapes, which the borrowed event must decode.
    let escaped = r#"{"aep":"0.1","id":"e\u0031","time":"2026-12-01T10:00:00Z","source":"aep://h/agent/claude-code/session/s1","type":"tool.denied","session":"s_\u0038f2c","seq":1,"agent":"cod\u0065x","acmetenant":"\u00741"}"#;
    let mut texts: Vec<String> = events
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    texts.push(escaped.to_owned());
    let mut outcomes = std::collections::BTreeSet::new();
    for text in filters {
        let f = filter(text);
        for json in &texts {
            let borrowed = EventRef::from_json(json).unwrap();
            let owned = f.matches(&Event::from_json(json).unwrap());
            assert_eq!(f.matches(&borrowed), owned, "{text} on {json}");
            assert_eq!(f.matches_json(json).unwrap(), owned, "{text} on {json}");
            outcomes.insert(owned);
        }
    }
    assert_eq!(outcomes.len(), 2, "some match and some do not");
    // The escaped event matches by its decoded values.
    let f = filter(r#"{"session": "s_8f2c", "agent": "codex", "acmetenant": "t1", "id": "e1"}"#);
    assert!(f.matches(&EventRef::from_json(escaped).unwrap()));
    assert!(filter("{}").matches_json(r#"{"aep":"0.1"}"#).is_err());
}

#[test]
fn a_long_inclusion_matches_exactly_its_members_and_prefixes() {
    let sessions: Vec<String> = (0..256).map(|n| format!("s{n:03}")).collect();
    let filter = filter(
        &serde_json::json!({
            "session": sessions,
            "type": ["x.acme.*", "tool.*", "run.started", "tool.*"],
            "epoch": [9, 3, 3],
        })
        .to_string(),
    );
    let at = |type_: &str, session: &str, epoch: u64| {
        event(&format!(
            r#""type":"{type_}","session":"{session}","seq":1,"epoch":{epoch}"#
        ))
    };
    assert!(filter.matches(&at("tool.requested", "s000", 3)));
    assert!(filter.matches(&at("run.started", "s255", 9)));
    assert!(filter.matches(&at("x.acme.build.done", "s128", 3)));
    assert!(
        !filter.matches(&at("tool.requested", "s256", 3)),
        "not listed"
    );
    assert!(
        !filter.matches(&at("run.finished", "s000", 3)),
        "another type"
    );
    assert!(
        !filter.matches(&at("x.acmeco.thing", "s000", 3)),
        "a longer segment"
    );
    assert!(
        !filter.matches(&at("tool.requested", "s000", 4)),
        "another epoch"
    );
}
