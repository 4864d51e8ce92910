//! `preload activate` and `preload phase`: the session-state half of `session.sh` that the hooks
//! read, for engines and tests that run without `session.sh`, enforcing what `session.sh`
//! enforces (session parameters, completed skills, the phase sequence, the proof a phase needs)
//! with its messages and exit codes. Both work on a `.state.json` that `session.sh` created
//! (unknown fields are kept) and hold the state lock from read to rename.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::transition::{self, Outcome, PhaseRequest, proof};
use preload_core::activation::{self, Failure, Options};
use preload_core::env::Env;
use preload_core::input::MAX_STDIN_BYTES;
use preload_core::runner;
use preload_core::{Context, HookInput};

/// How long `phase` waits for its proof on stdin (the engine's `read -t 1`).
pub const PROOF_TIMEOUT: Duration = Duration::from_secs(1);
/// How long `activate` waits for the session parameters on stdin.
pub const PARAMETERS_TIMEOUT: Duration = Duration::from_secs(2);

/// `preload activate`.
#[derive(Debug, Clone, clap::Args)]
pub struct ActivateArgs {
    /// The session directory (`sessions/<name>`).
    #[arg(value_parser = crate::path_arg)]
    pub dir: std::path::PathBuf,
    /// The skill, as `session.sh activate <dir> <skill>` takes it.
    pub skill: Option<String>,
    /// The skill (the same as the positional form).
    #[arg(long = "skill", value_name = "NAME", conflicts_with = "skill")]
    pub skill_flag: Option<String>,
    /// Skip the completed-skill check and record `fastTrack: true`.
    #[arg(long)]
    pub fast_track: bool,
    /// The user allowed activating a completed skill again.
    #[arg(long, value_name = "REASON")]
    pub user_approved: Option<String>,
}

/// `preload phase`.
#[derive(Debug, Clone, clap::Args)]
pub struct PhaseArgs {
    /// The session directory (`sessions/<name>`).
    #[arg(value_parser = crate::path_arg)]
    pub dir: std::path::PathBuf,
    /// The phase, `"<label>: <name>"`.
    pub phase: String,
    /// The user approved a non-sequential transition.
    #[arg(long, value_name = "REASON")]
    pub user_approved: Option<String>,
}

/// Run `preload activate`.
pub fn activate(args: &ActivateArgs) -> ExitCode {
    finish(activate_cmd(&cli_context("activate"), args))
}

/// Run `preload phase`.
pub fn phase_command(args: &PhaseArgs) -> ExitCode {
    finish(Ok(phase_cmd(&cli_context("phase"), args)))
}

