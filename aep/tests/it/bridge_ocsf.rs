//! The OCSF projection (AEP-0005 §4, §5.6) against hand-written fixtures,
//! and every record it makes from the corpus against a table of the OCSF
//! 1.8.0 class subset.

use std::path::PathBuf;

use aep::bridge::ocsf::{project, severity_id, Options};
use aep::{Capture, Event, Severity};
use serde_json::Value;

fn read(relative: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json(relative: &str) -> Value {
    serde_json::from_str(&read(relative)).expect("JSON")
}

fn event(value: &Value) -> Event {
    serde_json::from_str(&value.to_string()).expect("a fixture event decodes")
}

fn corpus() -> Vec<Event> {
    read("../tests/fixtures/valid.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a corpus event"))
        .collect()
}

/// The ten types of §4.2, spelled out independently of the code's table.
const PROJECTED: [&str; 10] = [
    "session.started",
    "session.ended",
    "tool.requested",
    "tool.completed",
    "tool.failed",
    "tool.denied",
    "attention.requested",
    "attention.answered",
    "attention.resolved",
    "attention.timeout",
];

fn ids(value: &Value) -> Vec<u64> {
    value
        .as_array()
        .expect("an id list")
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

fn names(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .expect("a name list")
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect()
}

/// Checks `record` against the class subset: only attributes of its class
/// (and of the profiles it declares), legal enum ids, the derived
/// `type_uid`, and the pinned version. Returns every problem.
fn conformance_problems(record: &Value, subset: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let class_uid = record["class_uid"].as_u64().unwrap_or(0);
    let Some(class) = subset["classes"].get(class_uid.to_string()) else {
        return vec![format!("class_uid {class_uid} is not in the subset")];
    };
    let activity = record["activity_id"].as_u64().unwrap_or(u64::MAX);
    let declared = |profile: &str| {
        record["metadata"]["profiles"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p == profile))
    };
    let mut allowed = names(&subset["base_attributes"]);
    allowed.extend(names(&class["attributes"]));
    if declared("security_control") {
        allowed.extend(names(&subset["profiles"]["security_control"]));
    }
    for key in record.as_object().expect("a record is an object").keys() {
        if !allowed.contains(&key.as_str()) {
            problems.push(format!("`{key}` is not an attribute of {}", class["name"]));
        }
    }
    if record["category_uid"] != class["category_uid"] {
        problems.push("category_uid".into());
    }
    if !ids(&class["activity_id"]).contains(&activity) {
        problems.push(format!("activity_id {activity}"));
    }
    if record["type_uid"].as_u64() != Some(class_uid * 100 + activity) {
        problems.push("type_uid is not class_uid * 100 + activity_id".into());
    }
    if let Some(status) = record.get("status_id") {
        if !ids(&class["status_id"]).contains(&status.as_u64().unwrap_or(u64::MAX)) {
            problems.push(format!("status_id {status}"));
        }
    }
    if !ids(&subset["severity_id"]).contains(&record["severity_id"].as_u64().unwrap_or(u64::MAX)) {
        problems.push("severity_id".into());
    }
    if let Some(disposition) = record.get("disposition_id") {
        if !ids(&subset["disposition_id"]).contains(&disposition.as_u64().unwrap_or(u64::MAX)) {
            problems.push(format!("disposition_id {disposition}"));
        }
        if !declared("security_control") {
            problems.push("disposition_id without the security_control profile".into());
        }
    }
    if record["metadata"]["version"] != subset["version"] {
        problems.push("metadata.version".into());
    }
    if !record["time"].is_i64() {
        problems.push("time is not an integer".into());
    }
    let objects = [
        ("metadata", &record["metadata"]),
        ("product", &record["metadata"]["product"]),
        ("user", &record["user"]),
        ("session", &record["session"]),
        ("actor", &record["actor"]),
        ("process", &record["process"]),
        ("device", &record["device"]),
        ("finding_info", &record["finding_info"]),
    ];
    for (object, value) in objects {
        let Some(members) = value.as_object() else {
            continue;
        };
        let allowed = names(&subset["objects"][object]);
        for key in members.keys() {
            if !allowed.contains(&key.as_str()) {
                problems.push(format!("`{object}.{key}` is not an OCSF attribute"));
            }
        }
    }
    if let Some(type_id) = record["device"].get("type_id") {
        if !ids(&subset["device_type_id"]).contains(&type_id.as_u64().unwrap_or(u64::MAX)) {
            problems.push("device.type_id".into());
        }
    }
    problems
}

fn subset() -> Value {
    json("tests/fixtures/bridge/ocsf-classes.json")
}

