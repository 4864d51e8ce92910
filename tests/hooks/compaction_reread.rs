//! Scenarios: compaction re-read (`preload-compaction-reread`): the smoke tests of the
//! handler, worker, loop and regular chains, one-shot consumption on every path, the
//! `SessionStart` injection, concurrency, and hostile session ids, links and owners.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use preload_core::primitives::env;
use serde_json::{Value, json};

use preload_test_support::files::set_mtime;
use preload_test_support::sandbox::{Answer, Sandbox, bin};
use preload_test_support::session_openings::keep_legacy_markers;

mod containment;

const BIN: &str = "preload-compaction-reread";

fn uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// A bare sandbox whose legacy marker directory is its own (never the real `/tmp`).
fn sandbox() -> Sandbox {
    let mut sb = Sandbox::bare();
    keep_legacy_markers(&mut sb);
    sb
}

fn legacy_dir(sb: &Sandbox) -> PathBuf {
    sb.root().join("legacy")
}

/// The default marker directory: `$TMPDIR/claude-preload-<uid>` (the sandbox sets `TMPDIR`).
fn marker_dir(sb: &Sandbox) -> PathBuf {
    sb.root().join(format!("claude-preload-{}", uid()))
}

fn marker(sb: &Sandbox, sid: &str) -> PathBuf {
    marker_dir(sb).join(format!("compaction-{sid}"))
}

fn call(sb: &Sandbox, sub: &str, input: Value) -> Answer {
    let answer = sb.run_args(BIN, &[sub], input);
    answer.assert_contract();
    answer
}

/// `sid` invoked `/<skill>` (`register` after its `Skill` call).
fn register(sb: &Sandbox, sid: &str, skill: &str) {
    call(
        sb,
        "register",
        json!({"session_id": sid, "tool_input": {"skill": skill}}),
    );
}

/// `sid` invoked `/<skill>`, then its conversation is compacted (`precompact`).
fn compacted(sb: &Sandbox, sid: &str, skill: &str) {
    register(sb, sid, skill);
    call(sb, "precompact", json!({"session_id": sid}));
}

fn answer_of(out: &Output) -> Answer {
    Answer::from_output(out)
}

/// Run a subcommand with `HOME` set to `home`.
fn call_with_home(sb: &Sandbox, home: &Path, sub: &str, input: &Value) -> Answer {
    let out = sb
        .command(BIN)
        .env(env::HOME, home)
        .arg(sub)
        .write_stdin(input.to_string())
        .output()
        .unwrap();
    let answer = answer_of(&out);
    answer.assert_contract();
    answer
}

fn assert_allowed_silently(answer: &Answer) {
    assert_eq!(answer.decision(), "allow", "stdout: {}", answer.stdout);
    assert_eq!(answer.reason(), "");
    assert_eq!(answer.context(), "");
}

fn read_marker(sb: &Sandbox, sid: &str) -> Value {
    serde_json::from_str(&fs::read_to_string(marker(sb, sid)).unwrap()).unwrap()
}

/// Session `sid`'s compaction marker is a `kind` one naming `path` under `key`.
#[track_caller]
fn assert_marker(sb: &Sandbox, sid: &str, kind: &str, key: &str, path: &Path) {
    let m = read_marker(sb, sid);
    assert_eq!(m["type"], kind, "{m}");
    assert_eq!(m[key], json!(path), "{m}");
}

/// A handler's docs: `handler-state.md`, one active and one completed dispatch.
fn handler_docs(sb: &Sandbox) -> (PathBuf, PathBuf, PathBuf) {
    let state = sb.project_file(
        "docs/handler-state.md",
        "# Handler state\nActive: estimate-parser\n",
    );
    let active = sb.project_file(
        "docs/handler-dispatches/estimate-parser.md",
        "# Dispatch: estimate parser\n| **Status** | active |\n\n## Progress\n- parser skeleton done\n",
    );
    let done = sb.project_file(
        "docs/handler-dispatches/old-task.md",
        "# Dispatch: old\n| **Status** | completed |\n",
    );
    (state, active, done)
}

