//! `preload-dispatch`: one process per event. Its answer is the per-binary answers merged (the
//! strongest decision, reasons and contexts joined in the wiring's order, within one output
//! budget), each policy fails open alone, and a wiring mistake never blocks anything.

use std::fs;
use std::time::Duration;

use preload_core::primitives::env;
use serde_json::{Value, json};

use preload_test_support::sandbox::{Answer, Sandbox, strings};
use preload_test_support::session_openings::keep_legacy_markers;

const BIN: &str = "preload-dispatch";

fn dispatch(sb: &Sandbox, args: &[&str], input: Value) -> Answer {
    let answer = sb.run_args(BIN, args, input);
    answer.assert_contract();
    answer
}

/// A sandbox whose legacy compaction markers stay inside it.
fn sandbox() -> Sandbox {
    let mut sb = Sandbox::new();
    keep_legacy_markers(&mut sb);
    sb
}

#[test]
fn malformed_stdin_fails_open_for_the_event() {
    let sb = sandbox();
    sb.active_session("s", &json!({}));
    let before = fs::read_to_string(sb.sessions.join("s/.state.json")).unwrap();
    for bad in [&b"{not json"[..], b"", b"[1,2]", b"\xff\xfe"] {
        let pre = sb.run_raw(BIN, &["PreToolUse"], bad);
        pre.assert_contract();
        assert_eq!(pre.decision(), "allow", "{bad:?}");
        for event in ["PostToolUse", "SessionStart", "UserPromptSubmit", "Stop"] {
            let a = sb.run_raw(BIN, &[event], bad);
            a.assert_contract();
            assert_eq!(a.stdout, "", "{event} with {bad:?}");
        }
    }
    let now = fs::read_to_string(sb.sessions.join("s/.state.json")).unwrap();
    assert_eq!(now, before);
}

#[test]
fn a_wiring_mistake_says_why_on_stderr_and_blocks_nothing() {
    let sb = Sandbox::bare();
    for (args, why) in [
        (&[][..], "no event given"),
        (
            &["pretooluse"][..],
            "unknown event \"pretooluse\" (one of: SessionStart, ",
        ),
        (&["Nope"][..], "unknown event \"Nope\""),
        (
            &["SessionStart", "--chunk", "9/2"][..],
            "bad --chunk value \"9/2\"",
        ),
    ] {
        let out = sb
            .command(BIN)
            .args(args)
            .write_stdin("{}")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing reaches the model");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "{args:?}: says what is wrong: {err}");
        assert!(err.contains("Usage: preload-dispatch"));
    }
    let out = sb.command(BIN).arg("--help").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with(BIN) && text.contains("Env:"), "{text}");
}

/// The handler chain of the compaction re-read, every event through the dispatcher: the
/// policies of an event run in one process and the answer carries every one of them.
#[test]
fn one_process_per_event_runs_every_policy_of_the_event() {
    let sb = sandbox();
    sb.active_session("s", &json!({"toolCallsByTranscript": {"test.jsonl": 1}}));
    sb.project_file("docs/handler-state.md", "# Handler state\nActive: x\n");
    let sid = "chain";
    let skill = dispatch(
        &sb,
        &["PostToolUse"],
        json!({"session_id": sid, "tool_name": "Skill", "tool_input": {"skill": "handler"}}),
    );
    assert_eq!(
        skill.stdout, "",
        "no SKILL.md for `handler`: nothing to deliver"
    );
    let compact = dispatch(&sb, &["PreCompact"], json!({"session_id": sid}));
    assert_eq!(compact.stdout, "");
    let pre = dispatch(
        &sb,
        &["PreToolUse"],
        json!({"session_id": sid, "tool_name": "Read", "tool_input": {"file_path": "x"}}),
    );
    // preload-compaction-reread denies once; preload-overflow ran beside it and counted.
    assert_eq!(pre.decision(), "deny");
    assert!(
        pre.reason().contains("handler-state.md"),
        "{}",
        pre.reason()
    );
    let counted = &sb.state("s")["toolCallsByTranscript"]["test.jsonl"];
    assert_eq!(
        counted,
        &json!(2),
        "the guard engine ran in the same process"
    );
    let again = dispatch(
        &sb,
        &["PreToolUse"],
        json!({"session_id": sid, "tool_name": "Read", "tool_input": {"file_path": "x"}}),
    );
    assert_eq!(again.decision(), "allow", "the marker was one-shot");
}

