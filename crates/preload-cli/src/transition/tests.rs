//! Unit tests of phase transitions: labels, the sequence rules, the refusals, the locked write.

use super::*;
use preload_core::Context;
use preload_core::mechanisms::session::STATE_FILE;
use preload_core::primitives::env::{self, Env};
use preload_core::primitives::input::HookInput;
use preload_core::state;
use std::fs;
use std::path::PathBuf;
use std::time::Duration;

fn declared(labels: &[&str]) -> Vec<Value> {
    labels
        .iter()
        .map(|l| json!({"label": l, "name": format!("P{l}")}))
        .collect()
}

fn verdict(phases: &[Value], current: &str, requested: &str) -> Verdict {
    judge(Phases::of(phases), current, requested)
        .unwrap()
        .verdict
}

#[test]
fn validate_phase_rejects_what_lib_sh_rejects() {
    assert!(validate_phase("3.A: Build Loop").is_ok());
    assert_eq!(
        validate_phase("").unwrap_err().to_string(),
        "ERROR: validate_phase: empty phase label"
    );
    for bad in ["1/x", "a & b", "x\\y", "1: a\nb"] {
        assert_eq!(
            validate_phase(bad).unwrap_err().to_string(),
            format!(
                "ERROR: validate_phase: invalid characters in phase label '{bad}' (no /, &, \\, or newlines)"
            )
        );
    }
}

#[test]
fn labels_and_names_are_cut_as_the_engine_cuts_them() {
    assert_eq!(label_of("3.A: Build: Loop"), "3.A");
    assert_eq!(label_of("3.A:Build"), "3.A:Build");
    assert_eq!(name_of("3.A: Build: Loop"), "Build: Loop");
    assert_eq!(name_of("3.5"), "3.5");
    assert_eq!(major_of("12.B"), "12");
    assert_eq!(major_of("Phase 1"), "0");
    assert!(is_branch_switch("3.A", "3.B"));
    assert!(is_branch_switch("3.A.1", "3.B"));
    assert!(!is_branch_switch("3.A.1", "3.A.2"));
    assert!(!is_branch_switch("4.1", "4.2"));
    assert!(!is_branch_switch("3", "3.B"));
}

#[test]
fn malformed_labels_are_refused_with_the_engine_message() {
    let phases = declared(&["0", "1"]);
    for bad in ["Setup", "1a: x", "3.1AB: x", "3.1a: x", "3.: x"] {
        let err = judge(Phases::of(&phases), "0: Setup", bad)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            format!(
                "§CMD_UPDATE_PHASE: Invalid phase label format: '{}'. Valid formats: N, N.M, N.A, N.MA (single uppercase). Got: '{bad}'",
                label_of(bad)
            )
        );
    }
    assert!(judge(Phases::of(&phases), "0: Setup", "3.1A: x").is_ok());
    assert!(judge(Phases::of(&phases), "0: Setup", "4.A.1.2: x").is_ok());
}

