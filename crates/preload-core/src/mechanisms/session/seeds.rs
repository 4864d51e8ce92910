//! The owner's seed (`<sessions>/.seeds/<pid>.json`, the record of a context window before a
//! session exists), the record it leaves when its process ends, and whether a seed is stale.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::SEEDS_DIR;
use super::scan::peek;
use crate::primitives::process;
use crate::state::fields;
use crate::state::{IN_CONTEXT, Lifecycle, QUEUED, State};

/// The end of the name of a record a context window leaves ([`ended_path`]).
pub const ENDED_SUFFIX: &str = ".ended.json";

/// How long the record of an ended process is kept for a `--resume` of its conversation:
/// Claude Code's own default for keeping conversations (`cleanupPeriodDays`, 30 days).
pub const ENDED_RETENTION: Duration = Duration::from_secs(30 * 24 * 3600);

/// True when the ended record at `path` is older than [`ENDED_RETENTION`] (its process is
/// always gone: its age, not its PID, says when it can go).
pub fn ended_record_expired(path: &Path) -> bool {
    fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|modified| crate::primitives::clock::age(modified) > ENDED_RETENTION)
}

/// Where the seed at `seed` (`<pid>.json`) leaves its record of `conversation` when its
/// process ends: `<pid>.<conversation>.ended.json` beside it, characters of the conversation
/// outside `[A-Za-z0-9-]` as `_`. Named by the conversation too: one owner PID outlives many
/// conversations (the engine's `run.sh` restarts the client under one supervisor PID, and a
/// PID is reused), and each keeps its own record.
pub fn ended_path(seed: &Path, conversation: &str) -> PathBuf {
    let pid = seed.file_stem().unwrap_or_default().to_string_lossy();
    seed.with_file_name(format!("{pid}.{}{ENDED_SUFFIX}", safe_name(conversation)))
}

/// Where process `pid` leaves the window of `conversation` that another replaced: the record
/// its seed would leave ([`ended_path`]).
pub fn window_record_path(sessions_dir: &Path, pid: u32, conversation: &str) -> PathBuf {
    ended_path(&seed_path(sessions_dir, pid), conversation)
}

/// Remove the records [`window_record_path`] names for `conversation`, whatever the process: a
/// session that goes on with the conversation is its record now, and an older one would be
/// taken for it once the session moves on.
pub fn forget_window_records(sessions_dir: &Path, conversation: &str) {
    let tail = format!(".{}{ENDED_SUFFIX}", safe_name(conversation));
    let Ok(entries) = fs::read_dir(sessions_dir.join(SEEDS_DIR)) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        if entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.ends_with(&tail))
        {
            let _ = fs::remove_file(entry.path());
        }
    }
}

fn safe_name(conversation: &str) -> String {
    conversation
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The seed path of the owner: `<sessions>/.seeds/<pid>.json`.
pub fn seed_path(sessions_dir: &Path, pid: u32) -> PathBuf {
    sessions_dir.join(SEEDS_DIR).join(format!("{pid}.json"))
}

/// A fresh seed document for `pid` with `preloaded` already in context.
pub fn new_seed(pid: u32, preloaded: &[String]) -> State {
    let mut seed = State::default();
    seed.set_pid(pid);
    seed.set_lifecycle(&Lifecycle::Seeding);
    seed.set_paths(IN_CONTEXT, preloaded);
    seed.clear_paths(QUEUED);
    seed.clear_touched_dirs();
    own_seed(&mut seed, pid);
    seed
}

/// Make `seed` the seed of process `pid` (its PID and start time).
pub fn own_seed(seed: &mut State, pid: u32) {
    seed.set_pid(pid);
    match process::start_time(pid) {
        Some(start) => seed.set_count(fields::PID_START_TIME, start),
        None => {
            seed.remove(fields::PID_START_TIME);
        }
    }
}

/// True when the seed at `path` belongs to a dead process or to an earlier process that had the
/// same PID.
pub fn seed_is_stale(path: &Path) -> bool {
    let Some(text) = peek(path) else {
        return false;
    };
    let Ok(seed) = State::parse(&text) else {
        return false;
    };
    let pid = seed
        .pid(fields::PID)
        .or_else(|| path.file_stem()?.to_str()?.parse().ok());
    let Some(pid) = pid else { return true };
    let started = seed.count(fields::PID_START_TIME);
    !process::is_same_live_process(pid, started)
}
