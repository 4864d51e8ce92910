//! A sub-agent's `Skill` call, activation and phase transition (calls that carry its `agent_id`):
//! what reaches the sub-agent's own conversation is judged by and recorded in its own record;
//! the main agent's record, queue and `invokedSkills` change only where the main agent still
//! has something to receive; the compaction re-read of the main conversation is not the
//! sub-agent's to register or consume.

use std::fs;

use serde_json::{Value, json};

use preload_test_support::pipeline_steps::{cli_output, headers, seen, session_start, tool_call};
use preload_test_support::sandbox::{Answer, Sandbox, strings};
use preload_test_support::session_openings::{implement_in_phase_one_drained, keep_legacy_markers};

/// The project's packs: the bundled one, one for `/implement` and one for its phase 1.
const PACKS: &str = r#"{"packs": [
    {"name": "project-basics", "on": "SessionStart", "files": [{"path": "docs/CONVENTIONS.md"}]},
    {"name": "impl", "on": "skill:implement", "files": [{"path": "docs/DECISIONS.md"}]},
    {"name": "asking", "on": "phase:1", "files": [{"path": "docs/TASKS.md"}]}
]}"#;

/// `/implement` in phase 1, everything queued delivered to the main agent.
fn working(sb: &Sandbox) {
    fs::write(sb.project.join(".claude/context-packs.json"), PACKS).unwrap();
    implement_in_phase_one_drained(sb);
}

/// One tool call of sub-agent `agent`: PreToolUse and every PostToolUse hook, with its
/// `agent_id`; what the sub-agent saw.
fn sub_call(sb: &Sandbox, agent: &str, tool: &str, tool_input: &Value, response: &Value) -> String {
    let call = json!({"tool_name": tool, "tool_input": tool_input, "agent_id": agent,
        "agent_type": "general-purpose", "tool_use_id": format!("toolu_{agent}_{tool}")});
    let mut pre = call.clone();
    pre["hook_event_name"] = json!("PreToolUse");
    let guard = sb.run("preload-overflow", pre);
    guard.assert_contract();
    assert_ne!(guard.decision(), "deny", "{}", guard.reason());
    let mut post = call;
    post["hook_event_name"] = json!("PostToolUse");
    post["tool_response"] = response.clone();
    let answers: Vec<Answer> = [
        "preload-templates",
        "preload-phase-commands",
        "preload-injections",
    ]
    .iter()
    .map(|b| {
        let answer = sb.run(b, post.clone());
        answer.assert_contract();
        answer
    })
    .collect();
    format!("{}\n{}", guard.context(), seen(&answers))
}

/// Ordinary calls of sub-agent `agent` until its own queue is empty (at most 10); what it saw.
fn sub_drain(sb: &Sandbox, agent: &str) -> String {
    let mut got = String::new();
    for _ in 0..10 {
        let queue = format!("pendingPreloads_sub:{agent}");
        if strings(&sb.state("work"), &queue).is_empty() {
            break;
        }
        got.push_str(&sub_call(
            sb,
            agent,
            "Bash",
            &json!({"command": "ls"}),
            &json!({}),
        ));
    }
    got
}

/// A `Skill` call of sub-agent `agent`, then its calls until its queue is empty.
fn sub_skill(sb: &Sandbox, agent: &str, skill: &str) -> String {
    let got = sub_call(sb, agent, "Skill", &json!({"skill": skill}), &json!({}));
    format!("{got}\n{}", sub_drain(sb, agent))
}

/// The main agent's record: what it holds, what it is owed, its parts, the skills the client
/// puts back after a compaction of its conversation.
fn main_record(state: &Value) -> [Value; 4] {
    [
        "preloadedFiles",
        "pendingPreloads",
        "preloadParts",
        "invokedSkills",
    ]
    .map(|key| state.get(key).cloned().unwrap_or(Value::Null))
}

fn own(state: &Value, agent: &str) -> Vec<String> {
    strings(state, &format!("preloadedFiles_sub:{agent}"))
}

fn cmd(sb: &Sandbox, name: &str) -> String {
    sb.engine_path(&format!("commands/{name}.md"))
}

fn pack(sb: &Sandbox, name: &str) -> String {
    format!(
        "{}#{name}",
        sb.project.join(".claude/context-packs.json").display()
    )
}

