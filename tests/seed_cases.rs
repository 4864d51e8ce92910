//! Seed cases no other suite covers, through the real binaries: a chain of references expands
//! one level per delivery and stops (5.5), one agent's hooks never touch another agent's session
//! (8.2), and a second skill in the same session directory brings its own files once (9.3).

use std::fs;

use serde_json::json;

use crate::common::{Sandbox, strings};
use crate::pipeline_steps::{activate, drain, phase, prompt, session_start, skill_call, tool_call};

/// Case 5.5, adapted: the seed's `resolve_refs(A, depth=2)` resolves B and C but not D in one
/// call. Neither the engine's hooks nor ours call it that way: each delivered file queues the
/// files it references (one level, the engine's `_auto_expand_refs`), and those are delivered
/// on the next call. So A→B→C→D goes out one level per call, never two levels at once, each file
/// once, and the expansion stops when the chain ends.
#[test]
fn a_reference_chain_expands_one_level_per_delivery_and_stops() {
    let sb = Sandbox::new();
    sb.directive("commands/CMD_CHAIN_A.md", "# A\nThen §CMD_CHAIN_B.\n");
    sb.directive("commands/CMD_CHAIN_B.md", "# B\nThen §CMD_CHAIN_C.\n");
    sb.directive("commands/CMD_CHAIN_C.md", "# C\nThen §CMD_CHAIN_D.\n");
    sb.directive("commands/CMD_CHAIN_D.md", "# D\nThe end.\n");
    sb.active_session(
        "chain",
        &json!({"loading": false, "pendingPreloads": [sb.engine_path("commands/CMD_CHAIN_A.md")]}),
    );
    let mut rounds = Vec::new();
    for _ in 0..6 {
        let before = sb.deliveries().len();
        tool_call(&sb, "Bash", json!({"command": "ls"}));
        let new: Vec<String> = sb.deliveries()[before..]
            .iter()
            .map(|(_, f)| f.rsplit('/').next().unwrap_or_default().to_owned())
            .collect();
        let pending = strings(&sb.state("chain"), "pendingPreloads");
        rounds.push((new, pending.len()));
    }
    let delivered: Vec<Vec<String>> = rounds.iter().map(|(d, _)| d.clone()).collect();
    assert_eq!(
        delivered[..5],
        [
            vec!["CMD_CHAIN_A.md".to_owned()],
            vec!["CMD_CHAIN_B.md".to_owned()],
            vec!["CMD_CHAIN_C.md".to_owned()],
            vec!["CMD_CHAIN_D.md".to_owned()],
            vec![],
        ],
        "one level per call: {rounds:?}"
    );
    assert!(
        rounds.iter().all(|(_, pending)| *pending <= 1),
        "never more than the next level queued: {rounds:?}"
    );
    assert_eq!(rounds[4].1, 0, "the expansion stopped with the chain");
    sb.assert_no_duplicates();
}

/// Case 8.2: two agents (two owner PIDs) each with a session in one project. Agent A's whole
/// lifecycle goes through every hook; agent B's state file is never read into A's context nor
/// written.
#[test]
fn one_agents_hooks_never_touch_another_agents_session() {
    let a = Sandbox::new();
    let other = std::os::unix::process::parent_id();
    let theirs = a.session(
        "theirs",
        &json!({"pid": other, "skill": "implement", "lifecycle": "active",
            "currentPhase": "1: Interrogation", "loading": false,
            "preloadedFiles": [], "touchedDirs": {},
            "pendingPreloads": [a.engine_path("commands/CMD_GENERATE_PLAN.md")]}),
    );
    let state_b = theirs.join(".state.json");
    let before = fs::read(&state_b).unwrap();
    let modified = fs::metadata(&state_b).unwrap().modified().unwrap();

    session_start(&a, "startup").assert_contract();
    prompt(&a, "/implement add a total").assert_contract();
    skill_call(&a, "implement");
    activate(&a, "mine", "implement");
    phase(&a, "mine", "1: Interrogation");
    let parser = a.project.join("packages/estimate/src/parser.ts");
    for answer in tool_call(&a, "Read", json!({"file_path": parser})) {
        answer.assert_contract();
    }
    phase(&a, "mine", "2: Planning");
    tool_call(&a, "Bash", json!({"command": "ls"}));

    assert_eq!(fs::read(&state_b).unwrap(), before, "B's state unchanged");
    assert_eq!(
        fs::metadata(&state_b).unwrap().modified().unwrap(),
        modified,
        "B's state never rewritten"
    );
    let mine = a.state("mine");
    assert_eq!(mine["pid"], json!(a.pid), "A's session is A's");
    assert!(
        a.deliveries()
            .iter()
            .all(|(_, f)| !f.contains("/sessions/theirs")),
        "nothing of B's session delivered to A"
    );
    // B's queued file reached A only through A's own phase 2, once.
    assert_eq!(a.delivery_count("CMD_GENERATE_PLAN.md"), 1);
    a.assert_no_duplicates();
}

