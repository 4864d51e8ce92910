//! Scenarios: the preload pipeline across hooks, judged by delivery counts in the event log
//! (the seed doc's test categories 1, 2, 3, 6, 7 and 8.1).

use std::fs;

use serde_json::json;

use preload_test_support::pipeline_steps::{
    activate, bash_cli, cli, cli_in, drain, events_for, guarded_call, phase, phase_command,
    post_tool, prompt, proof_stdin, seen, session_start, skill_call, tool_call,
};
use preload_test_support::sandbox::{Sandbox, Wiring, read_json, strings};
use preload_test_support::session_openings::lists;

mod compaction;

const PHASE0: [&str; 4] = [
    "CMD_REPORT_INTENT.md",
    "CMD_PARSE_PARAMETERS.md",
    "CMD_SELECT_MODE.md",
    "CMD_INGEST_CONTEXT_BEFORE_WORK.md",
];
const TEMPLATES: [&str; 3] = [
    "TEMPLATE_IMPLEMENTATION_LOG.md",
    "TEMPLATE_IMPLEMENTATION_DEBRIEF.md",
    "TEMPLATE_IMPLEMENTATION_PLAN.md",
];
const STANDARDS: [&str; 6] = [
    "engine/.directives/COMMANDS.md",
    "engine/.directives/INVARIANTS.md",
    "engine/.directives/SIGILS.md",
    "CMD_DEHYDRATE.md",
    "CMD_RESUME_SESSION.md",
    "CMD_PARSE_PARAMETERS.md",
];

fn skill_md(sb: &Sandbox, skill: &str) -> String {
    sb.home
        .join(".claude/skills")
        .join(skill)
        .join("SKILL.md")
        .to_string_lossy()
        .into_owned()
}

/// The hooks that delivered a file whose path ends with `suffix`, in the log's order.
fn deliverers(sb: &Sandbox, suffix: &str) -> Vec<String> {
    sb.deliveries()
        .into_iter()
        .filter(|(_, f)| f.ends_with(suffix))
        .map(|(h, _)| h)
        .collect()
}

/// The hooks that delivered a skill's SKILL.md (`prompt-submit` logs Claude Code's expansion).
fn skill_deliverers(sb: &Sandbox, skill: &str) -> Vec<String> {
    deliverers(sb, &format!("/{skill}/SKILL.md"))
}

/// SessionStart → /implement → Skill → activate, with every answer checked against the contract.
fn start_implement(sb: &Sandbox) {
    session_start(sb, "startup").assert_contract();
    prompt(sb, "/implement add auth middleware").assert_contract();
    for a in skill_call(sb, "implement") {
        a.assert_contract();
    }
    for a in activate(sb, "test", "implement") {
        a.assert_contract();
    }
}

/// [`start_implement`], then session `test` moved to `1: Interrogation`.
fn start_interrogation(sb: &Sandbox) {
    start_implement(sb);
    phase(sb, "test", "1: Interrogation");
}

fn assert_once(sb: &Sandbox, names: &[&str]) {
    for name in names {
        assert_eq!(
            sb.delivery_count(name),
            1,
            "{name} delivered once; log: {:#?}",
            sb.deliveries()
        );
    }
}

/// A whole `/implement` lifecycle delivered every file once: the standards, phase 0, the
/// templates and the phases' `commands` once each, nothing twice, and its SKILL.md only with
/// Claude Code's expansion.
fn assert_lifecycle_once(sb: &Sandbox, commands: &[&str]) {
    sb.assert_no_duplicates();
    assert_once(sb, &STANDARDS);
    assert_once(sb, &PHASE0);
    assert_once(sb, &TEMPLATES);
    assert_once(sb, commands);
    assert_eq!(
        skill_deliverers(sb, "implement"),
        vec!["prompt-submit"],
        "SKILL.md once: the expansion"
    );
}

// Category 1: lifecycle.