fn skill_md(sb: &Sandbox, skill: &str) -> String {
    sb.home
        .join(format!(".claude/skills/{skill}/SKILL.md"))
        .display()
        .to_string()
}

#[test]
fn a_sub_agents_skill_call_fills_its_own_record_and_leaves_the_main_one() {
    let sb = Sandbox::new();
    working(&sb);
    let before = main_record(&sb.state("work"));
    let held = strings(&sb.state("work"), "preloadedFiles");
    let setup = [
        "CMD_REPORT_INTENT",
        "CMD_PARSE_PARAMETERS",
        "CMD_SELECT_MODE",
    ]
    .map(|c| cmd(&sb, c));
    for file in setup.iter().chain([&pack(&sb, "impl")]) {
        assert!(held.contains(file), "the main agent holds {file}");
    }

    // The same skill the main agent runs: the sub-agent never saw its phase 0 or its pack.
    let got = sub_skill(&sb, "a1", "implement");
    let shown = headers(&got);
    for file in setup.iter().chain([&pack(&sb, "impl")]) {
        assert_eq!(
            shown.iter().filter(|h| *h == file).count(),
            1,
            "{file} once to the sub-agent: {shown:?}"
        );
    }
    assert!(
        !shown.contains(&skill_md(&sb, "implement")),
        "the Skill tool loaded SKILL.md itself: {shown:?}"
    );
    let state = sb.state("work");
    let mine = own(&state, "a1");
    for file in setup.iter().chain([&skill_md(&sb, "implement")]) {
        assert!(mine.contains(file), "{file} in the sub-agent's record");
    }
    assert_eq!(main_record(&state), before, "the main agent's record");
    assert!(
        sb.deliveries()
            .iter()
            .any(|(_, f)| f.ends_with("CMD_PARSE_PARAMETERS.md (sub-agent a1)")),
        "the delivery log names the sub-agent"
    );
    // A second call of the same skill sends nothing again.
    let again = headers(&sub_skill(&sb, "a1", "implement"));
    assert!(
        !again.iter().any(|h| setup.contains(h)),
        "nothing twice: {again:?}"
    );

    // Another skill: its files go to the sub-agent alone, and the client will not put it back
    // into the main conversation after a compaction.
    let got = sub_skill(&sb, "b2", "test");
    let run_tests = cmd(&sb, "CMD_RUN_TESTS");
    assert!(headers(&got).contains(&run_tests), "{got}");
    let state = sb.state("work");
    assert!(own(&state, "b2").contains(&skill_md(&sb, "test")));
    assert_eq!(main_record(&state), before, "the main agent's record");
    let main_next = seen(&tool_call(&sb, "Bash", json!({"command": "ls"})));
    assert!(
        !main_next.contains("/skills/test/") && !main_next.contains(&run_tests),
        "the main agent gets nothing of the sub-agent's skill: {main_next}"
    );
}

