//! The browser UI's pure JavaScript modules (the fold, form checks,
//! answer building, the SSE parser) under Node's test runner
//! (`node --test`), so they run with `cargo test` and in CI.
//!
//! Without Node this test fails, saying so; `AEP_SKIP_NODE_TESTS=1` opts
//! out explicitly (and says that it did).

use std::path::Path;
use std::process::Command;

#[test]
fn the_ui_modules_pass_their_node_tests() {
    if std::env::var("AEP_SKIP_NODE_TESTS").as_deref() == Ok("1") {
        eprintln!("SKIPPED the UI's Node tests: AEP_SKIP_NODE_TESTS=1 opts out");
        return;
    }
    let node = std::env::var("AEP_NODE").unwrap_or_else(|_| "node".to_owned());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".test.mjs"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 4,
        "the UI's Node tests are missing from {}",
        dir.display()
    );
    let output = Command::new(&node)
        .arg("--test")
        .args(&files)
        .output()
        .unwrap_or_else(|e| {
            panic!("the UI's JavaScript tests need Node 20 or later (`{node}`: {e}); install nodejs, point AEP_NODE at it, or set AEP_SKIP_NODE_TESTS=1 to skip them")
        });
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "node --test failed:\n{stdout}\n{stderr}"
    );
    // Every file ran, and something passed.
    let passed = stdout
        .lines()
        .find_map(|l| l.strip_prefix("# pass "))
        .and_then(|n| n.trim().parse::<u32>().ok())
        .unwrap_or(0);
    assert!(
        passed >= 20,
        "node ran only {passed} passing tests:\n{stdout}"
    );
    println!("{} UI modules' Node tests passed", passed);
}