#[test]
fn handler_chain_blocks_once_on_each_path() {
    let sb = sandbox();
    let (state, active, done) = handler_docs(&sb);
    let sid = json!("test1");

    let reg = call(
        &sb,
        "register",
        json!({"session_id": sid, "tool_name": "Skill", "tool_input": {"skill": "handler"}}),
    );
    assert_eq!(reg.stdout, "");
    assert!(
        marker_dir(&sb).join("handler-test1").is_file(),
        "handler registered"
    );
    let mode = fs::metadata(marker_dir(&sb)).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "private marker directory");

    assert_eq!(
        call(
            &sb,
            "precompact",
            json!({"session_id": sid, "trigger": "auto"})
        )
        .stdout,
        ""
    );
    assert_marker(
        &sb,
        "test1",
        "handler",
        "handler_dir",
        &sb.project.join("docs"),
    );

    let first = call(
        &sb,
        "pretooluse",
        json!({"session_id": sid, "tool_name": "Read"}),
    );
    assert_eq!(first.decision(), "deny");
    let reason = first.reason();
    assert!(
        reason.contains(&state.to_string_lossy().into_owned()),
        "{reason}"
    );
    assert!(
        reason.contains(&active.to_string_lossy().into_owned()),
        "{reason}"
    );
    assert!(
        !reason.contains(&done.to_string_lossy().into_owned()),
        "completed dispatch is not active: {reason}"
    );
    assert!(!marker(&sb, "test1").exists(), "one-shot marker consumed");

    assert_allowed_silently(&call(
        &sb,
        "pretooluse",
        json!({"session_id": sid, "tool_name": "Read"}),
    ));

    call(&sb, "precompact", json!({"session_id": sid}));
    let stop = call(
        &sb,
        "stop",
        json!({"session_id": sid, "stop_hook_active": false}),
    );
    assert_eq!(stop.top_decision(), "block");
    assert!(
        stop.top_reason().contains("handler-state.md"),
        "{}",
        stop.top_reason()
    );
    assert!(
        stop.json
            .as_ref()
            .unwrap()
            .get("hookSpecificOutput")
            .is_none()
    );
    assert_eq!(
        call(
            &sb,
            "stop",
            json!({"session_id": sid, "stop_hook_active": false})
        )
        .stdout,
        ""
    );
    assert_allowed_silently(&call(&sb, "pretooluse", json!({"session_id": sid})));
}

#[test]
fn worker_chain_names_only_the_dispatch_file() {
    let sb = sandbox();
    let worker_home = sb.root().join("claude-worker-config");
    fs::create_dir_all(worker_home.join(".claude")).unwrap();
    let dispatch = sb.project_file(
        "docs/handler-dispatches/example-task.md",
        "# Dispatch: example\n| **Status** | active |\n\n## Progress\n- step 1 done\n",
    );
    fs::write(
        worker_home.join(".claude/worker-dispatch-path"),
        format!("{}\n", dispatch.display()),
    )
    .unwrap();
    let input = json!({"session_id": "test2", "cwd": sb.project});

    assert_eq!(
        call_with_home(&sb, &worker_home, "precompact", &input).stdout,
        ""
    );
    assert_marker(&sb, "test2", "worker", "dispatch_file", &dispatch);

    let stop = call(
        &sb,
        "stop",
        json!({"session_id": "test2", "stop_hook_active": false}),
    );
    assert_eq!(stop.top_decision(), "block");
    let reason = stop.top_reason();
    assert!(
        reason.contains(&dispatch.to_string_lossy().into_owned()),
        "{reason}"
    );
    assert!(reason.contains("## Progress"), "{reason}");
    assert!(
        !reason.contains("handler-results"),
        "no checkpoint file: {reason}"
    );
    assert!(!reason.contains("handler-state.md"), "{reason}");
    assert_eq!(call(&sb, "stop", json!({"session_id": "test2"})).stdout, "");

    // The same session without the worker home is a regular session.
    assert_eq!(
        call(&sb, "precompact", json!({"session_id": "test2"})).stdout,
        ""
    );
    assert!(!marker(&sb, "test2").exists());
}

fn loop_docs(sb: &Sandbox) -> PathBuf {
    let set = |name: &str, secs: u64| {
        let p = sb.project_file(
            &format!("docs/loops/{name}"),
            &format!("# {name}\n- [DONE] a\n- [CURRENT] b\n"),
        );
        set_mtime(&p, secs);
        p
    };
    set("older.loop.md", 1_700_000_000);
    set("finished-archived.loop.md", 1_900_000_000);
    set("active.loop.md", 1_800_000_000)
}

