//! `preload activate` and `preload phase`: the session-state half of `session.sh` that the hooks
//! read, for engines and tests that run without `session.sh`. Both work on a `.state.json` that
//! `session.sh` created (unknown fields are kept) and hold the state lock from read to rename.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::clock;
use crate::env::Env;
use crate::lock::StateLock;
use crate::preload::{PARTS, PENDING, PRELOADED};
use crate::process;
use crate::runner;
use crate::session::{self, SEEDING, STATE_FILE};
use crate::skill::{self, Skill};
use crate::state::{self, State};
use crate::{Context, HookInput};

/// Static fields copied from a skill's SKILL.md into its session (as `session.sh` does).
pub const SKILL_STATIC_FIELDS: [&str; 10] = [
    "taskType",
    "phases",
    "nextSkills",
    "directives",
    "modes",
    "logTemplate",
    "debriefTemplate",
    "planTemplate",
    "requestTemplate",
    "responseTemplate",
];

/// Fields holding a path relative to the skill folder.
const TEMPLATE_PATH_FIELDS: [&str; 5] = [
    "logTemplate",
    "debriefTemplate",
    "planTemplate",
    "requestTemplate",
    "responseTemplate",
];

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

/// Why a subcommand failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Bad arguments (exit 2).
    Usage(String),
    /// The state cannot be changed (exit 1).
    Refused(String),
}

fn refused(err: impl std::fmt::Display) -> Failure {
    Failure::Refused(err.to_string())
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
    activate(ctx, &session_dir_arg(ctx, &dir), skill.as_deref())
}

/// Create or update `<dir>/.state.json` for the owner, merge and delete the owner's seed, claim
/// the owner's PID from other sessions, write the PID cache. Returns the text to print.
pub fn activate(ctx: &Context, dir: &Path, skill: Option<&str>) -> Result<String, Failure> {
    if let Some(name) = skill {
        if !skill::is_valid_name(name) {
            return Err(Failure::Usage(format!("bad skill name {name:?}")));
        }
    }
    fs::create_dir_all(dir)
        .map_err(|e| refused(format!("cannot create {}: {e}", dir.display())))?;
    let path = dir.join(STATE_FILE);
    let deadline = ctx.lock_deadline();
    state::create_if_absent(&path, &State::default(), deadline).map_err(refused)?;

    let sessions = dir.parent().unwrap_or(dir).to_path_buf();
    let seed_path = session::seed_path(&sessions, ctx.owner_pid);
    let seed_lock = if seed_path.is_file() {
        Some(StateLock::acquire(&seed_path, ctx.lock_deadline()).map_err(refused)?)
    } else {
        None
    };
    let seed = seed_lock
        .as_ref()
        .and_then(|_| state::load(&seed_path).ok())
        .filter(|s| s.str("lifecycle") == Some(SEEDING));

    let outcome = state::update(&path, ctx.lock_deadline(), |s| {
        activate_state(ctx, s, skill, seed.as_ref())
    })
    .map_err(refused)??;

    if seed.is_some() {
        let _ = fs::remove_file(&seed_path);
    }
    if let Some(lock) = seed_lock {
        lock.release();
    }
    claim_pid(ctx, &sessions, &path);
    let cache = session::cache_file(ctx);
    let _ = state::write_atomic(&cache, format!("{}\n", dir.display()).as_bytes());
    Ok(format!(
        "Session activated: {} (skill: {}, pid: {})\nCurrent phase: {}",
        dir.display(),
        outcome.skill,
        ctx.owner_pid,
        outcome.phase
    ))
}

/// What `activate` settled on.
#[derive(Debug)]
struct Activated {
    skill: String,
    phase: String,
}

fn activate_state(
    ctx: &Context,
    s: &mut State,
    skill_arg: Option<&str>,
    seed: Option<&State>,
) -> Result<Activated, Failure> {
    let owner = ctx.owner_pid;
    let holder = s.pid("pid");
    if let Some(pid) = holder.filter(|p| *p != owner && process::is_alive(*p)) {
        return Err(Failure::Refused(format!(
            "Session has active agent (PID {pid})"
        )));
    }
    let previous = s.str("skill").map(str::to_owned);
    let skill = skill_arg
        .map(str::to_owned)
        .or_else(|| previous.clone())
        .ok_or_else(|| Failure::Usage("no skill: pass --skill NAME".into()))?;
    if !skill::is_valid_name(&skill) {
        return Err(Failure::Usage(format!("bad skill name {skill:?}")));
    }
    let fresh = s.0.is_empty();
    let changed = previous.as_deref().is_some_and(|p| p != skill);
    let now = clock::iso_utc(ctx.now);

    s.set("pid", json!(owner));
    s.set("skill", json!(skill));
    s.set("lifecycle", json!("active"));
    s.set("loading", json!(true));
    s.set("overflowed", json!(false));
    s.set("killRequested", json!(false));
    for (key, value) in [
        ("contextUsage", json!(0)),
        ("toolCallsSinceLastLog", json!(0)),
        ("toolUseWithoutLogsWarnAfter", json!(3)),
        ("toolUseWithoutLogsBlockAfter", json!(10)),
        ("startedAt", json!(now)),
    ] {
        if s.get(key).is_none() {
            s.set(key, value);
        }
    }
    s.set("lastHeartbeat", json!(now));
    if changed {
        s.remove("phases");
        s.set("phaseHistory", json!([]));
    }
    if let Some(def) = Skill::load(&ctx.paths, &skill) {
        for (key, value) in static_fields(&def) {
            s.set(&key, value);
        }
    }
    if fresh || changed || s.str("currentPhase").is_none() {
        let phases = s
            .get("phases")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let first = skill::first_phase(&phases).unwrap_or_else(|| "Phase 1: Setup".to_owned());
        s.set("currentPhase", json!(first));
    }
    // A session taken over from another (dead) process starts a new context window.
    if holder != Some(owner) {
        s.set(PRELOADED, json!(session::core_seeds(ctx)));
        s.set(PENDING, json!([]));
        s.set("touchedDirs", json!({}));
        s.set("pendingAllowInjections", json!([]));
        s.remove(PARTS);
    }
    for (key, value) in [
        (PRELOADED, json!(session::core_seeds(ctx))),
        ("touchedDirs", json!({})),
        (PENDING, json!([])),
        ("pendingAllowInjections", json!([])),
    ] {
        if s.get(key).is_none() {
            s.set(key, value);
        }
    }
    if let Some(seed) = seed {
        merge_seed(s, seed);
    }
    Ok(Activated {
        skill,
        phase: s.str("currentPhase").unwrap_or("").to_owned(),
    })
}

