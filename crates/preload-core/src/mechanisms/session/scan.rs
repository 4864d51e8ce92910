//! The judgement of which session a process, pane or conversation holds: on the few candidates
//! the index names, or on a scan of every state (which rebuilds the index), and the fingerprint
//! that lets a negative answer stand.

use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::index::{self, Key};
use super::{STATE_FILE, held_elsewhere};
use crate::mechanisms::context::Context;
use crate::primitives::env;
use crate::primitives::file;
use crate::primitives::process;
use crate::state::fields;
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

/// The session directories under a sessions directory, in name order (`.seeds`, the index and
/// other dot-names excluded).
pub fn session_dirs(root: &Path) -> Vec<PathBuf> {
    session_names(root)
        .into_iter()
        .map(|name| root.join(name))
        .collect()
}

/// The names of [`session_dirs`], in byte order.
///
/// Sorted by their first 24 bytes read as three big-endian words, then by the whole name:
/// session names share a long prefix (`2026_11_28_…`), and a comparison of byte slices ends in
/// the C library's `memcmp`, which musl runs a byte at a time (with 10,000 sessions that was a
/// third of a SessionStart). A file name holds no NUL, so padding a short name with zeros
/// orders it before the longer names it begins, as byte order does.
pub fn session_names(root: &Path) -> Vec<OsString> {
    let mut names: Vec<OsString> = fs::read_dir(root)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name())
                .filter(|name| name.as_bytes().first() != Some(&b'.'))
                .collect()
        })
        .unwrap_or_default();
    sort_names(&mut names);
    names
}

/// Sort file names in byte order, as [`session_names`] says: each name's key is read once.
fn sort_names(names: &mut Vec<OsString>) {
    let mut keyed: Vec<([u64; 3], OsString)> = names
        .drain(..)
        .map(|name| (leading_words(name.as_bytes()), name))
        .collect();
    keyed.sort_unstable();
    names.extend(keyed.into_iter().map(|(_, name)| name));
}

/// The first 24 bytes of `name` as three big-endian words, zero-padded.
fn leading_words(name: &[u8]) -> [u64; 3] {
    let mut words = [0; 3];
    for (word, chunk) in words.iter_mut().zip(name.chunks(8)) {
        *word = chunk
            .iter()
            .enumerate()
            .fold(0, |acc, (i, &b)| acc | u64::from(b) << (56 - 8 * i));
    }
    words
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

/// The fields a session is found by.
const KEY_FIELDS: [&str; 6] = [
    fields::PID,
    fields::LAST_KNOWN_PID,
    fields::FLEET_PANE_ID,
    fields::SESSION_ID,
    fields::WINDOW_CONVERSATION,
    fields::PRIMARY_TRANSCRIPT_KEY,
];

/// A quick look at the key fields of a session's state.
pub(super) fn keys_of(dir: &Path) -> Option<State> {
    State::parse_fields(&peek(&dir.join(STATE_FILE))?, &KEY_FIELDS).ok()
}

/// What a look at the sessions found for an owner.
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// The conversation a transcript key names: `<session_id>.jsonl`.
fn transcript_conversation(key: &str) -> Option<&str> {
    key.strip_suffix(".jsonl").filter(|c| !c.is_empty())
}

/// Who is asking: the owner, its fleet pane and its conversation.
#[derive(Debug, Clone, Copy)]
pub(super) struct Seeker<'a> {
    pub(super) pid: u32,
    pub(super) pane: Option<&'a str>,
    pub(super) conversation: Option<&'a str>,
}

