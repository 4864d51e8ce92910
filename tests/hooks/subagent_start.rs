//! `preload-subagent-start`: a sub-agent gets how to log, its packs and the main agent's
//! directives once per `agent_id`, in its own record; what does not fit follows on its own
//! calls; the main agent's record and queue are never touched.

use std::fs;

use serde_json::{Value, json};

use preload_test_support::pipeline_steps::{drain, seen, tool_call};
use preload_test_support::sandbox::{Answer, Sandbox, strings};
use preload_test_support::session_openings::implement_in_phase_one;

fn subagent_start(sb: &Sandbox, agent: &str, kind: &str) -> Answer {
    let answer = sb.run(
        "preload-subagent-start",
        json!({"hook_event_name": "SubagentStart", "agent_id": agent, "agent_type": kind}),
    );
    answer.assert_contract();
    answer
}

/// One tool call made by sub-agent `agent`: its PreToolUse and PostToolUse hooks.
fn sub_call(sb: &Sandbox, agent: &str) -> String {
    let call = json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "agent_id": agent,
        "tool_use_id": format!("toolu_sub_{agent}")});
    let mut pre = call.clone();
    pre["hook_event_name"] = json!("PreToolUse");
    let guard = sb.run("preload-overflow", pre);
    guard.assert_contract();
    let mut post = call;
    post["hook_event_name"] = json!("PostToolUse");
    post["tool_response"] = json!({});
    let answers: Vec<Answer> = [
        "preload-templates",
        "preload-phase-commands",
        "preload-injections",
    ]
    .iter()
    .map(|b| sb.run(b, post.clone()))
    .collect();
    format!("{}{}", guard.context(), seen(&answers))
}

/// `/implement` in phase 1 after a Read in the package (its directives discovered).
fn working(sb: &Sandbox) {
    implement_in_phase_one(sb);
    let parser = sb.project.join("packages/estimate/src/parser.ts");
    tool_call(sb, "Read", json!({"file_path": parser}));
    drain(sb, "work", 30);
}

/// How often `CMD_APPEND_LOG.md` went to the main agent.
fn main_log_copies(sb: &Sandbox) -> usize {
    sb.deliveries()
        .iter()
        .filter(|(_, f)| f.ends_with("/commands/CMD_APPEND_LOG.md"))
        .count()
}

fn main_record(state: &Value) -> (Vec<String>, Vec<String>) {
    (
        strings(state, "preloadedFiles"),
        strings(state, "pendingPreloads"),
    )
}

#[test]
fn a_sub_agent_gets_how_to_log_its_packs_and_the_directives_once() {
    let sb = Sandbox::new();
    working(&sb);
    let before = main_record(&sb.state("work"));
    let main_before = main_log_copies(&sb);
    let text = subagent_start(&sb, "a1", "general-purpose").context();
    for wanted in [
        "/skills/implement/assets/TEMPLATE_IMPLEMENTATION_LOG.md]",
        "/commands/CMD_APPEND_LOG.md]",
        "#project-basics]\nPROJECT CONTEXT: project-basics",
    ] {
        assert!(text.contains(wanted), "{wanted} in the sub-agent's start");
    }
    // The directives the main agent found: at start, or on the sub-agent's next calls.
    let mut all = text.clone();
    for _ in 0..3 {
        all.push_str(&sub_call(&sb, "a1"));
    }
    for wanted in [
        "/project/.directives/AGENTS.md]",
        "/project/.directives/INVARIANTS.md]",
        "/packages/estimate/.directives/INVARIANTS.md]",
        "/packages/estimate/.directives/PITFALLS.md]",
    ] {
        assert_eq!(
            all.matches(wanted).count(),
            1,
            "{wanted} once to the sub-agent"
        );
    }
    for not_wanted in ["/.directives/COMMANDS.md", "/skills/implement/SKILL.md]"] {
        assert!(!all.contains(not_wanted), "{not_wanted}");
    }
    let state = sb.state("work");
    assert_eq!(
        main_record(&state),
        before,
        "the main agent's record is untouched"
    );
    let own = strings(&state, "preloadedFiles_sub:a1");
    assert!(
        own.iter().any(|p| p.ends_with("CMD_APPEND_LOG.md")),
        "{own:?}"
    );
    assert!(own.iter().any(|p| p.ends_with("#project-basics")));
    assert!(
        sb.deliveries()
            .iter()
            .any(|(_, f)| f.ends_with("CMD_APPEND_LOG.md (sub-agent a1)"))
    );

    // Once per agent: the same agent again gets nothing; another agent gets its own copy.
    assert!(
        subagent_start(&sb, "a1", "general-purpose")
            .stdout
            .is_empty()
    );
    assert!(
        subagent_start(&sb, "b2", "Explore")
            .context()
            .contains("/commands/CMD_APPEND_LOG.md]")
    );
    assert_eq!(main_record(&sb.state("work")), before);
    // The main agent's later calls bring none of it: its record never said it had them.
    tool_call(&sb, "Bash", json!({"command": "ls"}));
    assert_eq!(main_log_copies(&sb), main_before);
}

