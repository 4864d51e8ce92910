//! The steps of a simulated Claude Code session, shared by the pipeline scenarios: each runs the
//! real hook binaries the way Claude Code wires them. The PreToolUse preload rule is played by
//! a small stand-in that calls the library (`preload::apply` in `Mode::Claim` + stash), since the
//! guard engine is its own binary.

use std::time::Duration;

use preload_core::delivery::Packer;
use preload_core::env::{self, Env};
use preload_core::preload::{self, Mode};
use preload_core::{Context, HookInput, session};
use serde_json::{Value, json};

use crate::common::{Answer, Sandbox};

/// SessionStart with `source`, all its registrations at once, as Claude Code runs them.
pub fn session_start(sb: &Sandbox, source: &str) -> Answer {
    sb.session_start_event(&json!({"hook_event_name": "SessionStart", "source": source}))
}

/// The user submits `prompt`.
pub fn prompt(sb: &Sandbox, text: &str) -> Answer {
    sb.run(
        "preload-prompt-submit",
        json!({"hook_event_name": "UserPromptSubmit", "prompt": text}),
    )
}

/// The PreToolUse preload rule: claim what is queued and stash it for PostToolUse.
pub fn claim(sb: &Sandbox) {
    let env = Env::from_pairs([
        (env::HOME, sb.home.to_string_lossy().into_owned()),
        (env::CLAUDE_SUPERVISOR_PID, sb.pid.to_string()),
        (env::PRELOAD_TEST_LOG, sb.log.to_string_lossy().into_owned()),
        (
            env::CLAUDE_SESSION_CACHE_DIR,
            sb.root().to_string_lossy().into_owned(),
        ),
    ]);
    let input = HookInput::from_value(json!({"cwd": sb.project}));
    let ctx = Context::new(env, "overflow", &input, Duration::from_secs(5));
    let Some(target) = session::existing_preload_state(&ctx) else {
        return;
    };
    let mut packer = Packer::new(ctx.budget);
    let batch = preload_core::ledger::update(&ctx, &target, |s| {
        let requests = preload::pending_requests(&ctx, s, "overflow(preload)");
        let batch = preload::apply(&ctx, s, &requests, Mode::Claim, &mut packer);
        if !batch.blocks.is_empty() {
            s.array_mut("pendingAllowInjections")
                .push(json!({"ruleId": "preload", "content": batch.text(), "agentId": ""}));
        }
        batch
    });
    if let Ok(batch) = batch {
        batch.log(&ctx, target.is_session);
    }
}

/// PreToolUse through the real guard engine (`preload-overflow`); its answer.
pub fn guard(sb: &Sandbox, tool: &str, tool_input: &Value) -> Answer {
    sb.run(
        "preload-overflow",
        json!({"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input}),
    )
}

/// One whole tool call with the real guard engine: PreToolUse, the tool, the PostToolUse hooks.
/// The guard's answer comes first.
pub fn guarded_call(sb: &Sandbox, tool: &str, tool_input: &Value, response: &Value) -> Vec<Answer> {
    let mut answers = vec![guard(sb, tool, tool_input)];
    answers.extend(post_tool(sb, tool, tool_input, response));
    answers
}

/// Every PostToolUse hook of the pipeline for one tool call; their answers.
pub fn post_tool(sb: &Sandbox, tool: &str, tool_input: &Value, response: &Value) -> Vec<Answer> {
    let input = json!({"hook_event_name": "PostToolUse", "tool_name": tool,
        "tool_input": tool_input, "tool_response": response});
    [
        "preload-templates",
        "preload-phase-commands",
        "preload-injections",
    ]
    .iter()
    .map(|bin| sb.run(bin, input.clone()))
    .collect()
}

/// One whole tool call: PreToolUse claim, the tool, the PostToolUse hooks.
#[allow(clippy::needless_pass_by_value)]
pub fn tool_call(sb: &Sandbox, tool: &str, tool_input: Value) -> Vec<Answer> {
    claim(sb);
    post_tool(sb, tool, &tool_input, &json!({}))
}

/// Run the `preload` command line in the project; (exit code, stdout).
pub fn cli(sb: &Sandbox, args: &[&str]) -> (i32, String) {
    let out = sb.command("preload").args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// A Bash tool call that runs the `preload` command line (`preload activate …`, `preload phase …`)
/// and reports it to the PostToolUse hooks as `command`.
pub fn bash_cli(sb: &Sandbox, command: &str, args: &[&str]) -> (String, Vec<Answer>) {
    claim(sb);
    let (code, stdout) = cli(sb, args);
    assert_eq!(code, 0, "preload {args:?} failed");
    let answers = post_tool(
        sb,
        "Bash",
        &json!({"command": command}),
        &json!({"stdout": stdout}),
    );
    (stdout, answers)
}

/// `engine session activate sessions/<name> <skill>` as a Bash tool call.
pub fn activate(sb: &Sandbox, name: &str, skill: &str) -> Vec<Answer> {
    let dir = format!("sessions/{name}");
    bash_cli(
        sb,
        &format!("engine session activate {dir} {skill}"),
        &["activate", &dir, "--skill", skill],
    )
    .1
}

/// `engine session phase sessions/<name> "<phase>"` as a Bash tool call.
pub fn phase(sb: &Sandbox, name: &str, phase: &str) -> Vec<Answer> {
    let dir = format!("sessions/{name}");
    bash_cli(
        sb,
        &format!("engine session phase {dir} \"{phase}\""),
        &["phase", &dir, phase],
    )
    .1
}

/// The answers' contexts joined (what the agent saw from them).
pub fn seen(answers: &[Answer]) -> String {
    answers
        .iter()
        .map(Answer::context)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Events of one kind for a file whose path ends with `suffix`.
pub fn events_for(sb: &Sandbox, event: &str, suffix: &str) -> Vec<Value> {
    sb.events()
        .into_iter()
        .filter(|e| e["event"] == event && e["file"].as_str().is_some_and(|f| f.ends_with(suffix)))
        .collect()
}

/// The `[Preloaded: …]` headers in a text (part labels removed).
pub fn headers(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            l.strip_prefix("[Preloaded: ")
                .and_then(|r| r.strip_suffix(']'))
        })
        .map(|h| h.split(" (part ").next().unwrap_or(h).to_owned())
        .collect()
}