/// Print what a command produced; its exit code.
fn finish(result: Result<Outcome, Failure>) -> ExitCode {
    match result {
        Ok(outcome) => {
            complain(&outcome.stderr);
            if !outcome.stdout.is_empty() {
                runner::print_text(&outcome.stdout);
            }
            if outcome.refused {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(Failure::Usage(why)) => {
            complain(&format!("preload: {why}\n"));
            ExitCode::from(2)
        }
        Err(Failure::Refused(why)) => {
            complain(&format!("preload: {why}\n"));
            ExitCode::from(1)
        }
        Err(Failure::Rejected(why)) => {
            complain(&format!("{why}\n"));
            ExitCode::from(1)
        }
    }
}

#[allow(clippy::print_stderr)]
fn complain(text: &str) {
    eprint!("{text}");
}

/// The context of a command-line call: the process's environment and working directory.
fn cli_context(name: &'static str) -> Context {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let input = HookInput::from_value(json!({ "cwd": cwd }));
    Context::new(Env::from_process(), name, &input, Duration::from_secs(5))
}

/// What arrived on stdin within `limit` (at most [`MAX_STDIN_BYTES`]); nothing for a terminal.
/// A stdin held open without end is read until the limit and no longer waited for.
fn read_stdin(limit: Duration) -> String {
    if std::io::stdin().is_terminal() {
        return String::new();
    }
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let reader = std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buf = vec![0_u8; 64 * 1024];
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        });
    if reader.is_err() {
        return String::new();
    }
    let deadline = Instant::now() + limit;
    let mut bytes = Vec::new();
    while let Ok(chunk) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        bytes.extend(chunk);
        if bytes.len() as u64 > MAX_STDIN_BYTES {
            break;
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn session_dir_arg(ctx: &Context, arg: &str) -> PathBuf {
    let path = Path::new(arg);
    let path = if path.is_absolute() {
        path.to_path_buf()
    } else {
        ctx.cwd.join(path)
    };
    preload_core::paths::lexical_clean(&path)
}

fn activate_cmd(ctx: &Context, args: &ActivateArgs) -> Result<Outcome, Failure> {
    let mut out = Outcome::default();
    let skill = args.skill.clone().or_else(|| args.skill_flag.clone());
    let mut options = Options {
        fast_track: args.fast_track,
        approval: args.user_approved.clone(),
        ..Options::default()
    };
    let dir = args.dir.to_string_lossy().into_owned();
    let dir = session_dir_arg(ctx, &dir);
    let activated = crate::parameters::check(&ctx.paths, &read_stdin(PARAMETERS_TIMEOUT)).and_then(
        |parameters| {
            options.parameters = parameters;
            activation::activate_with(ctx, &dir, skill.as_deref(), &options)
        },
    );
    let done = match activated {
        Ok(done) => done,
        Err(Failure::Refused(why)) => {
            out.refuse(&format!("preload: {why}"));
            return Ok(out);
        }
        Err(Failure::Rejected(why)) => {
            out.refuse(&why);
            return Ok(out);
        }
        Err(usage) => return Err(usage),
    };
    if done.approved_again {
        out.say(&format!(
            "Skill re-activation approved (previously completed): {}",
            done.skill
        ));
        out.say(&format!(
            "  Approval: {}",
            options.approval.as_deref().unwrap_or("")
        ));
    }
    out.say(&format!(
        "Session activated: {} (skill: {}, pid: {})",
        dir.display(),
        done.skill,
        ctx.owner_pid
    ));
    out.say(&format!("Current phase: {}", done.phase));
    Ok(out)
}

fn phase_cmd(ctx: &Context, args: &PhaseArgs) -> Outcome {
    let request = PhaseRequest {
        phase: args.phase.clone(),
        approval: args.user_approved.clone(),
        proof: proof::parse(&read_stdin(PROOF_TIMEOUT)),
    };
    phase(
        ctx,
        &session_dir_arg(ctx, &args.dir.to_string_lossy()),
        &request,
    )
}

/// Move the session in `dir` to the requested phase, as `session.sh phase` does; what to print.
pub fn phase(ctx: &Context, dir: &Path, request: &PhaseRequest) -> Outcome {
    transition::change_phase(ctx, dir, request)
}

#[cfg(test)]
mod tests {
    use super::*;
    use preload_core::activation::activate;
    use preload_core::env;
    use preload_core::fields;
    use preload_core::session;
    use preload_core::session::STATE_FILE;
    use preload_core::state;
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
        let preloaded = s.strings(fields::PRELOADED_FILES);
        assert_eq!(
            preloaded.len(),
            7,
            "six seeds + the seed's SKILL.md: {preloaded:?}"
        );
        assert_eq!(s.strings(fields::PENDING_PRELOADS), vec!["/x/q.md"]);
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
        let out = phase(&ctx, &dir, &request("1: Interrogation"));
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
        let out = phase(&ctx, &dir, &request("1/x"));
        assert!(out.refused && out.stderr.starts_with("ERROR: validate_phase:"));
        let out = phase(&ctx, &dir, &request("0: Setup"));
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
        let fallback = crate::parameters::check(&ctx.paths, "{\"taskSummary\": \"x\"}");
        assert_eq!(
            fallback.unwrap_err(),
            Failure::Rejected("§CMD_PARSE_PARAMETERS: Missing required field(s) in JSON: scope, directoriesOfInterest, contextPaths, requestFiles, extraInfo\n  See §CMD_PARSE_PARAMETERS schema for required fields.".into())
        );
        assert_eq!(
            crate::parameters::check(&ctx.paths, "not json").unwrap_err(),
            Failure::Rejected("§CMD_PARSE_PARAMETERS: Invalid JSON on stdin".into())
        );
        assert_eq!(crate::parameters::check(&ctx.paths, " \n"), Ok(None));
        let commands = ctx.paths.engine_directives.join("commands");
        fs::create_dir_all(&commands).unwrap();
        fs::write(
            commands.join("CMD_PARSE_PARAMETERS.md"),
            "# P\n**Schema**:\n```json\n{\"type\": \"object\", \"required\": [\"taskSummary\"], \"properties\": {\"taskSummary\": {\"type\": \"string\"}, \"scope\": {\"type\": \"string\"}}}\n```\n",
        )
        .unwrap();
        assert_eq!(
            crate::parameters::check(&ctx.paths, "{\"scope\": 1}").unwrap_err(),
            Failure::Rejected("§CMD_PARSE_PARAMETERS: Session parameters validation failed:\n/taskSummary: missing required property 'taskSummary' [required]\n/scope: expected type string but got number [type]".into())
        );
        let params = crate::parameters::check(
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
        assert_eq!(
            s.get("phases")
                .and_then(serde_json::Value::as_array)
                .map(Vec::len),
            Some(2),
            "the skill's static fields win"
        );
    }
}