impl Seeker<'_> {
    /// Judge `states` (session directories with their key fields, in the scan's order) as the
    /// engine's `session.sh find` does: the fleet pane's (guarded against another live owner),
    /// the first whose `pid` is the owner, the first whose `lastKnownPid` is (guarded); then the
    /// conversation's, when its owner is gone.
    pub(super) fn judge<'s>(
        &self,
        states: impl IntoIterator<Item = (&'s Path, &'s State)>,
    ) -> Scan {
        let (mut fleet, mut by_pid, mut last_known, mut by_conversation) = (None, None, None, None);
        let mut held = false;
        for (dir, state) in states {
            if fleet.is_none()
                && self.pane.is_some()
                && state.str(fields::FLEET_PANE_ID) == self.pane
            {
                fleet = Some((dir.to_path_buf(), held_elsewhere(state, self.pid)));
            }
            if by_pid.is_none() && state.pid(fields::PID) == Some(self.pid) {
                by_pid = Some(dir.to_path_buf());
            }
            if last_known.is_none() && state.pid(fields::LAST_KNOWN_PID) == Some(self.pid) {
                if held_elsewhere(state, self.pid) {
                    held = true;
                } else {
                    last_known = Some(dir.to_path_buf());
                }
            }
            // The conversation the state records is the answer; its counters' transcript only
            // stands in for one it does not record (a state the engine wrote), since it stays
            // behind when another conversation takes the session over.
            let same_conversation = self.conversation.is_some()
                && match state.window_conversation() {
                    Some(id) => Some(id) == self.conversation,
                    None => {
                        state
                            .str(fields::PRIMARY_TRANSCRIPT_KEY)
                            .and_then(transcript_conversation)
                            == self.conversation
                    }
                };
            if by_conversation.is_none()
                && same_conversation
                && state.pid(fields::PID).is_none_or(|p| !process::is_alive(p))
            {
                by_conversation = Some(dir.to_path_buf());
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

    /// The sessions the index names for this seeker under `roots`, judged on their states. Only
    /// a session found is an answer: anything else is decided by a [`Seeker::scan`]. So is
    /// everything when the index names a session for the owner's PID that no longer holds it:
    /// the engine's `session.sh` moved the PID to another session without updating the index,
    /// and a session the index knows by the conversation or a last-known PID must not win over
    /// the one that holds the PID now.
    pub(super) fn through_index(&self, roots: &[PathBuf]) -> Option<Scan> {
        let mut keys = vec![Key::Pid(self.pid), Key::LastPid(self.pid)];
        keys.extend(self.pane.map(Key::Pane));
        keys.extend(self.conversation.map(Key::Conversation));
        let mut candidates: Vec<PathBuf> = Vec::new();
        if !roots
            .iter()
            .all(|root| !root.is_dir() || index::is_current(root))
        {
            return None;
        }
        let mut holders: Vec<PathBuf> = Vec::new();
        for root in roots {
            for key in &keys {
                if let Some(dir) = index::lookup(root, *key) {
                    if matches!(key, Key::Pid(_)) {
                        holders.push(dir.clone());
                    }
                    if !candidates.contains(&dir) {
                        candidates.push(dir);
                    }
                }
            }
        }
        candidates.sort();
        let states: Vec<(PathBuf, State)> = candidates
            .into_iter()
            .filter_map(|dir| Some((keys_of(&dir)?, dir)))
            .map(|(state, dir)| (dir, state))
            .collect();
        let moved = holders.iter().any(|holder| {
            states
                .iter()
                .find(|(dir, _)| dir == holder)
                .is_none_or(|(_, state)| state.pid(fields::PID) != Some(self.pid))
        });
        if moved {
            return None;
        }
        match self.judge(states.iter().map(|(d, s)| (d.as_path(), s))) {
            found @ (Scan::Found(_) | Scan::Conversation(_)) => Some(found),
            Scan::Held | Scan::Nothing => None,
        }
    }

    /// Judge every session under `roots` (each state read once), and rebuild their indexes from
    /// what the scan read.
    pub(super) fn scan(&self, roots: &[PathBuf]) -> Scan {
        let surveyed = survey(roots);
        self.judge(
            surveyed
                .iter()
                .flat_map(|(_, states)| states.iter().map(|(d, s)| (d.as_path(), s))),
        )
    }
}

/// Every session's key fields under each of `roots`, in name order; each root's index is
/// rebuilt from them.
pub(super) fn survey(roots: &[PathBuf]) -> Vec<(PathBuf, Vec<(PathBuf, State)>)> {
    roots
        .iter()
        .map(|root| {
            index::prepare(root);
            let stamp = index::stamp_of(root);
            let states: Vec<(PathBuf, State)> = session_dirs(root)
                .into_iter()
                .filter_map(|dir| Some((keys_of(&dir)?, dir)))
                .map(|(state, dir)| (dir, state))
                .collect();
            index::rebuild(root, stamp.as_deref(), &index_entries(&states));
            (root.clone(), states)
        })
        .collect()
}

/// The index entries of surveyed sessions: `lastKnownPid` only where no other live process
/// holds the session (such an entry could never be an answer).
fn index_entries(states: &[(PathBuf, State)]) -> Vec<(String, String)> {
    let mut entries = Vec::new();
    for (dir, state) in states {
        let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let mut keys = Vec::new();
        if let Some(pid) = state.pid(fields::PID) {
            keys.push(Key::Pid(pid));
        }
        if let Some(last) = state.pid(fields::LAST_KNOWN_PID) {
            if !held_elsewhere(state, last) {
                keys.push(Key::LastPid(last));
            }
        }
        keys.extend(state.str(fields::FLEET_PANE_ID).map(Key::Pane));
        keys.extend(state.window_conversation().map(Key::Conversation));
        keys.extend(
            state
                .str(fields::PRIMARY_TRANSCRIPT_KEY)
                .and_then(transcript_conversation)
                .map(Key::Conversation),
        );
        entries.extend(keys.iter().map(|k| (k.text(), name.to_owned())));
    }
    entries
}

/// A quick look at some fields of a state.
pub(super) fn peek_fields(path: &Path, fields: &[&str]) -> Option<State> {
    State::parse_fields(&peek(path)?, fields).ok()
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    use proptest::prelude::*;

    proptest! {
        /// Names that share a prefix (as session names do) and then differ in a byte or in
        /// length, within and past the first 24 bytes: the same order as a plain sort.
        #[test]
        fn names_sort_in_byte_order(
            prefix in proptest::collection::vec(1..=255u8, 0..30),
            tails in proptest::collection::vec(proptest::collection::vec(1..=255u8, 0..12), 1..8),
        ) {
            let names: Vec<OsString> = tails
                .into_iter()
                .map(|tail| OsString::from_vec([prefix.as_slice(), &tail].concat()))
                .collect();
            let mut sorted = names.clone();
            super::sort_names(&mut sorted);
            let mut expected = names;
            expected.sort();
            prop_assert_eq!(sorted, expected);
        }
    }
}
