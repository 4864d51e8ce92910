//! Context packs through the real binaries: each trigger delivers its pack once per context
//! window (and again after a compaction), the rendering reaches the model as configured, a
//! broken configuration leaves the hooks working without packs, and `preload status` and
//! `preload doctor` speak of them.

use std::fmt::Write as _;
use std::fs;

use serde_json::{Value, json};

use preload_test_support::pipeline_steps::{
    activate, cli, cli_output, drain, phase, prompt, seen, session_start, skill_call, tool_call,
};
use preload_test_support::sandbox::{Sandbox, strings};
use preload_test_support::session_openings::{
    delivered_since, implement_in_phase_one, implement_in_phase_one_drained, lists,
};

/// The key of the project's pack `name` in a sandbox.
fn pack_key(sb: &Sandbox, name: &str) -> String {
    format!(
        "{}#{name}",
        sb.project.join(".claude/context-packs.json").display()
    )
}

fn configure(sb: &Sandbox, text: &str) {
    fs::write(sb.project.join(".claude/context-packs.json"), text).unwrap();
}

/// The project's only pack: `name`, delivered `on` its trigger, of `files`.
fn configure_pack(sb: &Sandbox, name: &str, on: &str, files: &Value) {
    let packs = json!({"packs": [{"name": name, "on": on, "files": files}]});
    configure(sb, &packs.to_string());
}

/// A sandbox whose project's only pack is `name`, delivered `on` its trigger, of `files`.
fn sandbox_with_pack(name: &str, on: &str, files: &Value) -> Sandbox {
    let sb = Sandbox::new();
    configure_pack(&sb, name, on, files);
    sb
}

/// `text` carries pack `name`'s block, and the log has the pack delivered once.
#[track_caller]
fn assert_pack_once(sb: &Sandbox, text: &str, name: &str) {
    assert!(
        text.contains(&format!("#{name}]\nPROJECT CONTEXT: {name}")),
        "{text}"
    );
    assert_eq!(sb.delivery_count(&format!("#{name}")), 1);
}

/// A started session whose project's only pack is `impl` for `/implement`, of
/// `docs/CONVENTIONS.md`.
fn started_with_implement_pack() -> Sandbox {
    let sb = sandbox_with_pack(
        "impl",
        "skill:implement",
        &json!([{"path": "docs/CONVENTIONS.md"}]),
    );
    session_start(&sb, "startup");
    sb
}

#[test]
fn the_example_pack_goes_out_at_session_start_once_per_context_window() {
    let sb = Sandbox::new();
    let start = session_start(&sb, "startup");
    let text = start.context();
    let key = pack_key(&sb, "project-basics");
    let block = format!("[Preloaded: {key}]\nPROJECT CONTEXT: project-basics");
    assert!(text.contains(&block), "the pack at start-up");
    assert!(text.contains("Read order: docs/CONVENTIONS.md, docs/TASKS.md, docs/DECISIONS.md"));
    assert!(text.contains("--- docs/CONVENTIONS.md ---\n# Conventions"));
    assert!(text.contains("| 2026-02-10 | Totals are computed from line items, never stored |"));
    assert!(
        !text.contains("A stored total drifted"),
        "DECISIONS.md as its index only"
    );
    assert!(text.contains("- docs/TASKS.md: read it when you pick up work"));
    assert!(
        !text.contains("Running total in the estimate parser"),
        "TASKS.md mentioned only"
    );
    assert!(
        !text.contains("a list of line items a customer is offered"),
        "GLOSSARY.md skipped"
    );
    assert!(text.contains("Context: 2 files loaded (~"));
    assert!(strings(&sb.seed(), "preloadedFiles").contains(&key));
    assert_eq!(sb.delivery_count("#project-basics"), 1);

    // The same context window goes on: nothing again. A compaction starts a new one: again.
    prompt(&sb, "/implement add a total");
    skill_call(&sb, "implement");
    activate(&sb, "work", "implement");
    tool_call(&sb, "Bash", json!({"command": "ls"}));
    assert_eq!(sb.delivery_count("#project-basics"), 1);
    let after = session_start(&sb, "compact");
    assert!(after.context().contains(&block), "again after a compaction");
    assert_eq!(sb.delivery_count("#project-basics"), 2);
    assert!(strings(&sb.state("work"), "preloadedFiles").contains(&key));
}

#[test]
fn a_skill_pack_comes_with_the_prompt_that_invokes_the_skill() {
    let sb = started_with_implement_pack();
    let asked = prompt(&sb, "/implement add a total");
    asked.assert_contract();
    assert!(
        asked.context().contains("#impl]\nPROJECT CONTEXT: impl"),
        "{}",
        asked.context()
    );
    // The Skill call and the activation find it in context.
    let call = skill_call(&sb, "implement");
    activate(&sb, "work", "implement");
    assert!(!seen(&call).contains("PROJECT CONTEXT: impl"));
    assert_eq!(sb.delivery_count("#impl"), 1);
    // A prompt that invokes another skill does not bring it.
    prompt(&sb, "/do something small");
    assert_eq!(sb.delivery_count("#impl"), 1);
    sb.assert_no_duplicates();
}

