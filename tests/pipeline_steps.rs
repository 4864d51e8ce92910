//! The steps of a simulated Claude Code session, shared by the pipeline scenarios: each runs the
//! real hook binaries the way Claude Code wires them, the PreToolUse guard engine
//! (`preload-overflow`, with the sandbox's `guards.json`) included. A call the guard denies does
//! not run, so its PostToolUse hooks do not either.

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

/// PreToolUse through the real guard engine (`preload-overflow`); its answer.
pub fn guard(sb: &Sandbox, tool: &str, tool_input: &Value) -> Answer {
    sb.run(
        "preload-overflow",
        json!({"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input}),
    )
}

/// Whether the guard let the call run (an empty answer is no engine: the call runs).
pub fn allowed(answer: &Answer) -> bool {
    answer.decision() != "deny"
}

/// One whole tool call with the real guard engine: PreToolUse, then, when the guard allows it,
/// the tool and the PostToolUse hooks. The guard's answer comes first.
pub fn guarded_call(sb: &Sandbox, tool: &str, tool_input: &Value, response: &Value) -> Vec<Answer> {
    let verdict = guard(sb, tool, tool_input);
    verdict.assert_contract();
    let runs = allowed(&verdict);
    let mut answers = vec![verdict];
    if runs {
        answers.extend(post_tool(sb, tool, tool_input, response));
    }
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

/// One whole tool call with an empty response: [`guarded_call`].
#[allow(clippy::needless_pass_by_value)]
pub fn tool_call(sb: &Sandbox, tool: &str, tool_input: Value) -> Vec<Answer> {
    guarded_call(sb, tool, &tool_input, &json!({}))
}

/// Ordinary calls until the session `name` has nothing queued or stashed (at most `limit`),
/// logging when the heartbeat asks, as an agent does.
pub fn drain(sb: &Sandbox, name: &str, limit: usize) {
    for _ in 0..limit {
        let state = crate::common::read_json(&sb.sessions.join(name).join(".state.json"));
        let idle = crate::common::strings(&state, "pendingPreloads").is_empty()
            && state["pendingAllowInjections"]
                .as_array()
                .is_none_or(Vec::is_empty);
        if idle {
            return;
        }
        let answers = tool_call(sb, "Bash", json!({"command": "ls"}));
        let heard = answers
            .iter()
            .any(|a| a.context().contains("heartbeat") || a.reason().contains("heartbeat"));
        if heard {
            tool_call(
                sb,
                "Bash",
                json!({"command": format!("engine log sessions/{name}/LOG.md")}),
            );
        }
    }
}

/// The `Skill` tool call Claude Code makes for `/skill` (always whitelisted by the gate).
pub fn skill_call(sb: &Sandbox, skill: &str) -> Vec<Answer> {
    let answers = tool_call(sb, "Skill", json!({"skill": skill}));
    assert!(
        allowed(&answers[0]),
        "the Skill call runs: {}",
        answers[0].reason()
    );
    answers
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
    let verdict = guard(sb, "Bash", &json!({"command": command}));
    verdict.assert_contract();
    assert!(
        allowed(&verdict),
        "{command} is let through: {}",
        verdict.reason()
    );
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
