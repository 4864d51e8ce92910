//! Scenarios of the tool calls themselves: a sub-agent's calls, calls in parallel and a call that
//! fails, judged by what the model received.

use super::*;
use crate::subagents::{SubAgentRun, run_with_a_sub_agent};

/// A sub-agent starts (SubagentStart gives it the log template, `CMD_APPEND_LOG.md` and the
/// project's pack), moves the session to phase 2 and makes an ordinary tool call: the phase's
/// commands are claimed on a call that carries the sub-agent's `agent_id`, so they must reach the
/// sub-agent's conversation once and never the main one.
#[test]
fn subagent_calls_get_their_blocks_in_their_own_conversation() {
    const MARKER: &str = "SUBAGENT-E2E";
    let Some(s) = Scenario::new("subagent", World::new()) else {
        return;
    };
    let SubAgentRun {
        sub_got,
        main_got,
        saved,
    } = run_with_a_sub_agent(
        &s,
        ("Plan the estimate change", MARKER),
        "move to planning and survey the package.",
        Vec::new(),
        vec![phase("2: Planning"), bash("ls packages/estimate")],
    );
    let p = s.paths();
    // SubagentStart gives the sub-agent how to log and the project's pack before its first
    // request; phase 2's other commands come with its own calls.
    let at_start = vec![
        p.skill("assets/TEMPLATE_IMPLEMENTATION_LOG.md"),
        p.cmd("CMD_APPEND_LOG"),
        p.pack("project-basics"),
    ];
    let planning = p.cmds(&["CMD_GENERATE_PLAN", "CMD_WALK_THROUGH_RESULTS"]);
    s.assert_context(
        "sub-agent",
        &sub_got,
        &union(&union(&at_start, &planning), &delivered_to_sub(s.log())),
        &saved,
    );
    let first_call = sub_got
        .messages
        .iter()
        .position(|m| !m.tool_uses.is_empty())
        .expect("the sub-agent made calls");
    let late: Vec<String> = at_start
        .iter()
        .filter(|f| sub_got.complete_at(f).is_none_or(|at| at > first_call))
        .map(|f| format!("not in the sub-agent's context before its first call: {f}"))
        .collect();
    assert_clean(s.name, "sub-agent start", &late, &sub_got, &saved);
    s.assert_phase_files("sub-agent", &sub_got, "2: Planning", &planning, &saved);
    s.assert_main_in_phase_one(&main_got, &saved);
    let leaked: Vec<String> = planning
        .iter()
        .chain(std::iter::once(&at_start[1]))
        .filter(|f| main_got.count(f) > 0)
        .map(|f| format!("claimed for the sub-agent, delivered to the main conversation: {f}"))
        .collect();
    assert_clean(s.name, "main", &leaked, &main_got, &saved);
}

/// Claude Code runs the read-only tool calls of one response at the same time, and their
/// PreToolUse and PostToolUse hooks with them: four hooks claim the phase's queue and discover
/// the same directories at once, and every file must still reach the model exactly once.
#[test]
fn parallel_tool_calls_deliver_each_file_once() {
    let Some(s) = Scenario::new("parallel", World::new()) else {
        return;
    };
    let file = |rel: &str| json!({"file_path": s.world.sandbox.project.join(rel)});
    let together = Step::Tools(vec![
        ("Read".into(), file("packages/estimate/src/parser.ts")),
        ("Read".into(), file("packages/estimate/src/total.ts")),
        (
            "Read".into(),
            file("packages/estimate/tests/parser.test.ts"),
        ),
        (
            "Grep".into(),
            json!({"pattern": "parse", "path": s.world.sandbox.project.join("packages/estimate")}),
        ),
    ]);
    let steps = vec![activate(), phase("1: Interrogation"), together, bash("ls")];
    s.run(Script::main(steps), IMPLEMENT_PROMPT);
    let (requests, saved) = s.requests();
    let got = Received::last_of(&requests, "main").expect("the main conversation");
    s.assert_through_phase_one(&got, &saved);
    s.assert_skill_once("main", &got, &saved);
}

/// A tool call that fails (a Read of a file that is not there): Claude Code runs no PostToolUse
/// for it and keeps what its PreToolUse added, next to the error. The directives that call
/// discovered reach the model once, with the failed call, and nothing is sent again after it.
#[test]
fn a_failed_call_keeps_what_its_pretooluse_carried() {
    let Some(s) = Scenario::new("failed_call", World::new()) else {
        return;
    };
    let missing = s
        .world
        .sandbox
        .project
        .join("packages/estimate/src/missing.ts");
    let steps = vec![
        activate(),
        phase("1: Interrogation"),
        tool("Read", json!({"file_path": missing})),
        bash("ls"),
    ];
    s.run(Script::main(steps), IMPLEMENT_PROMPT);
    let (requests, saved) = s.requests();
    let got = Received::last_of(&requests, "main").expect("the main conversation");
    let read = got
        .messages
        .iter()
        .position(|m| m.tool_uses.iter().any(|(name, _)| name == "Read"))
        .expect("the Read call");
    assert!(
        got.result_of(read).is_some_and(|m| !m.errors.is_empty()),
        "the Read failed: {saved:?}"
    );
    let next_turn = (read + 1..got.messages.len())
        .find(|&i| got.messages[i].role == "assistant")
        .unwrap_or(got.messages.len());
    let carried: Vec<String> = got
        .headers()
        .into_iter()
        .filter(|h| (read + 1..next_turn).contains(&h.message))
        .map(|h| h.label)
        .collect();
    assert!(
        !carried.is_empty(),
        "the failed call's PreToolUse carried the directives it discovered: {saved:?}"
    );
    s.assert_through_phase_one(&got, &saved);
}