#[test]
fn a_skill_pack_comes_with_the_skill_call_when_no_prompt_named_it() {
    let sb = started_with_implement_pack();
    let call = skill_call(&sb, "implement");
    assert_pack_once(&sb, &seen(&call), "impl");
}

#[test]
fn a_phase_pack_arrives_on_the_call_after_the_transition() {
    let sb = sandbox_with_pack(
        "planning",
        "phase:2",
        &json!([{"path": "docs/DECISIONS.md", "strategy": "index"}]),
    );
    implement_in_phase_one(&sb);
    tool_call(&sb, "Bash", json!({"command": "ls"}));
    assert_eq!(sb.delivery_count("#planning"), 0, "not before phase 2");
    phase(&sb, "work", "2: Planning");
    assert!(lists(&sb.state("work"), "pendingPreloads", "#planning"));
    let mut got = String::new();
    for _ in 0..4 {
        got.push_str(&seen(&tool_call(&sb, "Bash", json!({"command": "ls"}))));
        if got.contains("PROJECT CONTEXT: planning") {
            break;
        }
    }
    assert_pack_once(&sb, &got, "planning");
}

#[test]
fn a_path_pack_rides_on_the_call_that_touches_its_files_once() {
    let sb = sandbox_with_pack(
        "estimate",
        "path:packages/estimate/**",
        &json!([{"path": "docs/CONVENTIONS.md"}]),
    );
    // Like directive discovery, a path's packs wait for the end of loading (phase 0).
    implement_in_phase_one_drained(&sb);
    tool_call(
        &sb,
        "Read",
        json!({"file_path": sb.project.join("docs/TOC.md")}),
    );
    assert_eq!(sb.delivery_count("#estimate"), 0, "another path");
    let parser = sb.project.join("packages/estimate/src/parser.ts");
    let read = tool_call(&sb, "Read", json!({"file_path": parser}));
    assert!(
        seen(&read).contains("#estimate]\nPROJECT CONTEXT: estimate"),
        "with the same call's result"
    );
    let total = sb.project.join("packages/estimate/src/total.ts");
    tool_call(&sb, "Edit", json!({"file_path": total}));
    tool_call(
        &sb,
        "Grep",
        json!({"pattern": "x", "path": "packages/estimate/src"}),
    );
    assert_eq!(sb.delivery_count("#estimate"), 1);
    let queued_again = sb
        .events()
        .iter()
        .filter(|e| e["event"] == "queue-pending")
        .filter(|e| e["file"].as_str().is_some_and(|f| f.ends_with("#estimate")))
        .count();
    assert_eq!(queued_again, 1, "in context: not even queued again");
}

#[test]
fn a_pack_larger_than_one_output_goes_out_in_labelled_parts() {
    let sb = Sandbox::new();
    let big = (0..400).fold(String::new(), |mut out, i| {
        let _ = writeln!(
            out,
            "Rule {i}: write the code the way the rule before it says."
        );
        out
    });
    sb.project_file("docs/RULES.md", &big);
    configure_pack(
        &sb,
        "rules",
        "path:src/**",
        &json!([{"path": "docs/RULES.md"}]),
    );
    implement_in_phase_one_drained(&sb);
    let mut got = String::new();
    got.push_str(&seen(&tool_call(
        &sb,
        "Read",
        json!({"file_path": sb.project.join("src/a.ts")}),
    )));
    for _ in 0..8 {
        got.push_str(&seen(&tool_call(&sb, "Bash", json!({"command": "ls"}))));
    }
    let key = pack_key(&sb, "rules");
    assert!(
        got.contains(&format!("[Preloaded: {key} (part 1/")),
        "{got}"
    );
    for i in [0, 199, 399] {
        assert_eq!(got.matches(&format!("Rule {i}: ")).count(), 1, "rule {i}");
    }
    assert_eq!(
        sb.delivery_count("#rules"),
        1,
        "delivered when its last part is out"
    );
    sb.assert_no_duplicates();
}

