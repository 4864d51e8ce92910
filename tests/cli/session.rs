//! `preload activate` and `preload phase` refuse what `session.sh` refuses, with its messages
//! and exit codes: the phase sequence, the proof a phase asks for (recorded in the phase
//! history), the session parameters, a completed skill; and never wait on a stdin left open.

use std::fs;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use preload_core::primitives::env;
use serde_json::{Value, json};

use preload_test_support::pipeline_steps::{cli, cli_in, cli_output, proof_stdin};
use preload_test_support::sandbox::{Sandbox, strings};

/// What a `preload` run left: (exit code, stdout, stderr).
fn run(sb: &Sandbox, args: &[&str], stdin: &str) -> (i32, String, String) {
    let out = cli_output(sb, args, stdin);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `preload <args>` with `stdin` is refused as `session.sh` refuses it: exit 1, and exactly
/// `message` on stderr.
fn assert_refused(sb: &Sandbox, args: &[&str], stdin: &str, message: impl AsRef<str>) {
    let (code, _, err) = run(sb, args, stdin);
    assert_eq!(
        (code, err.as_str()),
        (1, message.as_ref()),
        "preload {args:?}"
    );
}

/// The bundled `/implement` activated as session `t`.
fn implement() -> Sandbox {
    let sb = Sandbox::new();
    let (code, _, err) = run(&sb, &["activate", "sessions/t", "implement"], "");
    assert_eq!(code, 0, "{err}");
    sb
}

fn dir(sb: &Sandbox) -> String {
    sb.sessions.join("t").display().to_string()
}

/// The proof for leaving phase 0 of the bundled `/implement`: the fields its `Proof required to
/// leave this phase` list names.
const SETUP_PROOF: &str = r#"{"mode": "default", "sessionDir": "sessions/t", "parametersParsed": "add a total", "contextIngested": "2: parser.ts, total.ts"}"#;

fn setup_proof() -> Value {
    serde_json::from_str(SETUP_PROOF).unwrap()
}

/// The state without what every write changes.
fn settled(sb: &Sandbox) -> Value {
    let mut s = sb.state("t");
    s.as_object_mut().unwrap().remove("lastHeartbeat");
    s
}

#[test]
fn a_skipped_phase_is_refused_and_nothing_changes() {
    let sb = implement();
    let before = fs::read_to_string(sb.sessions.join("t/.state.json")).unwrap();
    let (code, out, err) = run(&sb, &["phase", "sessions/t", "2.4: Close"], SETUP_PROOF);
    assert_eq!(code, 1);
    assert_eq!(out, "");
    assert_eq!(
        err,
        format!(
            "§CMD_UPDATE_PHASE: Non-sequential phase transition rejected.\n  Current phase: 0: Setup (label: 0)\n  Requested phase: 2.4: Close (label: 2.4)\n  Expected next: 1: Interrogation\n\n  To proceed: preload phase {d} \"2.4: Close\" --user-approved \"Reason: ...\"\n",
            d = dir(&sb)
        )
    );
    assert_eq!(
        fs::read_to_string(sb.sessions.join("t/.state.json")).unwrap(),
        before
    );
}

#[test]
fn leaving_a_phase_needs_its_proof() {
    let sb = implement();
    let d = dir(&sb);
    assert_refused(
        &sb,
        &["phase", "sessions/t", "1: Interrogation"],
        "",
        format!(
            "§CMD_UPDATE_PHASE: Proof required to leave phase '0: Setup' but no STDIN provided.\n  Required proof fields: mode, sessionDir, parametersParsed, contextIngested\n\n  Usage: echo 'field: value' | session.sh phase {d} \"1: Interrogation\"\n"
        ),
    );
    assert_refused(
        &sb,
        &["phase", "sessions/t", "1: Interrogation"],
        r#"{"mode": "quick", "parametersParsed": "", "zeta": 1}"#,
        "§CMD_UPDATE_PHASE: Missing proof to leave phase '0: Setup': sessionDir, parametersParsed, contextIngested\n  Required: mode, sessionDir, parametersParsed, contextIngested\n  Provided: mode, parametersParsed, zeta\n",
    );
    assert_refused(
        &sb,
        &["phase", "sessions/t", "1: Interrogation"],
        r#"{"mode": "quick", "sessionDir": "________", "parametersParsed": "yes"}"#,
        "§CMD_UPDATE_PHASE: Proof field 'sessionDir' has unfilled blank (________). Complete the work before transitioning.\n",
    );
    assert_eq!(sb.state("t")["currentPhase"], "0: Setup");
}

#[test]
fn proof_is_checked_against_the_phase_command_schemas() {
    let sb = implement();
    let (code, _, err) = run(
        &sb,
        &["phase", "sessions/t", "1: Interrogation"],
        SETUP_PROOF,
    );
    assert_eq!(code, 0, "{err}");
    let given =
        r#"{"depthChosen": "standard (user)", "roundsCompleted": 3, "questionsAsked": "4"}"#;
    assert_refused(
        &sb,
        &["phase", "sessions/t", "2: Planning"],
        given,
        format!(
            "§CMD_UPDATE_PHASE: Proof validation failed against CMD schemas:\n/answersLogged: missing required property 'answersLogged' [required]\n/interactionsLogged: missing required property 'interactionsLogged' [required]\n/roundsCompleted: expected type string but got number [type]\n\n  Schema required: answersLogged, depthChosen, interactionsLogged, questionsAsked, roundsCompleted\n  Proof provided: {given}\n"
        ),
    );
    assert_eq!(sb.state("t")["currentPhase"], "1: Interrogation");
}

#[test]
fn an_accepted_transition_records_its_proof_and_queues_the_phase_commands() {
    let sb = implement();
    let before = settled(&sb);
    let (code, out, err) = run(
        &sb,
        &["phase", "sessions/t", "1: Interrogation"],
        SETUP_PROOF,
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "");
    assert!(out.starts_with("Phase: 1: Interrogation\nSteps:\n  1.1: §CMD_REPORT_INTENT\n"));
    assert!(
        out.contains(
            "Proof required to leave this phase:\n  - answersLogged: Where the answers were recorded (hook or manual)\n  - depthChosen: The depth and who chose it, e.g. 'standard (user)'\n"
        ),
        "{out}"
    );
    assert!(out.ends_with("Gate: true\n"), "{out}");
    let s = settled(&sb);
    assert_eq!(s["currentPhase"], "1: Interrogation");
    assert!(s.get("loading").is_none());
    let history = s["phaseHistory"].as_array().unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0]["phase"], "1: Interrogation");
    assert_eq!(history[0]["proof"], setup_proof());
    assert!(history[0]["ts"].is_string());
    let pending = strings(&s, "pendingPreloads");
    for name in [
        "CMD_INTERROGATE.md",
        "CMD_ASK_ROUND.md",
        "CMD_LOG_INTERACTION.md",
    ] {
        assert!(
            pending
                .iter()
                .any(|p| p.ends_with(&format!("/engine/.directives/commands/{name}"))),
            "{name} queued: {pending:?}"
        );
    }
    assert_eq!(s["skill"], before["skill"], "the rest of the state is kept");
    assert_eq!(s["phases"], before["phases"]);
}