#[test]
fn loop_chain_names_the_active_loop_document() {
    let sb = sandbox();
    let active = loop_docs(&sb);
    let reg = call(
        &sb,
        "register",
        json!({"session_id": "test3", "tool_name": "Skill", "tool_input": {"skill": "loop"}, "cwd": sb.project}),
    );
    assert_eq!(reg.stdout, "");
    let registration: Value =
        serde_json::from_str(&fs::read_to_string(marker_dir(&sb).join("loop-test3")).unwrap())
            .unwrap();
    assert_eq!(registration["cwd"], json!(sb.project));

    // PreCompact runs from elsewhere: the loop document is found under the registered cwd.
    call(
        &sb,
        "precompact",
        json!({"session_id": "test3", "cwd": sb.root()}),
    );
    assert_marker(&sb, "test3", "loop", "loop_file", &active);

    let first = call(
        &sb,
        "pretooluse",
        json!({"session_id": "test3", "tool_name": "Bash"}),
    );
    assert_eq!(first.decision(), "deny");
    assert!(
        first
            .reason()
            .contains(&active.to_string_lossy().into_owned()),
        "{}",
        first.reason()
    );
    assert!(first.reason().contains("Do NOT pause"));
    assert!(first.reason().contains("[CURRENT]"));
    assert_allowed_silently(&call(&sb, "pretooluse", json!({"session_id": "test3"})));
}

#[test]
fn regular_session_gets_no_marker_and_passes_through() {
    let sb = sandbox();
    handler_docs(&sb);
    loop_docs(&sb);
    assert_eq!(
        call(&sb, "precompact", json!({"session_id": "test4"})).stdout,
        ""
    );
    assert!(
        !marker(&sb, "test4").exists(),
        "no marker for a regular session"
    );
    assert_allowed_silently(&call(&sb, "pretooluse", json!({"session_id": "test4"})));
    assert_eq!(call(&sb, "stop", json!({"session_id": "test4"})).stdout, "");
    assert_eq!(
        call(
            &sb,
            "sessionstart",
            json!({"session_id": "test4", "source": "compact"})
        )
        .stdout,
        ""
    );
}

#[test]
fn register_ignores_other_skills_and_tools() {
    let sb = sandbox();
    call(
        &sb,
        "register",
        json!({"session_id": "s", "tool_name": "Skill", "tool_input": {"skill": "implement"}}),
    );
    call(
        &sb,
        "register",
        json!({"session_id": "s", "tool_name": "Bash", "tool_input": {"skill": "handler"}}),
    );
    assert!(!marker_dir(&sb).join("handler-s").exists());
    call(
        &sb,
        "register",
        json!({"session_id": "s", "tool_name": "Skill", "tool_input": {"skill": "/loop"}}),
    );
    assert!(marker_dir(&sb).join("loop-s").is_file());
}

#[test]
fn stop_hook_active_breaks_the_loop_without_consuming() {
    let sb = sandbox();
    compacted(&sb, "s5", "handler");
    assert_eq!(
        call(
            &sb,
            "stop",
            json!({"session_id": "s5", "stop_hook_active": true})
        )
        .stdout,
        ""
    );
    assert!(
        marker(&sb, "s5").exists(),
        "loop breaker leaves the marker alone"
    );
    assert_eq!(
        call(
            &sb,
            "stop",
            json!({"session_id": "s5", "stop_hook_active": false})
        )
        .top_decision(),
        "block"
    );
}

