//! Session activation, the half of `session.sh activate` the hooks rely on: the fields the hooks
//! read, the skill's static fields, the merge of the owner's seed, the PID claim and cache.
//! Used by `preload activate` and by the guard engine's opt-in ad-hoc activation.

use std::fs;
use std::path::Path;

use serde_json::{Map, Value, json};

use crate::clock;
use crate::context::Context;
use crate::ledger;
use crate::lock::StateLock;
use crate::preload::{PARTS, PENDING, PRELOADED};
use crate::process;
use crate::session::{self, SEEDING, STATE_FILE};
use crate::skill::{self, Skill};
use crate::state::{self, State};

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

/// A refusal carrying the error's message.
pub fn refused(err: impl std::fmt::Display) -> Failure {
    Failure::Refused(err.to_string())
}

/// Create or update `<dir>/.state.json` for the owner, merge and delete the owner's seed, claim
/// the owner's PID from other sessions, write the PID cache.
pub fn activate(ctx: &Context, dir: &Path, skill: Option<&str>) -> Result<Activated, Failure> {
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
    let seed = seed.filter(|s| s.str("lifecycle") == Some(SEEDING));

    let outcome = state::update(&path, ctx.lock_deadline(), |s| {
        activate_state(ctx, s, skill, seed.as_ref(), carry.as_ref())
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
    let cache = session::cache_file(ctx);
    let _ = state::write_atomic(&cache, format!("{}\n", dir.display()).as_bytes());
    Ok(outcome)
}

/// What `activate` settled on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activated {
    /// The session's skill.
    pub skill: String,
    /// Its current phase.
    pub phase: String,
}

fn activate_state(
    ctx: &Context,
    s: &mut State,
    skill_arg: Option<&str>,
    seed: Option<&State>,
    carry: Option<&State>,
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
        s.set(ledger::STASH, json!([]));
        s.remove(PARTS);
        s.remove(session::CONVERSATION_FIELD);
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
    ledger::adopt(s, seed, carry);
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
