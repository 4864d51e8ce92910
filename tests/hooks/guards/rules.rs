//! The black-box cases of the engine's `test-rule-engine.sh` (whitelists, triggers, gate,
//! composition, malformed rules, preload rules) against preload-overflow, and what the native
//! engine does better (allow rules delivered alongside a block, seeds, budget, tmux paste).

use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{
    allowed, bash, call, counter, denial_starting, denied, grep, guards, p, session_with, stash,
    sub_call,
};
use preload_test_support::sandbox::{Sandbox, strings};

/// `~/.claude/engine/config.sh` with `body`.
fn engine_config(sb: &Sandbox, body: &str) {
    fs::write(sb.home.join(".claude/engine/config.sh"), body).unwrap();
}

/// The only rule: `id`, a preload rule of `docs/TOC.md` for phases matching `X`, injected once,
/// with `urgency`; the file's path.
fn preload_toc_rule(sb: &Sandbox, id: &str, urgency: &str) -> PathBuf {
    let file = sb.project.join("docs/TOC.md");
    guards(
        sb,
        &json!([{"id": id, "trigger": {"type": "phase", "condition": {"matches": "X"}},
            "payload": {"preload": [file]}, "mode": "preload", "urgency": urgency, "inject": "once"}]),
    );
    file
}

fn write_state(sb: &Sandbox, state: &Value) {
    fs::write(sb.sessions.join("s/.state.json"), state.to_string()).unwrap();
}

/// Session `s` as having counted `n` tool calls of the test transcript.
fn set_transcript_calls(sb: &Sandbox, n: i64) {
    let mut state = sb.state("s");
    state["toolCallsByTranscript"] = json!({"test.jsonl": n});
    write_state(sb, &state);
}

#[test]
fn whitelist_passes_blocks_and_unions() {
    let sb = session_with(&json!({"lifecycle": "completed"}));
    assert!(allowed(&call(&sb, "AskUserQuestion", json!({}))));
    assert!(allowed(&call(&sb, "Skill", json!({"skill": "implement"}))));
    assert!(allowed(&call(
        &sb,
        "Read",
        json!({"file_path": sb.project.join("CLAUDE.md")})
    )));
    assert!(allowed(&bash(&sb, "engine find-sessions today")));
    assert!(denied(&grep(&sb)));
    assert!(denied(&call(
        &sb,
        "Read",
        json!({"file_path": sb.project.join("docs/TOC.md")})
    )));
    assert!(allowed(&bash(&sb, "engine log x")), "bypass");
}

#[test]
fn the_gate_text_names_the_lifecycle_and_active_sessions_pass() {
    let sb = session_with(&json!({"lifecycle": "completed"}));
    denial_starting(
        &grep(&sb),
        "[block: session-gate]\n[block: session] §CMD_REQUIRE_ACTIVE_SESSION — no active session (lifecycle: completed).",
    );
    let sb = session_with(&json!({}));
    assert!(allowed(&grep(&sb)));
    let sb = session_with(&json!({"lifecycle": "idle"}));
    denial_starting(&grep(&sb), "[block: idle-gate]\n[block: idle]");
    assert!(allowed(&bash(&sb, "engine session idle")));
}

#[test]
fn counters_are_per_transcript_and_eq_fires_only_at_three() {
    let sb = session_with(&json!({}));
    for _ in 0..2 {
        bash(&sb, "ls");
    }
    let other = sb.run(
        super::BIN,
        json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "transcript_path": "/t/other.jsonl"}),
    );
    assert!(allowed(&other));
    let state = sb.state("s");
    assert_eq!(
        (
            counter(&state, "test.jsonl"),
            counter(&state, "other.jsonl")
        ),
        (2, 1)
    );
    bash(&sb, "ls");
    assert_eq!(stash(&sb.state("s")).len(), 1, "warn at exactly 3");
    bash(&sb, "ls");
    assert_eq!(stash(&sb.state("s")).len(), 1, "not again at 4");
}

