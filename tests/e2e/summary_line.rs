//! The line that ends `make test` and `make e2e` (`tests/e2e/summary.sh`): how many scenarios
//! ran and, for the others, each reason once with its count.

use std::fs;
use std::process::Command;

use preload_test_support::sandbox::repo;

/// The reason the opt-in real-engine scenarios give, which names no missing client.
const ENGINE_NOT_SET: &str = "PRELOAD_E2E_ENGINE is not set";

/// The line `summary.sh` prints for scenarios that left `records` (name, first line).
fn summary(records: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    for (name, outcome) in records {
        fs::write(dir.path().join(name), format!("{outcome}\n")).unwrap();
    }
    let out = Command::new("bash")
        .arg(repo().join("tests/e2e/summary.sh"))
        .arg(dir.path())
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    assert!(out.status.success(), "summary.sh failed: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim_end().to_owned()
}

#[test]
fn the_summary_counts_each_reason_once_and_parts_them_with_a_semicolon_and_a_space() {
    let client = "the Claude Code client is not installed";
    let line = summary(&[
        ("a", "ran"),
        ("b", &format!("skipped: {ENGINE_NOT_SET}")),
        ("c", &format!("skipped: {client}")),
        ("d", &format!("failed: {client}")),
    ]);
    assert_eq!(
        line,
        format!(
            "e2e: 1 of 4 end-to-end scenarios ran; 3 did not: {ENGINE_NOT_SET} (1); {client} (2). \
             To run them: make e2e-setup (installs the pinned clients into .e2e/), then make test"
        )
    );
}

#[test]
fn the_summary_names_the_setup_only_when_the_client_is_missing_and_says_when_all_ran() {
    assert_eq!(
        summary(&[("a", "ran"), ("b", &format!("skipped: {ENGINE_NOT_SET}"))]),
        format!("e2e: 1 of 2 end-to-end scenarios ran; 1 did not: {ENGINE_NOT_SET} (1).")
    );
    assert_eq!(
        summary(&[("a", "ran"), ("b", "ran")]),
        "e2e: all 2 end-to-end scenarios ran against the real clients (Claude Code and the Codex CLI)"
    );
}
