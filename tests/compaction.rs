//! Scenarios: compaction re-read (`preload-compaction-reread`): the smoke tests of the
//! handler, worker, loop and regular chains, one-shot consumption on every path, the
//! `SessionStart` injection, concurrency, and hostile session ids, links and owners.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use preload_core::primitives::env;
use serde_json::{Value, json};

use crate::common::{Answer, Sandbox, bin};

const BIN: &str = "preload-compaction-reread";

fn uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// A bare sandbox whose legacy marker directory is its own (never the real `/tmp`).
fn sandbox() -> Sandbox {
    let mut sb = Sandbox::bare();
    let legacy = sb.root().join("legacy");
    fs::create_dir_all(&legacy).unwrap();
    sb.extra_env.push((
        env::PRELOAD_LEGACY_MARKER_DIR.into(),
        legacy.to_string_lossy().into(),
    ));
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
    let m = read_marker(&sb, "test1");
    assert_eq!(m["type"], "handler");
    assert_eq!(m["handler_dir"], json!(sb.project.join("docs")));

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
    let m = read_marker(&sb, "test2");
    assert_eq!(m["type"], "worker");
    assert_eq!(m["dispatch_file"], json!(dispatch));

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
        let t = std::time::UNIX_EPOCH + Duration::from_secs(secs);
        fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(t)
            .unwrap();
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
    let m = read_marker(&sb, "test3");
    assert_eq!(m["type"], "loop");
    assert_eq!(m["loop_file"], json!(active));

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
    call(
        &sb,
        "register",
        json!({"session_id": "s5", "tool_input": {"skill": "handler"}}),
    );
    call(&sb, "precompact", json!({"session_id": "s5"}));
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
    call(
        &sb,
        "register",
        json!({"session_id": "s6", "tool_input": {"skill": "handler"}}),
    );
    call(&sb, "precompact", json!({"session_id": "s6"}));

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
    call(
        &sb,
        "register",
        json!({"session_id": "par", "tool_input": {"skill": "handler"}}),
    );
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
                    .envs(crate::common::LOADED_MACHINE_LIMITS)
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

#[test]
fn traversal_session_id_never_reaches_a_path() {
    let sb = sandbox();
    let sid = "../../etc/x";
    handler_docs(&sb);
    call(
        &sb,
        "register",
        json!({"session_id": sid, "tool_input": {"skill": "handler"}}),
    );
    call(
        &sb,
        "register",
        json!({"session_id": sid, "tool_input": {"skill": "loop"}}),
    );
    assert_eq!(
        call(&sb, "precompact", json!({"session_id": sid})).stdout,
        ""
    );
    assert_allowed_silently(&call(&sb, "pretooluse", json!({"session_id": sid})));
    assert_eq!(call(&sb, "stop", json!({"session_id": sid})).stdout, "");
    assert_eq!(
        call(
            &sb,
            "sessionstart",
            json!({"session_id": sid, "source": "compact"})
        )
        .stdout,
        ""
    );
    let created = fs::read_dir(marker_dir(&sb)).map_or(0, Iterator::count);
    assert_eq!(created, 0, "no marker for an unsafe session id");
    for escaped in [
        sb.root().join("etc/x"),
        sb.root().parent().unwrap().join("etc/x"),
        PathBuf::from("/etc/x"),
    ] {
        assert!(!escaped.exists(), "{} was created", escaped.display());
    }
}

#[test]
fn planted_symlink_marker_is_neither_followed_nor_trusted() {
    let sb = sandbox();
    call(
        &sb,
        "register",
        json!({"session_id": "other", "tool_input": {"skill": "loop"}}),
    );
    let victim = sb.root().join("victim.json");
    let planted = r#"{"type":"worker","dispatch_file":"/etc/passwd"}"#;
    fs::write(&victim, planted).unwrap();

    // A link at the marker path is not a marker: no deny, no read of its target.
    symlink(&victim, marker(&sb, "sym")).unwrap();
    assert_allowed_silently(&call(&sb, "pretooluse", json!({"session_id": "sym"})));
    symlink(&victim, marker(&sb, "sym2")).unwrap();
    assert_eq!(call(&sb, "stop", json!({"session_id": "sym2"})).stdout, "");
    assert_eq!(
        fs::read_to_string(&victim).unwrap(),
        planted,
        "target untouched"
    );

    // Writing a marker replaces a planted link instead of writing through it.
    symlink(&victim, marker(&sb, "sym3")).unwrap();
    call(
        &sb,
        "register",
        json!({"session_id": "sym3", "tool_input": {"skill": "handler"}}),
    );
    call(&sb, "precompact", json!({"session_id": "sym3"}));
    assert_eq!(
        fs::read_to_string(&victim).unwrap(),
        planted,
        "target untouched"
    );
    let meta = fs::symlink_metadata(marker(&sb, "sym3")).unwrap();
    assert!(
        meta.file_type().is_file(),
        "a real marker replaced the link"
    );
    assert_eq!(read_marker(&sb, "sym3")["type"], "handler");

    // A linked marker directory is refused altogether.
    let mut linked = sandbox();
    let real = linked.root().join("real-dir");
    fs::create_dir_all(&real).unwrap();
    let link = linked.root().join("linked-dir");
    symlink(&real, &link).unwrap();
    linked.extra_env.push((
        env::PRELOAD_MARKER_DIR.into(),
        link.to_string_lossy().into(),
    ));
    call(
        &linked,
        "register",
        json!({"session_id": "d", "tool_input": {"skill": "handler"}}),
    );
    call(&linked, "precompact", json!({"session_id": "d"}));
    assert_eq!(
        fs::read_dir(&real).unwrap().count(),
        0,
        "nothing written through the link"
    );
}

#[test]
fn legacy_markers_count_only_as_own_regular_files() {
    let sb = sandbox();
    let legacy = legacy_dir(&sb);
    handler_docs(&sb);

    fs::write(legacy.join("claude-handler-L1"), "").unwrap();
    call(&sb, "precompact", json!({"session_id": "L1"}));
    assert_eq!(read_marker(&sb, "L1")["type"], "handler");

    loop_docs(&sb);
    fs::write(
        legacy.join("claude-loop-L2"),
        json!({"cwd": sb.project}).to_string(),
    )
    .unwrap();
    call(
        &sb,
        "precompact",
        json!({"session_id": "L2", "cwd": sb.root()}),
    );
    assert_eq!(read_marker(&sb, "L2")["type"], "loop");
    assert!(
        read_marker(&sb, "L2")["loop_file"]
            .as_str()
            .unwrap()
            .ends_with("active.loop.md")
    );

    let own = sb.root().join("own-file");
    fs::write(&own, "").unwrap();
    symlink(&own, legacy.join("claude-handler-L3")).unwrap();
    symlink(&own, legacy.join("claude-loop-L3")).unwrap();
    call(&sb, "precompact", json!({"session_id": "L3"}));
    assert!(!marker(&sb, "L3").exists(), "legacy links are not followed");

    fs::write(legacy.join("claude-handler-active"), "").unwrap();
    call(&sb, "precompact", json!({"session_id": "L4"}));
    assert_eq!(
        read_marker(&sb, "L4")["type"],
        "handler",
        "global legacy handler marker"
    );
}

fn nobody() -> (nix::unistd::Uid, nix::unistd::Gid) {
    (
        nix::unistd::Uid::from_raw(65534),
        nix::unistd::Gid::from_raw(65534),
    )
}

#[test]
fn markers_of_another_user_are_ignored() {
    if !nix::unistd::geteuid().is_root() {
        // Changing a file's owner needs root; the unit tests of `markers` cover the check.
        return;
    }
    let (uid, gid) = nobody();

    // A legacy marker owned by someone else does not make this a handler session.
    let sb = sandbox();
    let foreign = legacy_dir(&sb).join("claude-handler-F1");
    fs::write(&foreign, "").unwrap();
    nix::unistd::chown(&foreign, Some(uid), Some(gid)).unwrap();
    call(&sb, "precompact", json!({"session_id": "F1"}));
    assert!(!marker(&sb, "F1").exists());

    // A marker directory owned by someone else is not used: no deny, nothing written.
    call(
        &sb,
        "register",
        json!({"session_id": "F2", "tool_input": {"skill": "handler"}}),
    );
    call(&sb, "precompact", json!({"session_id": "F2"}));
    assert!(marker(&sb, "F2").exists());
    let dir = marker_dir(&sb);
    for entry in fs::read_dir(&dir).unwrap() {
        nix::unistd::chown(&entry.unwrap().path(), Some(uid), Some(gid)).unwrap();
    }
    nix::unistd::chown(&dir, Some(uid), Some(gid)).unwrap();
    assert_allowed_silently(&call(&sb, "pretooluse", json!({"session_id": "F2"})));
    assert_eq!(call(&sb, "stop", json!({"session_id": "F2"})).stdout, "");
    assert!(
        marker(&sb, "F2").exists(),
        "another user's marker is left alone"
    );
    call(
        &sb,
        "register",
        json!({"session_id": "F3", "tool_input": {"skill": "handler"}}),
    );
    assert!(
        !dir.join("handler-F3").exists(),
        "nothing written into another user's directory"
    );

    // A marker file of another user inside our own directory is not trusted either.
    let sb = sandbox();
    call(
        &sb,
        "register",
        json!({"session_id": "F4", "tool_input": {"skill": "handler"}}),
    );
    call(&sb, "precompact", json!({"session_id": "F4"}));
    nix::unistd::chown(&marker(&sb, "F4"), Some(uid), Some(gid)).unwrap();
    assert_allowed_silently(&call(&sb, "pretooluse", json!({"session_id": "F4"})));
}

#[test]
fn bad_input_fails_open() {
    let sb = sandbox();
    for sub in [
        "register",
        "precompact",
        "pretooluse",
        "stop",
        "sessionstart",
    ] {
        for stdin in ["not json", "", "[1,2]", "{\"session_id\": 5}"] {
            let answer = sb.run_raw(BIN, &[sub], stdin);
            answer.assert_contract();
            if sub == "pretooluse" {
                assert_allowed_silently(&answer);
            } else {
                assert_eq!(answer.stdout, "", "{sub} with {stdin:?}");
            }
        }
    }
    // A corrupt marker is consumed and ignored.
    call(
        &sb,
        "register",
        json!({"session_id": "c", "tool_input": {"skill": "handler"}}),
    );
    fs::write(marker(&sb, "c"), "{not json").unwrap();
    assert_allowed_silently(&call(&sb, "pretooluse", json!({"session_id": "c"})));
    assert!(!marker(&sb, "c").exists());
}

#[test]
fn help_version_and_usage() {
    let sb = sandbox();
    let help = sb.command(BIN).arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(help.status.success());
    for word in [
        "precompact",
        "pretooluse",
        "sessionstart",
        "PRELOAD_MARKER_DIR",
        "PRELOAD_LEGACY_MARKER_DIR",
    ] {
        assert!(text.contains(word), "help names {word}");
    }
    let version = sb.command(BIN).arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("preload-compaction-reread "));
    let usage = std::process::Command::new(bin(BIN))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        usage.status.code(),
        Some(1),
        "a missing subcommand is a usage error that never blocks"
    );
}
