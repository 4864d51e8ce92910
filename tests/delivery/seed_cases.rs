//! Seed cases no other suite covers, through the real binaries: a chain of references expands
//! one level per delivery and stops (5.5), one agent's hooks never touch another agent's session
//! (8.2), a chosen mode brings its file (9.2), a second skill in the same session directory
//! brings its own files once (9.3), and a skill without phases queues no command (9.4).

use std::fs;

use serde_json::{Value, json};

use preload_test_support::pipeline_steps::{
    activate, drain, phase, phase_proving, prompt, seen, session_start, skill_call, tool_call,
};
use preload_test_support::sandbox::{Sandbox, strings};
use preload_test_support::session_openings::{delivered_since, implement_activated};

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

/// Case 9.3, with `/implement` for `/fix` and the example's `/test`: the user works through
/// `/implement` to its planning phase, then invokes `/test` in the same session directory.
/// `/test` brings its own SKILL.md, phase 0 command (`CMD_RUN_TESTS`, which `/implement` uses
/// only from its build loop on) and templates once; nothing `/implement` already put in context
/// (the shared phase 0 commands, `CMD_APPEND_LOG`, the log format) is delivered again.
#[test]
fn a_second_skill_in_the_same_session_brings_only_its_own_files() {
    let sb = Sandbox::new();
    session_start(&sb, "startup");
    prompt(&sb, "/implement fix the parser");
    skill_call(&sb, "implement");
    activate(&sb, "work", "implement");
    for p in ["1: Interrogation", "2: Planning"] {
        phase(&sb, "work", p);
        tool_call(&sb, "Bash", json!({"command": "ls"}));
    }
    drain(&sb, "work", 30);
    let first = sb.deliveries().len();
    assert_eq!(
        sb.delivery_count("CMD_RUN_TESTS.md"),
        0,
        "not an /implement file before its build loop"
    );

    prompt(&sb, "/test the parser fix").assert_contract();
    for answer in skill_call(&sb, "test") {
        answer.assert_contract();
    }
    activate(&sb, "work", "test");
    tool_call(&sb, "Bash", json!({"command": "ls"}));
    phase(&sb, "work", "1: Testing");
    tool_call(&sb, "Bash", json!({"command": "ls"}));
    drain(&sb, "work", 30);

    let second = delivered_since(&sb, first);
    for own in [
        "/skills/test/SKILL.md",
        "CMD_RUN_TESTS.md",
        "TEMPLATE_TESTING_LOG.md",
        "TEMPLATE_TESTING_DEBRIEF.md",
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
        "INV_READ_BEFORE_WRITE.md",
        "/skills/implement/SKILL.md",
    ] {
        assert!(
            !second.iter().any(|f| f.ends_with(shared)),
            "{shared} was in context already: {second:#?}"
        );
    }
    assert_eq!(sb.state("work")["skill"], "test");
    sb.assert_no_duplicates();
}

const MODES: [&str; 4] = [
    "modes/general.md",
    "modes/tdd.md",
    "modes/experimentation.md",
    "modes/custom.md",
];

/// `/implement` activated, its phase 0 delivered; the mode files not yet.
fn implement_in_setup(sb: &Sandbox) {
    implement_activated(sb);
    tool_call(sb, "Bash", json!({"command": "ls"}));
    drain(sb, "work", 30);
    for mode in MODES {
        assert_eq!(sb.delivery_count(mode), 0, "{mode} before a mode is chosen");
    }
}

/// Case 9.2, with the example's `/implement` for `/analyze` (its modes are general, tdd,
/// experimentation and custom, each with a `modes/<id>.md`): the mode chosen in the setup phase
/// is proven when the session leaves it, and that mode's file (only that one) reaches the
/// context with the next phase's files, once.
#[test]
fn a_chosen_mode_brings_its_file_with_the_next_phase() {
    let sb = Sandbox::new();
    implement_in_setup(&sb);
    phase_proving(&sb, "work", "1: Interrogation", &json!({"mode": "tdd"}));
    let next = tool_call(&sb, "Bash", json!({"command": "ls"}));
    let mut told = seen(&next);
    for _ in 0..3 {
        if told.contains("/skills/implement/modes/tdd.md]") {
            break;
        }
        told = seen(&tool_call(&sb, "Bash", json!({"command": "ls"})));
    }
    assert!(
        told.contains("/skills/implement/modes/tdd.md]\n# Mode: Test-first"),
        "the mode's file within a few calls of the transition"
    );
    phase(&sb, "work", "2: Planning");
    tool_call(&sb, "Bash", json!({"command": "ls"}));
    drain(&sb, "work", 30);
    assert_eq!(sb.delivery_count("modes/tdd.md"), 1);
    for other in [
        "modes/general.md",
        "modes/experimentation.md",
        "modes/custom.md",
    ] {
        assert_eq!(sb.delivery_count(other), 0, "{other} was not chosen");
    }
    sb.assert_no_duplicates();
}

