//! `preload explain`: one hook input, run in a sandbox copy of the project's state, explained
//! (owner, session, rules, files delivered, stashed, queued and skipped, sizes against the cap),
//! and every real file left as it was, the user's terminal included.

use std::fs;

use serde_json::json;

use super::diagnostics::{assert_untouched, built, preload, session_with_a_queue, snapshot};
use crate::cli::assert_says;
use preload_test_support::sandbox::{Answer, Sandbox};

/// `preload explain` of `input` against the built binaries.
fn explain(sb: &Sandbox, input: impl Into<Vec<u8>>) -> Answer {
    sb.run_raw(
        "preload",
        &["explain", "--prefix", built().to_str().unwrap()],
        input,
    )
}

/// The indented lines under the first heading `title` of explain's output ("" without one).
fn section(text: &str, title: &str) -> String {
    text.split(&format!("\n{title}"))
        .nth(1)
        .map(|rest| {
            rest.lines()
                .skip(1)
                .take_while(|l| l.starts_with("  "))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[test]
fn explain_says_what_a_read_would_do_and_changes_nothing() {
    let sb = Sandbox::new();
    let (known, fresh) = session_with_a_queue(&sb);
    let file = sb.project.join("packages/estimate/src/total.ts");
    let input = json!({"hook_event_name": "PreToolUse", "tool_name": "Read",
        "tool_input": {"file_path": file}, "cwd": sb.project, "session_id": "c1",
        "transcript_path": "/tmp/x/t.jsonl"});
    let before = snapshot(sb.root());
    let out = explain(&sb, input.to_string());
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_untouched(&before, &snapshot(sb.root()));
    let text = &out.stdout;
    assert_says(
        text,
        &[
            &format!(
                "owner: Claude process {} (from CLAUDE_SUPERVISOR_PID)",
                sb.pid
            ),
            &format!(
                "state: session {}: skill implement, phase 1: Interrogation",
                sb.sessions.join("s/.state.json").display()
            ),
            "  match  preload (allow, preload",
            "verdict: allow; speaking: preload",
        ],
    );
    // The discovered directives go first, with this call's own answer; the queued command
    // waits for PostToolUse.
    let discovered = sb
        .project
        .join("packages/estimate/.directives/INVARIANTS.md")
        .display()
        .to_string();
    for (title, names) in [
        ("delivered in these answers", discovered.clone()),
        ("queued for the next calls", discovered.clone()),
        ("over the output budget", format!("{fresh}  (carried-over)")),
        ("skipped, already delivered", known.clone()),
        // What the call would change in the state.
        ("  preloadedFiles, added", discovered.clone()),
        ("  pendingPreloads, taken out", known.clone()),
    ] {
        assert!(
            section(text, title).contains(&names),
            "{title:?} names {names}: {text}"
        );
    }
    // The largest answer is the guard's, which carries the discovered directives.
    let largest: usize = text
        .split("output size: the largest answer is ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    assert!(largest > 0 && largest <= 9_500, "{text}");
    assert!(
        text.contains(&format!(
            "output size: the largest answer is {largest} characters; budget 9500, Claude Code's cap 10000"
        )),
        "{text}"
    );
}

#[test]
fn explain_reads_a_file_and_refuses_what_is_not_a_hook_input() {
    let sb = Sandbox::new();
    session_with_a_queue(&sb);
    let start = sb.root().join("start.json");
    fs::write(
        &start,
        json!({"hook_event_name": "SessionStart", "source": "startup", "cwd": sb.project})
            .to_string(),
    )
    .unwrap();
    let before = snapshot(sb.root());
    // From a file, and a SessionStart: the answers' sizes against the cap.
    let out = preload(
        &sb,
        &[
            "explain",
            "--input",
            start.to_str().unwrap(),
            "--prefix",
            built().to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_says(
        &out.stdout,
        &[
            "preload-session-start --chunk 0/32: ",
            "over the output budget:",
        ],
    );
    // The project's context pack is read in the sandbox's copy, and named as the project's.
    let pack = format!(
        "{}#project-basics  (",
        sb.project.join(".claude/context-packs.json").display()
    );
    assert!(
        section(&out.stdout, "delivered in these answers")
            .lines()
            .any(|l| l.trim_start().starts_with(&pack)),
        "{}",
        out.stdout
    );
    assert_untouched(&before, &snapshot(sb.root()));

    let bad = preload(&sb, &["explain", "--input", sb.log.to_str().unwrap()]);
    assert_eq!(bad.code, 1, "an unreadable input file: {}", bad.stderr);
    let out = sb
        .command("preload")
        .arg("explain")
        .write_stdin("{}")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "no hook_event_name is a usage error"
    );

    // Without guards.json, or with one that is no rules array, the explanation says so.
    let guards = sb.home.join(".claude/engine/guards.json");
    let bash = json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "ls"}, "cwd": sb.project})
    .to_string();
    for (text, said) in [
        (None, "(not found: no rule applies)"),
        (Some("{}"), "(not a rules array: read as no rules)"),
    ] {
        match text {
            None => fs::remove_file(&guards).unwrap(),
            Some(text) => fs::write(&guards, text).unwrap(),
        }
        let out = explain(&sb, bash.clone());
        assert_says(
            &out.stdout,
            &[&format!("rules: 0 in {} {said}", guards.display())],
        );
    }
}

#[test]
fn explain_shows_a_paste_rule_without_typing_into_the_terminal() {
    let mut sb = Sandbox::new();
    sb.active_session("s", &json!({"currentPhase": "1: X"}));
    fs::write(
        sb.home.join(".claude/engine/guards.json"),
        json!([{"id": "nudge", "trigger": {"type": "phase", "condition": {"matches": "X"}},
            "payload": {"command": "/session dehydrate"}, "mode": "paste", "urgency": "block"}])
        .to_string(),
    )
    .unwrap();
    // A tmux that records every call, first on the PATH, and a tmux session to paste into.
    let bin = sb.root().join("bin");
    fs::create_dir_all(&bin).unwrap();
    let record = sb.root().join("tmux.log");
    let tmux = bin.join("tmux");
    fs::write(
        &tmux,
        format!("#!/bin/sh\necho \"$@\" >> '{}'\n", record.display()),
    )
    .unwrap();
    fs::set_permissions(&tmux, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    sb.extra_env.push(("PATH".into(), path));
    sb.extra_env
        .push(("TMUX".into(), "/tmp/tmux-1/default,1,0".into()));
    sb.extra_env.push(("TMUX_PANE".into(), "%7".into()));
    let input = json!({"hook_event_name": "PreToolUse", "tool_name": "Grep",
        "tool_input": {"pattern": "x"}, "cwd": sb.project, "session_id": "c1"});
    let before = snapshot(sb.root());
    let out = explain(&sb, input.to_string());
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_says(
        &out.stdout,
        &[
            "  match  nudge (block, paste",
            "verdict: deny by nudge",
            "preload-overflow: deny, ",
        ],
    );
    // The paste runs in the background: give it the time it takes the hooks' own suite.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(!record.exists(), "explain typed into the terminal");
    assert_untouched(&before, &snapshot(sb.root()));

    // The same input through the hook itself does paste: the fake tmux works.
    let hook = sb.run("preload-overflow", input);
    assert_eq!(hook.decision(), "deny");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !record.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        record.exists(),
        "the hook's paste never reached the fake tmux"
    );
}