#[test]
fn records_follow_the_class_mapping() {
    let subset = subset();
    let fixtures = json("tests/fixtures/bridge/ocsf.json");
    let mut rows = std::collections::BTreeSet::new();
    for case in fixtures["records"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let max_capture = case
            .get("max_capture")
            .map_or(Capture::Metadata, |c| c.as_str().unwrap().parse().unwrap());
        let e = event(&case["event"]);
        let record = project(&e, &Options { max_capture })
            .unwrap_or_else(|err| panic!("{name}: {err}"))
            .unwrap_or_else(|| panic!("{name}: no record"));
        assert_eq!(record, case["expected"], "{name}");
        assert_eq!(
            conformance_problems(&record, &subset),
            Vec::<String>::new(),
            "{name}"
        );
        rows.insert(e.type_.clone());
    }
    // Every row of the table has a case.
    assert_eq!(rows.len(), PROJECTED.len());
}

#[test]
fn only_the_ten_types_project() {
    let mut types: Vec<String> = corpus().into_iter().map(|e| e.type_).collect();
    types.extend(
        aep::RegisteredType::ALL
            .iter()
            .map(|t| t.as_str().to_owned()),
    );
    types.push("x.acme.tool.completed".into());
    for type_ in types {
        let mut e = Event::new("e", &type_, "2026-11-30T12:00:00Z", "urn:x", "a");
        e.session = Some("s".into());
        let record = project(&e, &Options::default()).expect("projects or not");
        assert_eq!(
            record.is_some(),
            PROJECTED.contains(&type_.as_str()),
            "{type_}"
        );
    }
}

#[test]
fn severity_ids_follow_the_table() {
    let fixtures = json("tests/fixtures/bridge/ocsf.json");
    for row in fixtures["severities"].as_array().unwrap() {
        let severity: Severity = row[0].as_str().unwrap().parse().unwrap();
        assert_eq!(u64::from(severity_id(severity)), row[1].as_u64().unwrap());
        let mut e = Event::new("e", "tool.requested", "2026-11-30T12:00:00Z", "urn:x", "a");
        e.severity = Some(severity);
        let record = project(&e, &Options::default()).unwrap().unwrap();
        assert_eq!(record["severity_id"], row[1]);
        // The original string rides the fidelity carrier.
        assert_eq!(record["unmapped"]["aep"]["severity"], row[0]);
    }
}

#[test]
fn every_corpus_record_conforms_at_every_ceiling() {
    let subset = subset();
    let mut records = 0;
    for e in corpus() {
        for max_capture in Capture::ALL {
            let Some(record) = project(&e, &Options { max_capture }).expect("projects") else {
                continue;
            };
            records += 1;
            let problems = conformance_problems(&record, &subset);
            assert!(
                problems.is_empty(),
                "{} at {max_capture}: {problems:?}",
                e.id
            );
            // The fidelity carrier is the envelope, verbatim.
            let carried: Event = serde_json::from_value(record["unmapped"]["aep"].clone())
                .expect("unmapped.aep is an AEP envelope");
            assert_eq!(carried, e.with_data(None), "{}", e.id);
            // Nothing above the ceiling leaves: the payload is carried,
            // verbatim, only from an event at or below it.
            if let Some(data) = record["unmapped"].get("data") {
                assert!(data.as_object().is_some_and(|d| !d.is_empty()), "{}", e.id);
                assert!(e.capture_or_default() <= max_capture, "{}", e.id);
                assert_ne!(e.capture_or_default(), Capture::None, "{}", e.id);
                let payload = e.data.as_ref().expect("data").to_object().unwrap();
                assert_eq!(data, &Value::Object(payload), "{}", e.id);
            } else if e.capture_or_default() > max_capture {
                if let Some(process) = record.get("process") {
                    assert_eq!(process.get("uid"), None, "{}", e.id);
                }
            }
        }
    }
    assert!(records > 100, "{records}");
}

#[test]
fn the_conformance_check_can_fail() {
    let subset = subset();
    let mut e = Event::new("e", "tool.denied", "2026-11-30T12:00:00Z", "urn:x", "a");
    e.session = Some("s".into());
    let good = project(&e, &Options::default()).unwrap().unwrap();
    assert!(conformance_problems(&good, &subset).is_empty());
    let mut bad = good.clone();
    bad["user"] = serde_json::json!({"name": "a"});
    bad["metadata"].as_object_mut().unwrap().remove("profiles");
    bad["status_id"] = 7.into();
    bad["process"]["nickname"] = "x".into();
    let problems = conformance_problems(&bad, &subset);
    assert_eq!(problems.len(), 5, "{problems:?}");
}