/// Case 9.2, the custom mode (named by its label): it blends the named modes, so their files
/// come first, then its own, each once.
#[test]
fn a_custom_mode_brings_the_named_modes_first() {
    let sb = Sandbox::new();
    implement_in_setup(&sb);
    phase_proving(&sb, "work", "1: Interrogation", &json!({"mode": "Custom"}));
    tool_call(&sb, "Bash", json!({"command": "ls"}));
    drain(&sb, "work", 30);
    let order: Vec<String> = sb
        .deliveries()
        .into_iter()
        .map(|(_, f)| f)
        .filter(|f| f.contains("/skills/implement/modes/"))
        .collect();
    assert_eq!(order.len(), 4, "{order:#?}");
    assert!(order[3].ends_with("modes/custom.md"), "{order:#?}");
    for mode in MODES {
        assert_eq!(sb.delivery_count(mode), 1, "{mode}");
    }
    sb.assert_no_duplicates();
}

/// Case 9.4, with the example's `/do` (no `phases` array): the phase-commands hook has nothing
/// to do, so after the skill starts no command file is queued or delivered; SKILL.md (the
/// client's expansion of the prompt), its log template and the format it references arrive,
/// each once.
#[test]
fn a_skill_without_phases_queues_no_commands() {
    let sb = Sandbox::new();
    session_start(&sb, "startup");
    // What start-up queued (the standards' references) may go out after the skill starts;
    // it is not the skill's.
    let queued_at_start = strings(&sb.seed(), "pendingPreloads");
    let from = sb.events().len();
    prompt(&sb, "/do rename the total").assert_contract();
    let call = skill_call(&sb, "do");
    for answer in &call {
        answer.assert_contract();
    }
    assert!(
        seen(&call).contains("/skills/do/assets/TEMPLATE_DO_LOG.md]"),
        "the template with the Skill call"
    );
    activate(&sb, "work", "do");
    for _ in 0..3 {
        tool_call(&sb, "Bash", json!({"command": "ls"}));
    }
    drain(&sb, "work", 30);

    let state = sb.state("work");
    assert_eq!(state["skill"], "do");
    assert!(
        state["phases"].as_array().is_none_or(Vec::is_empty),
        "/do has no phases: {}",
        state["phases"]
    );
    let after: Vec<Value> = sb.events()[from..].to_vec();
    let file_name = |e: &Value| {
        e["file"]
            .as_str()
            .and_then(|f| f.rsplit('/').next())
            .unwrap_or_default()
            .to_owned()
    };
    let commands: Vec<String> = after
        .iter()
        .filter(|e| {
            let queued = e["event"] == "queue-pending";
            let delivered = matches!(
                e["event"].as_str(),
                Some("direct-deliver" | "claim-deliver")
            ) && !e["file"]
                .as_str()
                .is_some_and(|f| queued_at_start.iter().any(|q| q == f));
            queued || delivered
        })
        .filter(|e| file_name(e).starts_with("CMD_"))
        .map(ToString::to_string)
        .collect();
    assert!(commands.is_empty(), "no command queued: {commands:#?}");
    let by_phase_commands: Vec<String> = after
        .iter()
        .filter(|e| e["hook"] == "phase-commands")
        .map(ToString::to_string)
        .collect();
    assert!(
        by_phase_commands.is_empty(),
        "the phase-commands hook is a no-op: {by_phase_commands:#?}"
    );
    let skill_md: Vec<String> = after
        .iter()
        .filter(|e| {
            e["file"]
                .as_str()
                .is_some_and(|f| f.ends_with("/skills/do/SKILL.md"))
                && e["event"] != "skip-dedup"
        })
        .map(|e| format!("{} {}", e["event"], e["source"]))
        .collect();
    assert_eq!(
        skill_md,
        ["\"direct-deliver\" \"skill-expansion(do)\""],
        "SKILL.md once, with the prompt (the client's expansion)"
    );
    assert_eq!(sb.delivery_count("/skills/do/assets/TEMPLATE_DO_LOG.md"), 1);
    assert_eq!(sb.delivery_count("FMT_LOG_ENTRY.md"), 1);
    assert!(strings(&state, "pendingPreloads").is_empty());
    sb.assert_no_duplicates();
}
