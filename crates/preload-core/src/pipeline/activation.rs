//! Session activation, the half of `session.sh activate` the hooks rely on: the fields the hooks
//! read, the skill's static fields, the merge of the owner's seed, the PID claim and cache; and
//! what the engine checks first: the session parameters piped in (against the
//! `CMD_PARSE_PARAMETERS` schema), a skill already completed in the session, a live owner.
//! Used by `preload activate` and by the guard engine's opt-in ad-hoc activation.

use std::fs;
use std::path::Path;

use serde_json::{Map, Value};

use crate::mechanisms::context::Context;
use crate::mechanisms::ledger;
use crate::mechanisms::session::{self, STATE_FILE};
use crate::mechanisms::skill::{self, Skill};
use crate::primitives::clock;
use crate::primitives::lock::StateLock;
use crate::primitives::process;
use crate::state::fields;
use crate::state::{self, IN_CONTEXT, Lifecycle, Phase, PhaseDef, QUEUED, State};

/// Static fields copied from a skill's SKILL.md into its session (as `session.sh` does).
pub const SKILL_STATIC_FIELDS: [&str; 10] = [
    fields::TASK_TYPE,
    fields::PHASES,
    fields::NEXT_SKILLS,
    fields::DIRECTIVES,
    fields::MODES,
    fields::LOG_TEMPLATE,
    fields::DEBRIEF_TEMPLATE,
    fields::PLAN_TEMPLATE,
    fields::REQUEST_TEMPLATE,
    fields::RESPONSE_TEMPLATE,
];

/// The skill that may always be activated again.
const REUSABLE_SKILL: &str = "do";
/// Why activating (or changing the phase of) a session failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// Bad arguments (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The state cannot be changed (exit 1).
    #[error("{0}")]
    Refused(String),
    /// Refused by a rule of the engine's; the text is the engine's own (exit 1).
    #[error("{0}")]
    Rejected(String),
}

/// What an activation was asked for beyond the skill.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    /// Session parameters (checked by the command line), merged into the state.
    pub parameters: Option<Map<String, Value>>,
    /// `--fast-track`: no completed-skill check, `fastTrack: true`.
    pub fast_track: bool,
    /// `--user-approved REASON`: the user allowed activating a completed skill again.
    pub approval: Option<String>,
}

/// A refusal carrying the error's message.
pub fn refused(err: impl std::fmt::Display) -> Failure {
    Failure::Refused(err.to_string())
}

/// Create or update `<dir>/.state.json` for the owner, merge and delete the owner's seed, claim
/// the owner's PID from other sessions, write the PID cache.
pub fn activate(ctx: &Context, dir: &Path, skill: Option<&str>) -> Result<Activated, Failure> {
    activate_with(ctx, dir, skill, &Options::default())
}

/// [`activate`] with session parameters, `--fast-track` or the user's approval.
pub fn activate_with(
    ctx: &Context,
    dir: &Path,
    skill: Option<&str>,
    options: &Options,
) -> Result<Activated, Failure> {
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
    let carry_path = ledger::carry_path(&seed_path);
    // The seed's lock first, then the session's: the order every writer of both keeps.
    let seed_lock = if seed_path.is_file() || carry_path.is_file() {
        Some(StateLock::acquire(&seed_path, ctx.lock_deadline()).map_err(refused)?)
    } else {
        None
    };
    let record = seed_lock
        .as_ref()
        .and_then(|_| ledger::read_seed_parts(&seed_path).ok());
    let (seed, carry) = record.unwrap_or_default();
    let seed = seed.filter(|s| s.lifecycle() == Some(Lifecycle::Seeding));
    // The owner's context window, when another of its sessions records it (one it holds, or
    // left idle), moves here with the owner: what that window holds is not sent again.
    // (Its PID cache names it: nothing is scanned or written to find it.)
    let window = session::cached_session(ctx)
        .filter(|other| !same_dir(other, dir))
        .and_then(|other| state::load(&other.join(STATE_FILE)).ok())
        .filter(|other| other.is_window_of(ctx.owner_pid));

    let outcome = state::update(&path, state::Write::durable(ctx.lock_deadline()), |s| {
        let starts = !s.is_window_of(ctx.owner_pid);
        let activated = activate_state(ctx, dir, s, skill, options, seed.as_ref(), carry.as_ref());
        if let (Ok(_), Some(window), true) = (&activated, &window, starts) {
            ledger::adopt(s, Some(window), None);
        }
        activated
    })
    .map_err(refused)??;

    if seed.is_some() {
        let _ = fs::remove_file(&seed_path);
    }
    if seed_lock.is_some() {
        let _ = fs::remove_file(&carry_path);
    }
    if let Some(lock) = seed_lock {
        lock.release();
    }
    claim_pid(ctx, &sessions, &path);
    session::remember(ctx, dir);
    Ok(outcome)
}

