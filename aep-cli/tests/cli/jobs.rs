//! `aep validate --jobs N`: any number of threads prints what one prints,
//! byte for byte, with the same summary and exit status.

use crate::common;

use common::{run, write, EXAMPLE};

fn stream_corpora() -> Vec<String> {
    let dir = common::crate_dir().join("../aep/tests/fixtures/stream");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".jsonl"))
        .map(|name| format!("../aep/tests/fixtures/stream/{name}"))
        .collect();
    names.sort();
    assert!(names.len() > 10);
    names
}

#[test]
fn jobs_1_and_4_print_the_same_on_every_corpus() {
    let mut files = stream_corpora();
    files.push(EXAMPLE.to_owned());
    files.push(common::fixture("errors.jsonl"));
    for format in ["text", "json"] {
        for file in &files {
            let one = run(&["validate", "--format", format, "--jobs", "1", file], None);
            let four = run(&["validate", "--format", format, "--jobs", "4", file], None);
            assert_eq!(
                (four.code, &four.stdout, &four.stderr),
                (one.code, &one.stdout, &one.stderr),
                "{file} ({format})"
            );
        }
    }
    // All files in one run, each its own stream.
    let mut args = vec!["validate", "-j", "1"];
    args.extend(files.iter().map(String::as_str));
    let one = run(&args, None);
    args[2] = "4";
    let four = run(&args, None);
    assert!(one.stdout.lines().count() > 40, "{}", one.stdout);
    assert_eq!(
        (four.code, four.stdout, four.stderr),
        (one.code, one.stdout, one.stderr)
    );
}

#[test]
fn a_large_generated_stream_gives_the_same_output_on_1_and_4_jobs() {
    // 60,000 lines in 9 sessions: beyond one batch, with findings of the
    // per-event checks (a bad seq type, an unregistered type), of the
    // stream rules (seq regressions, redeliveries) and not-JSON lines.
    let mut input = String::new();
    let mut seq = [0i64; 9];
    for n in 0..60_000usize {
        let s = n % 9;
        seq[s] += 1;
        let (type_, at) = match n % 101 {
            0 => ("progress.unlisted", seq[s]),
            1 => ("progress.status", seq[s] - 5),
            _ => ("progress.status", seq[s]),
        };
        let line = format!(
            r#"{{"aep":"0.1","id":"e{n}","type":"{type_}","time":"2026-12-01T10:00:00Z","source":"urn:gen","agent":"gen","session":"s{s}","seq":{at},"data":{{"message":"line {n}"}}}}"#
        );
        input.push_str(&line);
        input.push('\n');
        if n % 997 == 0 {
            input.push_str(&line);
            input.push('\n');
            input.push_str("{\"aep\":\n");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "big.jsonl", input.as_bytes());
    let one = run(&["validate", "--jobs", "1", &path], None);
    let four = run(&["validate", "--jobs", "4", &path], None);
    assert_eq!(one.code, 1);
    assert!(one.stdout.contains("warning[duplicate]"));
    assert!(one.stdout.contains("error[seq-regression]"));
    assert!(one.stdout.contains("error[unregistered-type]"));
    assert!(one.stdout.contains("error[json]"));
    assert_eq!(
        (four.code, &four.stdout, &four.stderr),
        (one.code, &one.stdout, &one.stderr)
    );
    // Standard input too.
    let piped = run(&["validate", "--jobs", "4", "-"], Some(input.as_bytes()));
    assert_eq!(piped.stdout.replace("<stdin>", &path), one.stdout);
    // The most jobs the help names.
    let most = run(&["validate", "--jobs", "64", &path], None);
    assert_eq!(
        (most.code, &most.stdout, &most.stderr),
        (one.code, &one.stdout, &one.stderr)
    );
}

#[test]
fn zero_jobs_is_a_usage_error() {
    let run = run(&["validate", "--jobs", "0", EXAMPLE], None);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--jobs"), "{}", run.stderr);
}

/// The help and the refusal name the same bounds.
#[test]
fn the_jobs_bound_is_the_one_the_help_names() {
    let help = run(&["validate", "--help"], None);
    assert!(help.stdout.contains("from 1 to 64"), "{}", help.stdout);
    for jobs in ["0", "65", "65535"] {
        let out = run(&["validate", "--jobs", jobs, EXAMPLE], None);
        assert_eq!(out.code, 2, "{out:?}");
        assert!(out.stderr.contains("1..=64"), "{}", out.stderr);
    }
}

#[test]
fn threads_the_system_refuses_leave_the_work_to_one_thread() {
    // A minimum stack no system grants makes every thread start fail.
    let corpus = "../aep/tests/fixtures/stream/forms.jsonl";
    let mut command = common::aep();
    command
        .args(["validate", "--jobs", "4", corpus])
        .env("RUST_MIN_STACK", "100000000000000");
    let refused = common::run_command(command, None);
    let one = run(&["validate", "--jobs", "1", corpus], None);
    assert_eq!(
        (refused.code, refused.stdout, refused.stderr),
        (one.code, one.stdout, one.stderr)
    );
}