/// A phase entry with a lowercase suffix (`§CMD_GENERATE_DEBRIEF_file`) names
/// `CMD_GENERATE_DEBRIEF.md`, as the engine's `resolve_phase_cmds` reads it: `preload phase`
/// queues it with the phase's other commands (it used to look for `CMD_GENERATE_DEBRIEF_file.md`
/// and drop it, so a transition made outside a tool call, which no PostToolUse hook sees,
/// never delivered it), and the next ordinary call delivers it once.
#[test]
fn a_suffixed_phase_command_is_queued_by_the_transition_and_delivered_next() {
    let sb = Sandbox::new();
    let skill = sb.home.join(".claude/skills/implement/SKILL.md");
    let text = fs::read_to_string(&skill).unwrap();
    let plain = r#""commands": ["§CMD_ASK_ROUND", "§CMD_LOG_INTERACTION"],"#;
    assert!(text.contains(plain), "phase 1's commands in the example");
    let suffixed = r#""commands": ["§CMD_ASK_ROUND", "§CMD_GENERATE_DEBRIEF_file"],"#;
    fs::write(&skill, text.replace(plain, suffixed)).unwrap();
    let (code, _, err) = run(&sb, &["activate", "sessions/t", "implement"], "");
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(
        &sb,
        &["phase", "sessions/t", "1: Interrogation"],
        SETUP_PROOF,
    );
    assert_eq!(code, 0, "{err}");
    let debrief = sb.engine_path("commands/CMD_GENERATE_DEBRIEF.md");
    assert!(
        strings(&sb.state("t"), "pendingPreloads").contains(&debrief),
        "queued by the transition: {:?}",
        strings(&sb.state("t"), "pendingPreloads")
    );
    preload_test_support::pipeline_steps::tool_call(&sb, "Bash", json!({"command": "ls"}));
    preload_test_support::pipeline_steps::tool_call(&sb, "Bash", json!({"command": "ls"}));
    assert_eq!(sb.delivery_count("/commands/CMD_GENERATE_DEBRIEF.md"), 1);
    assert!(strings(&sb.state("t"), "preloadedFiles").contains(&debrief));
}

