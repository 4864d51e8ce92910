//! Directive discovery through preload-overflow: the cases of the engine's
//! `test-pre-tool-use-discovery.sh`, the seed doc's discovery edge cases (4.1-4.5) and rapid
//! phase transitions delivered in one batch (6.2).

use std::fs;

use serde_json::{Value, json};

use super::{allowed, bash, call, logged, p, stash};
use preload_test_support::sandbox::{Answer, Sandbox, strings};

/// A session whose skill declares TESTING.md and PITFALLS.md, with no rules (discovery's
/// results stay visible in `pendingPreloads`, as in the engine's suite).
fn quiet_session() -> Sandbox {
    let sb = Sandbox::new();
    fs::remove_file(sb.home.join(".claude/engine/guards.json")).unwrap();
    sb.active_session("s", &json!({"directives": ["TESTING.md", "PITFALLS.md"]}));
    sb.project_file("src/lib/INVARIANTS.md", "# Lib INVARIANTS\n");
    sb.project_file("src/utils/CHECKLIST.md", "# Utils CHECKLIST\n");
    sb
}

/// Run the hook for a parent's `tool` call on the project's file `rel`.
fn touch(sb: &Sandbox, tool: &str, rel: &str) -> Answer {
    call(sb, tool, json!({"file_path": p(sb, rel)}))
}

fn pending(sb: &Sandbox) -> Vec<String> {
    strings(&sb.state("s"), "pendingPreloads")
}

fn touched(sb: &Sandbox) -> serde_json::Map<String, Value> {
    sb.state("s")["touchedDirs"]
        .as_object()
        .cloned()
        .unwrap_or_default()
}

fn ends(list: &[String], suffix: &str) -> bool {
    list.iter().any(|f| f.ends_with(suffix))
}

#[test]
fn only_path_tools_discover() {
    let sb = quiet_session();
    bash(&sb, "ls");
    call(&sb, "Glob", json!({"pattern": "*.ts"}));
    call(&sb, "Read", json!({}));
    assert!(touched(&sb).is_empty());
    call(
        &sb,
        "Glob",
        json!({"pattern": "*.ts", "path": p(&sb, "src/lib")}),
    );
    assert!(touched(&sb).contains_key(&p(&sb, "src/lib")));
    call(
        &sb,
        "Grep",
        json!({"pattern": "TODO", "path": p(&sb, "src/utils")}),
    );
    assert!(
        touched(&sb).contains_key(&p(&sb, "src/utils")),
        "a directory path is used as is"
    );
    for (tool, dir) in [("Read", "a"), ("Edit", "b"), ("Write", "c")] {
        fs::create_dir_all(sb.project.join(dir)).unwrap();
        call(
            &sb,
            tool,
            json!({"file_path": p(&sb, &format!("{dir}/x.ts"))}),
        );
        assert!(touched(&sb).contains_key(&p(&sb, dir)), "{tool}");
    }
}

#[test]
fn walk_up_finds_core_directives_and_records_them() {
    let sb = quiet_session();
    sb.project_file(".directives/COMMANDS.md", "# Project COMMANDS\n");
    touch(&sb, "Read", "src/lib/test.ts");
    let pending = pending(&sb);
    assert!(pending.contains(&p(&sb, "src/lib/INVARIANTS.md")));
    assert!(pending.contains(&p(&sb, ".directives/AGENTS.md")));
    assert!(pending.contains(&p(&sb, ".directives/INVARIANTS.md")));
    assert!(pending.contains(&p(&sb, ".directives/COMMANDS.md")));
    let dirs = touched(&sb);
    assert_eq!(
        dirs[&p(&sb, "src/lib")],
        json!([p(&sb, "src/lib/INVARIANTS.md")])
    );
    assert!(dirs.len() > 1);
    // Same directory again: nothing new.
    touch(&sb, "Read", "src/lib/other.ts");
    assert_eq!(self::pending(&sb), pending);
    let discoveries = sb
        .events()
        .iter()
        .filter(|e| {
            e["event"] == "queue-pending"
                && e["source"]
                    .as_str()
                    .unwrap()
                    .starts_with("directive_discovery(")
        })
        .count();
    assert_eq!(discoveries, 4);
}

