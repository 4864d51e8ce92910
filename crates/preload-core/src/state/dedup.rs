//! "Is this file already in context?": path equality after normalisation, then device + inode.
//!
//! The inode comparison catches other spellings of a path (a `~` form, a symlinked directory
//! not normalised by an older writer), hardlinks and file symlinks. To stay cheap on sessions
//! with thousands of `preloadedFiles`, a plain file (one link, not a symlink) is compared only
//! with the entries of the same name; a file with several links, or reached through a symlink,
//! is compared with every entry.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde_json::Value;

use crate::primitives::memo::Memo;
use crate::state::{Paths, State};

/// How a candidate matched something already in context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    /// The same normalised path.
    Path,
    /// A different path to the same file.
    Inode,
}

impl Hit {
    /// The delivery log's `dedupResult`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Path => "skip-path",
            Self::Inode => "skip-inode",
        }
    }
}

/// What identifies a file, and whether other names for it may exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    /// Device and inode (symlinks followed).
    pub id: (u64, u64),
    /// True when the file has several links or the path is a symlink: its other names can
    /// differ in more than the directory.
    pub aliased: bool,
}

/// The identity of an existing file: one `lstat`, and a `stat` only for a symbolic link.
pub fn identity(path: &Path) -> Option<Identity> {
    let own = std::fs::symlink_metadata(path).ok()?;
    let is_link = own.file_type().is_symlink();
    let meta = if is_link {
        std::fs::metadata(path).ok()?
    } else {
        own
    };
    Some(Identity {
        id: (meta.dev(), meta.ino()),
        aliased: is_link || meta.nlink() > 1,
    })
}

/// File identities looked up once per hook call, however many passes ask.
///
/// A hook process lives for one call, so a file's identity does not change under it.
#[derive(Debug, Default)]
pub struct FileIds(Memo<String, Option<Identity>>);

impl FileIds {
    /// The identity of `path`, from the memo when known.
    pub fn get(&self, path: &str) -> Option<Identity> {
        self.0.get_or_keep(path, || identity(Path::new(path)))
    }
}

/// True when the last component of `path` is `name` (cheaper than splitting the path): the
/// byte before it and its first byte are compared before the rest, so the entries of other
/// names (nearly all, in a long list) cost two byte comparisons.
fn has_name(path: &str, name: &str) -> bool {
    let (path, name) = (path.as_bytes(), name.as_bytes());
    let Some(head) = path.len().checked_sub(name.len()) else {
        return false;
    };
    (head == 0 || path[head - 1] == b'/') && path.get(head) == name.first() && path[head..] == *name
}

/// The last component of `path` (all of it without a `/`): looked for from the end, where it is.
fn base_name(path: &str) -> &str {
    match path.as_bytes().iter().rposition(|&b| b == b'/') {
        Some(slash) => &path[slash + 1..],
        None => path,
    }
}

/// The files already in context: the entries of a state's string array (`preloadedFiles`, or a
/// sub-agent's), read where they are, with the inode index built only when an aliased candidate
/// needs it.
///
/// The first checks scan the array. A pass that checks many candidates against a long array (a
/// discovery on a session with thousands of files checks a hundred) then finds the entries of a
/// name through an index of their names' hashes (from its first check when it said it would
/// make many, [`Self::expect`]), which follows the array as the pass appends to
/// it ([`Self::append`]). An array of another length than those appends make, or whose last indexed
/// entry moved, is indexed again, and every entry the index points to is read and compared
/// before it counts.
#[derive(Debug)]
pub struct InContext {
    key: String,
    /// Every entry's inode, built the first time an aliased candidate needs it.
    inodes: Option<HashSet<(u64, u64)>>,
    /// Checks made, before the names are indexed.
    checks: usize,
    names: Option<Names>,
}