#[test]
fn key_value_proof_still_works_with_the_deprecation_notice() {
    let sb = implement();
    let mut lines = String::new();
    for (key, value) in setup_proof().as_object().unwrap() {
        let value = value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_owned);
        lines.push_str(key);
        lines.push_str(": ");
        lines.push_str(&value);
        lines.push('\n');
    }
    let (code, _, err) = run(&sb, &["phase", "sessions/t", "1: Interrogation"], &lines);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        err,
        "⚠️  DEPRECATED: Proof piped as key:value lines. Use JSON objects instead.\n"
    );
    assert_eq!(sb.state("t")["phaseHistory"][0]["proof"], setup_proof());
}

#[test]
fn the_users_approval_lets_a_skip_through_but_not_without_proof() {
    let sb = implement();
    let args = [
        "phase",
        "sessions/t",
        "3.A: Build Loop",
        "--user-approved",
        "Reason: the user asked to build now",
    ];
    let (code, out, err) = run(&sb, &args, "");
    assert_eq!(code, 1);
    assert!(
        out.starts_with(
            "Phase transition approved (non-sequential): 0: Setup -> 3.A: Build Loop\n"
        )
    );
    assert!(err.starts_with("§CMD_UPDATE_PHASE: Proof required to leave phase '0: Setup'"));
    let (code, out, err) = run(&sb, &args, SETUP_PROOF);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(
        "Phase transition approved (non-sequential): 0: Setup -> 3.A: Build Loop\n  Approval: Reason: the user asked to build now\nPhase: 3.A: Build Loop\n"
    ));
    assert_eq!(sb.state("t")["currentPhase"], "3.A: Build Loop");
}