/// A policy stuck past its budget fails open alone: the others' answers still come out.
#[test]
fn a_policy_out_of_time_fails_open_alone() {
    let mut sb = sandbox();
    sb.active_session("s", &json!({}));
    sb.project_file("docs/handler-state.md", "# Handler state\nActive: x\n");
    let sid = "stuck";
    dispatch(
        &sb,
        &["PostToolUse"],
        json!({"session_id": sid, "tool_name": "Skill", "tool_input": {"skill": "handler"}}),
    );
    dispatch(&sb, &["PreCompact"], json!({"session_id": sid}));
    // The session's lock is held by a live process (this test): the guard engine waits for it
    // past its budget.
    let lock = sb.sessions.join("s/.state.json.lock");
    fs::create_dir(&lock).unwrap();
    fs::write(lock.join("pid"), format!("{}\n", std::process::id())).unwrap();
    sb.extra_env
        .push((env::PRELOAD_LOCK_TIMEOUT_MS.into(), "20000".into()));
    sb.extra_env
        .push((env::PRELOAD_BUDGET_MS.into(), "300".into()));
    let before = fs::read_to_string(sb.sessions.join("s/.state.json")).unwrap();
    let started = std::time::Instant::now();
    let pre = dispatch(
        &sb,
        &["PreToolUse"],
        json!({"session_id": sid, "tool_name": "Read", "tool_input": {"file_path": "x"}}),
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the stuck policy was left behind"
    );
    assert_eq!(
        pre.decision(),
        "deny",
        "the re-read still denies: {}",
        pre.stdout
    );
    assert!(pre.reason().contains("handler-state.md"));
    let after = fs::read_to_string(sb.sessions.join("s/.state.json")).unwrap();
    assert_eq!(after, before, "the stuck policy committed nothing");
    fs::remove_dir_all(&lock).unwrap();
}

/// Two policies that both speak on one call share one answer within the output budget; what
/// does not fit stays queued or stashed, nothing is cut.
#[test]
fn policies_share_one_output_budget_and_keep_the_rest() {
    let sb = sandbox();
    let stash = format!("[warn: test] {}", "a stashed reminder ".repeat(300));
    sb.active_session(
        "s",
        &json!({"currentPhase": "0: Setup",
            "pendingAllowInjections": [{"ruleId": "test", "content": stash, "agentId": ""}]}),
    );
    let a = dispatch(
        &sb,
        &["PostToolUse"],
        json!({"tool_name": "Skill", "tool_input": {"skill": "implement"},
            "tool_response": "Launching skill: implement"}),
    );
    let text = a.context();
    assert!(
        text.chars().count() <= 9_500 + 2 + 200,
        "{}",
        text.chars().count()
    );
    assert!(text.contains("[Preloaded: "), "templates spoke first");
    let state = sb.state("s");
    for file in strings(&state, "pendingPreloads") {
        assert!(
            !text.contains(&format!("[Preloaded: {file}]")),
            "{file} both sent and queued"
        );
    }
    let stashed = |sb: &Sandbox| {
        sb.state("s")["pendingAllowInjections"]
            .as_array()
            .is_some_and(|list| !list.is_empty())
    };
    assert!(
        stashed(&sb),
        "the stash did not fit beside the templates: it waits, whole or in part"
    );
    // The next calls hand out the rest, each answer within the budget.
    let mut rest = String::new();
    for _ in 0..5 {
        if !stashed(&sb) {
            break;
        }
        let next = dispatch(
            &sb,
            &["PostToolUse"],
            json!({"tool_name": "Read", "tool_input": {"file_path": "x"}, "tool_response": "x"}),
        );
        assert!(next.context().chars().count() <= 9_500);
        rest.push_str(&next.context());
    }
    assert!(!stashed(&sb), "the stash was handed out");
    assert!(rest.contains("a stashed reminder"));
}

/// SessionStart keeps its registrations: the same slices as `preload-session-start`'s.
#[test]
fn session_start_slices_are_the_binarys_slices() {
    let total = preload_cli::install::wiring::SESSION_START_CHUNKS;
    let texts: Vec<String> = ["preload-session-start", BIN]
        .iter()
        .map(|bin| {
            let sb = Sandbox::new();
            let input = json!({"hook_event_name": "SessionStart", "source": "startup"});
            let mut joined = String::new();
            for i in 0..total {
                let chunk = format!("{i}/{total}");
                let args: Vec<&str> = if *bin == BIN {
                    vec!["SessionStart", "--chunk", &chunk]
                } else {
                    vec!["--chunk", &chunk]
                };
                let a = sb.run_args(bin, &args, input.clone());
                a.assert_contract();
                joined.push_str(&a.context());
                joined.push('\u{0}');
            }
            let root = sb.home.parent().unwrap().to_string_lossy().into_owned();
            // The two runs may straddle a second: the banner's time is not compared.
            let mut text = joined.replace(&root, "<root>");
            if let Some(at) = text.find("Time: ") {
                // "Time: 2026-11-23 13:30:06"
                text.replace_range(at..(at + 25).min(text.len()), "Time: <now>");
            }
            text
        })
        .collect();
    assert!(texts[0].contains("[Preloaded: "), "the standards went out");
    assert_eq!(texts[0], texts[1]);
}