/// Checks that scan before [`Names`] is built.
const SCANS_BEFORE_INDEX: usize = 8;
/// Arrays shorter than this are always scanned.
const INDEXED_FROM: usize = 256;
/// Arrays longer than this are scanned too: [`Names`] keeps positions in 32 bits (no state file
/// of at most 16 MiB comes near).
const INDEXED_UP_TO: usize = (u32::MAX / 2) as usize;

/// The positions of an array's entries by the hash of their names: an open-addressing table
/// (linear probing) of `(high half of the hash, position + 1)`, `0` marking a free slot, at most
/// three quarters full. The hashes are used as they are (they are hashes already), so building
/// it is a few instructions an entry (sorting the pairs was hundreds), and a slot is 8 bytes.
#[derive(Debug)]
struct Names {
    slots: Vec<(u32, u32)>,
    /// Slots in use.
    used: usize,
    /// Entries indexed.
    len: usize,
    /// The last entry indexed, as it was.
    last: Option<String>,
    /// The array's length after the appends the pass made since ([`InContext::add`]).
    expected: usize,
}

fn last_of(items: &[Value]) -> Option<String> {
    items.last()?.as_str().map(str::to_owned)
}

/// A name's key in [`Names`]. Names that share one are told apart by comparing the entries.
fn name_hash(name: &str) -> u64 {
    crate::state::stamps::words_hash(name.as_bytes())
}

fn indexed(items: &[Value], from: usize) -> impl Iterator<Item = (u64, usize)> + '_ {
    items
        .iter()
        .enumerate()
        .skip(from)
        .filter_map(|(i, v)| Some((name_hash(base_name(v.as_str()?)), i)))
}

impl Names {
    fn of(items: &[Value]) -> Self {
        let mut names = Self {
            slots: vec![(0, 0); (items.len() * 4 / 3 + 1).next_power_of_two().max(16)],
            used: 0,
            len: items.len(),
            last: last_of(items),
            expected: items.len(),
        };
        for (hash, i) in indexed(items, 0) {
            names.insert(hash, i);
        }
        names
    }

    /// The part of `hash` a slot keeps: its high half, which also picks the first slot to look
    /// at (the table has at most 2^32 slots).
    fn key(hash: u64) -> u32 {
        (hash >> 32) as u32
    }

    /// Index the entry at `position` (below [`INDEXED_UP_TO`]).
    fn insert(&mut self, hash: u64, position: usize) {
        let stored = u32::try_from(position + 1).unwrap_or(u32::MAX);
        if (self.used + 1) * 4 > self.slots.len() * 3 {
            let grown = vec![(0, 0); self.slots.len() * 2];
            let old = std::mem::replace(&mut self.slots, grown);
            for slot in old.into_iter().filter(|(_, p)| *p != 0) {
                self.place(slot);
            }
        }
        self.place((Self::key(hash), stored));
        self.used += 1;
    }

    /// Put `(key, stored)` in the first free slot from its key's.
    fn place(&mut self, slot: (u32, u32)) {
        let mask = self.slots.len() - 1;
        let mut at = slot.0 as usize & mask;
        while self.slots[at].1 != 0 {
            at = (at + 1) & mask;
        }
        self.slots[at] = slot;
    }

    /// Follow `items`: index what was appended; index again when an entry indexed went.
    fn follow(&mut self, items: &[Value]) {
        let unmoved = items.len() == self.expected
            && items.len() >= self.len
            && self.len.checked_sub(1).and_then(|i| items.get(i)?.as_str()) == self.last.as_deref();
        if !unmoved {
            *self = Self::of(items);
        } else if items.len() > self.len {
            for (hash, i) in indexed(items, self.len) {
                self.insert(hash, i);
            }
            self.len = items.len();
            self.last = last_of(items);
        }
    }