#[test]
fn sessionstart_injects_the_files_and_nothing_is_blocked_afterwards() {
    let sb = sandbox();
    let (state, active, done) = handler_docs(&sb);
    compacted(&sb, "s6", "handler");

    // Other sources leave the marker for the compact start.
    assert_eq!(
        call(
            &sb,
            "sessionstart",
            json!({"session_id": "s6", "source": "startup"})
        )
        .stdout,
        ""
    );
    assert!(marker(&sb, "s6").exists());

    let start = call(
        &sb,
        "sessionstart",
        json!({"session_id": "s6", "source": "compact", "hook_event_name": "SessionStart"}),
    );
    let v = start.json.clone().unwrap();
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let text = start.context();
    assert!(
        text.contains(&format!(
            "[Preloaded: {}]\n# Handler state\nActive: estimate-parser\n",
            state.display()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "[Preloaded: {}]\n# Dispatch: estimate parser",
            active.display()
        )),
        "{text}"
    );
    assert!(text.contains("- parser skeleton done"));
    assert!(!text.contains(&done.to_string_lossy().into_owned()));
    assert!(
        !text.contains("Not included above"),
        "everything fit: {text}"
    );

    assert_allowed_silently(&call(
        &sb,
        "pretooluse",
        json!({"session_id": "s6", "tool_name": "Read"}),
    ));
    assert_eq!(call(&sb, "stop", json!({"session_id": "s6"})).stdout, "");
}

#[test]
fn sessionstart_splits_a_large_file_and_names_what_does_not_fit() {
    let mut sb = sandbox();
    sb.extra_env
        .push((env::PRELOAD_OUTPUT_BUDGET.into(), "3000".into()));
    let worker_home = sb.root().join("worker-home");
    fs::create_dir_all(worker_home.join(".claude")).unwrap();
    let body = (0..600)
        .map(|i| format!("- progress entry {i:04}"))
        .collect::<Vec<_>>()
        .join("\n");
    let dispatch = sb.project_file(
        "docs/big-dispatch.md",
        &format!("# Dispatch\n## Progress\n{body}"),
    );
    fs::write(
        worker_home.join(".claude/worker-dispatch-path"),
        dispatch.to_string_lossy().as_bytes(),
    )
    .unwrap();
    call_with_home(
        &sb,
        &worker_home,
        "precompact",
        &json!({"session_id": "s7", "cwd": sb.project}),
    );

    let start = call(
        &sb,
        "sessionstart",
        json!({"session_id": "s7", "source": "compact"}),
    );
    let text = start.context();
    assert!(
        text.chars().count() <= 3000,
        "{} chars",
        text.chars().count()
    );
    let path = dispatch.to_string_lossy().into_owned();
    assert!(
        text.contains(&format!("[Preloaded: {path} (part 1/")),
        "{text}"
    );
    assert!(text.contains("- progress entry 0000"));
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with("Not included above for lack of room"),
        "{last}"
    );
    assert!(last.contains(&format!("{path} (from part 2/")), "{last}");
    assert!(!marker(&sb, "s7").exists());
}

#[test]
fn concurrent_pretooluse_calls_block_exactly_once() {
    let sb = sandbox();
    register(&sb, "par", "handler");
    let input = json!({"session_id": "par", "tool_name": "Read", "cwd": sb.project}).to_string();
    for round in 0..3 {
        call(&sb, "precompact", json!({"session_id": "par"}));
        let mut children: Vec<_> = (0..8)
            .map(|_| {
                let mut cmd = std::process::Command::new(bin(BIN));
                cmd.env_clear()
                    .env(env::HOME, &sb.home)
                    .env(env::TMPDIR, sb.root())
                    .env(env::CLAUDE_SUPERVISOR_PID, sb.pid.to_string())
                    .env(env::PRELOAD_LEGACY_MARKER_DIR, legacy_dir(&sb))
                    .envs(preload_test_support::sandbox::LOADED_MACHINE_LIMITS)
                    .arg("pretooluse")
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                cmd.spawn().unwrap()
            })
            .collect();
        // Every process is up and waiting on stdin before any of them gets its input.
        for child in &mut children {
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(input.as_bytes()).unwrap();
        }
        let answers: Vec<Answer> = children
            .into_iter()
            .map(|c| answer_of(&c.wait_with_output().unwrap()))
            .collect();
        for a in &answers {
            a.assert_contract();
        }
        let denies = answers.iter().filter(|a| a.decision() == "deny").count();
        let allows = answers.iter().filter(|a| a.decision() == "allow").count();
        assert_eq!((denies, allows), (1, 7), "round {round}");
        assert!(!marker(&sb, "par").exists());
        let leftovers = fs::read_dir(marker_dir(&sb)).unwrap().count();
        assert_eq!(leftovers, 1, "only the registration remains");
    }
}
