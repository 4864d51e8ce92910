//! Scenarios of the commands that read what `preload install` wrote: `preload doctor` (the
//! wiring, binaries, rules, locks and states), `preload status` and `preload report`.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use serde_json::{Value, json};

use super::install::{bare_with_settings, bash_entry, built, engine_settings, preload};
use crate::cli::assert_says;
use preload_test_support::files::assert_contents;
use preload_test_support::sandbox::{Sandbox, read_json};

fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[test]
fn doctor_flags_double_wiring_stale_locks_and_corrupt_state() {
    let sb = Sandbox::new();
    let prefix = sb.root().join("bin");
    let prefix_s = prefix.to_str().unwrap();
    let settings = sb.project.join(".claude/settings.local.json");
    assert_eq!(preload(&sb, &["install", "--prefix", prefix_s]).code, 0);

    let clean = preload(&sb, &["doctor", "--prefix", prefix_s]);
    assert_eq!(
        clean.code, 0,
        "a fresh install is healthy:\n{}",
        clean.stdout
    );

    // The bash guard engine wired again next to the native one, and a second native copy.
    let mut doc = read_json(&settings);
    let pre = doc["hooks"]["PreToolUse"][0]["hooks"]
        .as_array_mut()
        .unwrap();
    pre.push(bash_entry("pre-tool-use-overflow-v2.sh"));
    doc["hooks"]["PostToolUse"]
        .as_array_mut()
        .unwrap()
        .push(json!({"matcher": "*", "hooks": [{"type": "command", "command": "/elsewhere/preload-injections", "args": [], "timeout": 5}]}));
    fs::write(&settings, serde_json::to_string_pretty(&doc).unwrap()).unwrap();

    // A lock left by a dead writer, and a corrupt state file.
    let lock = sb.sessions.join("2026_01_01_A/.state.json.lock");
    fs::create_dir_all(&lock).unwrap();
    fs::write(lock.join("pid"), format!("{}\n", dead_pid())).unwrap();
    let corrupt = sb.sessions.join("2026_01_02_B/.state.json");
    fs::create_dir_all(corrupt.parent().unwrap()).unwrap();
    fs::write(&corrupt, "{\"pid\": 1, \"preloadedFiles\": [").unwrap();

    let out = preload(&sb, &["doctor", "--prefix", prefix_s]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let text = out.stdout;
    for finding in [
        "preload-overflow (PreToolUse, matcher *) is wired natively and through the bash hook pre-tool-use-overflow-v2.sh".to_owned(),
        "preload-injections (PostToolUse, matcher *) is wired twice".to_owned(),
        format!("lock: {} is stale", lock.display()),
        format!("state: {} is corrupt", corrupt.display()),
    ] {
        assert!(text.contains(&finding), "{finding:?} missing from:\n{text}");
    }
    assert!(
        text.matches("hint:").count() >= 4,
        "a hint for each finding: {text}"
    );
    assert_contents(
        &corrupt,
        "{\"pid\": 1, \"preloadedFiles\": [",
        "left untouched",
    );
    assert!(lock.join("pid").exists(), "doctor changes nothing");
}

#[test]
fn doctor_reports_missing_binaries_and_bad_rules() {
    let sb = Sandbox::new();
    fs::write(
        sb.home.join(".claude/engine/guards.json"),
        "{\"not\": \"an array\"}",
    )
    .unwrap();
    let out = preload(
        &sb,
        &[
            "doctor",
            "--prefix",
            sb.root().join("nowhere").to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 1);
    assert_says(
        &out.stdout,
        &[
            "preload-overflow missing",
            "is JSON but not an array",
            "is not wired",
        ],
    );
}

#[test]
fn status_shows_the_session_files_and_cost() {
    let sb = Sandbox::new();
    let standard = sb.engine_path("COMMANDS.md");
    let queued = sb.engine_path("commands/CMD_ASK_ROUND.md");
    sb.active_session(
        "2026_01_01_S",
        &json!({"currentPhase": "1: Interrogation", "preloadedFiles": [standard], "pendingPreloads": [queued],
                "toolCallsSinceLastLog": 4, "toolCallsByTranscript": {"t1": 3},
                "preloadParts": {"/e/long.md": 2},
                "pendingAllowInjections": [{"ruleId": "preload", "content": "abcd", "agentId": ""}]}),
    );
    let out = preload(&sb, &["status", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["kind"], "session");
    assert_eq!(v["lifecycle"], "active");
    assert_eq!(v["phase"], "1: Interrogation");
    assert_eq!(v["counters"]["toolCallsSinceLastLog"], 4);
    assert_eq!(v["counters"]["toolCallsByTranscript"], json!({"t1": 3}));
    assert_eq!(v["parts"], json!({"/e/long.md": 2}));
    let size = fs::metadata(&standard).unwrap().len();
    assert_eq!(v["preloaded"], json!([{"path": standard, "bytes": size}]));
    assert_eq!(v["pending"][0]["path"], json!(queued));
    assert_eq!(
        v["stashed"],
        json!([{"ruleId": "preload", "agentId": "", "chars": 4}])
    );
    let chars = fs::read_to_string(&standard)
        .unwrap()
        .trim_end_matches('\n')
        .chars()
        .count();
    assert_eq!(v["contextChars"], chars);
    assert_eq!(v["estimatedTokens"], chars / 4);
    let human = preload(&sb, &["status"]);
    assert_says(
        &human.stdout,
        &[
            "phase:     1: Interrogation",
            "counters:  since last log 4, by transcript t1 3",
            "partly delivered: /e/long.md (2 parts out)",
        ],
    );
}

#[test]
fn report_counts_a_known_log() {
    let sb = Sandbox::bare();
    let line = |hook: &str, event: &str, file: &str| {
        json!({"ts": "2026-01-01T00:00:00Z", "hook": hook, "event": event, "file": file, "source": "s",
               "toolCall": 1, "sessionExists": true, "dedupResult": "new"})
        .to_string()
    };
    let log = [
        line("session-start", "seed", "/e/COMMANDS.md"),
        line("templates", "direct-deliver", "/e/CMD_A.md"),
        line("templates", "direct-deliver", "/s/SKILL.md"),
        // The guard engine as older logs name it (`overflow`): reported as `guards`.
        line("overflow", "queue-pending", "/e/CMD_B.md"),
        line("overflow", "claim-deliver", "/e/CMD_B.md"),
        line("injections", "claim-deliver", "/e/CMD_A.md"),
        line("phase-commands", "skip-dedup", "/e/CMD_A.md"),
        line("overflow", "skip-inode", "/e/CMD_C.md"),
    ]
    .join("\n");
    let path = sb.root().join("log.jsonl");
    fs::write(&path, log).unwrap();
    let out = preload(&sb, &["report", path.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let t = out.stdout;
    assert!(t.contains("Total delivery events: 8"), "{t}");
    assert!(t.contains("Unique files delivered: 3"), "{t}");
    assert!(t.contains("Duplicate deliveries: 1"), "{t}");
    assert!(t.contains("Dedup skips: 2"), "{t}");
    assert!(t.contains("  templates: 2\n"), "{t}");
    assert!(
        t.contains("  guards: 1\n") && t.contains("  injections: 1\n"),
        "{t}"
    );
    assert!(
        t.contains("/e/CMD_A.md: 2x via templates, injections"),
        "{t}"
    );
    // Default: $PRELOAD_TEST_LOG.
    fs::copy(&path, &sb.log).unwrap();
    assert_eq!(preload(&sb, &["report"]).stdout, t);
}

#[test]
fn report_without_a_log_is_a_usage_error() {
    let sb = Sandbox::bare();
    let out = sb
        .command("preload")
        .env_remove("PRELOAD_TEST_LOG")
        .arg("report")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let missing = preload(
        &sb,
        &["report", Path::new("/nonexistent/log").to_str().unwrap()],
    );
    assert_eq!(missing.code, 1);
}

#[test]
fn doctor_after_uninstall_names_each_missing_registration_once() {
    let sb = Sandbox::bare();
    fs::write(
        sb.project.join(".claude/settings.local.json"),
        engine_settings(),
    )
    .unwrap();
    let prefix = built();
    assert_eq!(
        preload(&sb, &["install", "--prefix", prefix.to_str().unwrap()]).code,
        0
    );
    assert_eq!(preload(&sb, &["uninstall"]).code, 0);
    let out = preload(&sb, &["doctor", "--prefix", prefix.to_str().unwrap()]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    // Each registration its own line: the ones with no bash hook to fall back on, and the
    // ones the engine's bash hooks serve again.
    let missing: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.contains("is not wired") || l.contains("still runs the engine's bash hook"))
        .collect();
    let distinct: BTreeSet<&str> = missing.iter().copied().collect();
    assert_eq!(distinct.len(), missing.len(), "a line twice: {missing:#?}");
    assert!(missing.len() >= 8, "{}", out.stdout);
    assert!(
        missing.iter().any(|l| l.contains(
            "preload-compaction-reread register (PostToolUse, matcher Skill) is not wired"
        )),
        "{missing:#?}"
    );
    let templates = missing
        .iter()
        .filter(|l| l.contains("preload-templates (PostToolUse"))
        .count();
    assert!(
        templates >= 2,
        "each of the templates' registrations: {missing:#?}"
    );
}

#[test]
fn doctor_names_a_broken_settings_file_once_with_what_is_wrong_and_nothing_after_it() {
    let (sb, settings) = bare_with_settings();
    let prefix = built();
    let prefix_s = prefix.to_str().unwrap();
    assert_eq!(preload(&sb, &["install", "--prefix", prefix_s]).code, 0);
    let installed = fs::read_to_string(&settings).unwrap();
    // A trailing comma before the last brace, as an edit by hand leaves it.
    let broken = format!(
        "{},\n}}\n",
        installed.trim_end().trim_end_matches('}').trim_end()
    );
    fs::write(&settings, &broken).unwrap();
    let refused = preload(&sb, &["install", "--prefix", prefix_s]);
    assert_eq!(refused.code, 1);
    let out = preload(&sb, &["doctor", "--prefix", prefix_s]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let settings_lines: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.contains("settings:"))
        .collect();
    assert_eq!(settings_lines.len(), 1, "one finding: {}", out.stdout);
    assert!(
        settings_lines[0].contains("is not valid JSON (trailing comma at line"),
        "the parse error install names: {}",
        out.stdout
    );
    assert!(!out.stdout.contains("is not wired"), "{}", out.stdout);
    assert!(
        !out.stdout.contains("run `preload install`"),
        "{}",
        out.stdout
    );
    assert_contents(&settings, &broken, "doctor changes nothing");
}

#[test]
fn status_prints_no_raw_nulls_and_names_no_project_without_a_claude_directory() {
    let sb = Sandbox::new();
    sb.active_session("2026_01_01_S", &json!({"currentPhase": "1: Interrogation"}));
    let human = preload(&sb, &["status"]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    assert!(!human.stdout.contains("null"), "{}", human.stdout);
    assert!(
        human
            .stdout
            .contains("counters:  since last log -, by transcript -"),
        "{}",
        human.stdout
    );

    // A directory with no `.claude/` above it is no project, as `doctor` says.
    let bare = tempfile::tempdir().unwrap();
    let out = sb
        .command("preload")
        .arg("status")
        .current_dir(bare.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains(&format!(
            "project:   none (no .claude/ above {}",
            bare.path().display()
        )),
        "{text}"
    );
    let json_out = sb
        .command("preload")
        .args(["status", "--json"])
        .current_dir(bare.path())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&json_out.stdout).unwrap();
    assert!(v["project"].is_null(), "{v}");
}

/// Hooks wired into a directory that went (an npm package's, after `npm update`) are named by
/// doctor, which fails.
#[test]
fn doctor_names_hooks_wired_to_a_missing_binary() {
    let sb = Sandbox::new();
    let gone = sb.root().join("node_modules/@preload-hooks/linux-x64/bin");
    let out = preload(&sb, &["install", "--prefix", gone.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let before = preload(&sb, &["doctor", "--prefix", gone.to_str().unwrap()]);
    assert!(
        !before.stdout.contains("wired to a missing binary"),
        "{}",
        before.stdout
    );
    fs::remove_dir_all(sb.root().join("node_modules")).unwrap();
    let out = preload(&sb, &["doctor"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("hooks wired to a missing binary: "))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(
        line.contains(&gone.join("preload-overflow").display().to_string()),
        "{line}"
    );
}