#[test]
fn full_skill_lifecycle_delivers_every_file_once() {
    let sb = Sandbox::new();
    start_implement(&sb);
    tool_call(&sb, "Read", json!({"file_path": "src/auth.ts"}));
    phase(&sb, "test", "1: Interrogation");
    tool_call(&sb, "Read", json!({"file_path": "src/auth.ts"}));
    phase(&sb, "test", "2: Planning");
    tool_call(&sb, "Read", json!({"file_path": "src/auth.ts"}));
    phase(&sb, "test", "3.A: Build Loop");
    for _ in 0..3 {
        for a in tool_call(&sb, "Edit", json!({"file_path": "src/auth.ts"})) {
            a.assert_contract();
        }
    }
    assert_lifecycle_once(
        &sb,
        &[
            "CMD_INTERROGATE.md",
            "CMD_ASK_ROUND.md",
            "CMD_LOG_INTERACTION.md",
            "CMD_GENERATE_PLAN.md",
            "CMD_APPEND_LOG.md",
            "CMD_HANDOFF_TO_AGENT.md",
            "FMT_LOG_ENTRY.md",
            "INV_READ_BEFORE_WRITE.md",
        ],
    );
    let state = sb.state("test");
    assert!(
        strings(&state, "pendingPreloads").is_empty(),
        "queue drained: {state:#}"
    );
    assert_eq!(state["currentPhase"], "3.A: Build Loop");
}

#[test]
fn full_skill_lifecycle_through_the_guard_engine_delivers_every_file_once() {
    let sb = Sandbox::new();
    session_start(&sb, "startup").assert_contract();
    prompt(&sb, "/implement add auth middleware").assert_contract();
    let call = |tool: &str, input: serde_json::Value, response: serde_json::Value| {
        let answers = guarded_call(&sb, tool, &input, &response);
        for a in &answers {
            a.assert_contract();
        }
        assert_eq!(
            answers[0].decision(),
            "allow",
            "{tool} {input}: {}",
            answers[0].reason()
        );
        answers
    };
    call("Skill", json!({"skill": "implement"}), json!({}));
    let bash = |args: &[&str], command: &str, stdin: &str| bash_cli(&sb, command, args, stdin);
    bash(
        &["activate", "sessions/test", "--skill", "implement"],
        "engine session activate sessions/test implement",
        "",
    );
    call(
        "Read",
        json!({"file_path": sb.project.join("packages/estimate/src/parser.ts")}),
        json!({}),
    );
    for p in ["1: Interrogation", "2: Planning", "3.A: Build Loop"] {
        // Each transition carries the proof the phase being left asks for.
        let proof = proof_stdin(&sb, "test");
        bash(
            &["phase", "sessions/test", p],
            &phase_command("test", p, &proof),
            &proof,
        );
        call(
            "Read",
            json!({"file_path": sb.project.join("packages/estimate/src/total.ts")}),
            json!({}),
        );
        call(
            "Bash",
            json!({"command": "engine log sessions/test/IMPLEMENTATION_LOG.md"}),
            json!({}),
        );
    }
    call(
        "Edit",
        json!({"file_path": sb.project.join("packages/estimate/src/total.ts")}),
        json!({}),
    );
    call("Grep", json!({"pattern": "x"}), json!({}));
    assert_lifecycle_once(
        &sb,
        &[
            "CMD_INTERROGATE.md",
            "CMD_GENERATE_PLAN.md",
            "CMD_APPEND_LOG.md",
            "CMD_HANDOFF_TO_AGENT.md",
        ],
    );
    let by_guard = sb
        .deliveries()
        .into_iter()
        .filter(|(h, _)| h == "guards")
        .count();
    assert!(by_guard >= 4, "the guard engine claimed the later phases");
}

