//! `aep sink` against an in-process relay, and its crash story: SIGKILL
//! mid-stream, a torn last line, a restart that is replayed more than it
//! lost, sessions that began while it was down, rotation; afterwards every
//! session's files hold each id once, every `seq` without a gap, and pass
//! `aep validate`. File names stay inside the directory and apart whatever
//! the ids hold.

use crate::common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use common::live::{jsonl, session, spawn, stop, until, Lines, TestRelay, WAIT};

const TOKEN: &str = "sink-test-token";

/// Every `.jsonl` file of `dir`, rotated ones (`<name>.<ts>.jsonl`) before
/// the live one, grouped by the `(source, session)` of their events.
fn captured(dir: &Path) -> BTreeMap<(String, String), Vec<serde_json::Value>> {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    // Rotated files sort by their stamp, and before the live file.
    files.sort_by_key(|n| {
        let parts: Vec<&str> = n.split('.').collect();
        (
            parts[0].to_owned(),
            if parts.len() == 3 {
                parts[1].parse::<u64>().unwrap()
            } else {
                u64::MAX
            },
        )
    });
    let mut by_session: BTreeMap<(String, String), Vec<serde_json::Value>> = BTreeMap::new();
    for name in files {
        let text = std::fs::read_to_string(dir.join(&name)).unwrap();
        assert!(
            text.is_empty() || text.ends_with('\n'),
            "{name} ends with a whole line"
        );
        for line in text.lines() {
            let event: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{name}: a line that is not JSON ({e}): {line}"));
            let key = (
                event["source"].as_str().unwrap().to_owned(),
                event["session"].as_str().unwrap().to_owned(),
            );
            by_session.entry(key).or_default().push(event);
        }
    }
    by_session
}

/// How many events of `session` the files hold, while a sink may be
/// writing and rotating them: a file renamed away meanwhile is skipped,
/// and only whole lines that are events count.
fn count(dir: &Path, session: &str) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().into_string().unwrap();
        if !name.ends_with(".jsonl") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        n += text
            .split_inclusive('\n')
            .filter(|l| l.ends_with('\n'))
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|e| e["session"] == session)
            .count();
    }
    n
}

/// Each session's events: ids once each, seqs 0.. without a gap.
fn assert_whole(dir: &Path, expected: &[(&str, u64)]) {
    let all = captured(dir);
    for (session, n) in expected {
        let events: Vec<&serde_json::Value> = all
            .iter()
            .filter(|((source, s), _)| s == session && source == "urn:aep:test")
            .flat_map(|(_, e)| e)
            .collect();
        let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
        assert_eq!(
            seqs,
            (0..*n).collect::<Vec<_>>(),
            "session {session}: no gap, no repeat, in order"
        );
        let ids: std::collections::HashSet<&str> =
            events.iter().map(|e| e["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len() as u64, *n, "session {session}: no duplicate id");
    }
}

/// `aep validate` on every file of `dir`: exit 0, no findings.
fn assert_valid(dir: &Path) {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path().to_str().unwrap().to_owned())
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    files.sort();
    let mut args = vec!["validate"];
    args.extend(files.iter().map(String::as_str));
    let run = common::run(&args, None);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

fn sink(relay: &TestRelay, dir: &Path, extra: &[&str]) -> (std::process::Child, Lines) {
    let mut args = vec!["sink", "--out", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let mut child = spawn(relay.aep(&args));
    let stderr = Lines::of_stderr(&mut child);
    stderr.until("connected");
    (child, stderr)
}

/// A relay's `attention.routed` (no `seq`) for `session`.
fn routed(session: &str, n: u32) -> String {
    format!(
        r#"{{"aep":"0.1","id":"{session}-routed-{n}","type":"attention.routed","time":"2026-11-30T09:00:00Z","source":"urn:aep:router","agent":"router","session":"{session}","subject":"{session}-e2","data":{{"to":"ops","via":"push"}}}}"#
    )
}

#[test]
fn a_killed_sink_with_a_torn_line_restarts_without_duplicates_or_gaps() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let dir = tempfile::tempdir().unwrap();
    let a = session("urn:aep:test", "sink-a", 0, 120, 0);
    let b = session("urn:aep:test", "sink-b", 0, 30, 0);

    let (mut child, _err) = sink(&relay, dir.path(), &[]);
    relay.post(&a[..50]);
    relay.post(&[routed("sink-a", 1)]);
    relay.post(&a[50..70]);
    until("part of the stream is on disk", || {
        count(dir.path(), "sink-a") >= 40
    });
    // Killed mid-stream: no flush, no state commit.
    assert_eq!(stop(&mut child, "KILL"), None);
    // A write cut by the crash.
    // The agent's file (not the router's, whose name has the same prefix).
    let live = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            name.starts_with("sink-a-")
                && std::fs::read_to_string(p)
                    .unwrap()
                    .contains("\"source\":\"urn:aep:test\"")
        })
        .expect("session a's file");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&live)
        .unwrap()
        .write_all(br#"{"aep":"0.1","id":"sink-a-e9999","type":"progress.sta"#)
        .unwrap();
    // While the sink is down: more of a, all of a new session b.
    relay.post(&a[70..100]);
    relay.post(&b);

    let (mut child, err) = sink(&relay, dir.path(), &[]);
    relay.post(&a[100..]);
    until("everything is on disk", || {
        count(dir.path(), "sink-a") >= 121 && count(dir.path(), "sink-b") >= 30
    });
    assert_eq!(stop(&mut child, "TERM"), Some(0));
    let said = err.rest(std::time::Duration::from_millis(200)).join("\n");
    assert!(!said.contains("error"), "{said}");

    assert_whole(dir.path(), &[("sink-a", 120), ("sink-b", 30)]);
    let all = captured(dir.path());
    let routed = &all[&("urn:aep:router".to_owned(), "sink-a".to_owned())];
    assert_eq!(routed.len(), 1, "the event without a position is kept once");
    assert_valid(dir.path());
    // The state file names every session at its last position.
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join(".sink-state.json")).unwrap())
            .unwrap();
    let sessions = state["sessions"].as_array().unwrap();
    assert!(
        sessions
            .iter()
            .any(|s| s["session"] == "sink-a" && s["seq"] == 119),
        "{state}"
    );
    assert!(
        sessions
            .iter()
            .any(|s| s["session"] == "sink-b" && s["seq"] == 29),
        "{state}"
    );

    // A third start with nothing new writes nothing.
    let before = captured(dir.path());
    let (mut child, _err) = sink(&relay, dir.path(), &[]);
    std::thread::sleep(std::time::Duration::from_millis(800));
    assert_eq!(stop(&mut child, "TERM"), Some(0));
    assert_eq!(captured(dir.path()), before);
}

