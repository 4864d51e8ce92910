//! Each hook on its own, one file per hook (named after its policy in
//! `crates/preload-core/src/policies/`), and what every hook shares: failing open on bad input,
//! its help and version.

use serde_json::json;

use preload_test_support::sandbox::{Answer, Sandbox};

mod compaction_reread;
mod dispatch;
mod e2e_auto_answer;
mod every_hook;
pub(crate) mod guards;
mod phase_commands;
mod prompt_submit;
mod session_end;
mod session_start;
mod subagent_start;
mod templates;

/// One `SessionStart` registration printing the whole text within one output budget.
fn session_start(sb: &Sandbox, source: &str) -> Answer {
    sb.run(
        "preload-session-start",
        json!({"hook_event_name": "SessionStart", "source": source}),
    )
}

/// The distinct files of a text's `[Preloaded: …]` blocks, parts counted once.
fn files(text: &str) -> Vec<String> {
    preload_core::primitives::delivery::block_paths(text)
}

const HOOKS: [&str; 4] = [
    "preload-session-start",
    "preload-prompt-submit",
    "preload-templates",
    "preload-phase-commands",
];

fn skill_call(sb: &Sandbox, skill: &str) -> Answer {
    sb.run(
        "preload-templates",
        json!({"hook_event_name": "PostToolUse", "tool_name": "Skill",
        "tool_input": {"skill": skill}, "tool_response": {"success": true}}),
    )
}

fn phase_output(sb: &Sandbox, stdout: &serde_json::Value) -> Answer {
    sb.run("preload-phase-commands", json!({"hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_input": {"command": "engine session phase sessions/s \"1: Interrogation\""}, "tool_response": stdout.clone()}))
}