#[test]
fn skill_directives_pass_only_when_declared_and_a_checklist_only_for_edits() {
    let sb = quiet_session();
    sb.project_file("src/lib/TESTING.md", "# Lib TESTING\n");
    sb.project_file("src/lib/CONTRIBUTING.md", "# Lib CONTRIBUTING\n");
    touch(&sb, "Edit", "src/lib/test.ts");
    let pending = pending(&sb);
    assert!(pending.contains(&p(&sb, "src/lib/TESTING.md")));
    assert!(!ends(&pending, "CONTRIBUTING.md"));
    // A read finds the declared ones too (seed case 4.1), but never arms a checklist.
    let sb = quiet_session();
    let mut state = sb.state("s");
    state["directives"] = json!(["TESTING.md", "CHECKLIST.md"]);
    fs::write(sb.sessions.join("s/.state.json"), state.to_string()).unwrap();
    sb.project_file("src/lib/TESTING.md", "# Lib TESTING\n");
    sb.project_file("src/lib/CHECKLIST.md", "# Lib CHECKLIST\n");
    touch(&sb, "Read", "src/lib/test.ts");
    let pending = self::pending(&sb);
    assert!(ends(&pending, "TESTING.md"), "declared: {pending:?}");
    assert!(
        !ends(&pending, "CHECKLIST.md"),
        "a checklist waits for an edit"
    );
    assert!(strings(&sb.state("s"), "discoveredChecklists").is_empty());
}

#[test]
fn checklists_are_tracked_once() {
    let sb = quiet_session();
    let mut state = sb.state("s");
    state["directives"] = json!(["CHECKLIST.md"]);
    fs::write(sb.sessions.join("s/.state.json"), state.to_string()).unwrap();
    touch(&sb, "Edit", "src/utils/test.ts");
    assert_eq!(
        strings(&sb.state("s"), "discoveredChecklists"),
        vec![p(&sb, "src/utils/CHECKLIST.md")]
    );
    let mut state = sb.state("s");
    state["touchedDirs"] = json!({});
    fs::write(sb.sessions.join("s/.state.json"), state.to_string()).unwrap();
    touch(&sb, "Edit", "src/utils/other.ts");
    assert_eq!(strings(&sb.state("s"), "discoveredChecklists").len(), 1);
}

#[test]
fn excluded_directories_inside_the_project_are_not_scanned() {
    let sb = quiet_session();
    fs::remove_dir_all(sb.project.join(".directives")).unwrap();
    sb.project_file("sessions/2026_02_09_X/TESTING.md", "# debrief\n");
    sb.project_file("tmp/debug-output/INVARIANTS.md", "# debug\n");
    sb.project_file("node_modules/pkg/INVARIANTS.md", "# pkg\n");
    sb.project_file("build/INVARIANTS.md", "# built\n");
    for file in [
        "sessions/2026_02_09_X/file.ts",
        "tmp/debug-output/file.ts",
        "node_modules/pkg/index.ts",
        "build/x.js",
    ] {
        call(&sb, "Edit", json!({"file_path": p(&sb, file)}));
    }
    assert!(pending(&sb).is_empty(), "{:?}", pending(&sb));
}

#[test]
fn a_project_under_a_tmp_directory_still_discovers() {
    // The sandbox itself lives under the system temporary directory (usually /tmp).
    let sb = quiet_session();
    touch(&sb, "Read", "src/lib/test.ts");
    assert!(!pending(&sb).is_empty());
}

#[test]
fn nothing_found_and_already_preloaded_files_are_not_queued() {
    let sb = quiet_session();
    fs::create_dir_all(sb.project.join("empty/deep")).unwrap();
    let inv = p(&sb, ".directives/INVARIANTS.md");
    let mut state = sb.state("s");
    state["preloadedFiles"] = json!([inv, p(&sb, ".directives/AGENTS.md")]);
    fs::write(sb.sessions.join("s/.state.json"), state.to_string()).unwrap();
    touch(&sb, "Read", "empty/deep/test.ts");
    assert!(pending(&sb).is_empty());
    assert!(logged(&sb, "skip-dedup", &inv));
}

#[test]
fn without_a_session_or_rules_the_call_is_allowed() {
    let sb = Sandbox::new();
    fs::remove_file(sb.home.join(".claude/engine/guards.json")).unwrap();
    let a = touch(&sb, "Read", "packages/estimate/src/parser.ts");
    assert!(allowed(&a));
    assert!(fs::read_dir(&sb.sessions).unwrap().next().is_none());
}

// ---- seed doc category 4 ------------------------------------------------------------------