/// A Bash call of sub-agent `agent` running `preload activate` as `command`.
fn sub_activate(sb: &Sandbox, agent: &str, name: &str, skill: &str) -> String {
    let dir = format!("sessions/{name}");
    let out = cli_output(sb, &["activate", &dir, "--skill", skill], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let command = format!("engine session activate {dir} {skill}");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let got = sub_call(
        sb,
        agent,
        "Bash",
        &json!({"command": command}),
        &json!({"stdout": stdout}),
    );
    format!("{got}\n{}", sub_drain(sb, agent))
}

#[test]
fn a_sub_agents_activation_goes_to_it_now_and_is_queued_for_the_main_agent() {
    let sb = Sandbox::new();
    fs::write(sb.project.join(".claude/context-packs.json"), PACKS).unwrap();
    session_start(&sb, "startup");
    let seeded = strings(&sb.seed(), "preloadedFiles");
    let got = sub_activate(&sb, "a1", "work", "implement");
    let shown = headers(&got);
    // Phase 0's files the main agent did not have from SessionStart.
    let phase0: Vec<String> = [
        skill_md(&sb, "implement"),
        cmd(&sb, "CMD_REPORT_INTENT"),
        cmd(&sb, "CMD_PARSE_PARAMETERS"),
        cmd(&sb, "CMD_SELECT_MODE"),
        pack(&sb, "impl"),
    ]
    .into_iter()
    .filter(|f| !seeded.contains(f))
    .collect();
    assert!(phase0.contains(&skill_md(&sb, "implement")) && phase0.contains(&pack(&sb, "impl")));
    for file in &phase0 {
        assert!(shown.contains(file), "{file} to the sub-agent: {shown:?}");
    }
    let state = sb.state("work");
    let main_held = strings(&state, "preloadedFiles");
    let main_owed = strings(&state, "pendingPreloads");
    for file in &phase0 {
        assert!(own(&state, "a1").contains(file), "{file} in its record");
        assert!(!main_held.contains(file), "the main agent never saw {file}");
        assert!(main_owed.contains(file), "{file} owed to the main agent");
    }
    assert!(strings(&state, "invokedSkills").is_empty());

    // The main agent's own calls bring each of them once.
    let mut main_got = String::new();
    for _ in 0..12 {
        main_got.push_str(&seen(&tool_call(&sb, "Bash", json!({"command": "ls"}))));
    }
    let main_shown = headers(&main_got);
    for file in &phase0 {
        assert_eq!(
            main_shown.iter().filter(|h| *h == file).count(),
            1,
            "{file} once to the main agent"
        );
    }
}

#[test]
fn a_sub_agents_phase_brings_the_phase_packs_the_main_agent_holds() {
    let sb = Sandbox::new();
    working(&sb);
    let asking = pack(&sb, "asking");
    assert!(strings(&sb.state("work"), "preloadedFiles").contains(&asking));
    let before = main_record(&sb.state("work"));
    let command = "engine session phase sessions/work \"1: Interrogation\"";
    let got = sub_call(
        &sb,
        "a1",
        "Bash",
        &json!({"command": command}),
        &json!({"stdout": "Phase: 1: Interrogation\n"}),
    );
    let got = format!("{got}\n{}", sub_drain(&sb, "a1"));
    assert!(headers(&got).contains(&asking), "{got}");
    assert!(own(&sb.state("work"), "a1").contains(&asking));
    assert_eq!(main_record(&sb.state("work")), before);
}

fn reread(sb: &Sandbox, sub: &str, input: &Value) -> Answer {
    let answer = sb.run_args("preload-compaction-reread", &[sub], input.clone());
    answer.assert_contract();
    answer
}

#[test]
fn a_sub_agents_calls_leave_the_main_conversations_reread_alone() {
    let mut sb = Sandbox::bare();
    keep_legacy_markers(&mut sb);
    sb.project_file("docs/loops/build.loop.md", "# Loop\n- [CURRENT] step one\n");
    let sid = sb.conversation.clone();
    let marker_dir = sb.root().join(format!(
        "claude-preload-{}",
        nix::unistd::geteuid().as_raw()
    ));
    // A sub-agent's `/loop` does not make the main conversation a loop session.
    reread(
        &sb,
        "register",
        &json!({"session_id": sid, "agent_id": "a1", "tool_name": "Skill",
            "tool_input": {"skill": "loop"}}),
    );
    assert!(!marker_dir.join(format!("loop-{sid}")).exists());
    reread(
        &sb,
        "register",
        &json!({"session_id": sid, "tool_name": "Skill", "tool_input": {"skill": "loop"}}),
    );
    assert!(marker_dir.join(format!("loop-{sid}")).is_file());
    // A sub-agent's compaction leaves no marker for the main conversation.
    reread(
        &sb,
        "precompact",
        &json!({"session_id": sid, "agent_id": "a1"}),
    );
    assert!(!marker_dir.join(format!("compaction-{sid}")).exists());
    // The main conversation's marker: a sub-agent's call neither takes it nor is held up.
    reread(&sb, "precompact", &json!({"session_id": sid}));
    assert!(marker_dir.join(format!("compaction-{sid}")).is_file());
    let sub = reread(
        &sb,
        "pretooluse",
        &json!({"session_id": sid, "agent_id": "a1", "tool_name": "Bash"}),
    );
    assert_eq!(sub.decision(), "allow", "{}", sub.stdout);
    let main = reread(
        &sb,
        "pretooluse",
        &json!({"session_id": sid, "tool_name": "Bash"}),
    );
    assert_eq!(main.decision(), "deny");
    assert!(main.reason().contains("build.loop.md"), "{}", main.reason());
}
