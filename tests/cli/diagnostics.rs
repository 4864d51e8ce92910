//! Scenarios: what the product says about itself. Outputs over their budget are logged and
//! reported; `preload doctor` lists the largest files against the cap and, with `--canary`,
//! runs the binaries end to end; `preload timings` runs hooks in a sandbox and leaves every
//! real file as it was (`preload explain` has its own module).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use preload_cli::install::wiring::{BINARIES, WIRING};
use serde_json::json;

use crate::cli::assert_says;
use preload_test_support::files::{self, Dirs};
use preload_test_support::sandbox::{Answer, Sandbox, strings};

pub(crate) fn preload(sb: &Sandbox, args: &[&str]) -> Answer {
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
fn a_whole_answer_over_the_budget_is_logged_by_the_runner() {
    let mut sb = Sandbox::new();
    sb.active_session("s", &json!({"currentPhase": "1: X"}));
    let text = "Stop and write the log entry first. ".repeat(20);
    fs::write(
        sb.home.join(".claude/engine/guards.json"),
        json!([{"id": "long", "trigger": {"type": "phase", "condition": {"matches": "X"}},
            "payload": {"text": text}, "urgency": "block"}])
        .to_string(),
    )
    .unwrap();
    sb.extra_env
        .push(("PRELOAD_OUTPUT_BUDGET".into(), "200".into()));
    let a = sb.run(
        "preload-overflow",
        json!({"hook_event_name": "PreToolUse", "tool_name": "Grep", "tool_input": {"pattern": "x"}}),
    );
    let size = a.reason().chars().count();
    assert!(size > 200, "a rule's text is never cut: {size}");
    let line = sb
        .events()
        .into_iter()
        .find(|e| e["event"] == "over-budget" && e["hook"] == "guards")
        .unwrap_or_else(|| panic!("no over-budget line: {:?}", sb.events()));
    assert_eq!(line["dedupResult"], format!("output {size}/200"));
    let report = preload(&sb, &["report", sb.log.to_str().unwrap()]);
    assert_says(&report.stdout, &["--- Output budget ---"]);
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
    assert_says(&out.stdout, &["INVARIANTS.md"]);

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
    assert_says(&out.stdout, &["warn  sizes:"]);
    assert_eq!(fs::read_to_string(&big).unwrap().len(), 30_000);
}

/// Every file under `dir` and its bytes (a link, where it points).
pub(crate) fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    files::snapshot(dir, Dirs::Omitted, &[])
        .into_iter()
        .collect()
}

/// Fails with the paths that differ between two snapshots.
pub(crate) fn assert_untouched(
    before: &BTreeMap<PathBuf, Vec<u8>>,
    after: &BTreeMap<PathBuf, Vec<u8>>,
) {
    let differ: Vec<&PathBuf> = before
        .keys()
        .chain(after.keys())
        .filter(|p| before.get(*p) != after.get(*p))
        .collect();
    assert!(differ.is_empty(), "real files changed: {differ:?}");
}

/// The directory of the built binaries.
pub(crate) fn built() -> PathBuf {
    preload_test_support::sandbox::bin("preload")
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A session with one file in context and two queued, one of them already in context.
pub(crate) fn session_with_a_queue(sb: &Sandbox) -> (String, String) {
    let known = sb.engine_path("commands/CMD_REPORT_INTENT.md");
    let fresh = sb.engine_path("commands/CMD_SELECT_MODE.md");
    sb.active_session(
        "s",
        &json!({"currentPhase": "1: Interrogation", "preloadedFiles": [known],
            "pendingPreloads": [known, fresh]}),
    );
    (known, fresh)
}

#[test]
fn timings_time_every_hook_in_a_sandbox_and_leave_the_state_alone() {
    let sb = Sandbox::new();
    session_with_a_queue(&sb);
    let before = snapshot(sb.root());
    let out = preload(
        &sb,
        &[
            "timings",
            "--runs",
            "3",
            "--prefix",
            built().to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("floor: `preload noop`") && l.contains(" ms")),
        "{}",
        out.stdout
    );
    let mut labels = std::collections::BTreeSet::new();
    for row in WIRING {
        // Named as doctor names it: the binary and its arguments, its matcher and its `if`.
        let mut label = std::iter::once(row.binary.to_owned())
            .chain(row.registrations().swap_remove(0))
            .collect::<Vec<_>>()
            .join(" ");
        let tells: Vec<String> = [
            row.matcher.map(|m| format!("matcher {m}")),
            row.filter.map(|f| format!("if {f}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !tells.is_empty() {
            label = format!("{label} ({})", tells.join(", "));
        }
        assert!(labels.insert(label.clone()), "two rows named {label}");
        let line = out
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{label} ")))
            .unwrap_or_else(|| panic!("no line for {label}:\n{}", out.stdout));
        let columns: Vec<&str> = line[label.len()..].split_whitespace().collect();
        assert_eq!(columns[0], row.event.name(), "{line}");
        for number in &columns[1..4] {
            assert!(number.parse::<f64>().is_ok(), "{line}");
        }
        let budget = row.event.default_budget();
        assert_eq!(columns[4], budget.as_millis().to_string(), "{line}");
    }
    assert!(
        out.stdout
            .contains("x floor: a hook's median over the floor's"),
        "the ratio says what it is: {}",
        out.stdout
    );
    assert_untouched(&before, &snapshot(sb.root()));

    // A budget of 0 ms: every hook is over it, and says so.
    let mut tight = Sandbox::new();
    tight
        .extra_env
        .push(("PRELOAD_BUDGET_MS".into(), "0".into()));
    let out = preload(
        &tight,
        &[
            "timings",
            "--runs",
            "1",
            "--prefix",
            built().to_str().unwrap(),
        ],
    );
    assert_eq!(
        out.stdout.matches("OVER BUDGET").count(),
        WIRING.len(),
        "{}",
        out.stdout
    );
    assert!(out.stdout.trim_end().ends_with(&format!(
        "{} hooks over their budget (95th percentile)",
        WIRING.len()
    )));
}

#[test]
fn the_canary_passes_with_the_built_binaries_and_catches_a_broken_one() {
    let sb = Sandbox::new();
    let good = preload(
        &sb,
        &["doctor", "--canary", "--prefix", built().to_str().unwrap()],
    );
    assert!(
        good.stdout.lines().any(|l| l.starts_with("ok    canary: ")),
        "{}",
        good.stdout
    );
    // The same binaries, but a guard hook that answers nothing.
    let broken = sb.root().join("broken");
    fs::create_dir_all(&broken).unwrap();
    for name in BINARIES {
        std::os::unix::fs::symlink(built().join(name), broken.join(name)).unwrap();
    }
    fs::remove_file(broken.join("preload-overflow")).unwrap();
    let script = broken.join("preload-overflow");
    fs::write(&script, "#!/bin/sh\ncat >/dev/null\n").unwrap();
    fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let bad = preload(
        &sb,
        &["doctor", "--canary", "--prefix", broken.to_str().unwrap()],
    );
    assert_eq!(bad.code, 1, "{}", bad.stdout);
    assert_says(
        &bad.stdout,
        &[
            "FAIL  canary: the Read round trips put the marker of src/.directives/AGENTS.md in their answers 0 and 0 times",
        ],
    );
}
