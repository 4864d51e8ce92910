//! The hooks as the Codex CLI runs them (`PRELOAD_AGENT=codex`, which `preload install --agent
//! codex` writes into every command): its shell is `Bash`, its edits `apply_patch`, and an
//! allowed PreToolUse answer carries no decision (Codex takes `allow` without `updatedInput`
//! for an error and drops the context).

use serde_json::json;

use crate::hooks::guards::{BIN, stash};
use preload_test_support::sandbox::{Sandbox, strings};

fn codex_session() -> Sandbox {
    let mut sb = Sandbox::new();
    sb.active_session(
        "s",
        &json!({"directives": ["TESTING.md", "PITFALLS.md"], "loading": false}),
    );
    sb.extra_env.push(("PRELOAD_AGENT".into(), "codex".into()));
    sb
}

fn pre(sb: &Sandbox, tool: &str, command: &str) -> preload_test_support::sandbox::Answer {
    let answer = sb.run(
        BIN,
        json!({"tool_name": tool, "tool_input": {"command": command}, "tool_use_id": "call_1",
            "turn_id": "t1"}),
    );
    answer.assert_contract();
    answer
}

/// Whether the session's `touchedDirs` has the estimate package's `src`, the parser's directory.
fn touched_the_parsers_dir(sb: &Sandbox, state: &serde_json::Value) -> bool {
    let dir = sb.project.join("packages/estimate/src");
    state["touchedDirs"]
        .get(dir.to_string_lossy().as_ref())
        .is_some()
}

#[test]
fn a_shell_read_discovers_and_the_answer_carries_the_directives_without_a_decision() {
    let sb = codex_session();
    let answer = pre(&sb, "Bash", "sed -n 1,40p packages/estimate/src/parser.ts");
    assert_eq!(
        answer.decision(),
        "",
        "no allow for Codex: {}",
        answer.stdout
    );
    let invariants = sb
        .project
        .join("packages/estimate/.directives/INVARIANTS.md");
    let text = answer.context();
    assert!(
        text.contains(&format!("[Preloaded: {}]", invariants.display())),
        "{text}"
    );
    let state = sb.state("s");
    assert!(touched_the_parsers_dir(&sb, &state), "{state}");
    assert!(strings(&state, "preloadedFiles").contains(&invariants.to_string_lossy().into_owned()));
    assert_eq!(
        sb.delivery_count("/packages/estimate/.directives/INVARIANTS.md"),
        1
    );
}

#[test]
fn a_patch_discovers_as_an_edit() {
    let sb = codex_session();
    let patch = "*** Begin Patch\n*** Update File: packages/estimate/src/parser.ts\n@@\n-a\n+b\n*** End Patch\n";
    let answer = pre(&sb, "apply_patch", patch);
    assert_eq!(answer.decision(), "");
    let state = sb.state("s");
    assert!(touched_the_parsers_dir(&sb, &state), "{state}");
}

#[test]
fn claude_codes_shell_reads_are_not_discovery_and_its_answer_allows() {
    let mut sb = codex_session();
    sb.extra_env.clear();
    let answer = pre(&sb, "Bash", "cat packages/estimate/src/parser.ts");
    assert_eq!(answer.decision(), "allow");
    let state = sb.state("s");
    assert!(
        state
            .get("touchedDirs")
            .and_then(serde_json::Value::as_object)
            .is_none_or(serde_json::Map::is_empty)
    );
    assert!(stash(&state).is_empty());
}

#[test]
fn a_deny_is_a_deny_for_codex_too() {
    let mut sb = Sandbox::new();
    sb.extra_env.push(("PRELOAD_AGENT".into(), "codex".into()));
    sb.active_session("s", &json!({"lifecycle": "idle"}));
    let answer = pre(&sb, "Bash", "cat README.md");
    assert_eq!(answer.decision(), "deny", "{}", answer.stdout);
    assert!(!answer.reason().is_empty());
}
