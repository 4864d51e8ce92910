//! Unit tests of `runner`.

use super::*;
use crate::primitives::env::Agent;
use serde_json::{Value, json};
use std::time::Duration;

#[test]
fn pre_tool_use_always_decides() {
    let allow = render(
        HookEvent::PreToolUse,
        &HookOutput::Silent,
        Agent::ClaudeCode,
    );
    assert_eq!(allow, None);
    let allow = render(
        HookEvent::PreToolUse,
        &fail_open(HookEvent::PreToolUse),
        Agent::ClaudeCode,
    )
    .unwrap();
    assert_eq!(
        allow,
        r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}"#
    );
    let ctx = render(
        HookEvent::PreToolUse,
        &HookOutput::Context(String::new()),
        Agent::ClaudeCode,
    )
    .unwrap();
    assert_eq!(ctx, allow);
}

#[test]
fn context_is_compact_with_event_name() {
    let line = render(
        HookEvent::PostToolUse,
        &HookOutput::Context("a\nb".into()),
        Agent::ClaudeCode,
    )
    .unwrap();
    assert!(!line.contains('\n'));
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    assert_eq!(v["hookSpecificOutput"]["additionalContext"], "a\nb");
    assert_eq!(
        render(
            HookEvent::PostToolUse,
            &HookOutput::Context(String::new()),
            Agent::ClaudeCode
        ),
        None
    );
}

/// The answer Claude Code reads for `output` to `event`.
fn answer_of(event: HookEvent, output: &HookOutput) -> Value {
    serde_json::from_str(&render(event, output, Agent::ClaudeCode).unwrap()).unwrap()
}

#[test]
fn deny_and_block_shapes() {
    let v = answer_of(HookEvent::PreToolUse, &HookOutput::Deny("r".into()));
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(v["hookSpecificOutput"]["permissionDecisionReason"], "r");
    let v = answer_of(HookEvent::Stop, &HookOutput::Block("r".into()));
    assert_eq!(v, json!({"decision": "block", "reason": "r"}));
}

/// The budget the watchdog children below run with.
const CHILD_BUDGET_MS: &str = "100";

/// Not a test of its own: the body of a hook process whose handler outlives its budget, run by
/// the tests below in a child process (`--ignored --exact`).
#[test]
#[ignore = "run as a child process by the watchdog tests"]
fn watchdog_child_sleeps_past_its_budget() {
    run_one("guards", HookEvent::PreToolUse, |_, _| {
        std::thread::sleep(Duration::from_secs(10));
        Ok(HookOutput::Deny("LATE".into()))
    });
}

/// Not a test of its own: a hook process that commits a write within its budget, then is held
/// back past the budget and the watchdog's grace (a loaded machine) before it answers; run by
/// [`an_answer_committed_in_time_goes_out_however_late_it_is_printed`] in a child process.
#[test]
#[ignore = "run as a child process by the watchdog tests"]
fn watchdog_child_commits_then_is_held_back() {
    run_one("injections", HookEvent::PostToolUse, |_, _| {
        let dir = tempfile::tempdir().map_err(|e| HookError::Other(e.to_string()))?;
        std::thread::sleep(Duration::from_millis(40));
        crate::state::save(
            &dir.path().join("s.json"),
            &crate::state::State::default(),
            crate::state::Durability::PerCall,
        )?;
        std::thread::sleep(Duration::from_millis(250));
        Ok(HookOutput::Context("COMMITTED".into()))
    });
}

/// Run [`watchdog_child_sleeps_past_its_budget`] in a child process; its stdout, exit code and
/// how long it took. `close_stdin`: write `{}` and close, else keep stdin open.
fn watchdog_child(close_stdin: bool) -> (String, Option<i32>, Duration) {
    child_run(
        "pipeline::runner::tests::watchdog_child_sleeps_past_its_budget",
        close_stdin,
    )
}