    /// Positions whose entries may be named `name`.
    fn positions(&self, name: &str) -> impl Iterator<Item = usize> + '_ {
        let key = Self::key(name_hash(name));
        let mask = self.slots.len() - 1;
        let mut at = key as usize & mask;
        std::iter::from_fn(move || {
            loop {
                let (k, stored) = self.slots[at];
                if stored == 0 {
                    return None;
                }
                at = (at + 1) & mask;
                if k == key {
                    return Some(stored as usize - 1);
                }
            }
        })
    }
}

impl InContext {
    /// The files in context are the paths of `list`.
    pub fn new(list: Paths<'_>) -> Self {
        Self {
            key: list.key().into_owned(),
            inodes: None,
            checks: 0,
            names: None,
        }
    }

    /// Whether this indexes `list`.
    pub fn is_for(&self, list: Paths<'_>) -> bool {
        self.key == list.key()
    }

    /// A pass about to make at least `checks` checks: when they are more than the scans the
    /// name index is built after, it is built at the first (the scans would only come first).
    pub fn expect(&mut self, checks: usize) {
        if checks > SCANS_BEFORE_INDEX {
            self.checks = self.checks.max(SCANS_BEFORE_INDEX);
        }
    }

    /// The entries named `name` (by their last component), in any order.
    fn named<'s>(&mut self, state: &'s State, name: &str) -> Vec<&'s str> {
        let items = state.items(&self.key);
        self.checks += 1;
        if items.len() > INDEXED_UP_TO {
            self.names = None;
        } else if self.names.is_none()
            && self.checks > SCANS_BEFORE_INDEX
            && items.len() >= INDEXED_FROM
        {
            self.names = Some(Names::of(items));
        }
        match self.names.as_mut() {
            Some(names) => {
                names.follow(items);
                names
                    .positions(name)
                    .filter_map(|i| items.get(i)?.as_str())
                    .filter(|p| has_name(p, name))
                    .collect()
            }
            None => items
                .iter()
                .filter_map(Value::as_str)
                .filter(|p| has_name(p, name))
                .collect(),
        }
    }

    /// Whether `normalized` is already in context in `state`, and how; identities come from
    /// `ids`.
    pub fn check(&mut self, state: &State, normalized: &str, ids: &FileIds) -> Option<Hit> {
        // One pass: the same path is among the entries of the same name, which are also the
        // ones a plain file can be under another directory.
        let name = base_name(normalized);
        let same_name = self.named(state, name);
        if same_name.contains(&normalized) {
            return Some(Hit::Path);
        }
        let candidate = ids.get(normalized)?;
        if same_name
            .into_iter()
            .filter_map(|p| ids.get(p))
            .any(|other| other.id == candidate.id)
        {
            return Some(Hit::Inode);
        }
        if !candidate.aliased {
            return None;
        }
        if self.inodes.is_none() {
            let all = state
                .entries_of(&self.key)
                .filter_map(|p| ids.get(p))
                .map(|i| i.id)
                .collect();
            self.inodes = Some(all);
        }
        self.inodes
            .as_ref()
            .is_some_and(|all| all.contains(&candidate.id))
            .then_some(Hit::Inode)
    }

    /// Add to the state's array a file this index's last [`Self::check`] of it found absent:
    /// appended without searching the array again (on a large state, five thousand entries a
    /// delivered file).
    pub fn append(&mut self, state: &mut State, normalized: &str, ids: &FileIds) {
        debug_assert!(
            !state.entries_of(&self.key).any(|p| p == normalized),
            "{normalized} appended twice"
        );
        state
            .array_mut(&self.key)
            .push(Value::String(normalized.to_owned()));
        self.add(normalized, ids);
    }

    /// Note a file just added to the state's array.
    fn add(&mut self, normalized: &str, ids: &FileIds) {
        if let Some(names) = self.names.as_mut() {
            names.expected += 1;
        }
        if let (Some(inodes), Some(found)) = (self.inodes.as_mut(), ids.get(normalized)) {
            inodes.insert(found.id);
        }
    }
}

#[cfg(test)]
mod tests;