#[test]
fn restart_after_dehydration_resumes_without_redelivery() {
    let mut sb = Sandbox::new();
    start_interrogation(&sb);
    tool_call(&sb, "Read", json!({"file_path": "src/auth.ts"}));
    // Dehydrate, then the old process dies.
    let state_file = sb.sessions.join("test/.state.json");
    let mut state = read_json(&state_file);
    state["pid"] = json!(4_000_000);
    state["dehydratedContext"] = json!({"summary": "auth half done", "lastAction": "asked round 1",
        "nextSteps": ["ask round 2"], "handoverInstructions": "continue interrogation",
        "requiredFiles": ["packages/estimate/src/parser.ts", "~/.claude/engine/.directives/commands/CMD_INTERROGATE.md", "src/missing.ts"]});
    fs::write(&state_file, serde_json::to_string_pretty(&state).unwrap()).unwrap();
    fs::remove_file(&sb.log).unwrap();

    // A new Claude process (another live PID, a new conversation) starts.
    sb.pid = std::os::unix::process::parent_id();
    sb.conversation = "after-restart".to_owned();
    let start = session_start(&sb, "startup");
    start.assert_contract();
    let text = start.context();
    assert!(
        text.contains("## Session Recovery (Dehydrated Context)")
            && text.contains("auth half done")
    );
    assert!(text.contains("[MISSING — file not found at"));
    assert!(
        read_json(&state_file).get("dehydratedContext").is_none(),
        "recovery consumed"
    );
    let seed = sb.seed();
    assert!(
        lists(&seed, "preloadedFiles", "parser.ts"),
        "required files tracked"
    );

    // `engine session continue` takes the session over and resumes at its phase.
    let (_, answers) = bash_cli(
        &sb,
        "engine session continue sessions/test",
        &["activate", "sessions/test"],
        "",
    );
    let shown = seen(&answers);
    assert!(
        shown.contains("/implement/SKILL.md]"),
        "protocol delivered into the new context"
    );
    // The current phase's commands: out with the continue, or first in line for the next call;
    // never Phase 0's.
    assert!(!shown.contains("CMD_SELECT_MODE.md]"));
    tool_call(&sb, "Read", json!({"file_path": "x"}));
    if sb.wiring == Wiring::Dispatch {
        // One process answers each call for every hook, within one output budget: what the
        // continue's templates and the stash did not both fit goes out with the next calls.
        for file in ["y", "z", "w"] {
            if sb.delivery_count("CMD_ASK_ROUND.md") > 0 {
                break;
            }
            tool_call(&sb, "Read", json!({"file_path": file}));
        }
    }
    assert_eq!(
        sb.delivery_count("CMD_ASK_ROUND.md"),
        1,
        "current phase's commands within one call (a few through one dispatch process)"
    );
    assert_eq!(sb.delivery_count("CMD_SELECT_MODE.md"), 0);
    sb.assert_no_duplicates();
    assert_once(&sb, &STANDARDS);
    assert_eq!(
        sb.delivery_count("CMD_INTERROGATE.md"),
        1,
        "required file not delivered again"
    );
    let state = sb.state("test");
    assert_eq!(state["pid"], json!(sb.pid));
    assert!(
        !lists(&state, "preloadedFiles", "CMD_SELECT_MODE.md"),
        "old context window dropped"
    );
}

// Category 2: seed file lifecycle.

