//! `preload-prompt-submit`: a skill's expansion tracked in the session (or the seed before an
//! activation), plain prompts ignored, the gate's word only when it is required.

use std::fs;

use serde_json::json;

use preload_test_support::pipeline_steps::prompt;
use preload_test_support::sandbox::{Sandbox, strings};
use preload_test_support::session_openings::lists;

#[test]
fn prompt_submit_tracks_a_skill_expansion_in_the_session() {
    let sb = Sandbox::new();
    sb.active_session("s", &json!({}));
    let a = prompt(&sb, "/implement add auth");
    a.assert_contract();
    assert_eq!(a.stdout, "", "tracking prints nothing");
    let preloaded = strings(&sb.state("s"), "preloadedFiles");
    assert_eq!(preloaded.len(), 1);
    assert!(preloaded[0].ends_with("skills/implement/SKILL.md"));
    assert!(
        lists(&sb.state("s"), "pendingPreloads", "FMT_LOG_ENTRY.md"),
        "SKILL.md's references queued"
    );
    assert!(
        !sb.seed_path().exists(),
        "the session is the state, no seed"
    );
    prompt(&sb, "/implement again");
    assert_eq!(strings(&sb.state("s"), "preloadedFiles").len(), 1);
    assert_eq!(
        sb.events()
            .iter()
            .filter(|e| e["event"] == "skip-dedup")
            .count(),
        1
    );
}

#[test]
fn prompt_submit_before_activation_writes_the_seed() {
    let sb = Sandbox::new();
    prompt(&sb, "/do something").assert_contract();
    let seeded = strings(&sb.seed(), "preloadedFiles");
    assert_eq!(seeded.len(), 7, "6 standards + SKILL.md: {seeded:?}");
    assert!(seeded.iter().any(|f| f.ends_with("skills/do/SKILL.md")));
}

#[test]
fn prompt_submit_ignores_plain_prompts_and_unknown_skills() {
    let sb = Sandbox::new();
    for text in [
        "just do it",
        "/nosuchskill x",
        "/../../etc x",
        "see /implement",
    ] {
        prompt(&sb, text).assert_contract();
    }
    assert!(!sb.seed_path().exists());
    assert!(sb.events().is_empty());
}

#[test]
fn prompt_submit_gate_speaks_only_when_required() {
    let mut sb = Sandbox::new();
    assert_eq!(prompt(&sb, "hello").stdout, "");
    sb.extra_env.push(("SESSION_REQUIRED".into(), "1".into()));
    let a = prompt(&sb, "hello");
    a.assert_contract();
    assert_eq!(
        a.json.as_ref().unwrap()["hookSpecificOutput"]["hookEventName"],
        "UserPromptSubmit"
    );
    assert!(
        a.context()
            .starts_with("§CMD_REQUIRE_ACTIVE_SESSION: No active session.")
    );
    sb.active_session("s", &json!({"lifecycle": "completed"}));
    let a = prompt(&sb, "hello");
    assert!(a.context().starts_with(
        "§CMD_REQUIRE_ACTIVE_SESSION: Previous session 's' (skill: implement) is completed."
    ));
    sb.active_session("s", &json!({"lifecycle": "active"}));
    let before = fs::read_to_string(sb.sessions.join("s/.state.json")).unwrap();
    assert_eq!(prompt(&sb, "hello").stdout, "");
    assert_eq!(
        before,
        fs::read_to_string(sb.sessions.join("s/.state.json")).unwrap(),
        "the gate writes nothing"
    );
}