/// An active implement session with the shipped rules; `TOOL_CALL_NUM` numbers each call.
fn pipeline_session() -> Sandbox {
    let sb = Sandbox::new();
    sb.active_session(
        "s",
        &json!({"directives": ["TESTING.md", "PITFALLS.md"], "loading": false}),
    );
    sb
}

fn deliver(sb: &Sandbox) -> String {
    let out = sb.run("preload-injections", json!({"tool_name": "Read"}));
    out.assert_contract();
    out.context()
}

/// One allowed call as the client makes it: what its PreToolUse answer and its PostToolUse
/// answer carried.
#[allow(clippy::needless_pass_by_value)]
fn round(sb: &Sandbox, tool: &str, input: Value) -> String {
    let answer = call(sb, tool, input);
    assert!(allowed(&answer), "{}", answer.reason());
    format!("{}\n{}", answer.context(), deliver(sb))
}

/// Seed 4.1, as the seed writes it: the agent *reads* `packages/estimate/src/parser.ts`, and
/// discovery finds both `INVARIANTS.md` files (package and project) plus the package's
/// `PITFALLS.md` (a directive the skill declares); all three are delivered exactly once.
#[test]
fn multi_level_walk_up_delivers_each_directive_once() {
    let sb = pipeline_session();
    let parser = p(&sb, "packages/estimate/src/parser.ts");
    // More than one output holds: what does not fit goes out with the next calls, each once.
    let mut text = round(&sb, "Read", json!({"file_path": parser}));
    for _ in 0..3 {
        if strings(&sb.state("s"), "pendingPreloads").is_empty() {
            break;
        }
        text.push_str(&round(&sb, "Bash", json!({"command": "git status"})));
    }
    for rel in [
        ".directives/INVARIANTS.md",
        "packages/estimate/.directives/INVARIANTS.md",
        "packages/estimate/.directives/PITFALLS.md",
    ] {
        assert!(
            text.contains(&format!("[Preloaded: {}]\n", p(&sb, rel))),
            "{rel}\n{text}"
        );
        assert_eq!(sb.delivery_count(&p(&sb, rel)), 1, "{rel}");
    }
    assert!(!text.contains("CONTRIBUTING.md"));
    assert!(
        text.find("project/.directives/INVARIANTS.md")
            < text.find("estimate/.directives/INVARIANTS.md"),
        "general first"
    );
    // More reads in the same file and directory add nothing.
    call(&sb, "Read", json!({"file_path": parser}));
    touch(&sb, "Read", "packages/estimate/src/total.ts");
    let after = deliver(&sb);
    assert!(!after.contains("[Preloaded: "), "{after}");
    sb.assert_no_duplicates();
}