/// The static fields of a skill, template and mode paths made absolute.
fn static_fields(def: &Skill) -> Vec<(String, Value)> {
    let abs = |rel: &str| {
        if rel.starts_with('/') {
            rel.to_owned()
        } else {
            def.dir.join(rel).to_string_lossy().into_owned()
        }
    };
    SKILL_STATIC_FIELDS
        .iter()
        .filter_map(|key| {
            let value = def.definition.get(*key)?;
            let value = match (*key, value) {
                (k, Value::String(rel)) if TEMPLATE_PATH_FIELDS.contains(&k) => json!(abs(rel)),
                ("modes", Value::Object(modes)) => {
                    let mut out = Map::new();
                    for (id, mode) in modes {
                        let mut mode = mode.clone();
                        if let Some(file) = mode.get("file").and_then(Value::as_str) {
                            mode["file"] = json!(abs(file));
                        }
                        out.insert(id.clone(), mode);
                    }
                    Value::Object(out)
                }
                (_, v) => v.clone(),
            };
            Some(((*key).to_owned(), value))
        })
        .collect()
}

/// Merge the owner's seed: union of `preloadedFiles`, `pendingPreloads` and
/// `discoveredChecklists`, merge of `touchedDirs` and part progress, the seed's stashed
/// injections appended.
fn merge_seed(s: &mut State, seed: &State) {
    for key in [PRELOADED, "discoveredChecklists"] {
        for item in seed.strings(key) {
            s.push_unique(key, &item);
        }
    }
    let preloaded = s.strings(PRELOADED);
    for item in seed.strings(PENDING) {
        if !preloaded.contains(&item) {
            s.push_unique(PENDING, &item);
        }
    }
    for key in ["touchedDirs", PARTS] {
        if let Some(Value::Object(map)) = seed.get(key) {
            let target = s.object_mut(key);
            for (k, v) in map {
                target.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(Value::Array(entries)) = seed.get("pendingAllowInjections") {
        s.array_mut("pendingAllowInjections")
            .extend(entries.iter().cloned());
    }
}

/// Take the owner's PID from every other session in `sessions` (so `find` sees one owner).
fn claim_pid(ctx: &Context, sessions: &Path, keep: &Path) {
    let Ok(entries) = fs::read_dir(sessions) else {
        return;
    };
    let needle = ctx.owner_pid.to_string();
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path().join(STATE_FILE);
        if path == keep || entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        if !text.contains(&needle) {
            continue;
        }
        let _ = state::update(&path, ctx.lock_deadline(), |s| {
            let mine = s
                .number("pid")
                .is_some_and(|n| (n - f64::from(ctx.owner_pid)).abs() < 0.5);
            if mine {
                s.remove("pid");
            }
        });
    }
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
    let list = |key: &str| -> Vec<String> {
        def.get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let invariants = list("invariants");
    if !invariants.is_empty() {
        out.push_str("Invariants:\n");
        for item in invariants {
            let _ = writeln!(out, "  - {item}");
        }
    }
    let steps = list("steps");
    if !steps.is_empty() {
        out.push_str("Steps:\n");
        for (k, step) in steps.iter().enumerate() {
            let _ = writeln!(out, "  {label}.{}: {step}", k + 1);
        }
    }
    let commands = list("commands");
    if !commands.is_empty() {
        out.push_str("Commands:\n");
        for command in commands {
            let _ = writeln!(out, "  - {command}");
        }
    }
    let proof = list("proof");
    if !proof.is_empty() {
        out.push_str("Proof required to leave this phase:\n");
        for field in proof {
            let _ = writeln!(out, "  - {field}");
        }
    }
    let gate = def.get("gate").and_then(Value::as_bool).unwrap_or(true);
    let _ = writeln!(out, "Gate: {gate}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env;

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
        let text = activate(&ctx, &dir, Some("implement")).unwrap();
        assert!(text.starts_with(&format!("Session activated: {}", dir.display())));
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
