//! Each pipeline hook on its own: happy path, no session, seed only, malformed stdin, corrupt
//! state, and the output contract.

use std::fs;

use serde_json::json;

use preload_test_support::pipeline_steps::{cli, cli_in, headers, prompt, proof_stdin};
use preload_test_support::sandbox::{Answer, Sandbox, assert_shown_recorded, shown_parts, strings};

/// One `SessionStart` registration printing the whole text within one output budget.
fn session_start(sb: &Sandbox, source: &str) -> Answer {
    sb.run(
        "preload-session-start",
        json!({"hook_event_name": "SessionStart", "source": source}),
    )
}

/// The distinct files of a text's `[Preloaded: …]` blocks, parts counted once.
fn files(text: &str) -> Vec<String> {
    preload_core::primitives::delivery::block_paths(text)
}

const HOOKS: [&str; 4] = [
    "preload-session-start",
    "preload-prompt-submit",
    "preload-templates",
    "preload-phase-commands",
];

fn skill_call(sb: &Sandbox, skill: &str) -> Answer {
    sb.run(
        "preload-templates",
        json!({"hook_event_name": "PostToolUse", "tool_name": "Skill",
        "tool_input": {"skill": skill}, "tool_response": {"success": true}}),
    )
}

fn phase_output(sb: &Sandbox, stdout: &serde_json::Value) -> Answer {
    sb.run("preload-phase-commands", json!({"hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_input": {"command": "engine session phase sessions/s \"1: Interrogation\""}, "tool_response": stdout.clone()}))
}

// Every hook.

#[test]
fn malformed_stdin_fails_open_silently() {
    let sb = Sandbox::new();
    sb.active_session("s", &json!({}));
    let before = fs::read_to_string(sb.sessions.join("s/.state.json")).unwrap();
    for bin in HOOKS {
        for bad in [&b"{not json"[..], b"", b"[1,2]", b"\xff\xfe", b"\"text\""] {
            let a = sb.run_raw(bin, &[], bad);
            a.assert_contract();
            assert_eq!(a.stdout, "", "{bin} with {bad:?}");
        }
    }
    assert_eq!(
        fs::read_to_string(sb.sessions.join("s/.state.json")).unwrap(),
        before
    );
    assert!(!sb.seed_path().exists());
}

#[test]
fn corrupt_session_state_is_left_untouched() {
    let sb = Sandbox::new();
    let dir = sb.sessions.join("s");
    fs::create_dir_all(&dir).unwrap();
    let corrupt = format!("{{\"pid\": {}, \"skill\": \"implement\", ", sb.pid);
    fs::write(dir.join(".state.json"), &corrupt).unwrap();
    fs::write(
        sb.root().join(format!("claude-session-cache-{}", sb.pid)),
        format!("{}\n", dir.display()),
    )
    .unwrap();
    let answers = [
        session_start(&sb, "startup"),
        prompt(&sb, "/implement x"),
        skill_call(&sb, "implement"),
        sb.run("preload-templates", json!({"tool_name": "Bash", "tool_input": {"command": "engine session activate sessions/s implement"}})),
        phase_output(&sb, &json!({"stdout": "Phase: 1: Interrogation"})),
    ];
    for a in &answers {
        a.assert_contract();
    }
    assert_eq!(
        fs::read_to_string(dir.join(".state.json")).unwrap(),
        corrupt
    );
    assert!(!dir.join(".state.json.lock").exists());
    // The session start still speaks (standards), recorded in the seed.
    assert!(
        files(&answers[0].context())
            .iter()
            .any(|f| f.ends_with("COMMANDS.md"))
    );
    assert_eq!(
        sb.run(
            "preload-phase-commands",
            json!({"tool_name": "Bash", "tool_response": "Phase: 2: Planning"})
        )
        .stdout,
        ""
    );
}

#[test]
fn corrupt_seed_is_left_untouched() {
    let sb = Sandbox::new();
    fs::create_dir_all(sb.seed_path().parent().unwrap()).unwrap();
    fs::write(sb.seed_path(), "{broken").unwrap();
    for a in [
        session_start(&sb, "startup"),
        prompt(&sb, "/implement x"),
        skill_call(&sb, "implement"),
    ] {
        a.assert_contract();
    }
    assert_eq!(fs::read_to_string(sb.seed_path()).unwrap(), "{broken");
}

