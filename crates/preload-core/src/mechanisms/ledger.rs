//! The record of one context window across the files the engine also writes: a session's
//! `.state.json`, or before activation the owner's seed and its carry.
//!
//! The engine's `session.sh activate` keeps only `preloadedFiles`, `pendingPreloads` and
//! `touchedDirs` of a seed and deletes it; `continue` replaces the first two; both leave the
//! session without `sessionId`. So a seed holds only what the engine keeps, and everything else
//! a hook records before activation (stashed injections, part progress, the conversation,
//! checklists, delivered rules) goes into the seed's carry, `sessions/.seeds/<pid>.carry.json`,
//! which the engine never touches. The carry also lists the files still owed to the context
//! (queued, or partly delivered): an activator that marks them delivered (the engine's lists
//! the six core standards in every fresh state) is corrected.
//!
//! The first native write to the owner's session after activation adopts the carry (and a seed
//! the activator left), under the seed's lock then the session's, and deletes both. Every write
//! also tags the session with the conversation it serves (`sessionId`, and the hooks' own copy
//! the engine's restart leaves, [`State::window_conversation`]): when a different conversation
//! works in it (a `continue` after a restart), what belonged to the old context window (part
//! progress, sub-agent records, stashed injections) is let go, and the files the old stash
//! carried are queued again.

use std::fs;
use std::path::{Path, PathBuf};

use crate::mechanisms::context::Context;
use crate::mechanisms::session::{self, PreloadState};
use crate::primitives::lock::StateLock;
use crate::state::fields;
use crate::state::{
    self, Audience, Durability, IN_CONTEXT, Lifecycle, QUEUED, State, StateError, Write,
};

mod branch;
mod calls;
mod retire;
mod window;
pub use branch::{check_branch_at, note_carried, prompt_carrier, start_carrier, take_back};
pub use calls::{KeptCall, adopt_call_records, note_call_deliveries, note_start_deliveries};
pub use retire::{retire_seed, sweep_seeds};
pub use window::{
    KeptBy, archive_window, keep_restarting_window, keep_window, restore_window, seed_from_window,
    skills_held_at_start, tag_conversation,
};

/// The fields of a seed that the engine's activate reads; everything else lives in the carry.
pub const SEED_FIELDS: [&str; 6] = [
    fields::PID,
    fields::LIFECYCLE,
    fields::PID_START_TIME,
    fields::PRELOADED_FILES,
    fields::PENDING_PRELOADS,
    fields::TOUCHED_DIRS,
];

/// The carry of the seed at `seed`: `<pid>.carry.json` next to `<pid>.json`.
pub fn carry_path(seed: &Path) -> PathBuf {
    seed.with_extension("carry.json")
}

/// True for a carry file name.
pub fn is_carry(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".carry.json"))
}

/// The one read-modify-write of a preload state under its lock, written as `write` says: a
/// seed together with its carry, a session after adopting the owner's carry and tagging the
/// conversation. A [`Write::from_read`] stands only for a session with nothing to adopt (a
/// caller that found it not [`is_due`]); a seed is always read again under its lock.
pub fn update<T>(
    ctx: &Context,
    target: &PreloadState,
    write: Write<'_, T>,
    change: impl FnOnce(&mut State) -> T,
) -> Result<T, StateError> {
    if target.is_session {
        update_session(ctx, &target.path, write, change)
    } else {
        update_seed(&target.path, &write.fresh(), change)
    }
}

/// A seed and its carry as one state.
fn update_seed<T>(
    path: &Path,
    write: &Write<'_, T>,
    change: impl FnOnce(&mut State) -> T,
) -> Result<T, StateError> {
    let lock = StateLock::acquire(path, write.deadline())?;
    let seed = state::load(path)?;
    let carry_file = carry_path(path);
    let carry = load_carry(&carry_file)?;
    let mut view = joined(&seed, carry.as_ref());
    view.mark_unchanged();
    let out = change(&mut view);
    if view.changed() {
        write_seed(
            &lock,
            path,
            &view,
            Some(&seed),
            carry.as_ref(),
            write.durability(),
        )?;
    }
    lock.release();
    Ok(out)
}

