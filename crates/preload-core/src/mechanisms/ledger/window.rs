//! What a context window holds across the client's events beyond its calls: the skills the
//! client process holds, and the record a replaced window leaves to be resumed.

use serde_json::Value;
use std::fs;
use std::path::Path;

use crate::mechanisms::session;
use crate::state::fields;
use crate::state::{self, Lifecycle, State};

/// The skills a new client process holds at SessionStart `source`: on a resume, those a
/// compaction of the conversation put back (the client recalls them from the transcript);
/// otherwise (a new conversation, `/clear`) none. A compaction keeps what the process holds.
pub fn skills_held_at_start(s: &mut State, source: &str) {
    match source {
        "compact" => {}
        "resume" => {
            let reloaded = s.strings(fields::RELOADED_SKILLS);
            let held: Vec<String> = s
                .strings(fields::INVOKED_SKILLS)
                .into_iter()
                .filter(|name| reloaded.contains(name))
                .collect();
            if held.is_empty() {
                s.remove(fields::INVOKED_SKILLS);
            } else {
                s.set(fields::INVOKED_SKILLS, serde_json::json!(held));
            }
        }
        _ => {
            s.remove(fields::INVOKED_SKILLS);
            s.remove(fields::RELOADED_SKILLS);
        }
    }
}

/// The fields of a context window's record that a `--resume` of its conversation goes on from.
const WINDOW_FIELDS: [&str; 14] = [
    fields::SESSION_ID,
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
    fields::DISCOVERED_CHECKLISTS,
    fields::INJECTED_RULES,
];

/// Keep the record of the context window `s` holds (a session's or a seed's) when another window
/// replaces it there (`/clear`, a new conversation taking the session over): as an ended record
/// (`<sessions>/.seeds/<pid>.<conversation>.ended.json`, the owner left out) that a later
/// `--resume` of its conversation goes on from, as from a process's ended seed. Nothing when the
/// window names no conversation, or `conversation` is its own.
pub fn archive_window(sessions: &Path, s: &State, conversation: &str) {
    let Some(old) = s
        .str(fields::SESSION_ID)
        .filter(|c| !c.is_empty() && *c != conversation)
    else {
        return;
    };
    let safe: String = old
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let pid = s.pid(fields::PID).unwrap_or(0);
    // Written from the window's own fields: on a large state, thousands of paths not copied.
    let seeding = Value::from(Lifecycle::Seeding.name());
    let record: Vec<(&str, &Value)> = std::iter::once((fields::LIFECYCLE, &seeding))
        .chain(
            WINDOW_FIELDS
                .iter()
                .filter_map(|key| Some((*key, s.get(key)?))),
        )
        .collect();
    let seeds = sessions.join(session::SEEDS_DIR);
    if fs::create_dir_all(&seeds).is_ok() {
        let path = seeds.join(format!("{pid}.{safe}{}", session::ENDED_SUFFIX));
        let _ = state::save_fields(&path, &record, state::Durability::Durable);
    }
}