#[test]
fn the_sequence_rules() {
    let phases = declared(&["0", "1", "2", "3", "3.A", "3.B", "4", "4.1", "4.2", "4.3"]);
    let v = |cur: &str, req: &str| verdict(&phases, &format!("{cur}: x"), &format!("{req}: y"));
    // Case 0: the same phase again.
    assert_eq!(v("1", "1"), Verdict::Sequential);
    // Case 1: the next declared phase.
    assert_eq!(v("0", "1"), Verdict::Sequential);
    assert_eq!(v("3", "3.A"), Verdict::Sequential);
    // Case 1b: sub-phases are optional: from 3 (next is 3.A) straight to 4.
    assert_eq!(v("3", "4"), Verdict::Sequential);
    // Case 1c: from a sub-phase to the next major, declared or not.
    assert_eq!(v("3.A", "4.2"), Verdict::Sequential);
    assert_eq!(v("4.1", "5"), Verdict::Sequential);
    // Case 1d A: into any declared phase of the next major.
    assert_eq!(v("2", "3.B"), Verdict::Sequential);
    // Case 1d B: forward within the major.
    assert_eq!(v("4", "4.2"), Verdict::Sequential);
    assert_eq!(v("4.1", "4.3"), Verdict::Sequential);
    // Case 2: an undeclared sub-phase of the current major.
    assert_eq!(v("4.1", "4.7"), Verdict::Append);
    assert_eq!(
        v("4.2", "4.0"),
        Verdict::Append,
        "even backwards, as the engine does"
    );
    // Refused.
    assert_eq!(v("0", "2"), Verdict::OutOfSequence, "skipping a major");
    assert_eq!(v("4.2", "4.1"), Verdict::OutOfSequence, "backwards");
    assert_eq!(v("3", "2"), Verdict::OutOfSequence);
    assert_eq!(
        v("3.B", "3.A"),
        Verdict::OutOfSequence,
        "a branch backwards"
    );
    assert_eq!(
        v("3.A", "3.B"),
        Verdict::BranchSwitch,
        "the next phase, but a branch"
    );
    assert_eq!(v("0", "2.4"), Verdict::OutOfSequence);
    // The engine's default phase has no label: its major counts as 0.
    assert_eq!(
        verdict(&phases, "Phase 1: Setup", "1: X"),
        Verdict::Sequential
    );
    assert_eq!(
        verdict(&phases, "Phase 1: Setup", "2: X"),
        Verdict::OutOfSequence
    );
}

#[test]
fn legacy_major_minor_phases_have_labels() {
    let phases = vec![
        json!({"major": 1, "minor": 0, "name": "A"}),
        json!({"major": 1, "minor": 1, "name": "B"}),
        json!({"major": 2, "name": "C"}),
    ];
    assert_eq!(verdict(&phases, "1: A", "1.1: B"), Verdict::Sequential);
    let j = judge(Phases::of(&phases), "1.1: B", "3: Z").unwrap();
    assert_eq!(j.next, Some(("2".to_owned(), "C".to_owned())));
}

#[test]
fn rejections_read_as_the_engine_writes_them() {
    let phases = vec![
        json!({"label": "0", "name": "Setup"}),
        json!({"label": "1", "name": "Interrogation"}),
        json!({"label": "3.A"}),
        json!({"label": "3.B"}),
    ];
    let dir = Path::new("/p/sessions/s");
    let j = judge(Phases::of(&phases), "0: Setup", "2.4: Close").unwrap();
    assert_eq!(
        rejection(&j, "0: Setup", "2.4: Close", dir),
        "§CMD_UPDATE_PHASE: Non-sequential phase transition rejected.\n  Current phase: 0: Setup (label: 0)\n  Requested phase: 2.4: Close (label: 2.4)\n  Expected next: 1: Interrogation\n\n  To proceed: preload phase /p/sessions/s \"2.4: Close\" --user-approved \"Reason: ...\""
    );
    let j = judge(Phases::of(&phases), "3.B: x", "3.A: y").unwrap();
    assert!(j.next.is_none());
    assert!(rejection(&j, "3.B: x", "3.A: y", dir).contains("(label: 3.A)\n\n  To proceed"));
    let j = judge(Phases::of(&phases), "3.A: x", "3.B: y").unwrap();
    assert_eq!(
        rejection(&j, "3.A: x", "3.B: y", dir),
        "§CMD_UPDATE_PHASE: Branch switch rejected (3.A → 3.B).\n  Letter-labeled phases (N.A, N.B, N.C) are alternative branches, not sequential steps.\n  You are in branch 3.A — switching to 3.B requires explicit approval.\n  To exit this branch: preload phase /p/sessions/s \"4: [NextPhase]\"\n\n  To proceed: preload phase /p/sessions/s \"3.B: y\" --user-approved \"Reason: ...\""
    );
    let nameless = vec![json!({"label": "0"}), json!({"label": "5"})];
    let j = judge(Phases::of(&nameless), "0: x", "4.1: y").unwrap();
    assert_eq!(j.next, Some(("5".to_owned(), "null".to_owned())));
}