#[test]
fn switching_branches_and_going_back_are_refused() {
    let sb = Sandbox::new();
    sb.active_session(
        "t",
        &json!({"currentPhase": "3.A: Alpha", "phases": [
            {"label": "3", "name": "Exec"}, {"label": "3.A", "name": "Alpha"},
            {"label": "3.B", "name": "Beta"}, {"label": "4", "name": "Synth"},
            {"label": "4.1", "name": "One"}, {"label": "4.2", "name": "Two"}]}),
    );
    let d = dir(&sb);
    assert_refused(
        &sb,
        &["phase", "sessions/t", "3.B: Beta"],
        "",
        format!(
            "§CMD_UPDATE_PHASE: Branch switch rejected (3.A → 3.B).\n  Letter-labeled phases (N.A, N.B, N.C) are alternative branches, not sequential steps.\n  You are in branch 3.A — switching to 3.B requires explicit approval.\n  To exit this branch: preload phase {d} \"4: [NextPhase]\"\n\n  To proceed: preload phase {d} \"3.B: Beta\" --user-approved \"Reason: ...\"\n"
        ),
    );
    let (code, _, _) = run(&sb, &["phase", "sessions/t", "4.2: Two"], "");
    assert_eq!(code, 0, "from a branch to the next major");
    let (code, _, err) = run(&sb, &["phase", "sessions/t", "4.1: One"], "");
    assert_eq!(code, 1, "backwards");
    assert!(err.contains("Requested phase: 4.1: One (label: 4.1)\n\n  To proceed"));
    let (code, out, _) = run(&sb, &["phase", "sessions/t", "4.5: Extra"], "");
    assert_eq!(code, 0, "an undeclared sub-phase of the current major");
    assert_eq!(out, "Phase: 4.5: Extra\nGate: true\n");
    let labels: Vec<Value> = sb.state("t")["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["label"].clone())
        .collect();
    assert_eq!(
        labels,
        json!(["3", "3.A", "3.B", "4", "4.1", "4.2", "4.5"])
            .as_array()
            .unwrap()
            .clone()
    );
    assert_eq!(
        sb.state("t")["phaseHistory"],
        json!(["4.2: Two", "4.5: Extra"])
    );
}

#[test]
fn bad_labels_missing_sessions_and_unknown_flags() {
    let sb = implement();
    for (label, message) in [
        (
            "1/x",
            "ERROR: validate_phase: invalid characters in phase label '1/x' (no /, &, \\, or newlines)\n",
        ),
        ("", "ERROR: validate_phase: empty phase label\n"),
        (
            "Setup",
            "§CMD_UPDATE_PHASE: Invalid phase label format: 'Setup'. Valid formats: N, N.M, N.A, N.MA (single uppercase). Got: 'Setup'\n",
        ),
    ] {
        assert_refused(&sb, &["phase", "sessions/t", label], "", message);
    }
    assert_refused(
        &sb,
        &["phase", "sessions/none", "1: X"],
        "",
        format!(
            "§CMD_REQUIRE_ACTIVE_SESSION: No .state.json in {} — is the session active?\n",
            sb.sessions.join("none").display()
        ),
    );
    // An unknown flag is a usage error of the command line (exit 2), and nothing changes.
    let before = sb.state("t");
    let (code, out, err) = run(&sb, &["phase", "sessions/t", "0: Setup", "--loud"], "");
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("--loud") && err.contains("Usage:"), "{err}");
    assert_eq!(sb.state("t"), before);
}