/// Write a seed view: the carry first (what the engine drops), then the seed itself. `old_seed`
/// and `old_carry` are the files as read under `lock` (`None`: absent or unread): a file that
/// would hold what it holds is not written again (a re-seed often changes only the carry's
/// conversation). Written as `durability` says: durably by SessionStart, per call by a call.
pub fn write_seed(
    lock: &StateLock,
    path: &Path,
    view: &State,
    old_seed: Option<&State>,
    old_carry: Option<&State>,
    durability: Durability,
) -> Result<(), StateError> {
    let (seed, carry) = split(view);
    let carry_file = carry_path(path);
    match carry {
        Some(carry) if old_carry != Some(&carry) => {
            state::save_locked(&carry_file, &carry, lock, durability)?;
        }
        Some(_) => {}
        None => {
            let _ = fs::remove_file(&carry_file);
        }
    }
    if old_seed == Some(&seed) {
        return Ok(());
    }
    state::save_locked(path, &seed, lock, durability)
}

/// The owner's seed as one state with its carry, without locking.
pub fn read_seed(path: &Path) -> Result<State, StateError> {
    let seed = state::load(path)?;
    let carry = load_carry(&carry_path(path))?;
    Ok(joined(&seed, carry.as_ref()))
}

/// The seed and its carry as they are on disk (for an activator, under the seed's lock); each
/// `None` when absent.
pub fn read_seed_parts(path: &Path) -> Result<(Option<State>, Option<State>), StateError> {
    let seed = match state::load(path) {
        Ok(seed) => Some(seed),
        Err(StateError::Missing { .. }) => None,
        Err(err) => return Err(err),
    };
    Ok((seed, load_carry(&carry_path(path))?))
}

/// The carry, `None` when there is none; a carry that does not parse is an error (and is left).
fn load_carry(path: &Path) -> Result<Option<State>, StateError> {
    match state::load(path) {
        Ok(carry) => Ok(Some(carry)),
        Err(StateError::Missing { .. }) => Ok(None),
        Err(err) => Err(err),
    }
}

/// The seed and the carry's fields (the carry's own bookkeeping left out).
fn joined(seed: &State, carry: Option<&State>) -> State {
    let mut view = seed.clone();
    if let Some(carry) = carry {
        for (key, value) in carry.fields() {
            if key != fields::OWED && !SEED_FIELDS.contains(&key) {
                view.set(key, value.to_value());
            }
        }
    }
    view
}

/// Split a seed view into the seed the engine reads and the carry (`None` when it would hold
/// nothing but the owner's PID).
fn split(view: &State) -> (State, Option<State>) {
    let (seed, mut carry) = view.partition(|key| SEED_FIELDS.contains(&key));
    let owed = owed_of(view);
    if !owed.is_empty() {
        carry.set_strings(fields::OWED, &owed);
    }
    if carry.is_empty() {
        return (seed, None);
    }
    for key in [fields::PID, fields::PID_START_TIME] {
        carry.copy_first(view, key);
    }
    (seed, Some(carry))
}

/// The files of a record not (fully) in its context window: queued, or partly delivered.
fn owed_of(view: &State) -> Vec<String> {
    let mut owed = view.path_list(QUEUED);
    for path in view.files_in_parts(Audience::Main) {
        if !owed.contains(&path) {
            owed.push(path);
        }
    }
    owed
}

/// A session: adopt the owner's carry and leftover seed when there are any (seed lock first,
/// as every activator takes them), tag the conversation, then `change`.
fn update_session<T>(
    ctx: &Context,
    path: &Path,
    write: Write<'_, T>,
    change: impl FnOnce(&mut State) -> T,
) -> Result<T, StateError> {
    let seed_path = path
        .parent()
        .and_then(Path::parent)
        .map(|sessions| session::seed_path(sessions, ctx.owner_pid));
    let leftover = seed_path
        .as_ref()
        .filter(|seed| carry_path(seed).is_file() || seed.is_file());
    let mut tagged = false;
    let Some(seed_path) = leftover else {
        // Nothing to adopt: a read the write starts from ([`Write::from_read`]) that the
        // conversation already tags is what its known state was made from.
        let out = state::update(path, write, |s| {
            tagged = tag_conversation(ctx, s);
            change(s)
        })?;
        note_conversation(ctx, path, tagged);
        return Ok(out);
    };
    let seed_lock = StateLock::acquire(seed_path, write.deadline())?;
    let seed = match state::load(seed_path) {
        Ok(seed) => Some(seed).filter(|s| s.lifecycle() == Some(Lifecycle::Seeding)),
        Err(StateError::Missing { .. }) => None,
        Err(err) => return Err(err),
    };
    let carry = load_carry(&carry_path(seed_path))?;
    let out = state::update(path, write.fresh(), |s| {
        tagged = tag_conversation(ctx, s);
        adopt(s, seed.as_ref(), carry.as_ref());
        change(s)
    })?;
    note_conversation(ctx, path, tagged);
    if seed.is_some() {
        let _ = fs::remove_file(seed_path);
    }
    let _ = fs::remove_file(carry_path(seed_path));
    seed_lock.release();
    Ok(out)
}