#[test]
fn an_appended_phase_is_sorted_in() {
    let phases = declared(&["4", "4.1", "10", "4.2"]);
    let labels: Vec<String> = appended(Phases::of(&phases), "4.10", "Late")
        .iter()
        .map(|p| p["label"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(labels, vec!["4", "4.1", "4.2", "4.10", "10"]);
}

// `change_phase` on a session in a temporary HOME.

struct World {
    _tmp: tempfile::TempDir,
    ctx: Context,
    dir: PathBuf,
    commands: PathBuf,
}

impl World {
    fn new(state: &Value) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let engine = home.join(".claude/engine/.directives");
        let commands = engine.join("commands");
        fs::create_dir_all(&commands).unwrap();
        std::os::unix::fs::symlink(&engine, home.join(".claude/.directives")).unwrap();
        let project = tmp.path().join("p");
        fs::create_dir_all(project.join(".claude")).unwrap();
        let dir = project.join("sessions/s");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(STATE_FILE), state.to_string()).unwrap();
        let env = Env::from_pairs([
            (env::HOME, home.to_string_lossy().into_owned()),
            (env::CLAUDE_SUPERVISOR_PID, std::process::id().to_string()),
        ]);
        let input = HookInput::from_value(json!({"cwd": project}));
        let ctx = Context::new(env, "phase", &input, Duration::from_secs(5));
        Self {
            _tmp: tmp,
            ctx,
            dir,
            commands,
        }
    }

    fn cmd(&self, name: &str, proof: &str) {
        fs::write(
            self.commands.join(format!("CMD_{name}.md")),
            format!("# {name}\n\n## PROOF FOR §CMD_{name}\n```json\n{proof}\n```\n"),
        )
        .unwrap();
    }

    fn phase(&self, phase: &str, proof: Option<&str>, approval: Option<&str>) -> Outcome {
        let request = PhaseRequest {
            phase: phase.to_owned(),
            approval: approval.map(str::to_owned),
            proof: proof.and_then(proof::parse),
        };
        change_phase(&self.ctx, &self.dir, &request)
    }

    /// [`World::phase`], accepted.
    #[track_caller]
    fn accepted(&self, phase: &str, proof: Option<&str>, approval: Option<&str>) -> Outcome {
        let out = self.phase(phase, proof, approval);
        assert!(!out.refused, "{}", out.stderr);
        out
    }

    fn state(&self) -> Value {
        serde_json::from_str(&fs::read_to_string(self.dir.join(STATE_FILE)).unwrap()).unwrap()
    }

    fn raw(&self) -> String {
        fs::read_to_string(self.dir.join(STATE_FILE)).unwrap()
    }
}

fn implement_like() -> Value {
    json!({"pid": 1, "skill": "implement", "currentPhase": "0: Setup", "loading": true,
    "primaryTranscriptKey": "t", "toolCallsByTranscript": {"t": 3}, "zKeep": [1],
    "preloadedFiles": [], "pendingPreloads": [], "phaseHistory": [],
    "phases": [
        {"label": "0", "name": "Setup", "steps": ["§CMD_INTENT"], "proof": ["mode"]},
        {"label": "1", "name": "Interrogation", "steps": ["§CMD_INTENT", "§CMD_ASK"],
         "commands": ["§CMD_LOG", "§CMD_NOFILE"], "invariants": ["¶INV_X"],
         "proof": ["depth"], "gate": false},
        {"label": "2", "name": "Planning"},
        {"label": "3", "name": "Execution"}
    ]})
}

