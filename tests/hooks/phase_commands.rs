//! `preload-phase-commands`: a phase's command files delivered in one write after the engine
//! printed the phase, what is in context skipped, what does not fit queued.

use std::fs;

use serde_json::json;

use super::{phase_output, session_start};
use preload_test_support::sandbox::{Answer, Sandbox, assert_shown_recorded, shown_parts, strings};

/// What a phase transition brought, in order: the files its output shows (each recorded as
/// delivered), then what it left queued.
fn phase_files_out(sb: &Sandbox, a: &Answer) -> Vec<String> {
    let state = sb.state("s");
    assert_shown_recorded(&a.context(), &state);
    let mut out: Vec<String> = Vec::new();
    for (path, ..) in shown_parts(&a.context()) {
        if !out.contains(&path) {
            out.push(path);
        }
    }
    out.extend(strings(&state, "pendingPreloads"));
    out
}

fn names(paths: &[String]) -> Vec<&str> {
    paths
        .iter()
        .map(|p| p.rsplit('/').next().unwrap())
        .collect()
}

#[test]
fn phase_commands_deliver_the_phase_in_one_write_and_skip_what_is_in_context() {
    let sb = Sandbox::new();
    let intent = sb.engine_path("commands/CMD_REPORT_INTENT.md");
    sb.active_session("s", &json!({"preloadedFiles": [intent]}));
    let a = phase_output(
        &sb,
        &json!({"stdout": "Phase: 1: Interrogation\nSteps:\n  1.1: §CMD_REPORT_INTENT\n"}),
    );
    a.assert_contract();
    assert!(
        !shown_parts(&a.context()).is_empty(),
        "the transition's own result carries the new phase's commands"
    );
    let out = phase_files_out(&sb, &a);
    assert_eq!(
        &names(&out)[..3],
        [
            "CMD_INTERROGATE.md",
            "CMD_ASK_ROUND.md",
            "CMD_LOG_INTERACTION.md"
        ]
    );
    assert!(!names(&out).contains(&"CMD_REPORT_INTENT.md"));
    let skips: Vec<_> = sb
        .events()
        .into_iter()
        .filter(|e| e["event"] == "skip-dedup")
        .collect();
    assert_eq!(skips.len(), 1);
    assert_eq!(skips[0]["file"], json!(intent));
}

#[test]
fn phase_commands_queue_what_does_not_fit() {
    let mut sb = Sandbox::new();
    sb.extra_env
        .push(("PRELOAD_OUTPUT_BUDGET".into(), "700".into()));
    sb.active_session("s", &json!({}));
    let a = phase_output(&sb, &json!({"stdout": "Phase: 1: Interrogation"}));
    a.assert_contract();
    assert!(a.context().chars().count() <= 700);
    let out = phase_files_out(&sb, &a);
    assert!(
        !strings(&sb.state("s"), "pendingPreloads").is_empty(),
        "a small budget leaves files queued: {out:?}"
    );
    for name in [
        "CMD_INTERROGATE.md",
        "CMD_ASK_ROUND.md",
        "CMD_LOG_INTERACTION.md",
    ] {
        assert_eq!(
            names(&out).iter().filter(|n| **n == name).count(),
            1,
            "{name} delivered or queued, once: {out:?}"
        );
    }
}

#[test]
fn phase_commands_resolve_letter_labels_and_string_responses() {
    let sb = Sandbox::new();
    sb.active_session("s", &json!({}));
    let a = phase_output(&sb, &json!("Phase: 3.A: Build Loop"));
    a.assert_contract();
    let out = phase_files_out(&sb, &a);
    assert!(names(&out).contains(&"CMD_HANDOFF_TO_AGENT.md"), "{out:?}");
}

#[test]
fn phase_commands_prefer_the_state_phases() {
    let sb = Sandbox::new();
    sb.active_session("s", &json!({"phases": [{"label": "1", "name": "Custom", "steps": ["§CMD_WALK_THROUGH_RESULTS"]}]}));
    let a = phase_output(&sb, &json!({"stdout": "Phase: 1: Custom"}));
    let out = phase_files_out(&sb, &a);
    assert_eq!(names(&out)[0], "CMD_WALK_THROUGH_RESULTS.md");
    assert!(!names(&out).contains(&"CMD_INTERROGATE.md"));
}

#[test]
fn phase_commands_ignore_other_output_and_seed_only_states() {
    let sb = Sandbox::new();
    session_start(&sb, "startup");
    let before = fs::read_to_string(sb.seed_path()).unwrap();
    for response in [
        json!({"stdout": "Phase: 1: Interrogation"}),
        json!({"stdout": "total 0"}),
        json!(5),
    ] {
        phase_output(&sb, &response).assert_contract();
    }
    assert_eq!(
        fs::read_to_string(sb.seed_path()).unwrap(),
        before,
        "a seed has no skill: nothing to queue"
    );
    sb.active_session("s", &json!({}));
    let a = sb.run(
        "preload-phase-commands",
        json!({"tool_name": "Read", "tool_response": {"stdout": "Phase: 1: X"}}),
    );
    assert_eq!(a.stdout, "");
    assert!(strings(&sb.state("s"), "pendingPreloads").is_empty());
}