/// Run the ignored test `name` as a hook process with the budget [`CHILD_BUDGET_MS`]; its
/// stdout, exit code and how long it took.
fn child_run(name: &str, close_stdin: bool) -> (String, Option<i32>, Duration) {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let started = std::time::Instant::now();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            name,
            "--nocapture",
            "--test-threads=1",
        ])
        .env(env::PRELOAD_BUDGET_MS, CHILD_BUDGET_MS)
        .env_remove(env::HOOK_DEBUG)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    if close_stdin {
        stdin.write_all(b"{}").unwrap();
        drop(stdin);
    } else {
        std::mem::forget(stdin);
    }
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let status = child.wait().unwrap();
    (out, status.code(), started.elapsed())
}

/// The child printed one hook answer (the test harness prints its own lines around it).
fn assert_one_answer(out: &str) {
    assert_eq!(
        out.matches("hookSpecificOutput").count(),
        1,
        "one answer: {out:?}"
    );
}

/// The child printed one answer, the fail-open allow of a PreToolUse call.
fn assert_one_fail_open_answer(out: &str) {
    assert_one_answer(out);
    let allow = render(
        HookEvent::PreToolUse,
        &HookOutput::Allow(None),
        Agent::ClaudeCode,
    )
    .unwrap();
    assert!(
        out.contains(&format!("{allow}\n")),
        "the fail-open answer: {out:?}"
    );
}

#[test]
fn a_handler_past_its_budget_is_answered_for_without_a_thread() {
    let (out, code, took) = watchdog_child(true);
    assert_one_fail_open_answer(&out);
    assert!(!out.contains("LATE"));
    assert_eq!(code, Some(0));
    assert!(
        took < Duration::from_secs(5),
        "answered at the budget ({CHILD_BUDGET_MS} ms), not after the handler: {took:?}"
    );
}

/// The answer a call committed to (here a write made within the budget) goes out even when the
/// process is held back past its budget and the grace before printing it: the fail-open answer
/// would drop what the commit recorded as delivered.
#[test]
fn an_answer_committed_in_time_goes_out_however_late_it_is_printed() {
    let (out, code, _) = child_run(
        "pipeline::runner::tests::watchdog_child_commits_then_is_held_back",
        true,
    );
    assert_one_answer(&out);
    assert!(out.contains("COMMITTED"), "the committed answer: {out:?}");
    assert_eq!(code, Some(0));
}

#[test]
fn a_stdin_that_never_closes_is_answered_for() {
    let (out, code, took) = watchdog_child(false);
    assert_one_fail_open_answer(&out);
    assert_eq!(code, Some(0));
    assert!(took >= STDIN_TIMEOUT && took < STDIN_TIMEOUT + Duration::from_secs(5));
}

#[test]
fn an_answer_over_the_budget_is_logged() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("log.jsonl");
    let env = Env::from_pairs([
        (env::PRELOAD_TEST_LOG, log.to_string_lossy().into_owned()),
        (env::PRELOAD_OUTPUT_BUDGET, "300".to_owned()),
    ]);
    let input = HookInput::from_value(json!({"cwd": tmp.path()}));
    let ctx = Context::new(env, "templates", &input, Duration::from_secs(1));
    log_oversize(&ctx, &HookOutput::Context("x".repeat(300)));
    assert!(!log.exists(), "within the budget: nothing logged");
    log_oversize(&ctx, &HookOutput::Deny("y".repeat(301)));
    let line: Value = serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    assert_eq!(line["event"], "over-budget");
    assert_eq!(line["dedupResult"], "output 301/300");
    assert_eq!(line["hook"], "templates");
}

#[test]
fn events_are_found_by_name() {
    for event in HookEvent::ALL {
        assert_eq!(HookEvent::from_name(event.name()), Some(event));
    }
    assert_eq!(HookEvent::from_name("Notification"), None);
}

/// One policy run as a hook binary runs it.
fn run_one(
    name: &'static str,
    event: HookEvent,
    handler: impl Fn(&HookInput, &Context) -> Result<HookOutput, HookError> + Send + Sync + 'static,
) {
    run(event, &[Policy::only(name, event, handler)]);
}