/// A second skill with phases, sharing phase 0's commands with `/implement` (the `/test` of seed
/// case 9.3; the bundled example has only `/implement` and `/do`).
fn add_test_skill(sb: &Sandbox) {
    let dir = sb.home.join(".claude/skills/test");
    fs::create_dir_all(dir.join("assets")).unwrap();
    // A command of its own, which no phase of `/implement` uses.
    fs::write(
        sb.home
            .join(".claude/engine/.directives/commands/CMD_RUN_TEST_SUITE.md"),
        "# Run the test suite

Run every test; report failures first.
",
    )
    .unwrap();
    fs::write(
        dir.join("SKILL.md"),
        "---\nname: test\ndescription: Write and run tests.\n---\n# /test\n\nLog with \
         §FMT_LOG_ENTRY.\n\n```json\n{\"taskType\": \"TESTING\", \"phases\": [\n  {\"label\": \
         \"0\", \"name\": \"Setup\", \"steps\": [\"§CMD_REPORT_INTENT\", \
         \"§CMD_PARSE_PARAMETERS\", \"§CMD_RUN_TEST_SUITE\"], \"commands\": []},\n  \
         {\"label\": \"1\", \"name\": \"Testing\", \"steps\": [\"§CMD_APPEND_LOG\"], \
         \"commands\": []}\n], \"logTemplate\": \"assets/TEMPLATE_TESTING_LOG.md\"}\n```\n",
    )
    .unwrap();
    fs::write(
        dir.join("assets/TEMPLATE_TESTING_LOG.md"),
        "# Testing log\n\n## Entry\n",
    )
    .unwrap();
}

/// Case 9.3, with `/implement` for `/fix`: the user finishes `/implement`, then invokes `/test`
/// in the same session directory. `/test` brings its own SKILL.md, phase 0 commands and template
/// once; nothing `/implement` already put in context is delivered again.
#[test]
fn a_second_skill_in_the_same_session_brings_only_its_own_files() {
    let sb = Sandbox::new();
    add_test_skill(&sb);
    session_start(&sb, "startup");
    prompt(&sb, "/implement fix the parser");
    skill_call(&sb, "implement");
    activate(&sb, "work", "implement");
    for p in ["1: Interrogation", "2: Planning", "3.A: Build Loop"] {
        phase(&sb, "work", p);
        tool_call(&sb, "Bash", json!({"command": "ls"}));
    }
    drain(&sb, "work", 30);
    let first = sb.deliveries().len();

    prompt(&sb, "/test the parser fix").assert_contract();
    for answer in skill_call(&sb, "test") {
        answer.assert_contract();
    }
    activate(&sb, "work", "test");
    tool_call(&sb, "Bash", json!({"command": "ls"}));
    phase(&sb, "work", "1: Testing");
    tool_call(&sb, "Bash", json!({"command": "ls"}));
    drain(&sb, "work", 30);

    let second: Vec<String> = sb.deliveries()[first..]
        .iter()
        .map(|(_, f)| f.clone())
        .collect();
    for own in [
        "/skills/test/SKILL.md",
        "CMD_RUN_TEST_SUITE.md",
        "TEMPLATE_TESTING_LOG.md",
    ] {
        assert_eq!(
            second.iter().filter(|f| f.ends_with(own)).count(),
            1,
            "{own} once with /test: {second:#?}"
        );
    }
    for shared in [
        "CMD_REPORT_INTENT.md",
        "CMD_PARSE_PARAMETERS.md",
        "CMD_APPEND_LOG.md",
        "FMT_LOG_ENTRY.md",
    ] {
        assert!(
            !second.iter().any(|f| f.ends_with(shared)),
            "{shared} was in context already: {second:#?}"
        );
    }
    assert_eq!(sb.state("work")["skill"], "test");
    sb.assert_no_duplicates();
}
