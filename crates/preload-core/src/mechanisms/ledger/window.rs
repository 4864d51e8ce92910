//! What a context window holds across the client's events beyond its calls: the conversation
//! it serves, the skills the client process holds, and the record a replaced window leaves to
//! be resumed.

use std::fs;
use std::path::Path;

use crate::mechanisms::context::Context;
use crate::mechanisms::session;
use crate::primitives::delivery;
use crate::primitives::lock::StateLock;
use crate::state::fields;
use crate::state::{self, Durability, Field, IN_CONTEXT, Lifecycle, QUEUED, State};

/// The skills a new client process holds at SessionStart `source`: on a resume, those a
/// compaction of the conversation put back (the client recalls them from the transcript);
/// otherwise (a new conversation, `/clear`) none. A compaction keeps what the process holds.
pub fn skills_held_at_start(s: &mut State, source: &str) {
    match source {
        "compact" => {}
        // A fork's client holds its parent's history, as a resume's does.
        "resume" | "fork" => {
            let reloaded = s.strings(fields::RELOADED_SKILLS);
            let held: Vec<String> = s
                .strings(fields::INVOKED_SKILLS)
                .into_iter()
                .filter(|name| reloaded.contains(name))
                .collect();
            if held.is_empty() {
                s.remove(fields::INVOKED_SKILLS);
            } else {
                s.set_strings(fields::INVOKED_SKILLS, &held);
            }
        }
        _ => {
            s.remove(fields::INVOKED_SKILLS);
            s.remove(fields::RELOADED_SKILLS);
        }
    }
}

/// The fields of a context window's record that a `--resume` of its conversation goes on from
/// (the conversation's two fields first).
const WINDOW_FIELDS: [&str; 18] = [
    fields::SESSION_ID,
    fields::WINDOW_CONVERSATION,
    fields::PRELOADED_FILES,
    fields::PENDING_PRELOADS,
    fields::TOUCHED_DIRS,
    fields::PRELOAD_PARTS,
    fields::PRELOAD_PARTS_HELD,
    fields::PRELOAD_PARTS_CUT,
    fields::PRELOADED_STAMPS,
    fields::STASH,
    fields::INVOKED_SKILLS,
    fields::RELOADED_SKILLS,
    fields::CALL_DELIVERIES,
    fields::CARRIERS,
    fields::BRANCH_AT,
    fields::DISCOVERED_CHECKLISTS,
    fields::INJECTED_RULES,
    fields::FORK_OF,
];

/// Keep the record of the context window `s` holds (a session's or a seed's) when another window
/// replaces it there (`/clear`, a new conversation taking the session over): as an ended record
/// (`<sessions>/.seeds/<pid>.<conversation>.ended.json`, the owner left out) that a later
/// `--resume` of its conversation goes on from, as from a process's ended seed. Nothing when the
/// window names no conversation, or `conversation` is its own.
pub fn archive_window(sessions: &Path, s: &State, conversation: &str) {
    record_window(sessions, s, conversation, true);
}

/// [`archive_window`] for a window that goes on elsewhere (a fork of it): a record of it already
/// there (one its process left as it ended) is left as it is.
pub fn keep_window(sessions: &Path, s: &State, conversation: &str) {
    record_window(sessions, s, conversation, false);
}

/// [`archive_window`], `replace` saying whether a record already there is written again.
fn record_window(sessions: &Path, s: &State, conversation: &str, replace: bool) {
    let Some(old) = s
        .window_conversation()
        .filter(|c| !c.is_empty() && *c != conversation)
    else {
        return;
    };
    let pid = s.pid(fields::PID).unwrap_or(0);
    let path = session::window_record_path(sessions, pid, old);
    let there = fs::symlink_metadata(&path).is_ok();
    if there && !replace {
        return;
    }
    // A record written again keeps what else it holds (fields not of the window), as it was:
    // read without building the window's own (large) fields.
    let mut skipped = WINDOW_FIELDS.to_vec();
    skipped.push(fields::LIFECYCLE);
    let before = there
        .then(|| fs::read_to_string(&path).ok())
        .flatten()
        .and_then(|text| State::parse_without(&text, &skipped).ok());
    // Written from the window's own fields: on a large state, thousands of paths not copied.
    let mut record: Vec<(&str, Field)> =
        std::iter::once((fields::LIFECYCLE, Field::Text(Lifecycle::Seeding.name())))
            .chain(
                WINDOW_FIELDS
                    .iter()
                    .filter_map(|key| Some((*key, s.field(key)?))),
            )
            .collect();
    if let Some(before) = &before {
        record.extend(before.fields());
    }
    if fs::create_dir_all(sessions.join(session::SEEDS_DIR)).is_ok() {
        let _ = state::save_fields(&path, &record, state::Durability::Durable);
    }
}