#[test]
fn seed_is_created_tracks_the_skill_and_is_merged_on_activation() {
    let sb = Sandbox::new();
    session_start(&sb, "startup");
    let seed = sb.seed();
    assert_eq!(seed["lifecycle"], "seeding");
    assert_eq!(seed["pid"], json!(sb.pid));
    let seeded = strings(&seed, "preloadedFiles");
    for s in STANDARDS {
        assert!(seeded.iter().any(|f| f.ends_with(s)), "{s} seeded");
    }
    prompt(&sb, "/implement add feature");
    let seeded = strings(&sb.seed(), "preloadedFiles");
    assert_eq!(seeded.iter().filter(|f| f.ends_with("SKILL.md")).count(), 1);
    skill_call(&sb, "implement");
    let before = strings(&sb.seed(), "preloadedFiles");
    let (code, out) = cli(&sb, &["activate", "sessions/test", "--skill", "implement"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("Session activated: "));
    assert!(!sb.seed_path().exists(), "seed deleted after the merge");
    let after = strings(&sb.state("test"), "preloadedFiles");
    assert_eq!(
        after.len(),
        before.len(),
        "session inherits every seeded file"
    );
    assert!(before.iter().all(|f| after.contains(f)));
}

#[test]
fn stale_seeds_are_removed_and_live_ones_kept() {
    let sb = Sandbox::new();
    let seeds = sb.sessions.join(".seeds");
    fs::create_dir_all(&seeds).unwrap();
    fs::write(
        seeds.join("4000000.json"),
        r#"{"pid":4000000,"lifecycle":"seeding","preloadedFiles":[]}"#,
    )
    .unwrap();
    let reused = format!(
        r#"{{"pid":{},"lifecycle":"seeding","pidStartTime":1}}"#,
        sb.pid
    );
    fs::write(sb.seed_path(), reused).unwrap();
    let other = std::os::unix::process::parent_id();
    let other_seed = seeds.join(format!("{other}.json"));
    fs::write(
        &other_seed,
        format!(r#"{{"pid":{other},"lifecycle":"seeding","preloadedFiles":["/keep"]}}"#),
    )
    .unwrap();
    session_start(&sb, "startup").assert_contract();
    assert!(!seeds.join("4000000.json").exists(), "dead PID");
    assert_eq!(
        strings(&sb.seed(), "preloadedFiles").len(),
        8,
        "fresh seed: 6 standards + TOC + the example's context pack"
    );
    assert!(sb.seed().get("pidStartTime").is_some_and(|t| t != 1));
    assert_eq!(
        strings(&read_json(&other_seed), "preloadedFiles"),
        vec!["/keep"],
        "other agent untouched"
    );
}

#[test]
fn seed_without_activation_persists() {
    let sb = Sandbox::new();
    session_start(&sb, "startup");
    prompt(&sb, "/implement x");
    skill_call(&sb, "implement");
    tool_call(&sb, "Read", json!({"file_path": "x"}));
    let seed = sb.seed();
    assert!(lists(&seed, "preloadedFiles", "CMD_SELECT_MODE.md"));
    let dirs: Vec<_> = fs::read_dir(&sb.sessions)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        dirs,
        vec![std::ffi::OsString::from(".seeds")],
        "no session was created"
    );
    sb.assert_no_duplicates();
}

#[test]
fn two_skills_before_activation_are_both_tracked() {
    let sb = Sandbox::new();
    session_start(&sb, "startup");
    prompt(&sb, "/implement something");
    prompt(&sb, "/do it differently");
    let seeded = strings(&sb.seed(), "preloadedFiles");
    assert!(seeded.contains(&skill_md(&sb, "implement")) && seeded.contains(&skill_md(&sb, "do")));
    skill_call(&sb, "do");
    activate(&sb, "adhoc", "do");
    tool_call(&sb, "Read", json!({"file_path": "x"}));
    sb.assert_no_duplicates();
    assert_eq!(sb.delivery_count("/do/SKILL.md"), 1);
    assert_eq!(sb.delivery_count("/implement/SKILL.md"), 1);
    assert_eq!(sb.delivery_count("TEMPLATE_DO_LOG.md"), 1);
}

// Category 3: duplicate detection.

#[test]
fn skill_md_is_delivered_once_across_expansion_skill_activate_and_preload_rule() {
    let sb = Sandbox::new();
    start_implement(&sb);
    tool_call(&sb, "Read", json!({"file_path": "src/foo.ts"}));
    assert_eq!(
        skill_deliverers(&sb, "implement"),
        vec!["prompt-submit"],
        "only Claude Code's expansion"
    );
    let skips = events_for(&sb, "skip-dedup", "/implement/SKILL.md");
    let hooks: Vec<_> = skips
        .iter()
        .map(|e| e["hook"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        hooks.contains(&"templates".to_owned()),
        "templates saw it in context: {hooks:?}"
    );
    sb.assert_no_duplicates();
}

#[test]
fn command_shared_by_phases_is_delivered_once_with_a_skip_per_later_phase() {
    let sb = Sandbox::new();
    start_implement(&sb);
    for p in ["1: Interrogation", "2: Planning", "3.A: Build Loop"] {
        phase(&sb, "test", p);
        tool_call(&sb, "Read", json!({"file_path": "src/foo.ts"}));
    }
    assert_eq!(sb.delivery_count("CMD_REPORT_INTENT.md"), 1);
    let skips = events_for(&sb, "skip-dedup", "CMD_REPORT_INTENT.md")
        .into_iter()
        .filter(|e| e["hook"] == "phase-commands")
        .count();
    assert_eq!(skips, 3, "one skip per phase 1, 2, 3.A");
    sb.assert_no_duplicates();
}

#[test]
fn symlink_and_hardlink_spellings_are_one_file() {
    let sb = Sandbox::new();
    session_start(&sb, "startup");
    // A file small enough for one output (the example's COMMANDS.md goes out in parts).
    let link = sb.project.join("docs/PLAN_STEP_LINK.md");
    fs::hard_link(sb.engine_path("formats/FMT_PLAN_STEP.md"), &link).unwrap();
    let via_symlink = sb.home.join(".claude/.directives/formats/FMT_PLAN_STEP.md");
    let mut seed = sb.seed();
    seed["pendingPreloads"] = json!([via_symlink, link]);
    fs::write(sb.seed_path(), serde_json::to_string_pretty(&seed).unwrap()).unwrap();
    // A call the session gate lets through before activation (a denied one claims nothing).
    tool_call(&sb, "AskUserQuestion", json!({"questions": []}));
    assert_eq!(
        sb.delivery_count("FMT_PLAN_STEP.md"),
        1,
        "{:#?}",
        sb.deliveries()
    );
    assert_eq!(sb.delivery_count("PLAN_STEP_LINK.md"), 0);
    assert_eq!(events_for(&sb, "skip-inode", "PLAN_STEP_LINK.md").len(), 1);
    assert!(strings(&sb.seed(), "pendingPreloads").is_empty());
}

#[test]
fn parallel_post_tool_use_hooks_never_deliver_a_file_twice() {
    let sb = Sandbox::new();
    session_start(&sb, "startup");
    let input = json!({"hook_event_name": "PostToolUse", "tool_name": "Skill", "tool_input": {"skill": "implement"},
        "cwd": sb.project, "session_id": "s"})
    .to_string();
    let children: Vec<_> = (0..6)
        .map(|_| {
            let mut cmd =
                std::process::Command::new(preload_test_support::sandbox::bin("preload-templates"));
            cmd.env_clear()
                .env("HOME", &sb.home)
                .env("CLAUDE_SUPERVISOR_PID", sb.pid.to_string())
                .env("PRELOAD_TEST_LOG", &sb.log)
                .env("CLAUDE_SESSION_CACHE_DIR", sb.root())
                .env("PRELOAD_LOCK_TIMEOUT_MS", "5000")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped());
            let mut child = cmd.spawn().unwrap();
            std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
            child
        })
        .collect();
    let outputs: Vec<String> = children
        .into_iter()
        .map(|c| String::from_utf8(c.wait_with_output().unwrap().stdout).unwrap())
        .collect();
    let all = outputs.concat();
    for name in [
        "CMD_REPORT_INTENT.md",
        "CMD_SELECT_MODE.md",
        "TEMPLATE_IMPLEMENTATION_LOG.md",
    ] {
        assert_eq!(
            all.matches(&format!("{name}]")).count(),
            1,
            "{name} in exactly one output"
        );
    }
    sb.assert_no_duplicates();
}

// Category 6: phase transition timing.

#[test]
fn each_phase_comes_with_its_transition() {
    let sb = Sandbox::new();
    start_interrogation(&sb);
    tool_call(&sb, "Read", json!({"file_path": "x"}));
    assert_eq!(deliverers(&sb, "CMD_SELECT_MODE.md"), vec!["templates"]);
    // Out with the transition's own result, not one call later.
    assert_eq!(
        deliverers(&sb, "CMD_INTERROGATE.md"),
        vec!["phase-commands"]
    );
    // Queued by the transition itself (as `session.sh phase` queues the new phase's commands),
    // once: the phase-commands hook finds it queued already and delivers it from the queue.
    let queued = events_for(&sb, "queue-pending", "CMD_INTERROGATE.md");
    assert_eq!(queued.len(), 1, "{queued:?}");
    assert_eq!(queued[0]["hook"], "phase");
    assert_eq!(queued[0]["source"], "session-phase(1: Interrogation)");
    sb.assert_no_duplicates();
}

#[test]
fn rapid_phase_transitions_deliver_each_phase_once() {
    let sb = Sandbox::new();
    start_implement(&sb);
    tool_call(&sb, "Read", json!({"file_path": "x"}));
    for p in ["1: Interrogation", "2: Planning", "3: Execution"] {
        let proof = proof_stdin(&sb, "test");
        let (code, stdout) = cli_in(&sb, &["phase", "sessions/test", p], &proof);
        assert_eq!(code, 0);
        post_tool(
            &sb,
            "Bash",
            &json!({"command": "engine session phase"}),
            &json!({"stdout": stdout}),
        );
    }
    // Each transition's result carries its phase's commands; what did not fit follows with the
    // next calls, each file once.
    assert!(
        sb.deliveries()
            .iter()
            .any(|(h, f)| h == "phase-commands" && f.ends_with("CMD_SELECT_EXECUTION_PATH.md")),
        "the last phase's command with its transition: {:?}",
        sb.deliveries()
    );
    for _ in 0..4 {
        tool_call(&sb, "Read", json!({"file_path": "src/foo.ts"}));
    }
    assert_once(
        &sb,
        &[
            "CMD_INTERROGATE.md",
            "CMD_GENERATE_PLAN.md",
            "CMD_SELECT_EXECUTION_PATH.md",
        ],
    );
    sb.assert_no_duplicates();
}

#[test]
fn shared_command_across_many_phases_keeps_state_whole() {
    let sb = Sandbox::new();
    start_implement(&sb);
    for p in [
        "1: Interrogation",
        "2: Planning",
        "3: Execution",
        "3.A: Build Loop",
    ] {
        phase(&sb, "test", p);
        let state = sb.state("test");
        assert_eq!(state["skill"], "implement", "state intact after {p}");
        tool_call(&sb, "Read", json!({"file_path": "x"}));
    }
    assert_eq!(sb.delivery_count("CMD_APPEND_LOG.md"), 1);
    sb.assert_no_duplicates();
}

#[test]
fn self_and_cross_referencing_commands_never_hang() {
    let sb = Sandbox::new();
    sb.directive(
        "commands/CMD_CYCLE_A.md",
        "# A\nSee §CMD_CYCLE_B.\n## PROOF FOR §CMD_CYCLE_A\n",
    );
    sb.directive(
        "commands/CMD_CYCLE_B.md",
        "# B\nSee §CMD_CYCLE_A and §CMD_CYCLE_B.\n",
    );
    let skill = sb.home.join(".claude/skills/cyc");
    fs::create_dir_all(&skill).unwrap();
    fs::write(skill.join("SKILL.md"), "# cyc\n```json\n{\"phases\": [{\"label\": \"0\", \"name\": \"Setup\", \"steps\": []}, {\"label\": \"1\", \"name\": \"Loop\", \"steps\": [\"§CMD_CYCLE_A\"]}]}\n```\n").unwrap();
    session_start(&sb, "startup");
    activate(&sb, "cyc", "cyc");
    phase(&sb, "cyc", "1: Loop");
    for _ in 0..3 {
        tool_call(&sb, "Read", json!({"file_path": "x"}));
    }
    assert_eq!(sb.delivery_count("CMD_CYCLE_A.md"), 1);
    assert_eq!(sb.delivery_count("CMD_CYCLE_B.md"), 1);
    sb.assert_no_duplicates();
}

// Category 7: context overflow and recovery.

#[test]
fn restart_replaces_the_owners_preload_tracking_and_leaves_other_agents_alone() {
    let sb = Sandbox::new();
    let old: Vec<String> = (0..20).map(|i| format!("/old/file{i}.md")).collect();
    sb.active_session("mine", &json!({"preloadedFiles": old, "touchedDirs": {"/d": []},
        "pendingPreloads": ["/old/q.md"], "pendingAllowInjections": [{"ruleId": "x", "content": "y"}]}));
    let other = std::os::unix::process::parent_id();
    sb.session(
        "theirs",
        &json!({"pid": other, "lifecycle": "active", "preloadedFiles": ["/theirs.md"]}),
    );
    let before_theirs = fs::read_to_string(sb.sessions.join("theirs/.state.json")).unwrap();
    session_start(&sb, "clear").assert_contract();
    let mine = sb.state("mine");
    let preloaded = strings(&mine, "preloadedFiles");
    assert!(
        !preloaded.iter().any(|f| f.starts_with("/old/")),
        "replaced, not appended"
    );
    for s in STANDARDS {
        assert!(preloaded.iter().any(|f| f.ends_with(s)));
    }
    assert_eq!(mine["touchedDirs"], json!({}));
    assert!(!strings(&mine, "pendingPreloads").contains(&"/old/q.md".to_owned()));
    assert_eq!(mine["pendingAllowInjections"], json!([]));
    assert_eq!(
        fs::read_to_string(sb.sessions.join("theirs/.state.json")).unwrap(),
        before_theirs
    );
}

#[test]
fn session_start_delivers_the_active_skill_at_its_current_phase() {
    let sb = Sandbox::new();
    let dir = sb.active_session("work", &json!({"currentPhase": "1: Interrogation"}));
    fs::write(dir.join("IMPLEMENTATION_LOG.md"), "# log\n- did things\n").unwrap();
    fs::write(dir.join("DIALOGUE.md"), "## Q1\nwhat?\n").unwrap();
    let answer = session_start(&sb, "resume");
    answer.assert_contract();
    let text = answer.context();
    assert!(text.starts_with("═"), "banner first");
    assert!(text.contains(
        "| Session: work | Skill: implement | Phase: 1: Interrogation | Heartbeat: 0/10"
    ));
    for name in [
        "/implement/SKILL.md]",
        "CMD_INTERROGATE.md]",
        "CMD_ASK_ROUND.md]",
        "FMT_LOG_ENTRY.md]",
        "IMPLEMENTATION_LOG.md]",
        "DIALOGUE.md]",
    ] {
        assert!(text.contains(name), "{name} in {text}");
    }
    assert!(
        !text.contains("CMD_SELECT_MODE.md]"),
        "not another phase's commands"
    );
    assert!(text.contains(&format!("[Session Files: {}]", dir.display())));
    let state = sb.state("work");
    let seed = sb.seed();
    for f in ["CMD_INTERROGATE.md", "/implement/SKILL.md", "DIALOGUE.md"] {
        assert!(
            strings(&state, "preloadedFiles")
                .iter()
                .any(|p| p.ends_with(f)),
            "{f} recorded in the session"
        );
        assert!(
            strings(&seed, "preloadedFiles")
                .iter()
                .any(|p| p.ends_with(f)),
            "{f} recorded in the seed"
        );
    }
    // A later tool call delivers none of it again.
    tool_call(&sb, "Read", json!({"file_path": "x"}));
    post_tool(
        &sb,
        "Bash",
        &json!({"command": "engine session phase"}),
        &json!({"stdout": "Phase: 1: Interrogation"}),
    );
    tool_call(&sb, "Read", json!({"file_path": "x"}));
    sb.assert_no_duplicates();
}

// Category 8.1: one seed per owner PID.

#[test]
fn concurrent_agents_get_one_seed_each() {
    let mut a = Sandbox::new();
    session_start(&a, "startup");
    let first = a.seed_path();
    a.pid = std::os::unix::process::parent_id();
    a.conversation = "second-agent".to_owned();
    session_start(&a, "startup");
    let second = a.seed_path();
    assert_ne!(first, second);
    for seed in [&first, &second] {
        let v = read_json(seed);
        assert_eq!(
            strings(&v, "preloadedFiles").len(),
            8,
            "6 standards + TOC + the example's context pack in {}",
            seed.display()
        );
    }
    assert_eq!(read_json(&second)["pid"], json!(a.pid));
}
