//! The guard engine (`policies::guards`, binary `preload-overflow`) end to end: the cases of the
//! engine's `test-overflow-v2.sh` (B1-B19), `test-heartbeat-v2.sh` (C1-C18) and
//! `test-overflow-v2-subagent.sh` (S1-S14), plus the contract's failure cases (malformed stdin,
//! corrupt state, no session, no engine). Its rules (`guards.json`) are in [`rules`].

use std::fs;

use serde_json::{Value, json};

use preload_test_support::sandbox::{Answer, Sandbox, read_json, strings};

mod discovery;
mod rules;

pub const BIN: &str = "preload-overflow";

/// Run the hook for a parent call.
#[allow(clippy::needless_pass_by_value)]
pub fn call(sb: &Sandbox, tool: &str, input: Value) -> Answer {
    let answer = sb.run(BIN, json!({"tool_name": tool, "tool_input": input}));
    answer.assert_contract();
    answer
}

/// Run the hook for a sub-agent call.
#[allow(clippy::needless_pass_by_value)]
pub fn sub_call(sb: &Sandbox, agent: &str, tool: &str, input: Value) -> Answer {
    let answer = sb.run(
        BIN,
        json!({"tool_name": tool, "tool_input": input, "agent_id": agent}),
    );
    answer.assert_contract();
    answer
}

/// Run the hook for a parent's Bash call of `command`.
pub fn bash(sb: &Sandbox, command: &str) -> Answer {
    call(sb, "Bash", json!({"command": command}))
}

/// Run the hook for a parent's Grep call (of `x`).
pub fn grep(sb: &Sandbox) -> Answer {
    call(sb, "Grep", json!({"pattern": "x"}))
}

/// [`grep`] made by sub-agent `agent`.
pub fn sub_grep(sb: &Sandbox, agent: &str) -> Answer {
    sub_call(sb, agent, "Grep", json!({"pattern": "x"}))
}

pub fn allowed(a: &Answer) -> bool {
    a.decision() == "allow"
}

pub fn denied(a: &Answer) -> bool {
    a.decision() == "deny"
}

/// `a` denies the call with a reason that begins with `head`; the reason, for further checks.
#[track_caller]
pub fn denial_starting(a: &Answer, head: &str) -> String {
    assert!(denied(a), "not denied: {}", a.decision());
    let reason = a.reason();
    assert!(reason.starts_with(head), "{reason}");
    reason
}

/// The guard rules in `~/.claude/engine/guards.json`, replaced by `rules`.
pub fn guards(sb: &Sandbox, rules: &Value) {
    fs::write(
        sb.home.join(".claude/engine/guards.json"),
        rules.to_string(),
    )
    .unwrap();
}

/// A sandbox with the shipped guards.json and an active `implement` session `s`.
pub fn session_with(extra: &Value) -> Sandbox {
    let sb = Sandbox::new();
    sb.active_session("s", extra);
    sb
}

pub fn counter(state: &Value, key: &str) -> i64 {
    state["toolCallsByTranscript"][key].as_i64().unwrap_or(0)
}