#[test]
fn what_does_not_fit_follows_on_the_sub_agents_own_calls() {
    let mut sb = Sandbox::new();
    working(&sb);
    let before = main_record(&sb.state("work"));
    sb.extra_env
        .push(("PRELOAD_OUTPUT_BUDGET".into(), "4000".into()));
    let first = subagent_start(&sb, "a1", "general-purpose").context();
    assert!(first.chars().count() <= 4000);
    let waiting = strings(&sb.state("work"), "pendingPreloads_sub:a1");

    assert!(
        !waiting.is_empty(),
        "the rest waits in the sub-agent's queue"
    );
    let mut got = first;
    for _ in 0..10 {
        if strings(&sb.state("work"), "pendingPreloads_sub:a1").is_empty() {
            break;
        }
        got.push_str(&sub_call(&sb, "a1"));
    }
    assert!(strings(&sb.state("work"), "pendingPreloads_sub:a1").is_empty());
    for path in &waiting {
        // Whole, or in parts from the first on.
        let copies = got.matches(&format!("[Preloaded: {path}]")).count()
            + got.matches(&format!("[Preloaded: {path} (part 1/")).count();
        assert_eq!(copies, 1, "{path} once to the sub-agent");
    }
    let main_now = main_record(&sb.state("work"));
    assert_eq!(main_now.0, before.0, "main's record untouched");
    for path in &waiting {
        assert!(
            !main_now.1.contains(path),
            "not in the main agent's queue: {path}"
        );
    }
    // The main agent's own calls carry none of the sub-agent's files.
    let main_call = seen(&tool_call(&sb, "Bash", json!({"command": "ls"})));
    for path in &waiting {
        assert!(
            !main_call.contains(&format!("[Preloaded: {path}")),
            "{path}"
        );
    }
}

#[test]
fn an_agent_type_pack_goes_to_that_type_only() {
    let sb = Sandbox::new();
    fs::write(
        sb.project.join(".claude/context-packs.json"),
        r#"{"packs": [{"name": "review", "on": "agent:code-reviewer",
            "files": [{"path": "docs/CONVENTIONS.md"}]}]}"#,
    )
    .unwrap();
    working(&sb);
    assert!(
        subagent_start(&sb, "r1", "code-reviewer")
            .context()
            .contains("PROJECT CONTEXT: review")
    );
    assert!(
        !subagent_start(&sb, "e1", "Explore")
            .context()
            .contains("PROJECT CONTEXT: review")
    );
    assert_eq!(sb.delivery_count("#review"), 0, "never to the main agent");
}

#[test]
fn without_a_session_or_seed_it_stays_silent() {
    let sb = Sandbox::new();
    let answer = subagent_start(&sb, "a1", "general-purpose");
    assert!(answer.stdout.is_empty());
    assert!(!sb.seed_path().exists(), "nothing created");
}

#[test]
fn malformed_input_fails_open() {
    let sb = Sandbox::new();
    working(&sb);
    for stdin in ["", "not json", "[1,2]", "{\"agent_id\": 5}"] {
        let answer = sb.run_raw("preload-subagent-start", &[], stdin);
        answer.assert_contract();
        assert!(answer.stdout.is_empty(), "{stdin:?}: {}", answer.stdout);
    }
}

#[test]
fn a_corrupt_state_is_left_as_it_is() {
    let sb = Sandbox::new();
    sb.active_session("work", &json!({}));
    let file = sb.sessions.join("work/.state.json");
    fs::write(&file, "{ not json").unwrap();
    let answer = subagent_start(&sb, "a1", "general-purpose");
    assert!(answer.stdout.is_empty());
    assert_eq!(fs::read_to_string(&file).unwrap(), "{ not json");
}
