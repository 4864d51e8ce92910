//! Unit tests of `preload activate` and `preload phase`, on a temporary home and project.

use super::*;
use preload_core::mechanisms::session;
use preload_core::mechanisms::session::STATE_FILE;
use preload_core::pipeline::activation::activate;
use preload_core::primitives::env;
use preload_core::state;
use preload_core::state::fields;
use preload_core::state::{IN_CONTEXT, QUEUED};
use std::fs;

fn setup() -> (tempfile::TempDir, Context, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let skills = home.join(".claude/skills/implement");
    fs::create_dir_all(&skills).unwrap();
    fs::write(
        skills.join("SKILL.md"),
        "# x\n```json\n{\"phases\": [{\"label\": \"1\", \"name\": \"Interrogation\", \"steps\": [\"§CMD_A\"], \"commands\": [\"§CMD_B\"], \"proof\": [\"depth\"]}, {\"label\": \"0\", \"name\": \"Setup\"}], \"logTemplate\": \"assets/T.md\"}\n```\n",
    )
    .unwrap();
    let project = tmp.path().join("p");
    fs::create_dir_all(project.join(".claude")).unwrap();
    fs::create_dir_all(project.join("sessions")).unwrap();
    let env = Env::from_pairs([
        (env::HOME, home.to_string_lossy().into_owned()),
        (env::CLAUDE_SUPERVISOR_PID, std::process::id().to_string()),
        (
            env::CLAUDE_SESSION_CACHE_DIR,
            tmp.path().to_string_lossy().into_owned(),
        ),
    ]);
    let input = HookInput::from_value(json!({"cwd": project}));
    let ctx = Context::new(env, "activate", &input, Duration::from_secs(5));
    (tmp, ctx, project.join("sessions/s1"))
}

#[test]
fn activate_creates_the_fields_the_hooks_read_and_merges_the_seed() {
    let (_tmp, ctx, dir) = setup();
    let seeds = dir.parent().unwrap().join(".seeds");
    fs::create_dir_all(&seeds).unwrap();
    let seed = session::seed_path(dir.parent().unwrap(), ctx.owner_pid);
    fs::write(
        &seed,
        r#"{"lifecycle": "seeding", "preloadedFiles": ["/x/SKILL.md"], "pendingPreloads": ["/x/q.md"],
           "touchedDirs": {"/d": []}, "pendingAllowInjections": [{"ruleId": "preload", "content": "c"}]}"#,
    )
    .unwrap();
    let done = activate(&ctx, &dir, Some("implement")).unwrap();
    assert_eq!(done.skill, "implement");
    assert_eq!(done.phase, "0: Setup");
    let s = state::load(&dir.join(STATE_FILE)).unwrap();
    assert_eq!(s.number("pid"), Some(f64::from(ctx.owner_pid)));
    assert_eq!(s.str("lifecycle"), Some("active"));
    assert_eq!(s.str("currentPhase"), Some("0: Setup"));
    assert!(s.flag("loading"));
    assert!(
        s.str("logTemplate")
            .unwrap()
            .ends_with("skills/implement/assets/T.md")
    );
    let preloaded = s.path_list(IN_CONTEXT);
    assert_eq!(
        preloaded.len(),
        7,
        "six seeds + the seed's SKILL.md: {preloaded:?}"
    );
    assert_eq!(s.path_list(QUEUED), vec!["/x/q.md"]);
    assert!(s.get("touchedDirs").unwrap().get("/d").is_some());
    assert_eq!(
        s.get("pendingAllowInjections")
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert!(!seed.exists(), "seed deleted after the merge");
    assert_eq!(
        fs::read_to_string(session::cache_file(&ctx))
            .unwrap()
            .trim(),
        dir.to_string_lossy()
    );
}

#[test]
fn activate_keeps_unknown_fields_and_refuses_a_live_other_owner() {
    let (_tmp, ctx, dir) = setup();
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join(STATE_FILE),
        r#"{"skill": "implement", "zCustom": [1], "currentPhase": "1: Interrogation"}"#,
    )
    .unwrap();
    activate(&ctx, &dir, None).unwrap();
    let s = state::load(&dir.join(STATE_FILE)).unwrap();
    assert_eq!(s.get("zCustom"), Some(&json!([1])));
    assert_eq!(
        s.str("currentPhase"),
        Some("1: Interrogation"),
        "same skill keeps its phase"
    );
    let parent = std::os::unix::process::parent_id();
    fs::write(
        dir.join(STATE_FILE),
        format!("{{\"pid\": {parent}, \"skill\": \"implement\"}}"),
    )
    .unwrap();
    let err = activate(&ctx, &dir, Some("implement")).unwrap_err();
    assert_eq!(
        err,
        Failure::Rejected(format!(
            "§CMD_MAINTAIN_SESSION_DIR: Session has active agent (PID {parent}). Choose another folder."
        ))
    );
}

fn request(phase: &str) -> PhaseRequest {
    PhaseRequest {
        phase: phase.to_owned(),
        ..PhaseRequest::default()
    }
}