#[test]
fn no_sessions_directory_means_silence_and_no_files() {
    let sb = Sandbox::new();
    fs::remove_dir_all(&sb.sessions).unwrap();
    for a in [
        session_start(&sb, "startup"),
        prompt(&sb, "/implement x"),
        skill_call(&sb, "implement"),
        phase_output(&sb, &json!("Phase: 1: Interrogation")),
    ] {
        a.assert_contract();
        assert_eq!(a.stdout, "");
    }
    assert!(!sb.sessions.exists());
    assert!(sb.events().is_empty());
}

#[test]
fn help_and_version_answer_without_stdin() {
    for bin in HOOKS {
        let sb = Sandbox::bare();
        let out = sb.command(bin).arg("--help").output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.starts_with(bin) && text.contains("Env:"),
            "{bin}: {text}"
        );
        let out = sb.command(bin).arg("--version").output().unwrap();
        assert!(String::from_utf8(out.stdout).unwrap().starts_with(bin));
    }
}

/// Every binary of the release, hooks and `preload` alike.
use preload_core::policies::BINARIES;

#[test]
fn every_binary_answers_version_while_stdin_stays_open() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    for name in BINARIES {
        for flag in ["--version", "-V"] {
            // stdin is a pipe nobody writes to or closes: a binary that read it would hang.
            let mut child = Command::new(preload_test_support::sandbox::bin(name))
                .arg(flag)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let deadline = Instant::now() + Duration::from_secs(5);
            while child.try_wait().unwrap().is_none() {
                if Instant::now() > deadline {
                    child.kill().unwrap();
                    panic!("{name} {flag} waited for stdin");
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{name} {flag}");
            let text = String::from_utf8(out.stdout).unwrap();
            assert_eq!(text, format!("{name} {}\n", env!("CARGO_PKG_VERSION")));
        }
    }
}

// preload-session-start

#[test]
fn session_start_without_a_session_seeds_and_delivers_the_standards() {
    let sb = Sandbox::new();
    // As the client runs it: every registration of the wiring.
    let a =
        sb.session_start_event(&json!({"hook_event_name": "SessionStart", "source": "startup"}));
    let json = a.json.clone().unwrap();
    assert_eq!(json["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let text = a.context();
    assert!(text.contains("| Session: (none)"));
    let shown = files(&text);
    assert_eq!(
        shown.len(),
        8,
        "6 standards + TOC + the example's context pack: {shown:?}"
    );
    assert!(
        shown
            .iter()
            .any(|h| h.ends_with("/.claude/context-packs.json#project-basics"))
    );
    assert!(shown.iter().all(|h| h.starts_with('/')), "absolute paths");
    assert!(text.contains(&format!(
        "[Preloaded: {} (part 1/",
        sb.engine_path("COMMANDS.md")
    )));
    let seed = sb.seed();
    let mut recorded = strings(&seed, "preloadedFiles");
    recorded.sort();
    let mut expected = shown.clone();
    expected.sort();
    assert_eq!(recorded, expected, "every part out, every file recorded");
    assert_eq!(
        sb.events().iter().filter(|e| e["event"] == "seed").count(),
        8
    );
    assert_eq!(sb.deliveries().len(), 8);
    // CMD_PARSE_PARAMETERS's format reference waits for the next tool call.
    assert!(
        strings(&seed, "pendingPreloads")
            .iter()
            .any(|p| p.ends_with("FMT_SESSION_PARAMETERS.md"))
    );
}

#[test]
fn session_start_keeps_what_does_not_fit_queued() {
    let mut sb = Sandbox::new();
    sb.active_session("s", &json!({"currentPhase": "1: Interrogation"}));
    sb.extra_env
        .push(("PRELOAD_OUTPUT_BUDGET".into(), "1200".into()));
    let a = session_start(&sb, "compact");
    a.assert_contract();
    let text = a.context();
    assert!(text.chars().count() <= 1200);
    assert!(text.contains("[preload overflow: "));
    let state = sb.state("s");
    let delivered = headers(&text);
    let pending = strings(&state, "pendingPreloads");
    preload_test_support::sandbox::assert_shown_recorded(&text, &state);
    for f in ["CMD_INTERROGATE.md", "/implement/SKILL.md"] {
        let queued = pending.iter().any(|p| p.ends_with(f));
        let shown = delivered.iter().any(|p| p.ends_with(f));
        assert!(
            queued != shown,
            "{f} either delivered or queued, never lost nor both"
        );
    }
}

#[test]
fn session_start_on_a_completed_session_reseeds_but_skips_the_skill() {
    let sb = Sandbox::new();
    sb.active_session(
        "done",
        &json!({"lifecycle": "completed", "preloadedFiles": ["/old.md"]}),
    );
    let a = session_start(&sb, "startup");
    a.assert_contract();
    assert!(!a.context().contains("SKILL.md]"));
    assert!(!strings(&sb.state("done"), "preloadedFiles").contains(&"/old.md".to_owned()));
}

// preload-prompt-submit

#[test]
fn prompt_submit_tracks_a_skill_expansion_in_the_session() {
    let sb = Sandbox::new();
    sb.active_session("s", &json!({}));
    let a = prompt(&sb, "/implement add auth");
    a.assert_contract();
    assert_eq!(a.stdout, "", "tracking prints nothing");
    let preloaded = strings(&sb.state("s"), "preloadedFiles");
    assert_eq!(preloaded.len(), 1);
    assert!(preloaded[0].ends_with("skills/implement/SKILL.md"));
    assert!(
        strings(&sb.state("s"), "pendingPreloads")
            .iter()
            .any(|p| p.ends_with("FMT_LOG_ENTRY.md")),
        "SKILL.md's references queued"
    );
    assert!(
        !sb.seed_path().exists(),
        "the session is the state, no seed"
    );
    prompt(&sb, "/implement again");
    assert_eq!(strings(&sb.state("s"), "preloadedFiles").len(), 1);
    assert_eq!(
        sb.events()
            .iter()
            .filter(|e| e["event"] == "skip-dedup")
            .count(),
        1
    );
}

#[test]
fn prompt_submit_before_activation_writes_the_seed() {
    let sb = Sandbox::new();
    prompt(&sb, "/do something").assert_contract();
    let seeded = strings(&sb.seed(), "preloadedFiles");
    assert_eq!(seeded.len(), 7, "6 standards + SKILL.md: {seeded:?}");
    assert!(seeded.iter().any(|f| f.ends_with("skills/do/SKILL.md")));
}

#[test]
fn prompt_submit_ignores_plain_prompts_and_unknown_skills() {
    let sb = Sandbox::new();
    for text in [
        "just do it",
        "/nosuchskill x",
        "/../../etc x",
        "see /implement",
    ] {
        prompt(&sb, text).assert_contract();
    }
    assert!(!sb.seed_path().exists());
    assert!(sb.events().is_empty());
}

#[test]
fn prompt_submit_gate_speaks_only_when_required() {
    let mut sb = Sandbox::new();
    assert_eq!(prompt(&sb, "hello").stdout, "");
    sb.extra_env.push(("SESSION_REQUIRED".into(), "1".into()));
    let a = prompt(&sb, "hello");
    a.assert_contract();
    assert_eq!(
        a.json.as_ref().unwrap()["hookSpecificOutput"]["hookEventName"],
        "UserPromptSubmit"
    );
    assert!(
        a.context()
            .starts_with("§CMD_REQUIRE_ACTIVE_SESSION: No active session.")
    );
    sb.active_session("s", &json!({"lifecycle": "completed"}));
    let a = prompt(&sb, "hello");
    assert!(a.context().starts_with(
        "§CMD_REQUIRE_ACTIVE_SESSION: Previous session 's' (skill: implement) is completed."
    ));
    sb.active_session("s", &json!({"lifecycle": "active"}));
    let before = fs::read_to_string(sb.sessions.join("s/.state.json")).unwrap();
    assert_eq!(prompt(&sb, "hello").stdout, "");
    assert_eq!(
        before,
        fs::read_to_string(sb.sessions.join("s/.state.json")).unwrap(),
        "the gate writes nothing"
    );
}

// preload-templates

#[test]
fn templates_delivers_phase_zero_once() {
    let sb = Sandbox::new();
    sb.active_session("s", &json!({}));
    let a = skill_call(&sb, "implement");
    a.assert_contract();
    assert_eq!(
        a.json.as_ref().unwrap()["hookSpecificOutput"]["hookEventName"],
        "PostToolUse"
    );
    let shown = headers(&a.context());
    assert!(
        !shown.iter().any(|h| h.ends_with("/implement/SKILL.md")),
        "the Skill call loaded SKILL.md itself: {shown:?}"
    );
    let state = sb.state("s");
    let preloaded = strings(&state, "preloadedFiles");
    let pending = strings(&state, "pendingPreloads");
    assert!(preloaded.iter().any(|f| f.ends_with("/implement/SKILL.md")));
    // Phase 0's commands and templates: out now, or first in the queue when the output is full;
    // never both, never twice.
    for name in [
        "CMD_REPORT_INTENT.md",
        "CMD_SELECT_MODE.md",
        "TEMPLATE_IMPLEMENTATION_LOG.md",
    ] {
        let out = shown.iter().filter(|h| h.ends_with(name)).count();
        let queued = pending.iter().filter(|h| h.ends_with(name)).count();
        assert_eq!(out + queued, 1, "{name}: out {shown:?}, queued {pending:?}");
    }
    assert!(
        shown.iter().any(|h| h.ends_with("CMD_REPORT_INTENT.md")),
        "{shown:?}"
    );
    assert!(
        !shown.iter().any(|h| h.ends_with("CMD_INTERROGATE.md"))
            && !pending.iter().any(|h| h.ends_with("CMD_INTERROGATE.md")),
        "phase 1 waits"
    );
    assert!(
        shown.iter().all(|h| preloaded.contains(h)),
        "tracked in the same write"
    );
    let again = skill_call(&sb, "implement");
    assert!(
        files(&again.context()).iter().all(|f| pending.contains(f)),
        "a second run sends only what was still queued"
    );
    sb.assert_no_duplicates();
}

#[test]
fn templates_with_only_a_seed_tracks_in_the_seed() {
    let sb = Sandbox::new();
    session_start(&sb, "startup");
    prompt(&sb, "/implement x");
    let a = skill_call(&sb, "implement");
    a.assert_contract();
    assert!(
        !a.context().contains("SKILL.md]"),
        "the expansion already delivered it"
    );
    let seed = sb.seed();
    let seeded = strings(&seed, "preloadedFiles");
    let queued = strings(&seed, "pendingPreloads");
    assert!(
        seeded
            .iter()
            .chain(&queued)
            .any(|f| f.ends_with("CMD_SELECT_MODE.md"))
    );
    assert_eq!(
        a.context().contains("CMD_SELECT_MODE.md]"),
        seeded.iter().any(|f| f.ends_with("CMD_SELECT_MODE.md"))
    );
}

#[test]
fn templates_on_bash_uses_the_sessions_skill_and_phase() {
    let sb = Sandbox::new();
    sb.active_session("s", &json!({"currentPhase": "2: Planning"}));
    let run = |command: &str| {
        sb.run(
            "preload-templates",
            json!({"tool_name": "Bash", "tool_input": {"command": command}}),
        )
    };
    assert_eq!(run("engine session phase sessions/s").stdout, "");
    assert_eq!(run("ls -la").stdout, "");
    let a = run("engine session continue sessions/s");
    a.assert_contract();
    // The current phase's commands: out now, or first in line for the next call.
    let state = sb.state("s");
    let out = a.context().contains("CMD_GENERATE_PLAN.md]");
    let queued = strings(&state, "pendingPreloads")
        .iter()
        .any(|f| f.ends_with("CMD_GENERATE_PLAN.md"));
    assert!(out != queued, "out {out}, queued {queued}");
    assert!(!a.context().contains("CMD_SELECT_MODE.md]"));
    assert!(
        !strings(&state, "pendingPreloads")
            .iter()
            .any(|f| f.ends_with("CMD_SELECT_MODE.md")),
        "phase 0 is not the session's phase"
    );
}

#[test]
fn templates_ignores_other_tools_and_unknown_skills() {
    let sb = Sandbox::new();
    for input in [
        json!({"tool_name": "Read", "tool_input": {"file_path": "/x"}}),
        json!({"tool_name": "Skill", "tool_input": {"skill": "nope"}}),
        json!({"tool_name": "Skill", "tool_input": {"skill": "../../x"}}),
        json!({"tool_name": "Skill"}),
        json!({"tool_name": "Bash", "tool_input": {"command": "engine session activate x"}}),
    ] {
        let a = sb.run("preload-templates", input);
        a.assert_contract();
        assert_eq!(a.stdout, "");
    }
}

#[test]
fn templates_output_stays_within_the_budget_and_queues_the_rest() {
    let mut sb = Sandbox::new();
    sb.active_session("s", &json!({}));
    sb.extra_env
        .push(("PRELOAD_OUTPUT_BUDGET".into(), "700".into()));
    let a = skill_call(&sb, "implement");
    a.assert_contract();
    assert!(a.context().chars().count() <= 700);
    let state = sb.state("s");
    let pending = strings(&state, "pendingPreloads");
    let preloaded = strings(&state, "preloadedFiles");
    for name in [
        "CMD_REPORT_INTENT.md",
        "CMD_SELECT_MODE.md",
        "CMD_INGEST_CONTEXT_BEFORE_WORK.md",
        "TEMPLATE_IMPLEMENTATION_PLAN.md",
    ] {
        let q = pending.iter().any(|p| p.ends_with(name));
        let d = preloaded.iter().any(|p| p.ends_with(name));
        assert!(q ^ d, "{name}: queued {q}, delivered {d}");
    }
}

// preload-phase-commands

/// What a phase transition brought, in order: the files its output shows (each recorded as
/// delivered), then what it left queued.
fn phase_files_out(sb: &Sandbox, a: &Answer) -> Vec<String> {
    let state = sb.state("s");
    assert_shown_recorded(&a.context(), &state);
    let mut out: Vec<String> = Vec::new();
    for (path, ..) in shown_parts(&a.context()) {
        if !out.contains(&path) {
            out.push(path);
        }
    }
    out.extend(strings(&state, "pendingPreloads"));
    out
}

fn names(paths: &[String]) -> Vec<&str> {
    paths
        .iter()
        .map(|p| p.rsplit('/').next().unwrap())
        .collect()
}

#[test]
fn phase_commands_deliver_the_phase_in_one_write_and_skip_what_is_in_context() {
    let sb = Sandbox::new();
    let intent = sb.engine_path("commands/CMD_REPORT_INTENT.md");
    sb.active_session("s", &json!({"preloadedFiles": [intent]}));
    let a = phase_output(
        &sb,
        &json!({"stdout": "Phase: 1: Interrogation\nSteps:\n  1.1: §CMD_REPORT_INTENT\n"}),
    );
    a.assert_contract();
    assert!(
        !shown_parts(&a.context()).is_empty(),
        "the transition's own result carries the new phase's commands"
    );
    let out = phase_files_out(&sb, &a);
    assert_eq!(
        &names(&out)[..3],
        [
            "CMD_INTERROGATE.md",
            "CMD_ASK_ROUND.md",
            "CMD_LOG_INTERACTION.md"
        ]
    );
    assert!(!names(&out).contains(&"CMD_REPORT_INTENT.md"));
    let skips: Vec<_> = sb
        .events()
        .into_iter()
        .filter(|e| e["event"] == "skip-dedup")
        .collect();
    assert_eq!(skips.len(), 1);
    assert_eq!(skips[0]["file"], json!(intent));
}

#[test]
fn phase_commands_queue_what_does_not_fit() {
    let mut sb = Sandbox::new();
    sb.extra_env
        .push(("PRELOAD_OUTPUT_BUDGET".into(), "700".into()));
    sb.active_session("s", &json!({}));
    let a = phase_output(&sb, &json!({"stdout": "Phase: 1: Interrogation"}));
    a.assert_contract();
    assert!(a.context().chars().count() <= 700);
    let out = phase_files_out(&sb, &a);
    assert!(
        !strings(&sb.state("s"), "pendingPreloads").is_empty(),
        "a small budget leaves files queued: {out:?}"
    );
    for name in [
        "CMD_INTERROGATE.md",
        "CMD_ASK_ROUND.md",
        "CMD_LOG_INTERACTION.md",
    ] {
        assert_eq!(
            names(&out).iter().filter(|n| **n == name).count(),
            1,
            "{name} delivered or queued, once: {out:?}"
        );
    }
}

#[test]
fn phase_commands_resolve_letter_labels_and_string_responses() {
    let sb = Sandbox::new();
    sb.active_session("s", &json!({}));
    let a = phase_output(&sb, &json!("Phase: 3.A: Build Loop"));
    a.assert_contract();
    let out = phase_files_out(&sb, &a);
    assert!(names(&out).contains(&"CMD_HANDOFF_TO_AGENT.md"), "{out:?}");
}

#[test]
fn phase_commands_prefer_the_state_phases() {
    let sb = Sandbox::new();
    sb.active_session("s", &json!({"phases": [{"label": "1", "name": "Custom", "steps": ["§CMD_WALK_THROUGH_RESULTS"]}]}));
    let a = phase_output(&sb, &json!({"stdout": "Phase: 1: Custom"}));
    let out = phase_files_out(&sb, &a);
    assert_eq!(names(&out)[0], "CMD_WALK_THROUGH_RESULTS.md");
    assert!(!names(&out).contains(&"CMD_INTERROGATE.md"));
}

#[test]
fn phase_commands_ignore_other_output_and_seed_only_states() {
    let sb = Sandbox::new();
    session_start(&sb, "startup");
    let before = fs::read_to_string(sb.seed_path()).unwrap();
    for response in [
        json!({"stdout": "Phase: 1: Interrogation"}),
        json!({"stdout": "total 0"}),
        json!(5),
    ] {
        phase_output(&sb, &response).assert_contract();
    }
    assert_eq!(
        fs::read_to_string(sb.seed_path()).unwrap(),
        before,
        "a seed has no skill: nothing to queue"
    );
    sb.active_session("s", &json!({}));
    let a = sb.run(
        "preload-phase-commands",
        json!({"tool_name": "Read", "tool_response": {"stdout": "Phase: 1: X"}}),
    );
    assert_eq!(a.stdout, "");
    assert!(strings(&sb.state("s"), "pendingPreloads").is_empty());
}

// preload activate / phase

#[test]
fn activate_and_phase_on_a_session_sh_state() {
    let sb = Sandbox::new();
    let dir = sb.session("t", &json!({"pid": sb.pid, "skill": "implement", "lifecycle": "active",
        "currentPhase": "0: Setup", "taskSummary": "keep me", "preloadedFiles": ["/a.md"],
        "phases": [{"label": "0", "name": "Setup"}, {"label": "1", "name": "Interrogation", "steps": ["§CMD_INTERROGATE"]}]}));
    let (code, out) = cli(&sb, &["activate", "sessions/t"]);
    assert_eq!(code, 0);
    assert!(out.starts_with(&format!(
        "Session activated: {} (skill: implement, pid: {})",
        dir.display(),
        sb.pid
    )));
    let s = sb.state("t");
    assert_eq!(s["taskSummary"], "keep me");
    assert!(
        strings(&s, "preloadedFiles").contains(&"/a.md".to_owned()),
        "same owner keeps its context"
    );
    let proof = proof_stdin(&sb, "t");
    let (code, out) = cli_in(&sb, &["phase", "sessions/t", "1: Interrogation"], &proof);
    assert_eq!(code, 0);
    assert!(out.starts_with("Phase: 1: Interrogation\n"));
    assert_eq!(sb.state("t")["currentPhase"], "1: Interrogation");
    let (code, _) = cli(&sb, &["phase", "sessions/none", "1: X"]);
    assert_eq!(code, 1);
    let (code, _) = cli(&sb, &["activate"]);
    assert_eq!(code, 2);
    let (code, _) = cli(&sb, &["activate", "sessions/new"]);
    assert_eq!(code, 2, "a new session needs --skill");
    fs::write(dir.join(".state.json"), "{bad").unwrap();
    let (code, _) = cli(&sb, &["activate", "sessions/t", "--skill", "implement"]);
    assert_eq!(code, 1);
    assert_eq!(fs::read_to_string(dir.join(".state.json")).unwrap(), "{bad");
}

/// `preload` started under a hook binary's name (as the release installs it, one binary under
/// every name) is that hook: its version, its help. `make test` runs every hook suite against
/// those names too (`RELEASE_TESTS`).
#[test]
fn preload_started_under_a_hook_name_is_that_hook() {
    use std::os::unix::process::CommandExt;
    for name in BINARIES.iter().filter(|name| **name != "preload") {
        let run = |flag: &str| {
            let out = std::process::Command::new(preload_test_support::sandbox::bin("preload"))
                .arg0(name)
                .arg(flag)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            assert!(out.status.success(), "{name} {flag}");
            String::from_utf8(out.stdout).unwrap()
        };
        assert_eq!(
            run("--version"),
            format!("{name} {}\n", env!("CARGO_PKG_VERSION"))
        );
        let help = run("--help");
        assert!(help.starts_with(name), "{name}: {help}");
    }
}