/// Whether `a` and `b` name one directory (however spelt).
fn same_dir(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// What `activate` settled on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activated {
    /// The session's skill.
    pub skill: String,
    /// Its current phase.
    pub phase: String,
    /// True when the skill had been completed and the user approved activating it again.
    pub approved_again: bool,
}

/// Whether `skill` was completed in the session and the user approved activating it again;
/// refused when it was and nobody did. `/do`, and `--fast-track`, are never asked.
fn completed_again(dir: &Path, s: &State, skill: &str, options: &Options) -> Result<bool, Failure> {
    if skill == REUSABLE_SKILL || options.fast_track {
        return Ok(false);
    }
    let completed = s.strings(fields::COMPLETED_SKILLS);
    if !completed.iter().any(|c| c == skill) {
        return Ok(false);
    }
    if options.approval.is_none() {
        return Err(completed_refusal(dir, skill, &completed));
    }
    Ok(true)
}

/// The engine's refusal to activate a completed skill again.
fn completed_refusal(dir: &Path, skill: &str, completed: &[String]) -> Failure {
    let dir = dir.display();
    Failure::Rejected(format!(
        "§CMD_PARSE_PARAMETERS: Skill '{skill}' was already completed in this session.\n  \
         Completed skills: {}\n  Session: {dir}\n\n\
         Ensure you are doing the right thing — right skill, right phase. You may re-activate \
         this skill if the user explicitly allowed it.\n  \
         To proceed: session.sh activate {dir} {skill} --user-approved \"Reason: ...\"",
        completed.join(", ")
    ))
}

fn activate_state(
    ctx: &Context,
    dir: &Path,
    s: &mut State,
    skill_arg: Option<&str>,
    options: &Options,
    seed: Option<&State>,
    carry: Option<&State>,
) -> Result<Activated, Failure> {
    let owner = ctx.owner_pid;
    let holder = s.pid(fields::PID);
    let owners_window = s.is_window_of(owner);
    let previous = s.str(fields::SKILL).map(str::to_owned);
    let skill = skill_arg
        .map(str::to_owned)
        .or_else(|| previous.clone())
        .ok_or_else(|| Failure::Usage("no skill: pass --skill NAME".into()))?;
    if !skill::is_valid_name(&skill) {
        return Err(Failure::Usage(format!("bad skill name {skill:?}")));
    }
    let fresh = s.is_empty();
    let approved_again = !fresh && completed_again(dir, s, &skill, options)?;
    if let Some(pid) = holder.filter(|p| *p != owner && process::is_alive(*p)) {
        return Err(Failure::Rejected(format!(
            "§CMD_MAINTAIN_SESSION_DIR: Session has active agent (PID {pid}). Choose another folder."
        )));
    }
    let changed = previous.as_deref().is_some_and(|p| p != skill);
    // The engine merges the parameters unless the owner re-activates its own skill, or a dead
    // owner's dehydrated session is taken back as it was.
    let same_window = !fresh && owners_window && !changed;
    let dehydrated = holder.is_some_and(|p| p != owner)
        && (s
            .get(fields::DEHYDRATED_CONTEXT)
            .is_some_and(|v| !v.is_null())
            || s.flag(fields::KILL_REQUESTED));
    let now = clock::iso_utc(ctx.now);

    s.activate(owner, &skill, &now);
    if changed {
        s.restart_phases();
    }
    if let Some(params) = options
        .parameters
        .as_ref()
        .filter(|_| !same_window && !dehydrated)
    {
        s.merge(params);
    }
    if let Some(def) = ctx.skills.load(&ctx.paths, &skill) {
        for (key, value) in static_fields(&def) {
            s.set(&key, value);
        }
    }
    if fresh || changed || s.current_phase().is_none() {
        let first = s.phases().first().and_then(PhaseDef::to_phase_string);
        let first = first.unwrap_or_else(|| "Phase 1: Setup".to_owned());
        s.set_current_phase(&first);
    }
    // A session taken over from another (dead) process starts a new context window.
    if !owners_window {
        start_window(ctx, dir, s);
    }
    // A context window's fields, for a state that has none.
    if s.field(&IN_CONTEXT.key()).is_none() {
        s.set_paths(IN_CONTEXT, session::core_seeds(ctx));
    }
    if s.field(fields::TOUCHED_DIRS).is_none() {
        s.clear_touched_dirs();
    }
    if s.field(&QUEUED.key()).is_none() {
        s.clear_paths(QUEUED);
    }
    if s.field(fields::STASH).is_none() {
        s.clear_stash();
    }
    ledger::adopt(s, seed, carry);
    if options.fast_track {
        s.set_fast_track();
    }
    Ok(Activated {
        skill,
        phase: s.current_phase().map_or("", Phase::as_str).to_owned(),
        approved_again,
    })
}