#[test]
fn a_tool_event_without_a_surviving_payload_still_ships() {
    let e: Event = serde_json::from_str(
        r#"{"aep":"0.1","id":"e","type":"tool.completed","subject":"Bash",
            "time":"2026-11-30T12:00:00Z","source":"aep://h/a","agent":"a","session":"s",
            "seq":1,"data":{"tool":{"name":"Bash","call_id":"t1"}}}"#,
    )
    .unwrap();
    let record = project(
        &e,
        &Options {
            max_capture: Capture::None,
        },
    )
    .unwrap()
    .unwrap();
    assert_eq!(record["process"], serde_json::json!({"name": "Bash"}));
    assert!(record["unmapped"].get("data").is_none());
}

#[test]
fn a_bad_time_is_an_error() {
    let e = Event::new("e", "session.started", "noon", "urn:x", "a");
    let error = project(&e, &Options::default()).expect_err("refused");
    assert!(error.to_string().contains("`noon`"), "{error}");
}

/// AEP-0005 §4.3's documented edge and §4.6, as the published pins read
/// them: an event above the projection's ceiling becomes a record made
/// from its envelope alone. No `unmapped.data`, a `process` with the tool
/// name only (no `uid` read from the payload), no disposition read from
/// the payload, and `unmapped.aep` the envelope verbatim, its own
/// `capture` included.
#[test]
fn an_event_above_the_ceiling_is_projected_from_its_envelope_alone() {
    let failed: Event = serde_json::from_str(
        r#"{"aep":"0.1","id":"f1","type":"tool.failed","subject":"Write",
            "time":"2026-11-30T12:00:00Z","source":"aep://h/agent/a","agent":"a",
            "session":"s","seq":4,"severity":"error","capture":"redacted",
            "data":{"tool":{"name":"Write","call_id":"t_3"},"duration_ms":310,
                    "error":{"type":"io_error","message":"ENOSPC writing /srv/out.log"}}}"#,
    )
    .unwrap();
    let dismissed: Event = serde_json::from_str(
        r#"{"aep":"0.1","id":"r1","type":"attention.resolved","subject":"q1",
            "time":"2026-11-30T12:00:01Z","source":"aep://h/agent/a","agent":"a",
            "session":"s","seq":5,"capture":"redacted",
            "data":{"resolution":"dismissed"}}"#,
    )
    .unwrap();
    for max_capture in [Capture::None, Capture::Metadata] {
        let options = Options { max_capture };
        let record = project(&failed, &options).unwrap().unwrap();
        assert_eq!(record["process"], serde_json::json!({"name": "Write"}));
        assert_eq!(
            record["unmapped"],
            serde_json::json!({"aep": {
                "aep": "0.1", "id": "f1", "type": "tool.failed", "subject": "Write",
                "time": "2026-11-30T12:00:00Z", "source": "aep://h/agent/a", "agent": "a",
                "session": "s", "seq": 4, "severity": "error", "capture": "redacted"
            }}),
            "max_capture {max_capture}"
        );
        let record = project(&dismissed, &options).unwrap().unwrap();
        assert_eq!(record.get("disposition_id"), None, "{max_capture}");
        assert_eq!(record["metadata"].get("profiles"), None, "{max_capture}");
    }
    // At the event's own level the payload is read and carried.
    let options = Options {
        max_capture: Capture::Redacted,
    };
    let record = project(&failed, &options).unwrap().unwrap();
    assert_eq!(record["process"]["uid"], "t_3");
    assert_eq!(
        record["unmapped"]["data"]["error"]["message"],
        "ENOSPC writing /srv/out.log"
    );
    let record = project(&dismissed, &options).unwrap().unwrap();
    assert_eq!(record["disposition_id"], 16);
}

/// `device.hostname` is the host alone: a source URI's user information
/// (a password) and port do not leave in it; a tool event with neither a
/// subject nor a call id has no `process` rather than an empty one.
#[test]
fn the_device_is_named_by_its_host_and_an_empty_process_is_left_out() {
    let e = Event::from_json(
        r#"{"aep":"0.1","id":"e1","type":"tool.failed","time":"2026-11-30T12:00:00Z",
            "source":"https://svc:hunter2@relay.example:8443/a","agent":"a","session":"s",
            "seq":1,"data":{"tool":{"name":"Bash"},"error":{"type":"timeout"}}}"#,
    )
    .unwrap();
    let record = project(&e, &Options::default()).unwrap().unwrap();
    assert_eq!(
        record["device"],
        serde_json::json!({"type_id": 0, "hostname": "relay.example"})
    );
    assert!(record.get("process").is_none(), "{record}");
    let text = serde_json::to_string(&record["device"]).unwrap();
    assert!(!text.contains("hunter2"), "{text}");
}
