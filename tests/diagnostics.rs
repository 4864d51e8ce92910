//! Scenarios: what the product says about itself. Outputs over their budget are logged and
//! reported, `preload doctor` lists the largest files against the cap.

use std::fs;

use serde_json::json;

use crate::common::{Answer, Sandbox, strings};

fn preload(sb: &Sandbox, args: &[&str]) -> Answer {
    sb.run_raw("preload", args, "")
}

#[test]
fn outputs_over_the_budget_are_logged_and_reported() {
    let mut sb = Sandbox::new();
    sb.active_session("s", &json!({"currentPhase": "1: Interrogation"}));
    sb.extra_env
        .push(("PRELOAD_OUTPUT_BUDGET".into(), "1200".into()));
    let a = sb.run(
        "preload-session-start",
        json!({"hook_event_name": "SessionStart", "source": "compact"}),
    );
    a.assert_contract();
    assert!(a.context().chars().count() <= 1200);

    let over: Vec<(String, String)> = sb
        .events()
        .iter()
        .filter(|e| e["event"] == "over-budget")
        .map(|e| {
            (
                e["file"].as_str().unwrap().to_owned(),
                e["dedupResult"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let pending = strings(&sb.state("s"), "pendingPreloads");
    assert!(!pending.is_empty(), "a budget of 1,200 leaves files queued");
    for file in &pending {
        assert!(
            over.iter().any(|(f, _)| f == file),
            "{file} was carried over without a line in the log: {over:?}"
        );
    }
    let commands = sb.engine_path("COMMANDS.md");
    let carried = over
        .iter()
        .filter(|(_, note)| note == "carried-over")
        .count();
    let split = over
        .iter()
        .find(|(f, note)| *f == commands && note.starts_with("split 1-"));
    assert!(
        split.is_some() || over.contains(&(commands.clone(), "carried-over".into())),
        "COMMANDS.md (42 KB) goes out in parts or waits: {over:?}"
    );
    assert!(carried > 0, "{over:?}");

    let report = preload(&sb, &["report", sb.log.to_str().unwrap()]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    let section = report
        .stdout
        .split("--- Output budget ---")
        .nth(1)
        .expect("an output budget section");
    assert!(
        section.contains(&format!("{}: ", pending[0])) && section.contains("carried over"),
        "{}",
        report.stdout
    );
}

#[test]
fn doctor_lists_the_largest_files_against_the_cap() {
    let mut sb = Sandbox::new();
    // A standard of 30,000 characters: one of the largest, in four parts of 8,500.
    let forty = format!("{}\n", "x".repeat(39));
    let big = sb.directive("SIGILS.md", &forty.repeat(750));
    let out = preload(&sb, &["doctor"]);
    let sizes = out
        .stdout
        .lines()
        .skip_while(|l| !l.contains("sizes: the 5 largest"))
        .take(6)
        .collect::<Vec<_>>();
    assert_eq!(sizes.len(), 6, "{}", out.stdout);
    assert!(sizes[0].contains("cap 10,000 characters per output, budget 9,500"));
    let line = sizes.iter().find(|l| l.contains("SIGILS.md")).unwrap();
    assert!(
        line.contains("30,000 chars") && line.contains("(4 parts of at most 8,500)"),
        "{line}"
    );
    assert!(out.stdout.contains("INVARIANTS.md"), "{}", out.stdout);

    // Past the byte limit a file goes out as a pointer: a warning.
    sb.extra_env
        .push(("PRELOAD_MAX_FILE_BYTES".into(), "20000".into()));
    let out = preload(&sb, &["doctor"]);
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("SIGILS.md"))
        .unwrap();
    assert!(line.contains("a pointer, not its content"), "{line}");
    assert!(out.stdout.contains("warn  sizes:"), "{}", out.stdout);
    assert_eq!(fs::read_to_string(&big).unwrap().len(), 30_000);
}