fn implement_world() -> World {
    let w = World::new(&implement_like());
    w.cmd(
        "INTENT",
        r#"{"type": "object", "required": ["intentDone"]}"#,
    );
    w.cmd(
        "ASK",
        r#"{"properties": {"depth": {"type": "string", "description": "how deep"}, "rounds": {"type": "integer"}}, "required": ["rounds"]}"#,
    );
    w.cmd("LOG", r#"{"required": ["logged"]}"#);
    w
}

#[test]
fn a_refused_transition_changes_nothing() {
    let w = implement_world();
    let before = w.raw();
    let out = w.phase("2: Planning", None, None);
    assert!(out.refused);
    assert!(out.stdout.is_empty());
    assert!(
        out.stderr
            .starts_with("§CMD_UPDATE_PHASE: Non-sequential phase transition rejected.\n")
    );
    assert_eq!(w.raw(), before);
    let out = w.phase("1: Interrogation", None, None);
    assert!(out.refused);
    assert!(out.stderr.starts_with(
        "§CMD_UPDATE_PHASE: Proof required to leave phase '0: Setup' but no STDIN provided."
    ));
    let out = w.phase("1: Interrogation", Some(r#"{"mode": "quick"}"#), None);
    assert_eq!(
        out.stderr,
        "§CMD_UPDATE_PHASE: Proof validation failed against CMD schemas:\n/intentDone: missing required property 'intentDone' [required]\n\n  Schema required: intentDone, mode\n  Proof provided: {\"mode\": \"quick\"}\n"
    );
    assert_eq!(w.raw(), before);
}

#[test]
fn an_accepted_transition_records_the_proof_and_queues_the_phase_commands() {
    let w = implement_world();
    let out = w.accepted(
        "1: Interrogation",
        Some("{\"mode\": \"quick\", \"intentDone\": true}\n"),
        None,
    );
    assert_eq!(out.stderr, "");
    assert_eq!(
        out.stdout,
        "Phase: 1: Interrogation\nInvariants:\n  - ¶INV_X\nSteps:\n  1.1: §CMD_INTENT\n  1.2: §CMD_ASK\nCommands:\n  - §CMD_LOG\n  - §CMD_NOFILE\nProof required to leave this phase:\n  - intentDone\n  - logged\n  - rounds\n  - depth: how deep\nGate: false\n"
    );
    let s = w.state();
    assert_eq!(s["currentPhase"], "1: Interrogation");
    assert!(s.get("loading").is_none() && s.get("primaryTranscriptKey").is_none());
    assert_eq!(s["toolCallsByTranscript"], json!({}));
    assert_eq!(s["zKeep"], json!([1]));
    let entry = &s["phaseHistory"][0];
    assert_eq!(entry["phase"], "1: Interrogation");
    assert_eq!(entry["proof"], json!({"mode": "quick", "intentDone": true}));
    assert_eq!(entry["ts"], s["lastHeartbeat"]);
    let pending = state::strings_of(s.get("pendingPreloads"));
    let names: Vec<&str> = pending
        .iter()
        .map(|p| p.rsplit('/').next().unwrap())
        .collect();
    assert_eq!(names, vec!["CMD_INTENT.md", "CMD_ASK.md", "CMD_LOG.md"]);
    assert!(
        pending[0].starts_with(
            &w.commands
                .canonicalize()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        ),
        "normalised: {pending:?}"
    );
}

#[test]
fn files_already_in_context_are_not_queued_and_staying_needs_no_proof() {
    let mut state = implement_like();
    state["currentPhase"] = json!("1: Interrogation");
    let w = World::new(&state);
    w.cmd("INTENT", r#"{"required": ["intentDone"]}"#);
    w.cmd("LOG", r#"{"required": ["logged"]}"#);
    let intent = w.commands.canonicalize().unwrap().join("CMD_INTENT.md");
    let mut s = w.state();
    s["preloadedFiles"] = json!([intent]);
    fs::write(w.dir.join(STATE_FILE), s.to_string()).unwrap();
    w.accepted("1: Interrogation", None, None);
    let s = w.state();
    let pending = state::strings_of(s.get("pendingPreloads"));
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert!(pending[0].ends_with("CMD_LOG.md"));
    assert_eq!(s["phaseHistory"], json!(["1: Interrogation"]));
}

#[test]
fn approval_lets_an_out_of_sequence_move_through_with_its_proof() {
    let w = implement_world();
    let out = w.accepted(
        "3: Execution",
        Some("mode: quick\nintentDone: yes\n"),
        Some("Reason: the user skipped planning"),
    );
    assert!(out.stdout.starts_with(
        "Phase transition approved (non-sequential): 0: Setup -> 3: Execution\n  Approval: Reason: the user skipped planning\nPhase: 3: Execution\n"
    ));
    assert_eq!(out.stderr, format!("{}\n", proof::DEPRECATION));
    assert_eq!(
        w.state()["phaseHistory"][0]["proof"],
        json!({"mode": "quick", "intentDone": "yes"})
    );
    let out = w.phase("2: Planning", None, Some("Reason: back"));
    assert!(!out.refused);
    assert_eq!(
        out.stderr,
        "§CMD_UPDATE_PHASE: Phase '3: Execution' has no proof fields declared, but other phases in this session declare proof. Consider adding proof fields to this phase.\n"
    );
}

#[test]
fn an_approved_move_still_needs_its_proof() {
    let w = implement_world();
    let before = w.raw();
    let out = w.phase(
        "3: Execution",
        Some(r#"{"mode": "________"}"#),
        Some("Reason: ok"),
    );
    assert!(out.refused);
    assert!(
        out.stdout
            .starts_with("Phase transition approved (non-sequential)")
    );
    assert!(out.stderr.contains("has unfilled blank"));
    assert_eq!(w.raw(), before);
}

#[test]
fn an_undeclared_sub_phase_is_added_to_the_phases() {
    let mut state = implement_like();
    state["currentPhase"] = json!("2: Planning");
    let w = World::new(&state);
    let out = w.accepted("2.5: Review", Some("{}"), None);
    let s = w.state();
    let labels: Vec<&str> = s["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, vec!["0", "1", "2", "2.5", "3"]);
    assert_eq!(s["phases"][3]["name"], "Review");
    assert_eq!(
        s["phaseHistory"],
        json!(["2.5: Review"]),
        "`{{}}` is no proof"
    );
    assert_eq!(out.stdout, "Phase: 2.5: Review\nGate: true\n");
}

#[test]
fn without_phases_anything_goes_and_proof_is_still_recorded() {
    let w = World::new(&json!({"currentPhase": "Phase 1: Setup"}));
    let out = w.phase("Whatever it is", Some(r#"{"done": 1}"#), None);
    assert!(!out.refused);
    assert_eq!(out.stdout, "Phase: Whatever it is\n");
    assert_eq!(w.state()["phaseHistory"][0]["proof"], json!({"done": 1}));
}

#[test]
fn bad_phases_and_missing_sessions_are_refused() {
    let w = implement_world();
    let out = w.phase("1/x", None, None);
    assert!(
        out.refused
            && out
                .stderr
                .starts_with("ERROR: validate_phase: invalid characters")
    );
    let gone = World::new(&json!({}));
    fs::remove_file(gone.dir.join(STATE_FILE)).unwrap();
    let out = gone.phase("1: X", None, None);
    assert_eq!(
        out.stderr,
        format!(
            "§CMD_REQUIRE_ACTIVE_SESSION: No .state.json in {} — is the session active?\n",
            gone.dir.display()
        )
    );
    fs::write(w.dir.join(STATE_FILE), "{bad").unwrap();
    let out = w.phase("0: Setup", None, None);
    assert!(out.refused && out.stderr.starts_with("preload: "));
    assert_eq!(w.raw(), "{bad");
}