/// Put the context window a record holds (an ended record, a seed: see [`archive_window`])
/// in place of the one state `s` holds: a conversation resumed (or forked) in a session that
/// served another goes on from its own window. The conversation is the caller's to set.
pub fn restore_window(s: &mut State, record: &State) {
    for key in &WINDOW_FIELDS[2..] {
        match record.field(key) {
            Some(value) => s.set(key, value.to_value()),
            None => {
                s.remove(key);
            }
        }
    }
}

/// Keep the window of session state `s` (in the sessions directory `sessions`) when a restart
/// of it is under way ([`State::restart_under_way`]): the next process's `continue` takes the
/// session over and replaces its lists before any hook sees it, and a later `--resume` of its
/// conversation goes on from the record [`archive_window`] leaves.
///
/// Kept by its owner as it ends, the record is written whatever is there; by a later process
/// once the owner is gone, only when there is none (the window has not changed since).
pub fn keep_restarting_window(sessions: &Path, s: &State, by: KeptBy) {
    if s.restart_under_way() {
        record_window(sessions, s, "", by == KeptBy::Owner);
    }
}

/// Before an `engine session continue` takes another session over for this process: when the
/// process's context window lives in a session it activated before (`window`) and it has no
/// seed, the window is written as its seed. The engine's `continue` replaces the taken
/// session's lists with the seed's (the seed is what the process has seen), and the hooks adopt
/// the carry at their next write there: the session goes on with what this window holds, not
/// with the lists of the window that ended.
pub fn seed_from_window(ctx: &Context, sessions: &Path, window: &State) {
    let seed = session::seed_path(sessions, ctx.owner_pid);
    if fs::create_dir_all(sessions.join(session::SEEDS_DIR)).is_err() {
        return;
    }
    let Ok(lock) = StateLock::acquire(&seed, ctx.lock_deadline()) else {
        return;
    };
    if fs::symlink_metadata(&seed).is_err() {
        let mut view = State::default();
        view.set_pid(ctx.owner_pid);
        view.set_lifecycle(&Lifecycle::Seeding);
        for key in std::iter::once(&fields::PID_START_TIME).chain(&WINDOW_FIELDS) {
            if let Some(field) = window.field(key) {
                view.set(key, field.to_value());
            }
        }
        let _ = super::write_seed(&lock, &seed, &view, None, None, Durability::Durable);
    }
    lock.release();
}

/// Who keeps a restarting window ([`keep_restarting_window`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeptBy {
    /// The owner, as it ends.
    Owner,
    /// A later process, once the owner is gone.
    Successor,
}

/// Record which conversation the session serves; true when that changed the state.
///
/// The window's own records (part progress, stamps, sub-agent records) belong to the
/// conversation the hooks last recorded ([`State::window_conversation`]):
/// * the call's: the window goes on, whether or not the engine's `restart` or `dehydrate`
///   removed `sessionId` meanwhile (without tmux the engine only prints the line to restart
///   with, and the conversation carries on in the same window);
/// * another (a `continue` after a restart, the statusline naming the new conversation first):
///   the old window's records go, and the files its stash carried are queued again;
/// * none (a state the engine made, or an earlier release's after a restart): the records no
///   bash writer keeps cannot be told to be current, so they go, and the stash stays for
///   whoever drains it.
pub fn tag_conversation(ctx: &Context, s: &mut State) -> bool {
    let Some(conversation) = ctx.conversation.as_deref() else {
        return false;
    };
    if s.serves(conversation) {
        return false;
    }
    match s.window_conversation() {
        Some(id) if id == conversation => {}
        Some(_) => new_context_window(s),
        None => drop_window_fields(s),
    }
    s.set_conversation(conversation);
    true
}

/// Fields that belong to one context window beyond what the engine itself resets.
fn is_window_field(key: &str) -> bool {
    key == fields::PRELOAD_PARTS
        || key == fields::PRELOAD_PARTS_HELD
        || key == fields::PRELOAD_PARTS_CUT
        || key == fields::PRELOADED_STAMPS
        || fields::is_sub_agent_key(key, fields::PRELOADED_FILES)
        || fields::is_sub_agent_key(key, fields::PRELOAD_PARTS)
        || fields::is_sub_agent_key(key, fields::PRELOAD_PARTS_CUT)
        || fields::is_sub_agent_key(key, fields::PENDING_PRELOADS)
}

fn drop_window_fields(s: &mut State) {
    s.remove_where(is_window_field);
}

/// Let go of the old window's fields (and the old conversation's invoked skills); the files
/// its stash carried are queued again (the new window has not seen them).
pub(super) fn new_context_window(s: &mut State) {
    drop_window_fields(s);
    s.remove(fields::INVOKED_SKILLS);
    s.remove(fields::RELOADED_SKILLS);
    let Some(entries) = s.remove_stash() else {
        return;
    };
    let preloaded = s.path_list(IN_CONTEXT);
    for entry in &entries {
        for path in delivery::block_paths(entry.content()) {
            if !preloaded.contains(&path) {
                s.add_path(QUEUED, &path);
            }
        }
    }
    s.clear_stash();
}