/// A session taken over from another (dead) process: a new context window, with the one it
/// held kept resumable.
fn start_window(ctx: &Context, dir: &Path, s: &mut State) {
    if let Some(sessions) = dir.parent() {
        ledger::archive_window(sessions, s, ctx.conversation.as_deref().unwrap_or(""));
    }
    s.set_paths(IN_CONTEXT, session::core_seeds(ctx));
    s.clear_paths(QUEUED);
    s.clear_touched_dirs();
    s.clear_stash();
    s.forget_conversation();
    for key in [
        fields::PRELOAD_PARTS,
        fields::PRELOAD_PARTS_HELD,
        fields::PRELOAD_PARTS_CUT,
        // What the old process's client held: its skills, its latest call.
        fields::INVOKED_SKILLS,
        fields::RELOADED_SKILLS,
        fields::CALL_DELIVERIES,
        fields::CARRIERS,
        fields::BRANCH_AT,
    ] {
        s.remove(key);
    }
}

/// The static fields of a skill, template and mode paths made absolute.
fn static_fields(skill: &Skill) -> Vec<(String, Value)> {
    let abs = |rel: &str| {
        if rel.starts_with('/') {
            rel.to_owned()
        } else {
            skill.dir.join(rel).to_string_lossy().into_owned()
        }
    };
    let def = &skill.definition;
    SKILL_STATIC_FIELDS
        .iter()
        .filter_map(|key| {
            let value = if let Some(value) = def.rest.get(*key) {
                value.clone()
            } else if *key == fields::PHASES {
                Value::Array(def.phases.clone()?)
            } else if *key == fields::MODES {
                let mut out = Map::new();
                for (id, mode) in def.modes.as_deref()? {
                    let mut written = mode.written.clone();
                    if let (Some(file), Value::Object(members)) = (&mode.file, &mut written) {
                        members.insert(fields::MODE_FILE.to_owned(), Value::from(abs(file)));
                    }
                    out.insert(id.clone(), written);
                }
                Value::Object(out)
            } else {
                Value::from(abs(def.template(key)?))
            };
            Some(((*key).to_owned(), value))
        })
        .collect()
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
        let _ = state::update(&path, state::Write::durable(ctx.lock_deadline()), |s| {
            let mine = s
                .number(fields::PID)
                .is_some_and(|n| (n - f64::from(ctx.owner_pid)).abs() < 0.5);
            if mine {
                s.remove(fields::PID);
            }
        });
    }
}

#[cfg(test)]
mod tests;