#[test]
fn block_beats_allow_but_the_allow_rule_is_still_delivered() {
    let sb = session_with(&json!({"currentPhase": "4: Synthesis"}));
    set_transcript_calls(&sb, 9);
    let a = grep(&sb);
    assert!(denied(&a));
    let state = sb.state("s");
    let entries = stash(&state);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["ruleId"], "synthesis-commands");
    assert_eq!(state["injectedRules"]["synthesis-commands"], true);
    assert_eq!(state["injectedRules"]["heartbeat-block"], true);
    // inject: once — never again.
    call(&sb, "Task", json!({}));
    assert_eq!(stash(&sb.state("s")).len(), 1);
}

#[test]
fn a_whitelisted_call_still_gets_the_allow_stash() {
    let sb = session_with(&json!({"currentPhase": "4: Synthesis"}));
    set_transcript_calls(&sb, 12);
    assert!(allowed(&call(&sb, "Task", json!({}))));
    assert_eq!(stash(&sb.state("s"))[0]["ruleId"], "synthesis-commands");
}

#[test]
fn union_of_blocking_whitelists_prevents_a_deadlock() {
    // Gate (completed) and heartbeat-block both fire: Skill is only in the gate's whitelist,
    // Task only in the heartbeat's; either passes both.
    let sb = session_with(&json!({"lifecycle": "completed"}));
    set_transcript_calls(&sb, 15);
    assert!(allowed(&call(&sb, "Skill", json!({"skill": "do"}))));
    assert!(allowed(&call(&sb, "Task", json!({}))));
    denial_starting(&grep(&sb), "[block: session-gate, heartbeat-block]\n");
}

#[test]
fn warn_escalates_to_block() {
    let sb = session_with(&json!({}));
    let mut kinds = Vec::new();
    for _ in 0..10 {
        let a = bash(&sb, "git status");
        kinds.push(a.decision());
    }
    assert_eq!(kinds.iter().filter(|k| *k == "deny").count(), 1);
    assert_eq!(kinds.last().unwrap(), "deny");
    assert_eq!(stash(&sb.state("s"))[0]["ruleId"], "heartbeat-warn");
}

#[test]
fn missing_empty_and_malformed_guards_allow() {
    for text in [None, Some(""), Some("{ not json"), Some("\"a string\"")] {
        let sb = session_with(&json!({"contextUsage": 0.99}));
        let path = sb.home.join(".claude/engine/guards.json");
        match text {
            None => fs::remove_file(&path).unwrap(),
            Some(t) => fs::write(&path, t).unwrap(),
        }
        let a = call(
            &sb,
            "Read",
            json!({"file_path": sb.project.join("docs/TOC.md")}),
        );
        assert!(allowed(&a), "{text:?}");
        assert_eq!(
            counter(&sb.state("s"), "test.jsonl"),
            1,
            "counting still happens"
        );
    }
}

#[test]
fn unknown_triggers_are_skipped_and_missing_fields_defaulted() {
    let sb = session_with(&json!({"currentPhase": "1: X"}));
    guards(
        &sb,
        &json!([
            {"id": "weird", "trigger": {"type": "moonPhase", "condition": {}}, "urgency": "block"},
            {"id": "bare", "trigger": {"type": "phase", "condition": {"matches": "X"}}, "payload": {"text": "hi"}}
        ]),
    );
    assert!(allowed(&grep(&sb)));
    let entries = stash(&sb.state("s"));
    assert_eq!(entries.len(), 1, "bare rule: inline + allow by default");
    assert_eq!(entries[0]["content"], "hi");
}

#[test]
fn overflowed_skips_counting_and_kill_requested_allows() {
    let sb = session_with(&json!({"overflowed": true}));
    bash(&sb, "ls");
    assert_eq!(counter(&sb.state("s"), "test.jsonl"), 0);
    let sb = session_with(&json!({"killRequested": true, "lifecycle": "completed"}));
    assert!(allowed(&grep(&sb)));
}