/// `preload <args>` with a stdin that gets `written` and is then held open; (exit code, stdout,
/// stderr, seconds taken).
fn held_open(sb: &Sandbox, args: &[&str], written: &str) -> (i32, String, String, f64) {
    let mut child = Command::new(preload_test_support::sandbox::bin("preload"))
        .args(args)
        .env_clear()
        .env(env::HOME, &sb.home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env(env::CLAUDE_SUPERVISOR_PID, sb.pid.to_string())
        .env(env::CLAUDE_SESSION_CACHE_DIR, sb.root())
        .current_dir(&sb.project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(written.as_bytes()).unwrap();
    stdin.flush().unwrap();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "preload {args:?} hung on an open stdin"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = started.elapsed().as_secs_f64();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        took,
    )
}

#[test]
fn a_stdin_held_open_is_read_for_a_second_and_never_waited_on() {
    let sb = implement();
    let (code, _, err, took) = held_open(&sb, &["phase", "sessions/t", "1: Interrogation"], "");
    assert_eq!(code, 1);
    assert!(err.contains("but no STDIN provided"), "{err}");
    assert!(took < 5.0, "{took}s");
    let (code, _, err, took) = held_open(
        &sb,
        &["phase", "sessions/t", "1: Interrogation"],
        SETUP_PROOF,
    );
    assert_eq!(code, 0, "what arrived in time is the proof: {err}");
    assert!(took < 5.0, "{took}s");
    assert_eq!(
        sb.state("t")["phaseHistory"][0]["phase"],
        "1: Interrogation"
    );
    let (code, _, err, took) = held_open(&sb, &["activate", "sessions/u", "implement"], "");
    assert_eq!(code, 0, "{err}");
    assert!(took < 6.0, "{took}s");
}

// activate

/// Session parameters as the engine's `CMD_PARSE_PARAMETERS` schema asks for them.
const PARAMETERS_SCHEMA: &str = "# ¶CMD_PARSE_PARAMETERS\n\n**Schema**:\n```json\n{\"type\": \"object\", \"required\": [\"taskSummary\", \"scope\"], \"properties\": {\"taskSummary\": {\"type\": \"string\"}, \"scope\": {\"type\": \"string\"}, \"contextPaths\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}}}\n```\n\n## PROOF FOR §CMD_PARSE_PARAMETERS\n\n```json\n{\"type\": \"object\", \"required\": [\"parse_parametersDone\"]}\n```\n";

#[test]
fn session_parameters_are_validated_then_merged() {
    let sb = Sandbox::new();
    sb.directive("commands/CMD_PARSE_PARAMETERS.md", PARAMETERS_SCHEMA);
    assert_refused(
        &sb,
        &["activate", "sessions/t", "implement"],
        "{not json",
        "§CMD_PARSE_PARAMETERS: Invalid JSON on stdin\n",
    );
    assert!(!sb.sessions.join("t").exists(), "nothing created");
    assert_refused(
        &sb,
        &["activate", "sessions/t", "implement"],
        r#"{"taskSummary": "add a total", "contextPaths": ["a", 2]}"#,
        "§CMD_PARSE_PARAMETERS: Session parameters validation failed:\n/scope: missing required property 'scope' [required]\n/contextPaths/1: expected type string but got number [type]\n",
    );
    let (code, _, err) = run(
        &sb,
        &["activate", "sessions/t", "implement"],
        r#"{"taskSummary": "add a total", "scope": "Code Changes Allowed", "taskType": "MINE"}"#,
    );
    assert_eq!(code, 0, "{err}");
    let s = sb.state("t");
    assert_eq!(s["taskSummary"], "add a total");
    assert_eq!(s["scope"], "Code Changes Allowed");
    assert_eq!(
        s["taskType"], "IMPLEMENTATION",
        "the skill's static fields win"
    );

    fs::remove_file(
        sb.home
            .join(".claude/engine/.directives/commands/CMD_PARSE_PARAMETERS.md"),
    )
    .unwrap();
    assert_refused(
        &sb,
        &["activate", "sessions/v", "implement"],
        r#"{"scope": "x"}"#,
        "§CMD_PARSE_PARAMETERS: Missing required field(s) in JSON: taskSummary, directoriesOfInterest, contextPaths, requestFiles, extraInfo\n  See §CMD_PARSE_PARAMETERS schema for required fields.\n",
    );
}

#[test]
fn a_completed_skill_is_activated_again_only_with_approval() {
    let sb = Sandbox::new();
    sb.active_session("t", &json!({"completedSkills": ["implement"]}));
    let d = dir(&sb);
    let (code, out, err) = run(&sb, &["activate", "sessions/t", "implement"], "");
    assert_eq!(code, 1);
    assert_eq!(out, "");
    assert_eq!(
        err,
        format!(
            "§CMD_PARSE_PARAMETERS: Skill 'implement' was already completed in this session.\n  Completed skills: implement\n  Session: {d}\n\nEnsure you are doing the right thing — right skill, right phase. You may re-activate this skill if the user explicitly allowed it.\n  To proceed: session.sh activate {d} implement --user-approved \"Reason: ...\"\n"
        )
    );
    let (code, out, err) = run(
        &sb,
        &[
            "activate",
            "sessions/t",
            "implement",
            "--user-approved",
            "Reason: once more",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(
        "Skill re-activation approved (previously completed): implement\n  Approval: Reason: once more\nSession activated: "
    ));
    let (code, _, err) = run(
        &sb,
        &[
            "activate",
            "sessions/t",
            "implement",
            "--fast-track",
            "--odd",
        ],
        "",
    );
    assert_eq!(code, 2, "an unknown flag is a usage error: {err}");
    assert!(err.contains("--odd"), "{err}");
    let (code, _, err) = run(
        &sb,
        &["activate", "sessions/t", "implement", "--fast-track"],
        "",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(sb.state("t")["fastTrack"], true);

    sb.active_session("d", &json!({"skill": "do", "completedSkills": ["do"]}));
    let (code, _, err) = run(&sb, &["activate", "sessions/d", "do"], "");
    assert_eq!(code, 0, "/do can always be activated again: {err}");
}

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