#[test]
fn a_broken_configuration_leaves_the_hooks_working_without_packs() {
    let sb = Sandbox::new();
    configure(
        &sb,
        "{\"packs\": [\n  {\"name\": \"x\", \"on\": \"SessionStart\", \"files\": [\n    {\"path\": \"a.md\", \"strategy\": \"verbose\"}]}]}",
    );
    let start = session_start(&sb, "startup");
    assert!(start.context().contains("COMMANDS.md (part 1/"));
    assert!(!start.context().contains("PROJECT CONTEXT"));
    for answer in tool_call(
        &sb,
        "Read",
        json!({"file_path": sb.project.join("docs/TOC.md")}),
    ) {
        answer.assert_contract();
    }
    let out = cli_output(&sb, &["doctor"], "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let file = sb.project.join(".claude/context-packs.json");
    assert!(
        stderr.contains(&format!("{}: line 3 column ", file.display())),
        "{stderr}"
    );
    assert!(stderr.contains("unknown variant `verbose`"), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("FAIL  context packs: "), "{stdout}");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn status_lists_the_packs_loaded_with_their_cost() {
    let sb = Sandbox::new();
    session_start(&sb, "startup");
    let (code, text) = cli(&sb, &["status"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("context packs loaded (1):"), "{text}");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("project-basics"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains(" tokens"), "{line}");
    let (_, json_text) = cli(&sb, &["status", "--json"]);
    let status: serde_json::Value = serde_json::from_str(&json_text).unwrap();
    let pack = &status["packs"][0];
    assert_eq!(pack["name"], "project-basics");
    let chars = pack["chars"].as_u64().unwrap();
    assert!(chars > 500, "{pack}");
    assert_eq!(pack["tokens"].as_u64().unwrap(), chars.div_ceil(4));
    assert!(
        status["preloaded"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| !f["path"].as_str().unwrap().contains('#')),
        "packs are listed apart from the files"
    );
}

#[test]
fn a_global_pack_serves_every_project_and_the_project_wins_by_name() {
    let sb = Sandbox::new();
    fs::write(
        sb.home.join(".claude/engine/context-packs.json"),
        r#"{"packs": [
            {"name": "project-basics", "on": "SessionStart", "files": [{"path": "docs/TOC.md"}]},
            {"name": "everywhere", "on": "SessionStart", "files": [{"path": "docs/TOC.md"}]}]}"#,
    )
    .unwrap();
    let text = session_start(&sb, "startup").context();
    assert!(text.contains("PROJECT CONTEXT: everywhere"));
    assert_eq!(
        text.matches("PROJECT CONTEXT: project-basics").count(),
        1,
        "one pack of that name"
    );
    assert!(
        text.contains("Read order: docs/CONVENTIONS.md"),
        "the project's own"
    );
}

/// The packs the compacted context window held (a skill's, a phase's and a path's) come again
/// in the new one, each once, though the active skill and phase would bring theirs too and the
/// path is touched again; the path's comes with SessionStart, before the path is touched; a pack
/// the old window never held does not come.
#[test]
fn the_packs_a_window_held_come_again_after_a_compaction_once() {
    let sb = Sandbox::new();
    configure(
        &sb,
        r#"{"packs": [
            {"name": "impl", "on": "skill:implement", "files": [{"path": "docs/CONVENTIONS.md"}]},
            {"name": "asking", "on": "phase:1", "files": [{"path": "docs/DECISIONS.md", "strategy": "index"}]},
            {"name": "estimate", "on": "path:packages/estimate/**", "files": [{"path": "docs/TOC.md"}]},
            {"name": "later", "on": "phase:3", "files": [{"path": "docs/TASKS.md"}]}]}"#,
    );
    implement_in_phase_one_drained(&sb);
    let parser = sb.project.join("packages/estimate/src/parser.ts");
    tool_call(&sb, "Read", json!({"file_path": &parser}));
    drain(&sb, "work", 30);
    for name in ["#impl", "#asking", "#estimate"] {
        assert_eq!(sb.delivery_count(name), 1, "{name} before the compaction");
    }

    let from = sb.deliveries().len();
    session_start(&sb, "compact");
    drain(&sb, "work", 40);
    // Before the path is touched again: the path's pack came with the new window itself.
    let carried = delivered_since(&sb, from)
        .iter()
        .filter(|f| f.ends_with("#estimate"))
        .count();
    assert_eq!(carried, 1, "the path's pack with SessionStart");
    tool_call(&sb, "Read", json!({"file_path": &parser}));
    tool_call(&sb, "Bash", json!({"command": "ls"}));
    drain(&sb, "work", 40);
    let after = delivered_since(&sb, from);
    for name in ["#impl", "#asking", "#estimate"] {
        assert_eq!(
            after.iter().filter(|f| f.ends_with(name)).count(),
            1,
            "{name} once in the new window: {after:#?}"
        );
    }
    assert_eq!(sb.delivery_count("#later"), 0, "never held, never due");
    let preloaded = strings(&sb.state("work"), "preloadedFiles");
    for name in ["#impl", "#asking", "#estimate"] {
        assert!(
            preloaded.iter().any(|f| f.ends_with(name)),
            "{name} recorded in the new window"
        );
    }
}