#[test]
fn rotated_files_and_a_kill_between_rotations_keep_every_event_once() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let dir = tempfile::tempdir().unwrap();
    // About 8 KB per event: a rotation every ~128 events at 1 MiB.
    let c = session("urn:aep:test", "sink-rot", 0, 400, 8000);

    let (mut child, _err) = sink(&relay, dir.path(), &["--rotate-mb", "1"]);
    for chunk in c[..250].chunks(50) {
        relay.post(chunk);
    }
    until("a rotation", || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_str()
                    .unwrap()
                    .matches('.')
                    .count()
                    == 2
            })
            .count()
            >= 1
            && count(dir.path(), "sink-rot") >= 200
    });
    assert_eq!(stop(&mut child, "KILL"), None);
    relay.post(&c[250..300]);
    let (mut child, _err) = sink(&relay, dir.path(), &["--rotate-mb", "1"]);
    relay.post(&c[300..]);
    until("everything is on disk", || {
        count(dir.path(), "sink-rot") >= 400
    });
    assert_eq!(stop(&mut child, "TERM"), Some(0));

    let rotated: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.matches('.').count() == 2 && n.ends_with(".jsonl"))
        .collect();
    assert!(rotated.len() >= 2, "{rotated:?}");
    for name in &rotated {
        let size = std::fs::metadata(dir.path().join(name)).unwrap().len();
        assert!(size >= 1 << 20, "{name} was rotated at the size: {size}");
        let stamp: u64 = name.split('.').nth(1).unwrap().parse().unwrap();
        assert!(stamp > 1_700_000_000, "{name}");
    }
    assert_whole(dir.path(), &[("sink-rot", 400)]);
    assert_valid(dir.path());
    let _ = WAIT;
}

#[test]
fn hostile_session_ids_make_safe_distinct_files() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let dir = tempfile::tempdir().unwrap();
    let ids = [
        "../../escape",
        "a/b",
        "S",
        "s",
        ".hidden",
        "x\u{1b}[2J\u{202e}",
        "",
    ];
    let (mut child, _err) = sink(&relay, dir.path(), &[]);
    let mut all = Vec::new();
    for id in ids.iter().filter(|id| !id.is_empty()) {
        all.extend(session("urn:aep:test", id, 0, 3, 0));
    }
    relay.post(&all);
    until("every session is on disk", || {
        ids.iter()
            .filter(|id| !id.is_empty())
            .all(|id| count(dir.path(), id) >= 3)
    });
    assert_eq!(stop(&mut child, "TERM"), Some(0));
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    assert_eq!(names.len(), ids.len() - 1, "{names:?}");
    for name in &names {
        assert!(!name.starts_with('.'), "{name}");
        assert!(
            name.trim_end_matches(".jsonl")
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name}"
        );
    }
    let lower: std::collections::HashSet<String> = names.iter().map(|n| n.to_lowercase()).collect();
    assert_eq!(
        lower.len(),
        names.len(),
        "apart on a case-insensitive file system too"
    );
    assert!(!dir.path().parent().unwrap().join("escape").exists());
    for ((_, session), events) in captured(dir.path()) {
        assert_eq!(events.len(), 3, "{session:?}");
    }
    let _ = jsonl;
}

#[test]
fn what_another_source_sends_a_session_is_kept_in_the_sessions_file_once() {
    let relay = TestRelay::start(Some(TOKEN), aep_relay::Config::default());
    let dir = tempfile::tempdir().unwrap();
    let (mut child, _err) = sink(&relay, dir.path(), &[]);
    relay.post(&session("urn:aep:test", "s", 0, 3, 0));
    until("the session is on disk", || count(dir.path(), "s") >= 3);
    // An unpositioned event another source addressed to the session (a
    // router's notice here; a person's answer is the same).
    relay.post(&[routed("s", 1)]);
    until("the notice is on disk", || count(dir.path(), "s") >= 4);
    assert_eq!(stop(&mut child, "TERM"), Some(0));
    let files = || -> Vec<String> {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".jsonl"))
            .collect()
    };
    assert_eq!(files().len(), 1, "one file for the session: {:?}", files());
    // Restarted, the sink is replayed what it holds: the notice stays once.
    let (mut child, _err) = sink(&relay, dir.path(), &[]);
    relay.post(&[routed("s", 2)]);
    until("the second notice is on disk", || {
        count(dir.path(), "s") >= 5
    });
    assert_eq!(stop(&mut child, "TERM"), Some(0));
    assert_eq!(files().len(), 1, "{:?}", files());
    let text = std::fs::read_to_string(dir.path().join(&files()[0])).unwrap();
    let ids: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 5, "{ids:?}");
    assert_eq!(ids.iter().filter(|id| id.contains("routed-1")).count(), 1);
    assert_valid(dir.path());
}
