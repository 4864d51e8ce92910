//! The steps of a simulated Claude Code session, shared by the pipeline scenarios: each runs the
//! real hook binaries the way Claude Code wires them, the PreToolUse guard engine
//! (`preload-overflow`, with the sandbox's `guards.json`) included. A call the guard denies does
//! not run, so its PostToolUse hooks do not either. Under `PRELOAD_WIRING=dispatch` every event
//! goes through `preload-dispatch <Event>` instead, one process per event.

use std::process::Output;

use preload_cli::transition::{self, proof::ProofSchema};
use serde_json::{Map, Value, json};

use crate::sandbox::{Answer, Sandbox, Wiring};

/// SessionStart with `source`, all its registrations at once, as Claude Code runs them.
pub fn session_start(sb: &Sandbox, source: &str) -> Answer {
    sb.session_start_event(&json!({"hook_event_name": "SessionStart", "source": source}))
}

/// The user submits `prompt`.
pub fn prompt(sb: &Sandbox, text: &str) -> Answer {
    let input = json!({"hook_event_name": "UserPromptSubmit", "prompt": text});
    match sb.wiring {
        Wiring::Binaries => sb.run("preload-prompt-submit", input),
        Wiring::Dispatch => dispatch(sb, "UserPromptSubmit", input),
    }
}

/// One event through `preload-dispatch <Event>` (the whole event in one process).
fn dispatch(sb: &Sandbox, event: &str, input: Value) -> Answer {
    let answer = sb.run_args("preload-dispatch", &[event], input);
    answer.assert_contract();
    answer
}

/// PreToolUse through the real guard engine (`preload-overflow`, or every PreToolUse hook
/// through `preload-dispatch`); its answer.
pub fn guard(sb: &Sandbox, tool: &str, tool_input: &Value) -> Answer {
    let input =
        json!({"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input});
    match sb.wiring {
        Wiring::Binaries => sb.run("preload-overflow", input),
        Wiring::Dispatch => dispatch(sb, "PreToolUse", input),
    }
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

/// Every PostToolUse hook of the pipeline for one tool call; their answers (one, the merged
/// one, through `preload-dispatch`).
pub fn post_tool(sb: &Sandbox, tool: &str, tool_input: &Value, response: &Value) -> Vec<Answer> {
    let input = json!({"hook_event_name": "PostToolUse", "tool_name": tool,
        "tool_input": tool_input, "tool_response": response});
    if sb.wiring == Wiring::Dispatch {
        return vec![dispatch(sb, "PostToolUse", input)];
    }
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
        let state = crate::sandbox::read_json(&sb.sessions.join(name).join(".state.json"));
        let idle = crate::sandbox::strings(&state, "pendingPreloads").is_empty()
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
    cli_in(sb, args, "")
}

/// Run the `preload` command line in the project with `stdin`; (exit code, stdout).
pub fn cli_in(sb: &Sandbox, args: &[&str], stdin: &str) -> (i32, String) {
    let out = cli_output(sb, args, stdin);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Run the `preload` command line in the project with `stdin`; what it left.
pub fn cli_output(sb: &Sandbox, args: &[&str], stdin: &str) -> Output {
    sb.command("preload")
        .args(args)
        .write_stdin(stdin)
        .output()
        .unwrap()
}

/// What an agent pipes into `phase` to leave the current phase of session `name`: a value for
/// every field of the phase's `Proof required to leave this phase` list (the fields of its
/// command files' proof schemas and its own), of the type the schema names, a string
/// otherwise. Empty when the phase asks for none.
pub fn proof_stdin(sb: &Sandbox, name: &str) -> String {
    let state = crate::sandbox::read_json(&sb.sessions.join(name).join(".state.json"));
    let current = state["currentPhase"].as_str().unwrap_or("");
    let phases = state["phases"].as_array().cloned().unwrap_or_default();
    let Some(definition) = transition::find(
        preload_core::state::Phases::of(&phases),
        transition::label_of(current),
    ) else {
        return String::new();
    };
    let declared = crate::sandbox::strings(&Value::Object(definition.clone()), "proof");
    let commands = sb.home.join(".claude/engine/.directives/commands");
    let schema = ProofSchema::of_phase(&commands, definition, &declared);
    if schema.required.is_empty() {
        return String::new();
    }
    let mut proof = Map::new();
    for field in &schema.required {
        let kind = schema
            .properties
            .get(field)
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str);
        let value = match kind {
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => json!(format!("{field}: done")),
        };
        proof.insert(field.clone(), value);
    }
    format!("{}\n", Value::Object(proof))
}

/// A Bash tool call that runs the `preload` command line (`preload activate …`, `preload phase …`)
/// with `stdin` and reports it to the PostToolUse hooks as `command`.
pub fn bash_cli(sb: &Sandbox, command: &str, args: &[&str], stdin: &str) -> (String, Vec<Answer>) {
    let verdict = guard(sb, "Bash", &json!({"command": command}));
    verdict.assert_contract();
    assert!(
        allowed(&verdict),
        "{command} is let through: {}",
        verdict.reason()
    );
    let out = cli_output(sb, args, stdin);
    assert!(
        out.status.success(),
        "preload {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
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
        "",
    )
    .1
}

/// The command line of `engine session phase sessions/<name> "<phase>"` with `proof` piped in.
pub fn phase_command(name: &str, phase: &str, proof: &str) -> String {
    let command = format!("engine session phase sessions/{name} \"{phase}\"");
    if proof.is_empty() {
        command
    } else {
        format!("{command} <<'EOF'\n{proof}EOF")
    }
}

/// `engine session phase sessions/<name> "<phase>"` as a Bash tool call, with the proof the
/// current phase asks for on stdin.
pub fn phase(sb: &Sandbox, name: &str, phase: &str) -> Vec<Answer> {
    let dir = format!("sessions/{name}");
    let proof = proof_stdin(sb, name);
    let command = phase_command(name, phase, &proof);
    bash_cli(sb, &command, &["phase", &dir, phase], &proof).1
}

/// [`phase`] with `extra` fields merged into the proof (a mode chosen in the setup phase).
pub fn phase_proving(sb: &Sandbox, name: &str, phase: &str, extra: &Value) -> Vec<Answer> {
    let dir = format!("sessions/{name}");
    let mut proof: Map<String, Value> =
        serde_json::from_str(proof_stdin(sb, name).trim()).unwrap_or_default();
    if let Some(extra) = extra.as_object() {
        proof.extend(extra.clone());
    }
    let proof = format!("{}\n", Value::Object(proof));
    let command = phase_command(name, phase, &proof);
    bash_cli(sb, &command, &["phase", &dir, phase], &proof).1
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
        .map(|h| preload_core::primitives::delivery::header_path(h).to_owned())
        .collect()
}