pub fn stash(state: &Value) -> Vec<Value> {
    state["pendingAllowInjections"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The project's file `rel` as the hooks record it (its absolute path).
pub fn p(sb: &Sandbox, rel: &str) -> String {
    sb.project.join(rel).to_string_lossy().into_owned()
}

/// Whether the delivery log has an `event` for exactly `file`.
pub fn logged(sb: &Sandbox, event: &str, file: &str) -> bool {
    sb.events()
        .iter()
        .any(|e| e["event"] == event && e["file"] == file)
}

fn read(sb: &Sandbox, rel: &str) -> Answer {
    call(sb, "Read", json!({"file_path": sb.project.join(rel)}))
}

fn set_counter(sb: &Sandbox, n: i64) {
    let dir = sb.sessions.join("s");
    let mut state = sb.state("s");
    state["toolCallsByTranscript"] = json!({"test.jsonl": n});
    state["toolCallsSinceLastLog"] = json!(n);
    fs::write(dir.join(".state.json"), state.to_string()).unwrap();
}

// ---- test-overflow-v2.sh -------------------------------------------------------------------

#[test]
fn engine_log_and_session_commands_always_pass() {
    let sb = session_with(&json!({"contextUsage": 0.99}));
    for command in [
        "engine log sessions/s <<'EOF'\nx\nEOF",
        "engine session phase sessions/s '1: X'",
        "cd /p && engine session check",
    ] {
        assert!(allowed(&bash(&sb, command)), "{command}");
    }
}

#[test]
fn session_skill_continue_and_dehydrate_are_not_denied() {
    let sb = session_with(&json!({}));
    assert!(allowed(&call(
        &sb,
        "Skill",
        json!({"skill": "session", "args": "dehydrate restart"})
    )));
    let sb = session_with(&json!({"contextUsage": 0.9}));
    assert!(allowed(&call(
        &sb,
        "Skill",
        json!({"skill": "session", "args": "continue sessions/s"})
    )));
    assert!(denied(&call(
        &sb,
        "Skill",
        json!({"skill": "session", "args": "status"})
    )));
    assert_eq!(
        sb.state("s")["lifecycle"],
        "active",
        "status leaves the lifecycle alone"
    );
}

#[test]
fn dehydrating_and_kill_requested_allow_everything() {
    let sb = session_with(&json!({"lifecycle": "dehydrating", "contextUsage": 0.95}));
    assert!(allowed(&read(&sb, "docs/TOC.md")));
    let sb = session_with(&json!({"killRequested": true, "contextUsage": 0.95}));
    assert!(allowed(&read(&sb, "docs/TOC.md")));
    assert_eq!(counter(&sb.state("s"), "test.jsonl"), 0, "nothing counted");
}

#[test]
fn a_prefixed_dehydrate_command_marks_the_session_dehydrating() {
    let sb = session_with(&json!({"contextUsage": 0.9}));
    let a = bash(&sb, "FOO=1 engine session dehydrate sessions/s");
    assert!(allowed(&a));
    assert_eq!(sb.state("s")["lifecycle"], "dehydrating");
}

#[test]
fn heartbeat_warn_at_three_is_stashed_not_denied() {
    let sb = session_with(&json!({}));
    set_counter(&sb, 2);
    let a = bash(&sb, "ls");
    assert!(allowed(&a));
    let state = sb.state("s");
    assert_eq!(counter(&state, "test.jsonl"), 3);
    let stash = stash(&state);
    assert_eq!(stash.len(), 1);
    assert_eq!(stash[0]["ruleId"], "heartbeat-warn");
    assert_eq!(stash[0]["agentId"], "");
    assert!(
        stash[0]["content"]
            .as_str()
            .unwrap()
            .contains("§CMD_APPEND_LOG (3/10)")
    );
}

#[test]
fn overflow_denies_and_is_tracked() {
    let sb = session_with(&json!({"contextUsage": 0.80}));
    let reason = denial_starting(
        &read(&sb, "docs/TOC.md"),
        "[block: overflow-dehydration]\n[block: overflow] §CMD_DEHYDRATE",
    );
    assert!(
        reason.contains("\n\nThis is your LAST action before restart."),
        "real newlines"
    );
    assert_eq!(sb.state("s")["injectedRules"]["overflow-dehydration"], true);
    // Its whitelist: engine session, engine log, ls.
    assert!(allowed(&bash(&sb, "ls -la sessions")));
    assert!(denied(&bash(&sb, "engine tag find x")));
    assert!(denied(&bash(&sb, "engineering-tool log x")));
    assert!(
        denied(&call(&sb, "AskUserQuestion", json!({}))),
        "overflow suppresses the gate's whitelist"
    );
}

#[test]
fn custom_read_and_paste_rules_deny_with_their_text() {
    let sb = session_with(&json!({"currentPhase": "2: Review"}));
    guards(
        &sb,
        &json!([
            {"id": "must-read", "trigger": {"type": "phase", "condition": {"matches": "Review"}},
             "payload": {"files": ["docs/A.md", "docs/B.md"]}, "mode": "read", "urgency": "block", "priority": 1},
            {"id": "paste-it", "trigger": {"type": "phase", "condition": {"matches": "Review"}},
             "payload": {"command": "/session dehydrate"}, "mode": "paste", "urgency": "block", "priority": 2}
        ]),
    );
    let a = grep(&sb);
    assert_eq!(
        a.reason(),
        "[block: must-read, paste-it]\n[block: must-read] REQUIRED: Read these files: docs/A.md, docs/B.md\n/session dehydrate"
    );
}

#[test]
fn low_context_and_no_matching_rule_allow() {
    let sb = session_with(&json!({"contextUsage": 0.30}));
    assert!(allowed(&read(&sb, "docs/TOC.md")));
    let bare = sb.run_raw(BIN, &[], "{}");
    bare.assert_contract();
    assert!(allowed(&bare), "minimal input does not crash");
}

#[test]
fn stale_new_and_missing_pending_files() {
    let sb = Sandbox::new();
    let old = p(&sb, "docs/TOC.md");
    let a = p(&sb, ".directives/AGENTS.md");
    let b = p(&sb, ".directives/INVARIANTS.md");
    let missing = p(&sb, "nope.md");
    sb.active_session(
        "s",
        &json!({"preloadedFiles": [old], "pendingPreloads": [old, a, b, missing]}),
    );
    let answer = bash(&sb, "ls");
    assert!(allowed(&answer));
    let state = sb.state("s");
    assert!(strings(&state, "pendingPreloads").is_empty(), "{state}");
    let in_context = strings(&state, "preloadedFiles");
    assert!(in_context.contains(&a) && in_context.contains(&b) && !in_context.contains(&missing));
    assert_eq!(in_context.iter().filter(|p| **p == old).count(), 1);
    // The call's own answer carries them; nothing waits in the stash.
    let content = answer.context();
    assert!(
        content.starts_with(&format!("[Preloaded: {a}]\n")),
        "{content}"
    );
    assert!(
        content.contains(&format!("[Preloaded: {b}]\n")),
        "{content}"
    );
    assert!(stash(&state).is_empty(), "{state}");
    assert_eq!(sb.delivery_count("/.directives/AGENTS.md"), 1);
    assert!(logged(&sb, "claim-deliver", &a));
}

/// `PRELOAD_PRETOOLUSE_CONTEXT=0` (a client that drops a PreToolUse context): the due files
/// go out with PostToolUse only, through the stash; the answer carries none.
#[test]
fn without_the_pretooluse_channel_due_files_wait_in_the_stash() {
    let mut sb = Sandbox::new();
    let a = p(&sb, ".directives/AGENTS.md");
    sb.active_session("s", &json!({"pendingPreloads": [a]}));
    sb.extra_env
        .push(("PRELOAD_PRETOOLUSE_CONTEXT".into(), "0".into()));
    let answer = bash(&sb, "ls");
    assert!(allowed(&answer));
    assert_eq!(answer.context(), "");
    let state = sb.state("s");
    let content = stash(&state)[0]["content"].as_str().unwrap().to_owned();
    assert!(
        content.starts_with(&format!("[Preloaded: {a}]\n")),
        "{content}"
    );
    assert!(logged(&sb, "stash-inject", &a));
    let post = sb.run("preload-injections", json!({"tool_name": "Bash"}));
    assert!(post.context().contains(&format!("[Preloaded: {a}]")));
    assert_eq!(sb.delivery_count("/.directives/AGENTS.md"), 1);
}

#[test]
fn empty_queue_changes_nothing_but_the_counter() {
    let sb = session_with(&json!({"preloadedFiles": ["/x/a.md"]}));
    bash(&sb, "ls");
    let state = sb.state("s");
    assert_eq!(strings(&state, "preloadedFiles"), vec!["/x/a.md"]);
    assert!(strings(&state, "pendingPreloads").is_empty());
    assert!(stash(&state).is_empty());
}

// ---- failure policy ------------------------------------------------------------------------

#[test]
fn malformed_stdin_fails_open() {
    let sb = session_with(&json!({"contextUsage": 0.99}));
    for bad in ["", "not json", "[1,2]", "{\"tool_name\":"] {
        let a = sb.run_raw(BIN, &[], bad);
        a.assert_contract();
        assert!(allowed(&a), "{bad:?}: {}", a.stdout);
    }
}

#[test]
fn corrupt_state_fails_open_and_is_left_untouched() {
    let sb = Sandbox::new();
    let dir = sb.sessions.join("s");
    fs::create_dir_all(&dir).unwrap();
    let text = format!(
        "{{\"pid\": {}, \"lifecycle\": \"active\", \"contextUsage\": 0.99,",
        sb.pid
    );
    fs::write(dir.join(".state.json"), &text).unwrap();
    // The session this process used before it was damaged.
    let cache = sb.root().join(format!("claude-session-cache-{}", sb.pid));
    fs::write(&cache, format!("{}\n", dir.display())).unwrap();
    let a = read(&sb, "docs/TOC.md");
    assert!(allowed(&a));
    assert_eq!(fs::read_to_string(dir.join(".state.json")).unwrap(), text);
    assert!(!dir.join(".state.json.lock").exists());
}

#[test]
fn corrupt_seed_fails_open_and_is_left_untouched() {
    let sb = Sandbox::new();
    fs::create_dir_all(sb.seed_path().parent().unwrap()).unwrap();
    fs::write(sb.seed_path(), "{\"pid\": [").unwrap();
    let a = read(&sb, "docs/TOC.md");
    assert!(allowed(&a));
    assert_eq!(fs::read_to_string(sb.seed_path()).unwrap(), "{\"pid\": [");
}

#[test]
fn no_session_gates_with_lifecycle_none_and_writes_nothing() {
    let sb = Sandbox::new();
    let a = read(&sb, "docs/TOC.md");
    denial_starting(
        &a,
        "[block: session-gate]\n[block: session] §CMD_REQUIRE_ACTIVE_SESSION — no active session (lifecycle: none).",
    );
    assert!(allowed(&call(
        &sb,
        "AskUserQuestion",
        json!({"questions": []})
    )));
    assert!(allowed(&call(&sb, "Skill", json!({"skill": "implement"}))));
    assert!(allowed(&read(&sb, ".claude/settings.local.json")));
    assert!(
        fs::read_dir(&sb.sessions).unwrap().next().is_none(),
        "no seed, no session created"
    );
}

#[test]
fn no_engine_in_the_project_is_silent() {
    let sb = Sandbox::new();
    fs::remove_dir_all(&sb.sessions).unwrap();
    let a = read(&sb, "docs/TOC.md");
    assert_eq!(
        a.stdout, "",
        "no decision at all: permissions stay Claude Code's"
    );
}

#[test]
fn auto_activation_is_off_by_default_and_opt_in() {
    let mut sb = Sandbox::new();
    bash(&sb, "ls");
    assert!(fs::read_dir(&sb.sessions).unwrap().next().is_none());
    sb.extra_env
        .push(("PRELOAD_AUTO_ACTIVATE".into(), "1".into()));
    let a = bash(&sb, "ls");
    assert!(allowed(&a));
    let made: Vec<_> = fs::read_dir(&sb.sessions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(made.len(), 1);
    let state = read_json(&made[0].join(".state.json"));
    assert_eq!(state["skill"], "do");
    assert_eq!(state["pid"], sb.pid);
    assert_eq!(state["preloadedFiles"].as_array().unwrap().len(), 6);
}

// ---- test-heartbeat-v2.sh ------------------------------------------------------------------

#[test]
fn loading_and_quiet_lifecycles_do_not_count() {
    for extra in [
        json!({"loading": true}),
        json!({"lifecycle": "completed"}),
        json!({"overflowed": true}),
    ] {
        let sb = session_with(&extra);
        set_counter(&sb, 9);
        bash(&sb, "ls");
        assert_eq!(counter(&sb.state("s"), "test.jsonl"), 9, "{extra}");
    }
    let sb = session_with(&json!({"loading": true}));
    set_counter(&sb, 10);
    assert!(denied(&bash(&sb, "ls")), "rules still apply while loading");
}

#[test]
fn the_counter_increments_and_engine_log_resets_it() {
    let sb = session_with(&json!({}));
    bash(&sb, "ls");
    assert_eq!(counter(&sb.state("s"), "test.jsonl"), 1);
    bash(&sb, "bash ~/.claude/scripts/log.sh x");
    bash(&sb, "engine tag find x");
    let state = sb.state("s");
    assert_eq!(
        counter(&state, "test.jsonl"),
        3,
        "script paths and engine tag count"
    );
    assert_eq!(state["toolCallsSinceLastLog"], 3);
    assert_eq!(state["primaryTranscriptKey"], "test.jsonl");
    bash(&sb, "engine log sessions/s <<'EOF'");
    let state = sb.state("s");
    assert_eq!(counter(&state, "test.jsonl"), 0);
    assert_eq!(state["toolCallsSinceLastLog"], 0);
}

#[test]
fn same_file_edits_are_counted_once() {
    let sb = session_with(&json!({}));
    let f = sb.project.join("packages/estimate/src/parser.ts");
    let g = sb.project.join("packages/estimate/src/total.ts");
    call(&sb, "Edit", json!({"file_path": f}));
    call(&sb, "Edit", json!({"file_path": f}));
    assert_eq!(counter(&sb.state("s"), "test.jsonl"), 1);
    call(&sb, "Edit", json!({"file_path": g}));
    assert_eq!(counter(&sb.state("s"), "test.jsonl"), 2);
}

#[test]
fn task_tools_pass_and_do_not_count() {
    let sb = session_with(&json!({}));
    set_counter(&sb, 10);
    for tool in ["Task", "TaskOutput"] {
        assert!(allowed(&call(&sb, tool, json!({}))), "{tool}");
    }
    call(&sb, "Agent", json!({"prompt": "x"}));
    assert_eq!(counter(&sb.state("s"), "test.jsonl"), 10);
}

#[test]
fn at_ten_the_parent_is_blocked_except_whitelisted_calls() {
    let sb = session_with(&json!({"contextUsage": 0.2}));
    set_counter(&sb, 9);
    let reason = denial_starting(
        &grep(&sb),
        "[block: heartbeat-block]\n[warn: heartbeat] §CMD_APPEND_LOG (10/10) [",
    );
    assert!(
        reason.ends_with("| Context: 20%]\n    $ engine log sessions/s/IMPLEMENT_LOG.md"),
        "{reason}"
    );
    let claude_file = sb.home.join(".claude/skills/implement/SKILL.md");
    assert!(allowed(&call(
        &sb,
        "Read",
        json!({"file_path": claude_file})
    )));
    assert!(allowed(&call(
        &sb,
        "Write",
        json!({"file_path": sb.project.join("x.md")})
    )));
}

// ---- test-overflow-v2-subagent.sh ----------------------------------------------------------

#[test]
fn sub_agents_count_apart_from_the_parent() {
    let sb = session_with(&json!({}));
    set_counter(&sb, 2);
    sub_call(&sb, "a1", "Bash", json!({"command": "ls"}));
    let state = sb.state("s");
    assert_eq!(counter(&state, "sub:a1"), 1);
    assert_eq!(state["toolCallsSinceLastLog"], 2);
    assert_eq!(counter(&state, "test.jsonl"), 2);
    for id in ["a2", "a3"] {
        sub_call(&sb, id, "Bash", json!({"command": "ls"}));
    }
    sub_call(&sb, "a2", "Bash", json!({"command": "ls"}));
    let state = sb.state("s");
    assert_eq!(
        (
            counter(&state, "sub:a1"),
            counter(&state, "sub:a2"),
            counter(&state, "sub:a3")
        ),
        (1, 2, 1)
    );
}

#[test]
fn a_sub_agent_is_heartbeat_blocked_at_its_own_ten_only() {
    let sb = session_with(&json!({}));
    let mut state = sb.state("s");
    state["toolCallsByTranscript"] = json!({"test.jsonl": 2, "sub:busy": 9, "sub:calm": 1});
    fs::write(sb.sessions.join("s/.state.json"), state.to_string()).unwrap();
    assert!(denied(&sub_grep(&sb, "busy")));
    assert!(allowed(&sub_grep(&sb, "calm")));
    assert!(allowed(&grep(&sb)));
}

#[test]
fn sub_agents_are_exempt_from_overflow_and_read_throttle() {
    let sb = session_with(&json!({"contextUsage": 0.94}));
    assert!(allowed(&sub_call(
        &sb,
        "a1",
        "Read",
        json!({"file_path": sb.project.join("docs/TOC.md")})
    )));
    assert!(
        denied(&read(&sb, "docs/TOC.md")),
        "the parent is still blocked"
    );
    let sb = session_with(&json!({"contextUsage": 0.80}));
    assert!(allowed(&sub_grep(&sb, "a1")));
    assert!(denied(&grep(&sb)));
}

#[test]
fn a_sub_agents_engine_log_resets_only_its_counter() {
    let sb = session_with(&json!({}));
    let mut state = sb.state("s");
    state["toolCallsByTranscript"] = json!({"test.jsonl": 5, "sub:a1": 7});
    state["toolCallsSinceLastLog"] = json!(5);
    fs::write(sb.sessions.join("s/.state.json"), state.to_string()).unwrap();
    sub_call(&sb, "a1", "Bash", json!({"command": "engine log x"}));
    let state = sb.state("s");
    assert_eq!(
        (counter(&state, "test.jsonl"), counter(&state, "sub:a1")),
        (5, 0)
    );
    assert_eq!(state["toolCallsSinceLastLog"], 5);
}

#[test]
fn sub_agent_nudges_are_stashed_and_drained_per_agent() {
    let sb = session_with(&json!({}));
    let mut state = sb.state("s");
    state["toolCallsByTranscript"] = json!({"test.jsonl": 2, "sub:a1": 2});
    fs::write(sb.sessions.join("s/.state.json"), state.to_string()).unwrap();
    sub_call(&sb, "a1", "Bash", json!({"command": "ls"}));
    bash(&sb, "ls");
    let entries = stash(&sb.state("s"));
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0]["agentId"], "a1");
    assert!(entries[0]["content"].as_str().unwrap().contains("(3/10)"));
    let parent = sb.run("preload-injections", json!({"tool_name": "Bash"}));
    parent.assert_contract();
    assert!(parent.context().contains("§CMD_APPEND_LOG"));
    let left = stash(&sb.state("s"));
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["agentId"], "a1");
    let sub = sb.run(
        "preload-injections",
        json!({"tool_name": "Bash", "agent_id": "a1"}),
    );
    assert!(sub.context().contains("§CMD_APPEND_LOG"));
    assert!(stash(&sb.state("s")).is_empty());
}

