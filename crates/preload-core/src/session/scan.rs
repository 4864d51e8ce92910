//! The scan of the sessions directories for the session a process, pane or conversation holds, and its cache.

use std::fs;
use std::path::{Path, PathBuf};

use super::{STATE_FILE, held_elsewhere};
use crate::context::Context;
use crate::env;
use crate::fields;
use crate::file;
use crate::process;
use crate::state::{self, State};

/// A fingerprint of the sessions directories (a session directory added or removed changes
/// their time), of the PID cache file (rewritten by every activation), and of what else a scan
/// matches on: the tmux pane and the conversation.
pub(super) fn fingerprint(ctx: &Context, roots: &[PathBuf], cache: &Path) -> u64 {
    use std::hash::{Hash, Hasher};
    use std::os::unix::fs::MetadataExt;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for path in roots.iter().map(PathBuf::as_path).chain([cache]) {
        path.hash(&mut hasher);
        if let Ok(meta) = fs::symlink_metadata(path) {
            (meta.ino(), meta.mtime(), meta.mtime_nsec(), meta.size()).hash(&mut hasher);
        }
    }
    ctx.env.get(env::TMUX_PANE).hash(&mut hasher);
    ctx.conversation.hash(&mut hasher);
    hasher.finish()
}

/// The session directories under a sessions directory, in name order (`.seeds` and other
/// dot-names excluded).
pub fn session_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(root)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// `${CLAUDE_SESSION_CACHE_DIR:-/tmp}/claude-session-cache-<pid>`.
pub fn cache_file(ctx: &Context) -> PathBuf {
    let dir = ctx.env.get(env::CLAUDE_SESSION_CACHE_DIR).unwrap_or("/tmp");
    Path::new(dir).join(format!("claude-session-cache-{}", ctx.owner_pid))
}

/// Read a state or seed file for a quick look (regular files only, bounded).
pub(super) fn peek(path: &Path) -> Option<String> {
    file::read_text(path, state::MAX_STATE_BYTES)
}

/// The `pid` a state names, from a quick look ([`state::peek_pid`]): the state is read again,
/// whole and under the lock, by whatever the hook then does with it.
pub(super) fn state_pid(path: &Path, field: &str) -> Option<u32> {
    state::peek_pid(&peek(path)?, field)
}

/// What a scan of the sessions found for an owner.
pub(super) enum Scan {
    /// Its session.
    Found(PathBuf),
    /// The session its conversation ran in, left by an owner that is gone.
    Conversation(PathBuf),
    /// Only a session it once held (`lastKnownPid`, or its fleet pane's) that another live
    /// process holds now: the answer can change without any file changing.
    Held,
    /// No state names the owner.
    Nothing,
}

/// The engine's transcript key of a conversation: `<session_id>.jsonl`.
fn transcript_key(conversation: &str) -> String {
    format!("{conversation}.jsonl")
}

/// Find the session of `pid` under `roots` in one pass over `sessions/*/.state.json`, in the
/// engine's order: the fleet pane's (guarded against another live owner), the first whose `pid`
/// is the owner, the first whose `lastKnownPid` is (guarded); then the conversation's. Each
/// state is read once, with a cheap text check before a quick parse.
pub(super) fn scan(
    roots: &[PathBuf],
    pid: u32,
    pane: Option<&str>,
    conversation: Option<&str>,
) -> Scan {
    let needle = pid.to_string();
    let key = conversation.map(transcript_key);
    let (mut fleet, mut by_pid, mut last_known, mut by_conversation) = (None, None, None, None);
    let mut held = false;
    for root in roots {
        for dir in session_dirs(root) {
            let Some(text) = peek(&dir.join(STATE_FILE)) else {
                continue;
            };
            let mentions_pane = pane.is_some_and(|p| text.contains(p));
            let mentions_conversation = conversation.is_some_and(|c| text.contains(c));
            if !text.contains(&needle) && !mentions_pane && !mentions_conversation {
                continue;
            }
            let Ok(state) = State::parse_fields(
                &text,
                &[
                    fields::PID,
                    fields::LAST_KNOWN_PID,
                    fields::FLEET_PANE_ID,
                    fields::SESSION_ID,
                    fields::PRIMARY_TRANSCRIPT_KEY,
                ],
            ) else {
                continue;
            };
            if fleet.is_none() && pane.is_some() && state.str(fields::FLEET_PANE_ID) == pane {
                fleet = Some((dir.clone(), held_elsewhere(&state, pid)));
            }
            if by_pid.is_none() && state.pid(fields::PID) == Some(pid) {
                by_pid = Some(dir.clone());
            }
            if last_known.is_none() && state.pid(fields::LAST_KNOWN_PID) == Some(pid) {
                if held_elsewhere(&state, pid) {
                    held = true;
                } else {
                    last_known = Some(dir.clone());
                }
            }
            let same_conversation = state.str(fields::SESSION_ID) == conversation
                || state.str(fields::PRIMARY_TRANSCRIPT_KEY) == key.as_deref();
            if by_conversation.is_none()
                && conversation.is_some()
                && same_conversation
                && state.pid(fields::PID).is_none_or(|p| !process::is_alive(p))
            {
                by_conversation = Some(dir.clone());
            }
        }
    }
    match (fleet, by_pid, last_known, by_conversation) {
        (Some((_, true)), ..) => Scan::Held,
        (Some((dir, false)), ..) | (None, Some(dir), ..) | (None, None, Some(dir), _) => {
            Scan::Found(dir)
        }
        (None, None, None, _) if held => Scan::Held,
        (None, None, None, Some(dir)) => Scan::Conversation(dir),
        (None, None, None, None) => Scan::Nothing,
    }
}

/// A quick look at some fields of a state.
pub(super) fn peek_fields(path: &Path, fields: &[&str]) -> Option<State> {
    State::parse_fields(&peek(path)?, fields).ok()
}