#[test]
fn phase_sets_current_phase_and_describes_it() {
    let (_tmp, ctx, dir) = setup();
    activate(&ctx, &dir, Some("implement")).unwrap();
    let out = transition::change_phase(&ctx, &dir, &request("1: Interrogation"));
    assert!(!out.refused);
    assert_eq!(
        out.stdout,
        "Phase: 1: Interrogation\nSteps:\n  1.1: §CMD_A\nCommands:\n  - §CMD_B\nProof required to leave this phase:\n  - depth\nGate: true\n"
    );
    assert!(
        out.stderr
            .contains("Phase '0: Setup' has no proof fields declared")
    );
    let s = state::load(&dir.join(STATE_FILE)).unwrap();
    assert_eq!(s.str("currentPhase"), Some("1: Interrogation"));
    assert!(s.get("loading").is_none());
    assert_eq!(s.get("toolCallsByTranscript"), Some(&json!({})));
    let out = transition::change_phase(&ctx, &dir, &request("1/x"));
    assert!(out.refused && out.stderr.starts_with("ERROR: validate_phase:"));
    let out = transition::change_phase(&ctx, &dir, &request("0: Setup"));
    assert!(out.refused, "backwards, and phase 1 needs its proof");
    assert!(
        out.stderr
            .starts_with("§CMD_UPDATE_PHASE: Non-sequential phase transition rejected.")
    );
}

fn write_state(dir: &Path, state: &serde_json::Value) {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join(STATE_FILE), state.to_string()).unwrap();
}

#[test]
fn a_completed_skill_needs_approval_or_fast_track() {
    let (_tmp, ctx, dir) = setup();
    write_state(
        &dir,
        &json!({"skill": "implement", "completedSkills": ["implement", "do"]}),
    );
    let err = activate(&ctx, &dir, Some("implement")).unwrap_err();
    assert_eq!(
        err,
        Failure::Rejected(format!(
            "§CMD_PARSE_PARAMETERS: Skill 'implement' was already completed in this session.\n  Completed skills: implement, do\n  Session: {d}\n\nEnsure you are doing the right thing — right skill, right phase. You may re-activate this skill if the user explicitly allowed it.\n  To proceed: session.sh activate {d} implement --user-approved \"Reason: ...\"",
            d = dir.display()
        ))
    );
    assert!(
        state::load(&dir.join(STATE_FILE))
            .unwrap()
            .get("pid")
            .is_none()
    );
    activate(&ctx, &dir, Some("do")).unwrap();
    let approved = Options {
        approval: Some("Reason: again".into()),
        ..Options::default()
    };
    let done = activation::activate_with(&ctx, &dir, Some("implement"), &approved).unwrap();
    assert!(done.approved_again);
    let fast = Options {
        fast_track: true,
        ..Options::default()
    };
    let done = activation::activate_with(&ctx, &dir, Some("implement"), &fast).unwrap();
    assert!(!done.approved_again);
    assert_eq!(
        state::load(&dir.join(STATE_FILE))
            .unwrap()
            .get(fields::FAST_TRACK),
        Some(&json!(true))
    );
}

#[test]
fn session_parameters_are_checked_then_merged() {
    let (_tmp, ctx, dir) = setup();
    let fallback = parameters::check(&ctx.paths, "{\"taskSummary\": \"x\"}");
    assert_eq!(
        fallback.unwrap_err(),
        Failure::Rejected("§CMD_PARSE_PARAMETERS: Missing required field(s) in JSON: scope, directoriesOfInterest, contextPaths, requestFiles, extraInfo\n  See §CMD_PARSE_PARAMETERS schema for required fields.".into())
    );
    assert_eq!(
        parameters::check(&ctx.paths, "not json").unwrap_err(),
        Failure::Rejected("§CMD_PARSE_PARAMETERS: Invalid JSON on stdin".into())
    );
    assert_eq!(parameters::check(&ctx.paths, " \n"), Ok(None));
    let commands = ctx.paths.engine_directives.join("commands");
    fs::create_dir_all(&commands).unwrap();
    fs::write(
        commands.join("CMD_PARSE_PARAMETERS.md"),
        "# P\n**Schema**:\n```json\n{\"type\": \"object\", \"required\": [\"taskSummary\"], \"properties\": {\"taskSummary\": {\"type\": \"string\"}, \"scope\": {\"type\": \"string\"}}}\n```\n",
    )
    .unwrap();
    assert_eq!(
        parameters::check(&ctx.paths, "{\"scope\": 1}").unwrap_err(),
        Failure::Rejected("§CMD_PARSE_PARAMETERS: Session parameters validation failed:\n/taskSummary: missing required property 'taskSummary' [required]\n/scope: expected type string but got number [type]".into())
    );
    let params = parameters::check(
        &ctx.paths,
        "{\"taskSummary\": \"add auth\", \"phases\": [], \"extra\": {\"a\": 1}}",
    )
    .unwrap();
    let options = Options {
        parameters: params,
        ..Options::default()
    };
    activation::activate_with(&ctx, &dir, Some("implement"), &options).unwrap();
    let s = state::load(&dir.join(STATE_FILE)).unwrap();
    assert_eq!(s.str("taskSummary"), Some("add auth"));
    assert_eq!(s.get("extra"), Some(&json!({"a": 1})));
    assert_eq!(s.phases().items().len(), 2, "the skill's static fields win");
}