#[test]
fn a_custom_preload_rule_matches_once() {
    let sb = session_with(&json!({"currentPhase": "1: X"}));
    let file = preload_toc_rule(&sb, "toc", "allow");
    let first = bash(&sb, "ls");
    let second = bash(&sb, "ls");
    // The call's own PreToolUse answer carries the file; nothing is left for the stash.
    assert!(
        first
            .context()
            .starts_with(&format!("[Preloaded: {}]\n# Docs", file.display())),
        "{}",
        first.context()
    );
    assert_eq!(second.context(), "");
    let state = sb.state("s");
    assert!(stash(&state).is_empty(), "{state}");
    assert!(strings(&state, "preloadedFiles").contains(&file.to_string_lossy().into_owned()));
    assert_eq!(state["injectedRules"]["toc"], true);
}

#[test]
fn a_blocking_preload_rule_puts_the_files_in_the_reason() {
    let sb = session_with(&json!({"currentPhase": "1: X"}));
    let file = preload_toc_rule(&sb, "must-have", "block");
    let a = grep(&sb);
    assert_eq!(
        a.reason(),
        format!(
            "[block: must-have]\n[Preloaded: {}]\n# Docs\n\n- packages/estimate: cost estimates.\n",
            file.display()
        )
    );
    assert_eq!(sb.delivery_count("docs/TOC.md"), 1);
    assert!(allowed(&grep(&sb)), "once");
}

#[test]
fn overflow_threshold_follows_config_and_disable_auto_compact() {
    let sb = session_with(&json!({"contextUsage": 0.6}));
    assert!(allowed(&grep(&sb)));
    engine_config(&sb, "OVERFLOW_THRESHOLD=0.5\n");
    assert!(denied(&grep(&sb)));
    let mut sb2 = session_with(&json!({"contextUsage": 0.80}));
    sb2.extra_env
        .push(("DISABLE_AUTO_COMPACT".into(), "1".into()));
    assert!(allowed(&grep(&sb2)));
    sb2.extra_env.clear();
    assert!(denied(&grep(&sb2)));
}

#[test]
fn read_throttle_blocks_only_read() {
    let sb = session_with(&json!({"contextUsage": 0.91}));
    engine_config(&sb, "OVERFLOW_THRESHOLD=0.99\n");
    let a = call(
        &sb,
        "Read",
        json!({"file_path": sb.project.join("docs/TOC.md")}),
    );
    assert!(a.reason().starts_with("[block: read-throttle]\n"));
    assert!(allowed(&grep(&sb)));
    assert!(allowed(&sub_call(
        &sb,
        "a1",
        "Read",
        json!({"file_path": sb.project.join("docs/TOC.md")})
    )));
}

#[test]
fn the_stash_stays_within_the_budget_and_the_rest_stays_queued() {
    let sb = Sandbox::new();
    let mut pending = Vec::new();
    for i in 0..12 {
        let f = sb.project_file(
            &format!("docs/big{i}.md"),
            &format!("{}\n", "x".repeat(2_000)),
        );
        pending.push(f.to_string_lossy().into_owned());
    }
    sb.active_session("s", &json!({"pendingPreloads": pending}));
    let first = bash(&sb, "ls");
    let carried = first.context().chars().count();
    assert!(carried > 0 && carried <= 9_500, "{carried}");
    let state = sb.state("s");
    let stashed = stash(&state);
    assert_eq!(stashed.len(), 1);
    let content = stashed[0]["content"].as_str().unwrap().chars().count();
    assert!(content <= 9_500, "{content}");
    let left = strings(&state, "pendingPreloads").len();
    assert!(left > 0 && left < 12, "{left} left");
    // A second call with the stash not yet drained carries more in its own answer, and
    // stashes nothing more.
    let second = bash(&sb, "ls");
    assert!(second.context().chars().count() <= 9_500);
    assert_eq!(stash(&sb.state("s")), stashed);
    assert!(strings(&sb.state("s"), "pendingPreloads").len() < left);
    let mut rounds = 0;
    while !strings(&sb.state("s"), "pendingPreloads").is_empty() && rounds < 12 {
        let out = sb.run("preload-injections", json!({"tool_name": "Bash"}));
        out.assert_contract();
        bash(&sb, "ls");
        rounds += 1;
    }
    assert!(strings(&sb.state("s"), "pendingPreloads").is_empty());
    sb.assert_no_duplicates();
    assert_eq!(sb.deliveries().len(), 12);
}