/// Merge what the owner recorded before activation into its session: the seed's three fields
/// as the engine's activate merges them (when an activator left the seed behind), the fields
/// kept beside them (in the carry, or in a seed written by an older release), and the owed
/// files back in the queue and out of `preloadedFiles`.
pub fn adopt(s: &mut State, seed: Option<&State>, carry: Option<&State>) {
    if let Some(seed) = seed {
        for item in seed.path_list(IN_CONTEXT) {
            s.add_path(IN_CONTEXT, &item);
        }
        for item in seed.path_list(QUEUED) {
            s.add_path(QUEUED, &item);
        }
        s.merge_members(fields::TOUCHED_DIRS, seed);
    }
    if seed.is_none() && carry.is_none() {
        return;
    }
    let record = joined(seed.unwrap_or(&State::default()), carry);
    for key in [
        fields::DISCOVERED_CHECKLISTS,
        fields::INVOKED_SKILLS,
        fields::RELOADED_SKILLS,
    ] {
        for item in record.strings(key) {
            s.push_unique(key, &item);
        }
    }
    for key in [
        fields::PRELOAD_PARTS,
        fields::PRELOAD_PARTS_HELD,
        fields::PRELOAD_PARTS_CUT,
        fields::INJECTED_RULES,
        fields::PRELOADED_STAMPS,
    ] {
        s.merge_members(key, &record);
    }
    if record.has_stash() {
        // Once each: a seed written from a session's window (see `seed_from_window`) may come
        // back to that session when the `continue` it was written for did not run.
        s.push_stash_once(&record.stash());
    }
    adopt_call_records(s, &record);
    branch::adopt_carriers(s, &record);
    // The sub-agents' own records go with the window they are part of.
    for (key, value) in record.fields() {
        let sub_agents = [
            fields::PRELOADED_FILES,
            fields::PRELOAD_PARTS,
            fields::PRELOAD_PARTS_CUT,
            fields::PENDING_PRELOADS,
        ];
        if sub_agents
            .iter()
            .any(|base| fields::is_sub_agent_key(key, base))
            && s.field(key).is_none()
        {
            s.set(key, value.to_value());
        }
    }
    if s.window_conversation().is_none() {
        if let Some(id) = record.window_conversation() {
            s.set_conversation(id);
        }
    }
    let owed = match carry {
        Some(carry) => carry.strings(fields::OWED),
        None => owed_of(&record),
    };
    for path in owed {
        s.owe(Audience::Main, &path);
    }
}

/// True when a write to the session `target` (read as `s`) would adopt the owner's carry or a
/// leftover seed, or record the conversation.
pub fn is_due(ctx: &Context, target: &PreloadState, s: &State) -> bool {
    if !target.is_session {
        return false;
    }
    let leftover = target
        .path
        .parent()
        .and_then(Path::parent)
        .map(|sessions| session::seed_path(sessions, ctx.owner_pid))
        .is_some_and(|seed| seed.is_file() || carry_path(&seed).is_file());
    leftover || ctx.conversation.as_deref().is_some_and(|c| !s.serves(c))
}

/// After a write that tagged the session at `path` with the call's conversation: the index.
fn note_conversation(ctx: &Context, path: &Path, tagged: bool) {
    if let (true, Some(conversation), Some(dir)) =
        (tagged, ctx.conversation.as_deref(), path.parent())
    {
        session::note(dir, &[session::Key::Conversation(conversation)]);
    }
}

#[cfg(test)]
mod tests;