#[test]
fn sub_agents_do_not_discover_and_claim_into_their_own_context() {
    let sb = Sandbox::new();
    let toc = p(&sb, "docs/TOC.md");
    sb.active_session("s", &json!({"pendingPreloads": [toc]}));
    let file = sb.project.join("packages/estimate/src/parser.ts");
    let answer = sub_call(&sb, "a1", "Read", json!({"file_path": file}));
    let state = sb.state("s");
    assert!(
        state
            .get("touchedDirs")
            .and_then(Value::as_object)
            .is_none_or(serde_json::Map::is_empty)
    );
    // The sub-agent got its own copy, in its call's answer; the queue stays for the main agent.
    assert!(
        answer.context().contains(&format!("[Preloaded: {toc}]")),
        "{}",
        answer.context()
    );
    assert!(stash(&state).is_empty(), "{state}");
    assert_eq!(strings(&state, "preloadedFiles_sub:a1"), vec![toc.clone()]);
    assert_eq!(strings(&state, "pendingPreloads"), vec![toc.clone()]);
    assert!(!strings(&state, "preloadedFiles").contains(&toc));
    let sub = sb.run(
        "preload-injections",
        json!({"tool_name": "Read", "agent_id": "a1"}),
    );
    assert_eq!(sub.context(), "");
    // A second sub-agent call does not deliver it to the sub-agent again.
    let again = sub_call(&sb, "a1", "Bash", json!({"command": "ls"}));
    assert!(!again.context().contains(&toc));
    assert!(stash(&sb.state("s")).is_empty());
    // The main agent's next call claims it for the main context.
    let main = bash(&sb, "ls");
    assert!(main.context().contains(&format!("[Preloaded: {toc}]")));
    let state = sb.state("s");
    assert!(strings(&state, "preloadedFiles").contains(&toc));
    assert!(strings(&state, "pendingPreloads").is_empty());
    assert!(stash(&state).is_empty());
    sub_call(&sb, "a1", "Edit", json!({"file_path": file}));
    assert_eq!(
        sb.state("s")["lastEditFile_sub:a1"],
        file.to_string_lossy().as_ref()
    );
    assert!(sb.state("s").get("lastEditFile_test.jsonl").is_none());
    call(&sb, "Read", json!({"file_path": file}));
    let dirs = sb.state("s")["touchedDirs"].clone();
    assert!(
        dirs.get(file.parent().unwrap().to_string_lossy().as_ref())
            .is_some(),
        "{dirs}"
    );
}
