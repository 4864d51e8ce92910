//! A sub-agent invokes a skill with the `Skill` tool in the real client: the skill's protocol,
//! its phase 0 commands and its templates reach the sub-agent's conversation once, even the
//! commands the main agent already holds, and the main conversation gets none of them.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::model::{Script, Step, bash, tool};
use crate::received::Received;
use crate::scenario::{
    IMPLEMENT_PROMPT, Scenario, activate, agent, assert_within_phase_calls, phase,
};
use crate::support::{assert_clean, delivered_to_sub, union};
use crate::world::World;

/// The main agent runs `/implement` in phase 1 and starts a sub-agent, which invokes `/test`
/// with the `Skill` tool and makes two ordinary calls.
#[test]
fn a_sub_agents_skill_reaches_its_own_conversation_once_and_not_the_main_one() {
    const MARKER: &str = "SUBAGENT-SKILL-E2E";
    let Some(s) = Scenario::new("subagent_skill", World::new()) else {
        return;
    };
    let sub = vec![
        tool("Skill", json!({"skill": "test"})),
        bash("ls packages/estimate"),
        bash("ls packages/estimate/tests"),
    ];
    let SubAgentRun {
        sub_got,
        main_got,
        saved,
    } = run_with_a_sub_agent(
        &s,
        ("Pin the parser with tests", MARKER),
        "run /test on the estimate package.",
        vec![bash("ls packages")],
        sub,
    );
    let p = s.paths();
    let test_dir = p.test_skill_dir();

    // The sub-agent: /test's protocol once (the client's expansion of its Skill call), and its
    // phase 0 commands and templates within two ordinary calls, each once, the commands the
    // main agent already holds included.
    let called = sub_got
        .skill_call("test")
        .expect("the sub-agent's Skill call");
    s.assert_skill_expanded_once(
        "sub-agent: /test's protocol",
        &sub_got,
        &test_dir,
        called,
        &saved,
    );
    let held_by_main = p.cmds(&["CMD_REPORT_INTENT", "CMD_PARSE_PARAMETERS"]);
    let mut own = held_by_main.clone();
    own.extend(p.test_skill_own());
    assert_within_phase_calls(
        s.name,
        "sub-agent: /test's phase 0",
        &sub_got,
        &own,
        (called, called),
        "after the sub-agent's Skill call",
        &saved,
    );
    s.assert_context(
        "sub-agent",
        &sub_got,
        &union(&own, &delivered_to_sub(s.log())),
        &saved,
    );

    main_is_untouched(&s, &main_got, &test_dir, &saved);
}

/// What the model received in a run of `/implement` whose main agent activates the session,
/// enters phase 1, starts a sub-agent (its description and marker, and `task`) and goes on with
/// `main_after`, while the sub-agent makes the calls `sub`.
pub struct SubAgentRun {
    /// The sub-agent's conversation.
    pub sub_got: Received,
    /// The main conversation.
    pub main_got: Received,
    /// Where the requests were saved.
    pub saved: PathBuf,
}

/// Runs that conversation (see [`SubAgentRun`]) in `s`.
pub fn run_with_a_sub_agent(
    s: &Scenario,
    (description, marker): (&str, &str),
    task: &str,
    main_after: Vec<Step>,
    sub: Vec<Step>,
) -> SubAgentRun {
    let mut main = vec![
        activate(),
        phase("1: Interrogation"),
        agent(description, marker, task),
    ];
    main.extend(main_after);
    s.run(
        Script::main(main).agent("sub", marker, sub),
        IMPLEMENT_PROMPT,
    );
    let (requests, saved) = s.requests();
    SubAgentRun {
        sub_got: Received::last_of(&requests, "sub").expect("the sub-agent's conversation"),
        main_got: Received::last_of(&requests, "main").expect("the main conversation"),
        saved,
    }
}

/// The main agent: its own skill once, phase 1's commands, and nothing of the sub-agent's
/// `/test`, in its conversation or in its record.
fn main_is_untouched(s: &Scenario, main_got: &Received, test_dir: &str, saved: &Path) {
    let p = s.paths();
    s.assert_main_in_phase_one(main_got, saved);
    let leaked: Vec<String> = main_got
        .skill_arrivals(test_dir)
        .into_iter()
        .chain(
            main_got
                .headers()
                .into_iter()
                .map(|h| h.path)
                .filter(|f| f.starts_with(test_dir) || *f == p.cmd("CMD_RUN_TESTS")),
        )
        .map(|f| format!("the sub-agent's skill in the main conversation: {f}"))
        .collect();
    assert_clean(s.name, "main: nothing of /test", &leaked, main_got, saved);
    // The client puts back after a compaction of the main conversation only what it invoked.
    let state = s.world.session_state().expect("the session's state");
    assert_eq!(
        state["invokedSkills"],
        json!(["implement"]),
        "{}: the main agent's invokedSkills",
        s.name
    );
    let held: Vec<String> = preload_test_support::sandbox::strings(&state, "preloadedFiles")
        .into_iter()
        .filter(|f| f.starts_with(test_dir) || *f == p.cmd("CMD_RUN_TESTS"))
        .collect();
    assert!(
        held.is_empty(),
        "{}: the main agent's record holds the sub-agent's files: {held:?}",
        s.name
    );
}