#[test]
fn before_activation_the_seed_lends_its_queue_and_the_gate_applies() {
    let sb = Sandbox::new();
    let toc = p(&sb, "docs/TOC.md");
    fs::create_dir_all(sb.seed_path().parent().unwrap()).unwrap();
    fs::write(
        sb.seed_path(),
        json!({"pid": sb.pid, "lifecycle": "seeding", "preloadedFiles": [], "pendingPreloads": [toc], "touchedDirs": {}}).to_string(),
    )
    .unwrap();
    let file = sb.project.join("packages/estimate/src/parser.ts");
    let a = call(&sb, "Read", json!({"file_path": file}));
    assert!(denied(&a));
    assert!(a.reason().contains("(lifecycle: none)"), "{}", a.reason());
    let seed = sb.seed();
    assert_eq!(seed["lifecycle"], "seeding", "the seed keeps its lifecycle");
    assert!(
        seed["touchedDirs"]
            .get(file.parent().unwrap().to_string_lossy().as_ref())
            .is_some()
    );
    // A denied call gets no PostToolUse: nothing is claimed for it, the queue waits.
    assert!(strings(&seed, "preloadedFiles").is_empty(), "{seed}");
    let pending = strings(&seed, "pendingPreloads");
    assert!(pending.contains(&toc), "{seed}");
    assert!(
        pending
            .iter()
            .any(|p| p.ends_with("estimate/.directives/INVARIANTS.md"))
    );
    assert!(
        seed.get("toolCallsByTranscript").is_none(),
        "no heartbeat before a session"
    );
    // The next call that runs claims them: its answer carries them.
    let next = call(&sb, "Skill", json!({"skill": "implement"}));
    assert!(allowed(&next));
    let out = sb.run("preload-injections", json!({"tool_name": "Skill"}));
    let text = format!("{}\n{}", next.context(), out.context());
    assert!(text.contains(&format!("[Preloaded: {toc}]")), "{text}");
    assert!(
        text.contains("estimate/.directives/INVARIANTS.md]"),
        "{text}"
    );
    assert!(sb.events().iter().all(|e| e["sessionExists"] == false));
}

#[test]
fn paste_rules_type_into_tmux_when_present() {
    let mut sb = session_with(&json!({"currentPhase": "1: X"}));
    let bin = sb.root().join("bin");
    fs::create_dir_all(&bin).unwrap();
    let record = sb.root().join("tmux.log");
    let script = format!(
        "#!/bin/sh\nprintf '%s|' \"$@\" >> '{}'\necho >> '{}'\n",
        record.display(),
        record.display()
    );
    let tmux = bin.join("tmux");
    fs::write(&tmux, script).unwrap();
    fs::set_permissions(&tmux, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    guards(
        &sb,
        &json!([{"id": "nudge", "trigger": {"type": "phase", "condition": {"matches": "X"}},
            "payload": {"command": "/session dehydrate"}, "mode": "paste", "urgency": "block"}]),
    );
    sb.extra_env.push((
        "PATH".into(),
        format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
    ));
    sb.extra_env
        .push(("TMUX".into(), "/tmp/tmux-1/default,1,0".into()));
    sb.extra_env.push(("TMUX_PANE".into(), "%7".into()));
    let a = grep(&sb);
    assert_eq!(a.reason(), "[block: nudge]\n/session dehydrate");
    let deadline = Instant::now() + Duration::from_secs(10);
    while fs::read_to_string(&record).map_or(0, |t| t.lines().count()) < 2
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let log = fs::read_to_string(&record).unwrap();
    assert_eq!(
        log,
        "send-keys|-t|%7|-l|/session dehydrate|\nsend-keys|-t|%7|Enter|\n"
    );
}
