//! Modes and a skill switch in the real client (seed cases 9.2 and 9.3): the mode chosen in
//! `/implement`'s setup phase brings its file with the next phase, and `/test` invoked in the
//! same session brings its own phase 0 command and templates, and nothing already in context;
//! after a compaction each skill's protocol is there once (the client puts both back itself).

use serde_json::{Value, json};

use crate::model::{Script, Step, bash, heavy, tool};
use crate::received::Received;
use crate::scenario::{IMPLEMENT_PROMPT, Scenario, activate, assert_within_phase_calls};
use crate::scenarios::not_by_the_client;
use crate::support::{assert_clean, compaction_point, delivered_to_main, union};
use crate::world::{SESSION, World};

/// The mode files of the example's `/implement`.
const MODES: [&str; 4] = ["general", "tdd", "experimentation", "custom"];

/// `engine session phase … "1: Interrogation"` with the setup phase's proof, mode `tdd`.
fn enter_interrogation_in_tdd() -> Step {
    bash(&format!(
        "engine session phase sessions/{SESSION} \"1: Interrogation\" <<'EOF'\n\
         {{\"mode\": \"tdd\", \"sessionDir\": \"sessions/{SESSION}\", \"parametersParsed\": \
         \"add a total to the estimate\", \"contextIngested\": \"1: total.ts\"}}\nEOF"
    ))
}

/// `/implement` through its setup phase choosing the `tdd` mode, into phase 1; then the model
/// invokes `/test` with the `Skill` tool and activates it in the same session directory.
#[test]
fn a_chosen_mode_and_a_second_skill_bring_only_their_own_files_once() {
    let Some(s) = Scenario::new("modes_and_switch", World::new()) else {
        return;
    };
    let steps = vec![
        activate(),
        bash("ls packages/estimate"),
        enter_interrogation_in_tdd(),
        bash("ls packages/estimate/src"),
        bash("ls packages/estimate/tests"),
        tool("Skill", json!({"skill": "test"})),
        bash(&format!("engine session activate sessions/{SESSION} test")),
        bash("ls packages"),
        bash("ls packages/estimate"),
    ];
    s.run(Script::main(steps), IMPLEMENT_PROMPT);
    let (requests, saved) = s.requests();
    let p = s.paths();
    let got = Received::last_of(&requests, "main").expect("the main conversation");

    // Case 9.2: the chosen mode's file comes with phase 1's commands, the others never.
    let mode = p.skill("modes/tdd.md");
    let mut phase1 = p.phase_one();
    phase1.push(mode.clone());
    s.assert_phase_files("tdd mode", &got, "1: Interrogation", &phase1, &saved);
    let unchosen: Vec<String> = MODES
        .iter()
        .filter(|m| **m != "tdd")
        .map(|m| p.skill(&format!("modes/{m}.md")))
        .filter(|f| got.count(f) > 0)
        .map(|f| format!("a mode that was not chosen: {f}"))
        .collect();
    assert_clean(s.name, "unchosen modes", &unchosen, &got, &saved);

    // Case 9.3: `/test` brings its SKILL.md (the client's expansion of the Skill call), its
    // phase 0 command and its templates, within two ordinary calls of its activation.
    let switched = got.skill_call("test").expect("the Skill call for /test");
    let test_dir = p.test_skill_dir();
    s.assert_skill_expanded_once("/test's protocol", &got, &test_dir, switched, &saved);
    let activated = got
        .bash_call("session activate sessions/e2e test")
        .expect("the activation of /test");
    let own = p.test_skill_own();
    let after_start = (switched, activated);
    let when = "after /test starts";
    assert_within_phase_calls(
        s.name,
        "/test's own files",
        &got,
        &own,
        after_start,
        when,
        &saved,
    );
    // Nothing that was in context when `/test` started comes again.
    let before: Vec<String> = got
        .headers()
        .into_iter()
        .map(|h| h.path)
        .filter(|f| got.complete_at(f).is_some_and(|at| at < switched))
        .collect();
    let again: Vec<String> = before
        .iter()
        .flat_map(|f| got.check_absent_after(f, switched))
        .collect();
    assert_clean(s.name, "in context before /test", &again, &got, &saved);
    for shared in ["CMD_REPORT_INTENT", "CMD_PARSE_PARAMETERS"] {
        assert!(
            before.contains(&p.cmd(shared)),
            "{shared}, a phase 0 step of both skills, came with /implement"
        );
    }

    // Every file the hooks delivered, and every file expected, reached the model once; each
    // skill's protocol once.
    let mut expected = p.core_standards();
    expected.extend(phase1);
    expected.extend(own);
    s.assert_context(
        "main",
        &got,
        &union(&expected, &delivered_to_main(s.log(), 0, usize::MAX)),
        &saved,
    );
    s.assert_skill_once("main", &got, &saved);
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(s.world.sandbox.sessions.join(SESSION).join(".state.json"))
            .expect("the session's state"),
    )
    .expect("state JSON");
    assert_eq!(state["skill"], "test", "the session goes on with /test");
}

/// `/implement`, then `/test` with the `Skill` tool, then the client compacts: the new context
/// holds each skill's SKILL.md once (the client's own re-injection, nothing from the hooks), the
/// standards, `/test`'s files and the project's pack once each.
#[test]
fn after_a_skill_switch_a_compaction_keeps_each_skill_once() {
    let Some(s) = Scenario::new("switch_then_compact", World::new()) else {
        return;
    };
    let steps = vec![
        activate(),
        bash("ls packages/estimate"),
        tool("Skill", json!({"skill": "test"})),
        bash(&format!("engine session activate sessions/{SESSION} test")),
        bash("ls packages"),
        heavy(bash("ls packages/estimate/src")),
        bash("ls packages/estimate/tests"),
        bash("ls packages/estimate"),
    ];
    s.run(Script::main(steps), IMPLEMENT_PROMPT);
    let (requests, saved) = s.requests();
    let p = s.paths();
    let split = compaction_point(s.log()).expect("SessionStart ran for the compaction");
    let before = Received::compacted(&requests).expect("the client compacted the conversation");
    let after = Received::last_of(&requests, "main").expect("the conversation after compaction");
    let kept = after.kept_across_compaction();
    let test_dir = p.test_skill_dir();
    let own = p.test_skill_own();
    let mut before_expected = p.core_standards();
    before_expected.extend(own.clone());
    before_expected.push(p.pack("project-basics"));
    let before_files: Vec<String> = union(&before_expected, &delivered_to_main(s.log(), 0, split))
        .into_iter()
        .filter(|f| !kept.contains(f))
        .collect();
    s.assert_context("before compaction", &before, &before_files, &saved);

    let mut expected = p.core_standards();
    expected.push(p.pack("project-basics"));
    s.assert_after_compaction(&after, &expected, &kept, split, &saved);
    for dir in [p.skill_dir(), test_dir] {
        let mut problems = not_by_the_client(&after, &dir);
        let arrivals = after.skill_arrivals(&dir).len();
        if arrivals != 1 {
            problems.push(format!(
                "{dir}/SKILL.md reached the new context {arrivals} times, not once"
            ));
        }
        assert_clean(
            s.name,
            "after compaction: each skill once",
            &problems,
            &after,
            &saved,
        );
    }
}