fn preload(sb: &Sandbox, args: &[&str]) -> Answer {
    sb.run_raw("preload", args, "")
}

/// Our handlers of a settings file: (event, binary, args, if).
fn ours(doc: &Value) -> Vec<(String, String, Vec<String>, Option<String>)> {
    use preload_cli::install::wiring::all_handlers;
    use preload_cli::install::wiring::our_binary;
    all_handlers(doc)
        .filter_map(|(event, _, h)| {
            let binary = our_binary(h)?;
            let args = h["args"].as_array()?.iter().filter_map(Value::as_str);
            Some((
                event.to_owned(),
                binary.to_owned(),
                args.map(str::to_owned).collect(),
                h["if"].as_str().map(str::to_owned),
            ))
        })
        .collect()
}

#[test]
fn install_dispatch_wires_one_process_per_event_and_switches_back() {
    use preload_cli::install::wiring::{SESSION_START_CHUNKS, WIRING};
    let sb = Sandbox::new();
    let prefix = sb.root().join("bin");
    let prefix_s = prefix.to_str().unwrap();
    let settings = sb.project.join(".claude/settings.local.json");
    let original = "{\n  \"permissions\": {}\n}\n";
    fs::write(&settings, original).unwrap();

    let out = preload(&sb, &["install", "--dispatch", "--prefix", prefix_s]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("one process per event"),
        "{}",
        out.stdout
    );
    let doc = preload_test_support::sandbox::read_json(&settings);
    let handlers = ours(&doc);
    assert!(
        handlers.iter().all(|(_, b, _, f)| b == BIN && f.is_none()),
        "{handlers:?}"
    );
    let mut events: Vec<&str> = WIRING.iter().map(|w| w.event.name()).collect();
    events.dedup();
    for event in events {
        let of_event: Vec<_> = handlers.iter().filter(|(e, ..)| e == event).collect();
        if event == "SessionStart" {
            assert_eq!(of_event.len(), SESSION_START_CHUNKS);
            assert_eq!(
                of_event[3].2,
                [
                    "SessionStart",
                    "--chunk",
                    &format!("3/{SESSION_START_CHUNKS}")
                ]
            );
        } else {
            assert_eq!(of_event.len(), 1, "{event}: one process");
            assert_eq!(of_event[0].2, [event]);
        }
    }
    assert!(prefix.join(BIN).is_file(), "the dispatcher is installed");
    let doctor = preload(&sb, &["doctor", "--prefix", prefix_s]);
    assert_eq!(
        doctor.code, 0,
        "dispatch wiring is healthy:\n{}",
        doctor.stdout
    );

    // Back to one process per binary: no dispatcher left, the `if` filters in place.
    assert_eq!(preload(&sb, &["install", "--prefix", prefix_s]).code, 0);
    let doc = preload_test_support::sandbox::read_json(&settings);
    let handlers = ours(&doc);
    assert!(!handlers.iter().any(|(_, b, ..)| b == BIN));
    assert!(handlers.iter().any(|(e, b, _, f)| e == "PostToolUse"
        && b == "preload-phase-commands"
        && f.as_deref() == Some("Bash(engine session phase *)")));

    // Both at once is double wiring.
    let mut both = doc.clone();
    both["hooks"]["PreToolUse"].as_array_mut().unwrap().push(
        json!({"hooks": [{"type": "command", "command": format!("{prefix_s}/{BIN}"),
            "args": ["PreToolUse"], "timeout": 5}]}),
    );
    fs::write(&settings, serde_json::to_string_pretty(&both).unwrap()).unwrap();
    let doctor = preload(&sb, &["doctor", "--prefix", prefix_s]);
    assert_eq!(doctor.code, 1);
    assert!(
        doctor
            .stdout
            .contains("preload-overflow (PreToolUse, matcher *) is wired twice"),
        "{}",
        doctor.stdout
    );

    // Uninstall after a dispatch install puts the file back as it was.
    fs::write(
        &settings,
        serde_json::to_string_pretty(&doc).unwrap() + "\n",
    )
    .unwrap();
    assert_eq!(
        preload(&sb, &["install", "--dispatch", "--prefix", prefix_s]).code,
        0
    );
    assert_eq!(preload(&sb, &["uninstall", "--prefix", prefix_s]).code, 0);
    assert_eq!(fs::read_to_string(&settings).unwrap(), original);
}