#[test]
fn same_directory_discovery_fires_once_across_tools() {
    let sb = pipeline_session();
    touch(&sb, "Read", "packages/estimate/src/a.ts");
    touch(&sb, "Edit", "packages/estimate/src/b.ts");
    let sources: std::collections::BTreeSet<String> = sb
        .events()
        .iter()
        .filter(|e| e["event"] == "queue-pending")
        .filter_map(|e| {
            e["source"]
                .as_str()
                .filter(|s| s.contains("directive_discovery"))
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(sources.len(), 1, "{sources:?}");
}

#[test]
fn siblings_do_not_rediscover_shared_ancestors() {
    let sb = pipeline_session();
    touch(&sb, "Read", "packages/estimate/src/parser.ts");
    let before = sb.events().len();
    touch(&sb, "Read", "packages/estimate/tests/parser.test.ts");
    let later: Vec<Value> = sb.events()[before..].to_vec();
    assert!(
        later.iter().all(|e| e["event"] != "queue-pending"),
        "{later:?}"
    );
    assert!(touched_has(&sb, "packages/estimate/tests"));
    sb.assert_no_duplicates();
}

fn touched_has(sb: &Sandbox, rel: &str) -> bool {
    sb.state("s")["touchedDirs"].get(p(sb, rel)).is_some()
}

#[test]
fn undeclared_skill_directives_are_filtered() {
    let sb = pipeline_session();
    touch(&sb, "Write", "packages/estimate/src/new.ts");
    // Found means in context or queued: the example's directives (a few KB each) need more
    // than one output.
    let state = sb.state("s");
    let mut found = strings(&state, "preloadedFiles");
    found.extend(strings(&state, "pendingPreloads"));
    assert!(
        ends(&found, "estimate/.directives/TESTING.md")
            && ends(&found, "estimate/.directives/PITFALLS.md")
    );
    assert!(!ends(&found, "CONTRIBUTING.md"));
    assert!(
        ends(&found, "estimate/.directives/INVARIANTS.md")
            && ends(&found, "project/.directives/AGENTS.md")
    );
}

#[test]
fn the_engine_walk_stops_at_the_claude_dir() {
    let sb = pipeline_session();
    sb.project_file("../home/AGENTS.md", "# above the cap\n");
    assert!(sb.home.join("AGENTS.md").is_file());
    let skill = sb.home.join(".claude/skills/implement/SKILL.md");
    call(&sb, "Read", json!({"file_path": skill}));
    let state = sb.state("s");
    // Found means in context or queued: the example's INVARIANTS.md (over 50 KB) goes out in
    // parts over several calls.
    let mut found = strings(&state, "preloadedFiles");
    found.extend(strings(&state, "pendingPreloads"));
    assert!(
        ends(&found, ".claude/engine/.directives/INVARIANTS.md"),
        "{found:?}"
    );
    assert!(
        !found
            .iter()
            .any(|f| f == &sb.home.join("AGENTS.md").to_string_lossy())
    );
    assert!(
        state["touchedDirs"]
            .get(sb.home.join(".claude").to_string_lossy().as_ref())
            .is_some()
    );
    assert!(
        state["touchedDirs"]
            .get(sb.home.to_string_lossy().as_ref())
            .is_none()
    );
}

// ---- seed doc 6.2 -------------------------------------------------------------------------

#[test]
fn rapid_phase_transitions_are_delivered_in_one_batch() {
    let sb = pipeline_session();
    // Phases 1, 2 and 3 queued their commands back to back (what `engine session phase` does).
    let phases: [&[&str]; 3] = [
        &[
            "INTERROGATE",
            "ASK_ROUND",
            "LOG_INTERACTION",
            "REPORT_INTENT",
        ],
        &["GENERATE_PLAN", "APPEND_LOG", "REPORT_INTENT"],
        &["SELECT_EXECUTION_PATH", "APPEND_LOG"],
    ];
    let mut queued: Vec<String> = Vec::new();
    for names in phases {
        for name in names {
            let path = sb.engine_path(&format!("commands/CMD_{name}.md"));
            if !queued.contains(&path) {
                queued.push(path);
            }
        }
    }
    let mut state = sb.state("s");
    state["pendingPreloads"] = json!(queued);
    state["currentPhase"] = json!("3: Execution");
    fs::write(sb.sessions.join("s/.state.json"), state.to_string()).unwrap();

    // The next call claims them, the current phase's first, as many as its PreToolUse answer
    // holds, and as many again in one stash entry for its PostToolUse; the rest follow on the
    // next calls. Every one goes out once.
    let first = bash(&sb, "git status");
    assert!(allowed(&first));
    for name in ["SELECT_EXECUTION_PATH", "APPEND_LOG"] {
        let current = sb.engine_path(&format!("commands/CMD_{name}.md"));
        assert!(
            first.context().contains(&format!("[Preloaded: {current}]")),
            "the current phase's commands go first: {}",
            first.context()
        );
    }
    let state = sb.state("s");
    assert!(stash(&state).len() <= 1, "one batch for PostToolUse");
    let mut text = format!("{}\n{}", first.context(), deliver(&sb));
    for _ in 0..4 {
        if queued
            .iter()
            .all(|q| strings(&sb.state("s"), "preloadedFiles").contains(q))
        {
            break;
        }
        text.push_str(&round(&sb, "Bash", json!({"command": "git status"})));
    }
    for path in &queued {
        assert_eq!(
            text.matches(&format!("[Preloaded: {path}]")).count(),
            1,
            "{path}"
        );
        assert_eq!(sb.delivery_count(path), 1);
    }
    assert!(stash(&sb.state("s")).is_empty());
    // Their references were queued once and go out on the next call, never the same file twice.
    for _ in 0..4 {
        bash(&sb, "git status");
        deliver(&sb);
    }
    sb.assert_no_duplicates();
    let hooks: std::collections::BTreeSet<String> =
        sb.deliveries().into_iter().map(|(h, _)| h).collect();
    assert_eq!(hooks.into_iter().collect::<Vec<_>>(), vec!["guards"]);
}
