//! `preload activate` and `preload phase`: the session-state half of `session.sh` that the hooks
//! read, for engines and tests that run without `session.sh`. Both work on a `.state.json` that
//! `session.sh` created (unknown fields are kept) and hold the state lock from read to rename.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::activation::{Failure, activate, refused};
use crate::clock;
use crate::env::Env;
use crate::runner;
use crate::session::STATE_FILE;
use crate::skill::{self, Skill};
use crate::state;
use crate::{Context, HookInput};

/// Run `activate` or `phase` with its arguments; prints the result, returns the exit code.
pub fn main(name: &str, args: &[String]) -> ExitCode {
    let ctx = cli_context();
    let result = match name {
        "activate" => activate_cmd(&ctx, args),
        "phase" => phase_cmd(&ctx, args),
        _ => Err(Failure::Usage(format!("unknown subcommand {name}"))),
    };
    match result {
        Ok(text) => {
            runner::print_text(&text);
            ExitCode::SUCCESS
        }
        Err(Failure::Usage(why)) => {
            complain(&format!("{why}\n\n{}", super::cli::HELP));
            ExitCode::from(2)
        }
        Err(Failure::Refused(why)) => {
            complain(&why);
            ExitCode::from(1)
        }
    }
}

#[allow(clippy::print_stderr)]
fn complain(text: &str) {
    eprintln!("preload: {text}");
}

/// The context of a command-line call: the process's environment and working directory.
fn cli_context() -> Context {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let input = HookInput::from_value(json!({ "cwd": cwd }));
    Context::new(
        Env::from_process(),
        "activate",
        &input,
        Duration::from_secs(5),
    )
}

fn session_dir_arg(ctx: &Context, arg: &str) -> PathBuf {
    let path = Path::new(arg);
    let path = if path.is_absolute() {
        path.to_path_buf()
    } else {
        ctx.cwd.join(path)
    };
    crate::paths::lexical_clean(&path)
}

fn activate_cmd(ctx: &Context, args: &[String]) -> Result<String, Failure> {
    let mut dir = None;
    let mut skill = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--skill" => {
                skill = Some(
                    iter.next()
                        .cloned()
                        .ok_or_else(|| Failure::Usage("--skill needs a name".into()))?,
                );
            }
            a if a.starts_with("--skill=") => skill = Some(a["--skill=".len()..].to_owned()),
            a if a.starts_with("--") => return Err(Failure::Usage(format!("unknown option {a}"))),
            a if dir.is_none() => dir = Some(a.to_owned()),
            // `session.sh activate <dir> <skill>` spelling.
            a if skill.is_none() => skill = Some(a.to_owned()),
            a => return Err(Failure::Usage(format!("unexpected argument {a}"))),
        }
    }
    let dir = dir.ok_or_else(|| Failure::Usage("activate needs a session directory".into()))?;
    let dir = session_dir_arg(ctx, &dir);
    let done = activate(ctx, &dir, skill.as_deref())?;
    Ok(format!(
        "Session activated: {} (skill: {}, pid: {})\nCurrent phase: {}",
        dir.display(),
        done.skill,
        ctx.owner_pid,
        done.phase
    ))
}

fn phase_cmd(ctx: &Context, args: &[String]) -> Result<String, Failure> {
    let [dir, name] = args else {
        return Err(Failure::Usage(
            "phase needs a session directory and \"<label>: <name>\"".into(),
        ));
    };
    phase(ctx, &session_dir_arg(ctx, dir), name)
}

/// Set `currentPhase` of the session in `dir` and describe the phase (`Phase: …` first).
pub fn phase(ctx: &Context, dir: &Path, phase: &str) -> Result<String, Failure> {
    let phase = phase.trim();
    if phase.is_empty() || phase.contains(['\n', '/', '&', '\\']) {
        return Err(Failure::Usage(format!("bad phase {phase:?}")));
    }
    let path = dir.join(STATE_FILE);
    if !path.is_file() {
        return Err(Failure::Refused(format!(
            "no session state at {}",
            path.display()
        )));
    }
    let now = clock::iso_utc(ctx.now);
    let label = skill::label_of(phase);
    let definition = state::update(&path, ctx.lock_deadline(), |s| {
        s.set("currentPhase", json!(phase));
        s.set("lastHeartbeat", json!(now));
        s.remove("loading");
        s.set("toolCallsByTranscript", json!({}));
        s.remove("primaryTranscriptKey");
        s.array_mut("phaseHistory").push(json!(phase));
        let phases = s
            .get("phases")
            .and_then(Value::as_array)
            .filter(|p| !p.is_empty())
            .cloned()
            .or_else(|| {
                let skill = Skill::load(&ctx.paths, s.str("skill")?)?;
                Some(skill.phases().to_vec())
            })
            .unwrap_or_default();
        skill::find_phase(&phases, &label).cloned()
    })
    .map_err(refused)?;
    Ok(describe_phase(phase, &label, definition.as_ref()))
}

/// The `session.sh phase` description: `Phase:`, invariants, steps, commands, proof, gate.
fn describe_phase(phase: &str, label: &str, def: Option<&Map<String, Value>>) -> String {
    let mut out = format!("Phase: {phase}\n");
    let Some(def) = def else {
        return out;
    };
    let list = |key: &str| state::strings_of(def.get(key));
    let bullets = |out: &mut String, title: &str, items: Vec<String>| {
        if !items.is_empty() {
            let _ = writeln!(out, "{title}:");
            for item in items {
                let _ = writeln!(out, "  - {item}");
            }
        }
    };
    bullets(&mut out, "Invariants", list("invariants"));
    let steps = list("steps");
    if !steps.is_empty() {
        out.push_str("Steps:\n");
        for (k, step) in steps.iter().enumerate() {
            let _ = writeln!(out, "  {label}.{}: {step}", k + 1);
        }
    }
    bullets(&mut out, "Commands", list("commands"));
    bullets(
        &mut out,
        "Proof required to leave this phase",
        list("proof"),
    );
    let gate = def.get("gate").and_then(Value::as_bool).unwrap_or(true);
    let _ = writeln!(out, "Gate: {gate}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env;
    use crate::preload::{PENDING, PRELOADED};
    use crate::session;
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
        let preloaded = s.strings(PRELOADED);
        assert_eq!(
            preloaded.len(),
            7,
            "six seeds + the seed's SKILL.md: {preloaded:?}"
        );
        assert_eq!(s.strings(PENDING), vec!["/x/q.md"]);
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
            Failure::Refused(format!("Session has active agent (PID {parent})"))
        );
    }

    #[test]
    fn phase_sets_current_phase_and_describes_it() {
        let (_tmp, ctx, dir) = setup();
        activate(&ctx, &dir, Some("implement")).unwrap();
        let text = phase(&ctx, &dir, "1: Interrogation").unwrap();
        assert_eq!(
            text,
            "Phase: 1: Interrogation\nSteps:\n  1.1: §CMD_A\nCommands:\n  - §CMD_B\nProof required to leave this phase:\n  - depth\nGate: true\n"
        );
        let s = state::load(&dir.join(STATE_FILE)).unwrap();
        assert_eq!(s.str("currentPhase"), Some("1: Interrogation"));
        assert!(s.get("loading").is_none());
        assert_eq!(s.get("toolCallsByTranscript"), Some(&json!({})));
        assert!(matches!(phase(&ctx, &dir, "1/x"), Err(Failure::Usage(_))));
    }
}
