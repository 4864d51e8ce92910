//! `preload-templates`: a skill's phase 0 files delivered once, tracked in the session (or the
//! seed), within the output budget with the rest queued.

use serde_json::json;

use super::{files, session_start, skill_call};
use preload_test_support::pipeline_steps::{headers, prompt};
use preload_test_support::sandbox::{Sandbox, strings};
use preload_test_support::session_openings::lists;

#[test]
fn templates_delivers_phase_zero_once() {
    let sb = Sandbox::new();
    sb.active_session("s", &json!({}));
    let a = skill_call(&sb, "implement");
    a.assert_contract();
    assert_eq!(
        a.json.as_ref().unwrap()["hookSpecificOutput"]["hookEventName"],
        "PostToolUse"
    );
    let shown = headers(&a.context());
    assert!(
        !shown.iter().any(|h| h.ends_with("/implement/SKILL.md")),
        "the Skill call loaded SKILL.md itself: {shown:?}"
    );
    let state = sb.state("s");
    let preloaded = strings(&state, "preloadedFiles");
    let pending = strings(&state, "pendingPreloads");
    assert!(preloaded.iter().any(|f| f.ends_with("/implement/SKILL.md")));
    // Phase 0's commands and templates: out now, or first in the queue when the output is full;
    // never both, never twice.
    for name in [
        "CMD_REPORT_INTENT.md",
        "CMD_SELECT_MODE.md",
        "TEMPLATE_IMPLEMENTATION_LOG.md",
    ] {
        let out = shown.iter().filter(|h| h.ends_with(name)).count();
        let queued = pending.iter().filter(|h| h.ends_with(name)).count();
        assert_eq!(out + queued, 1, "{name}: out {shown:?}, queued {pending:?}");
    }
    assert!(
        shown.iter().any(|h| h.ends_with("CMD_REPORT_INTENT.md")),
        "{shown:?}"
    );
    assert!(
        !shown.iter().any(|h| h.ends_with("CMD_INTERROGATE.md"))
            && !pending.iter().any(|h| h.ends_with("CMD_INTERROGATE.md")),
        "phase 1 waits"
    );
    assert!(
        shown.iter().all(|h| preloaded.contains(h)),
        "tracked in the same write"
    );
    let again = skill_call(&sb, "implement");
    assert!(
        files(&again.context()).iter().all(|f| pending.contains(f)),
        "a second run sends only what was still queued"
    );
    sb.assert_no_duplicates();
}

#[test]
fn templates_with_only_a_seed_tracks_in_the_seed() {
    let sb = Sandbox::new();
    session_start(&sb, "startup");
    prompt(&sb, "/implement x");
    let a = skill_call(&sb, "implement");
    a.assert_contract();
    assert!(
        !a.context().contains("SKILL.md]"),
        "the expansion already delivered it"
    );
    let seed = sb.seed();
    let seeded = strings(&seed, "preloadedFiles");
    let queued = strings(&seed, "pendingPreloads");
    assert!(
        seeded
            .iter()
            .chain(&queued)
            .any(|f| f.ends_with("CMD_SELECT_MODE.md"))
    );
    assert_eq!(
        a.context().contains("CMD_SELECT_MODE.md]"),
        seeded.iter().any(|f| f.ends_with("CMD_SELECT_MODE.md"))
    );
}

#[test]
fn templates_on_bash_uses_the_sessions_skill_and_phase() {
    let sb = Sandbox::new();
    sb.active_session("s", &json!({"currentPhase": "2: Planning"}));
    let run = |command: &str| {
        sb.run(
            "preload-templates",
            json!({"tool_name": "Bash", "tool_input": {"command": command}}),
        )
    };
    assert_eq!(run("engine session phase sessions/s").stdout, "");
    assert_eq!(run("ls -la").stdout, "");
    let a = run("engine session continue sessions/s");
    a.assert_contract();
    // The current phase's commands: out now, or first in line for the next call.
    let state = sb.state("s");
    let out = a.context().contains("CMD_GENERATE_PLAN.md]");
    let queued = lists(&state, "pendingPreloads", "CMD_GENERATE_PLAN.md");
    assert!(out != queued, "out {out}, queued {queued}");
    assert!(!a.context().contains("CMD_SELECT_MODE.md]"));
    assert!(
        !lists(&state, "pendingPreloads", "CMD_SELECT_MODE.md"),
        "phase 0 is not the session's phase"
    );
}

#[test]
fn templates_ignores_other_tools_and_unknown_skills() {
    let sb = Sandbox::new();
    for input in [
        json!({"tool_name": "Read", "tool_input": {"file_path": "/x"}}),
        json!({"tool_name": "Skill", "tool_input": {"skill": "nope"}}),
        json!({"tool_name": "Skill", "tool_input": {"skill": "../../x"}}),
        json!({"tool_name": "Skill"}),
        json!({"tool_name": "Bash", "tool_input": {"command": "engine session activate x"}}),
    ] {
        let a = sb.run("preload-templates", input);
        a.assert_contract();
        assert_eq!(a.stdout, "");
    }
}

#[test]
fn templates_output_stays_within_the_budget_and_queues_the_rest() {
    let mut sb = Sandbox::new();
    sb.active_session("s", &json!({}));
    sb.extra_env
        .push(("PRELOAD_OUTPUT_BUDGET".into(), "700".into()));
    let a = skill_call(&sb, "implement");
    a.assert_contract();
    assert!(a.context().chars().count() <= 700);
    let state = sb.state("s");
    let pending = strings(&state, "pendingPreloads");
    let preloaded = strings(&state, "preloadedFiles");
    for name in [
        "CMD_REPORT_INTENT.md",
        "CMD_SELECT_MODE.md",
        "CMD_INGEST_CONTEXT_BEFORE_WORK.md",
        "TEMPLATE_IMPLEMENTATION_PLAN.md",
    ] {
        let q = pending.iter().any(|p| p.ends_with(name));
        let d = preloaded.iter().any(|p| p.ends_with(name));
        assert!(q ^ d, "{name}: queued {q}, delivered {d}");
    }
}
