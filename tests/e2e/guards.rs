//! The shipped rules in the real client: the session gate and the heartbeat, judged by what the
//! model received (the deny reasons and the hook contexts), with every preloaded file still
//! delivered exactly once.

use std::path::Path;

use crate::model::{Script, bash};
use crate::received::Received;
use crate::scenario::{IMPLEMENT_PROMPT, Scenario, activate, log, phase, read};
use crate::support::assert_clean;
use crate::world::World;

/// The session gate's text as the model sees it before activation (`guards.json`,
/// `session-gate`, `$lifecycle` filled in).
const GATE: &str = "[block: session] §CMD_REQUIRE_ACTIVE_SESSION — no active session \
                    (lifecycle: none). Activate a session before proceeding.";
/// The heartbeat's warning at the third call without a log (`heartbeat-warn`).
const WARN: &str = "[warn: heartbeat] §CMD_APPEND_LOG (3/10)";
/// The heartbeat's block at the tenth call without a log (`heartbeat-block`).
const BLOCK: &str = "[warn: heartbeat] §CMD_APPEND_LOG (10/10)";

/// (c) No session yet: a tool call is denied with the gate's text; the model activates; the
/// next call passes, and the files discovered by the denied call still arrive once.
#[test]
fn the_session_gate_denies_until_the_model_activates() {
    let Some(s) = Scenario::new("session_gate", World::new()) else {
        return;
    };
    let steps = vec![
        read(&s.world, "packages/estimate/src/parser.ts"),
        activate(),
        phase("1: Interrogation"),
        bash("ls packages/estimate"),
        read(&s.world, "packages/estimate/src/total.ts"),
    ];
    s.run(Script::main(steps), "Add a total to the estimate.");
    let (requests, saved) = s.requests();
    let got = Received::last_of(&requests, "main").expect("the main conversation");

    let denied: Vec<(usize, &str)> = got.errors();
    let gated: Vec<usize> = denied
        .iter()
        .filter(|(_, e)| e.contains(GATE))
        .map(|(i, _)| *i)
        .collect();
    assert_eq!(
        gated.len(),
        1,
        "exactly the first call is denied with the gate's text: {denied:?}"
    );
    let activation = got
        .bash_call("session activate")
        .expect("the model activated");
    assert!(
        gated[0] < activation,
        "the denial came before the activation"
    );
    assert_eq!(
        denied.len(),
        1,
        "after activation every call passes: {denied:?}"
    );
    s.assert_through_phase_one(&got, &saved);
    s.assert_skill_once("main", &got, &saved);
    assert_denied_calls_claim_nothing(&s, &got, &saved);
}

/// No `[Preloaded: …]` block came with a call the hooks denied: what is queued waits for a call
/// that runs.
fn assert_denied_calls_claim_nothing(s: &Scenario, got: &Received, saved: &Path) {
    assert_clean(
        s.name,
        "a denied call claims nothing",
        &got.check_nothing_with_denied_calls(),
        got,
        saved,
    );
}

/// (d) Calls without `engine log`: the third gets the heartbeat's warning, the tenth is denied
/// with its block text, each exactly once; `engine log` resets the count and the next calls
/// pass.
#[test]
fn the_heartbeat_warns_then_blocks_once_each_until_the_agent_logs() {
    let Some(s) = Scenario::new("heartbeat", World::new()) else {
        return;
    };
    let mut steps = vec![activate(), phase("1: Interrogation")];
    steps.extend((1..=10).map(|i| bash(&format!("echo call {i}"))));
    steps.push(log("progress"));
    steps.extend((11..=12).map(|i| bash(&format!("echo call {i}"))));
    s.run(Script::main(steps), IMPLEMENT_PROMPT);
    let (requests, saved) = s.requests();
    let got = Received::last_of(&requests, "main").expect("the main conversation");

    let warned: Vec<String> = got
        .hook_contexts()
        .iter()
        .filter(|c| c.text.contains(WARN))
        .map(|c| c.label.clone())
        .collect();
    assert_eq!(
        warned.len(),
        1,
        "the warning reaches the model once: {warned:?}"
    );
    assert_eq!(got.count_text(WARN), 1, "nowhere else either");
    let third = got.bash_call("echo call 3").expect("the third call");
    let fourth = got.bash_call("echo call 4").expect("the fourth call");
    let warned_at = got
        .text_position(WARN)
        .expect("the warning reached the model");
    assert!(
        third < warned_at && warned_at < fourth,
        "the warning comes with the third call's result (message {warned_at}, calls at {third} \
         and {fourth})"
    );

    let errors = got.errors();
    let blocked: Vec<usize> = errors
        .iter()
        .filter(|(_, e)| e.contains(BLOCK))
        .map(|(i, _)| *i)
        .collect();
    let tenth = got.bash_call("echo call 10").expect("the tenth call");
    assert_eq!(
        blocked,
        vec![tenth + 1],
        "the tenth call, and only it, is denied with the block text: {errors:?}"
    );
    assert_eq!(got.count_text(BLOCK), 1, "the block text once");
    assert_eq!(errors.len(), 1, "nothing else is denied: {errors:?}");
    for call in ["echo call 11", "echo call 12"] {
        let at = got.bash_call(call).expect("the calls after the log");
        let result = got.result_of(at).expect("its result");
        assert!(
            result.texts.iter().any(|t| t.contains(&call[5..])) && result.errors.is_empty(),
            "{call} ran after `engine log`: {:?}",
            result.texts
        );
    }
    s.assert_main_in_phase_one(&got, &saved);
    assert_denied_calls_claim_nothing(&s, &got, &saved);
    let state = s.world.session_state().expect("the session");
    assert_eq!(state["toolCallsSinceLastLog"], 2, "two calls since the log");
}
