//! What each delivered file was when it went out (`preloadedStamps`): the identity, size and
//! modification time of the files it was made from and a hash of the text sent, so a change on
//! disk is seen cheaply (metadata first, the content hashed only when that moved).
//!
//! A plain file's stamp is one string, `<dev>:<ino>:<size>:<mtime ns>:<hash>`; a pack's is an
//! object with the hash, the characters sent and one such metadata string per source file.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::state::State;
use crate::state::fields;

/// A file's identity and the metadata a change moves: device, inode, size, mtime (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time in nanoseconds since the epoch.
    pub mtime_ns: i128,
}

impl Meta {
    /// The metadata of the file at `path` (symlinks followed); `None` when it is not there.
    pub fn of(path: &Path) -> Option<Self> {
        std::fs::metadata(path).ok().as_ref().map(Self::from)
    }

    fn encode(meta: Option<Self>) -> String {
        meta.map_or_else(
            || "-".to_owned(),
            |m| format!("{}:{}:{}:{}", m.dev, m.ino, m.size, m.mtime_ns),
        )
    }
}

impl From<&std::fs::Metadata> for Meta {
    fn from(m: &std::fs::Metadata) -> Self {
        Self {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        }
    }
}

/// The content hash of a text sent: `w` and 16 hex digits of [`words_hash`].
///
/// Stamps written before it hold 16 hex digits of FNV-1a, which takes a multiplication per byte
/// (a tenth of SessionStart's instructions); they are compared in their own kind
/// ([`Stamp::matches`]) and replaced as they are refreshed, so none looks changed.
pub fn hash(text: &str) -> String {
    format!("{WORDS_TAG}{:016x}", words_hash(text.as_bytes()))
}

/// The first character of a [`hash`]; an FNV-1a hash is hex digits only.
const WORDS_TAG: char = 'w';

/// `text`'s hash in the kind `stored` is: FNV-1a for 16 hex digits, else [`hash`].
fn hash_like(stored: &str, text: &str) -> String {
    if stored.len() == 16 && stored.bytes().all(|b| b.is_ascii_hexdigit()) {
        fnv1a(text)
    } else {
        hash(text)
    }
}

/// FNV-1a, 64 bits, in hex: the hash of the stamps of earlier releases.
pub fn fnv1a(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// A 64-bit hash of `bytes`, sixteen at a time in two lanes, each word folded in by a 128-bit
/// multiplication (the mixing of wyhash): for telling a changed file, not against an adversary.
pub fn words_hash(bytes: &[u8]) -> u64 {
    const K0: u64 = 0xa076_1d64_78bd_642f;
    const K1: u64 = 0xe703_7ed1_a0b4_28db;
    fn fold(a: u64, b: u64) -> u64 {
        let m = u128::from(a) * u128::from(b);
        #[allow(clippy::cast_possible_truncation)]
        let (lo, hi) = (m as u64, (m >> 64) as u64);
        lo ^ hi
    }
    // The `n` (at most 8) bytes that end at `end`, zero-padded: the eight bytes ending there
    // loaded at once and shifted, where there are eight; else copied one by one (a copy of a
    // length not known until now is a `memcpy` call, the most of a short name's hash).
    let word = |end: usize, n: usize| {
        if n == 0 {
            return 0;
        }
        if let Some(last) = end.checked_sub(8).and_then(|start| bytes.get(start..end)) {
            let last = <[u8; 8]>::try_from(last).unwrap_or_default();
            return u64::from_le_bytes(last) >> (8 * (8 - n));
        }
        let mut w = [0u8; 8];
        for (slot, byte) in w.iter_mut().zip(&bytes[end - n..end]) {
            *slot = *byte;
        }
        u64::from_le_bytes(w)
    };
    let mut a = K0 ^ bytes.len() as u64;
    let mut b = K1;
    let mut chunks = bytes.chunks_exact(16);
    for chunk in &mut chunks {
        let x = <[u8; 8]>::try_from(&chunk[..8]).unwrap_or_default();
        let y = <[u8; 8]>::try_from(&chunk[8..]).unwrap_or_default();
        a = fold(a ^ u64::from_le_bytes(x), K1);
        b = fold(b ^ u64::from_le_bytes(y), K0);
    }
    let rest = chunks.remainder().len();
    let (x, y) = (rest.min(8), rest.saturating_sub(8));
    a = fold(a ^ word(bytes.len() - rest + x, x), K1);
    b = fold(b ^ word(bytes.len(), y), K0);
    fold(a ^ K0, b ^ K1)
}

/// What a delivered file or pack was when it went out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// The hash of the text sent.
    pub hash: String,
    /// The files it was made from, each with its encoded metadata (`-` when absent).
    pub sources: Vec<(String, String)>,
    /// Characters sent (packs).
    pub chars: Option<usize>,
}

impl Stamp {
    /// The stamp of the plain file at `path` whose text `text` was sent, read with the metadata
    /// `read` (from the descriptor it was read through: no second look at the path, which could
    /// meet a newer file than the text).
    pub fn of_file(path: &str, text: &str, read: &std::fs::Metadata) -> Self {
        Self {
            hash: hash(text),
            sources: vec![(path.to_owned(), Meta::encode(Some(Meta::from(read))))],
            chars: None,
        }
    }

    /// The stamp of a text made from `sources` (a pack), each with its metadata from when it
    /// was read for the text (`None`: not there).
    pub fn of_sources(sources: &[(PathBuf, Option<Meta>)], text: &str) -> Self {
        Self {
            hash: hash(text),
            sources: sources
                .iter()
                .map(|(p, meta)| (p.to_string_lossy().into_owned(), Meta::encode(*meta)))
                .collect(),
            chars: Some(crate::primitives::delivery::chars(text)),
        }
    }

    /// True when `now`, the stamp of `text` as it is now, is of the text this stamp was made
    /// of: compared in this stamp's kind of hash (an earlier release's FNV-1a is hashed again).
    pub fn matches(&self, now: &Stamp, text: &str) -> bool {
        if self.hash.starts_with(WORDS_TAG) == now.hash.starts_with(WORDS_TAG) {
            self.hash == now.hash
        } else {
            hash_like(&self.hash, text) == self.hash
        }
    }

    /// True when every source still has the metadata it had (nothing to hash).
    pub fn unmoved(&self) -> bool {
        self.sources
            .iter()
            .all(|(path, meta)| Meta::encode(Meta::of(Path::new(path))) == *meta)
    }

    /// As stored under `key`.
    fn to_value(&self, key: &str) -> Value {
        match self.sources.as_slice() {
            [(path, meta)] if path == key && self.chars.is_none() => {
                Value::String(format!("{meta}:{}", self.hash))
            }
            _ => {
                let mut map = Map::new();
                map.insert(fields::STAMP_HASH.into(), Value::from(self.hash.as_str()));
                if let Some(chars) = self.chars {
                    map.insert(fields::STAMP_CHARS.into(), Value::from(chars));
                }
                let sources: Map<String, Value> = self
                    .sources
                    .iter()
                    .map(|(p, m)| (p.clone(), Value::from(m.as_str())))
                    .collect();
                map.insert(fields::STAMP_SOURCES.into(), Value::Object(sources));
                Value::Object(map)
            }
        }
    }

    /// Read what is stored under `key`.
    fn from_value(key: &str, value: &Value) -> Option<Self> {
        match value {
            Value::String(s) => {
                let (meta, hash) = s.rsplit_once(':')?;
                Some(Self {
                    hash: hash.to_owned(),
                    sources: vec![(key.to_owned(), meta.to_owned())],
                    chars: None,
                })
            }
            Value::Object(map) => Some(Self {
                hash: map.get(fields::STAMP_HASH)?.as_str()?.to_owned(),
                chars: map
                    .get(fields::STAMP_CHARS)
                    .and_then(Value::as_u64)
                    .and_then(|n| usize::try_from(n).ok()),
                sources: map
                    .get(fields::STAMP_SOURCES)?
                    .as_object()?
                    .iter()
                    .filter_map(|(p, m)| Some((p.clone(), m.as_str()?.to_owned())))
                    .collect(),
            }),
            _ => None,
        }
    }
}

/// The stamp recorded for `key`.
pub fn get(state: &State, key: &str) -> Option<Stamp> {
    let value = state.get(fields::PRELOADED_STAMPS)?.get(key)?;
    Stamp::from_value(key, value)
}

/// Record `stamp` for `key`.
pub fn set(state: &mut State, key: &str, stamp: &Stamp) {
    state
        .object_mut(fields::PRELOADED_STAMPS)
        .insert(key.to_owned(), stamp.to_value(key));
}

/// Mark the stamp of `key` as of a text other than the file's now, whatever it holds: the next
/// delivery of it says `updated` (the window holds an older text of it, and the newer one it was
/// sent went out of the window with a rewind). Nothing when `key` has no stamp.
pub fn mark_stale(state: &mut State, key: &str) {
    if let Some(mut stamp) = get(state, key) {
        // No hash is the tag alone (see `hash`).
        stamp.hash = WORDS_TAG.to_string();
        set(state, key, &stamp);
    }
}

/// Every key with a stamp, in order.
pub fn keys(state: &State) -> Vec<String> {
    match state.get(fields::PRELOADED_STAMPS) {
        Some(Value::Object(map)) => map.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// Forget the stamp of `key` (the field goes when it empties).
pub fn remove(state: &mut State, key: &str) {
    if !matches!(state.get(fields::PRELOADED_STAMPS), Some(Value::Object(map)) if map.contains_key(key))
    {
        return;
    }
    let now_empty = match state.value_mut(fields::PRELOADED_STAMPS) {
        Some(Value::Object(map)) => {
            map.shift_remove(key);
            map.is_empty()
        }
        _ => false,
    };
    if now_empty {
        state.remove(fields::PRELOADED_STAMPS);
    }
}

/// Keep only the stamps of the keys `keep` holds (the field goes when it empties).
pub fn retain(state: &mut State, keep: &[String]) {
    for key in keys(state) {
        if !keep.contains(&key) {
            remove(state, &key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_stamp_holds_the_file_that_was_read() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("A.md");
        std::fs::write(&path, "one").unwrap();
        let (body, read) = crate::primitives::delivery::read_for_delivery_meta(&path, 1024);
        let crate::primitives::delivery::FileBody::Text(text) = body else {
            panic!("read: {body:?}");
        };
        // Replaced after the read, before the stamp is made: the stamp is of what was read.
        std::fs::write(tmp.path().join("new"), "two!").unwrap();
        std::fs::rename(tmp.path().join("new"), &path).unwrap();
        let stamp = Stamp::of_file(&path.to_string_lossy(), &text, &read.unwrap());
        assert_eq!(stamp.hash, hash("one"));
        assert!(!stamp.unmoved(), "the file at the path is not the one read");
    }

    #[test]
    fn a_file_stamp_round_trips_as_one_string_and_sees_a_change() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("A.md");
        std::fs::write(&path, "one").unwrap();
        let key = path.to_string_lossy().into_owned();
        let stamp = Stamp::of_file(&key, "one", &std::fs::metadata(&path).unwrap());
        let mut state = State::default();
        set(&mut state, &key, &stamp);
        let stored = &state.get(fields::PRELOADED_STAMPS).unwrap()[key.as_str()];
        assert!(stored.is_string(), "{stored}");
        assert!(
            stored
                .as_str()
                .unwrap()
                .ends_with(&format!(":{}", hash("one")))
        );
        assert_eq!(get(&state, &key), Some(stamp.clone()));
        assert!(stamp.unmoved());
        std::fs::write(&path, "two, longer").unwrap();
        assert!(!stamp.unmoved());
        remove(&mut state, &key);
        assert!(state.get(fields::PRELOADED_STAMPS).is_none());
    }

    #[test]
    fn a_pack_stamp_keeps_its_sources_and_characters() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a.md");
        std::fs::write(&a, "a").unwrap();
        let missing = tmp.path().join("later.md");
        let sources = [(a.clone(), Meta::of(&a)), (missing.clone(), None)];
        let stamp = Stamp::of_sources(&sources, "the text");
        let mut state = State::default();
        set(&mut state, "/p/.claude/context-packs.json#x", &stamp);
        assert_eq!(
            get(&state, "/p/.claude/context-packs.json#x"),
            Some(stamp.clone())
        );
        assert_eq!(stamp.chars, Some(8));
        assert!(stamp.unmoved());
        std::fs::write(&missing, "now here").unwrap();
        assert!(!stamp.unmoved(), "a source that appears is a change");
        assert_eq!(keys(&state), ["/p/.claude/context-packs.json#x"]);
    }

    #[test]
    fn the_old_hash_is_fnv1a() {
        assert_eq!(fnv1a(""), "cbf29ce484222325");
        assert_eq!(fnv1a("a"), "af63dc4c8601ec8c");
    }

    #[test]
    fn a_stamp_of_an_earlier_release_matches_the_same_text_only() {
        let text = "# Standards\n\nline two\n";
        let now = Stamp {
            hash: hash(text),
            sources: Vec::new(),
            chars: None,
        };
        let old = Stamp {
            hash: fnv1a(text),
            ..now.clone()
        };
        assert!(now.hash.starts_with(WORDS_TAG) && now.hash.len() == 17);
        assert!(old.matches(&now, text));
        assert!(now.matches(&now.clone(), text));
        let changed = "# Standards\n\nline 2\n";
        let then = Stamp {
            hash: hash(changed),
            ..now.clone()
        };
        assert!(!old.matches(&then, changed));
        assert!(!now.matches(&then, changed));
    }

    #[test]
    #[allow(clippy::cast_possible_truncation)]
    fn the_words_hash_of_every_length_is_the_one_stamps_were_written_with() {
        // The hash as earlier builds computed it (its last bytes copied one by one): stamps in
        // states on disk hold it.
        fn as_written(bytes: &[u8]) -> u64 {
            const K0: u64 = 0xa076_1d64_78bd_642f;
            const K1: u64 = 0xe703_7ed1_a0b4_28db;
            let fold = |a: u64, b: u64| {
                let m = u128::from(a) * u128::from(b);
                (m as u64) ^ ((m >> 64) as u64)
            };
            let word = |b: &[u8]| {
                let mut w = [0u8; 8];
                w[..b.len()].copy_from_slice(b);
                u64::from_le_bytes(w)
            };
            let (mut a, mut b) = (K0 ^ bytes.len() as u64, K1);
            let mut chunks = bytes.chunks_exact(16);
            for chunk in &mut chunks {
                a = fold(a ^ word(&chunk[..8]), K1);
                b = fold(b ^ word(&chunk[8..]), K0);
            }
            let rest = chunks.remainder();
            let (x, y) = rest.split_at(rest.len().min(8));
            a = fold(a ^ word(x), K1);
            b = fold(b ^ word(y), K0);
            fold(a ^ K0, b ^ K1)
        }
        let text: Vec<u8> = (0..80u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
        for len in 0..=text.len() {
            for start in [0, 1, 7] {
                let bytes = &text[start.min(len)..len];
                assert_eq!(
                    words_hash(bytes),
                    as_written(bytes),
                    "{} bytes",
                    bytes.len()
                );
            }
        }
    }

    #[test]
    fn the_words_hash_sees_every_byte_and_the_length() {
        let base: Vec<u8> = (0..100u8).collect();
        let mut seen = std::collections::HashSet::new();
        for len in 0..=base.len() {
            assert!(seen.insert(words_hash(&base[..len])), "length {len}");
        }
        for i in 0..base.len() {
            let mut flipped = base.clone();
            flipped[i] ^= 1;
            assert!(seen.insert(words_hash(&flipped)), "byte {i}");
        }
        assert_ne!(words_hash(b"a\0"), words_hash(b"a"));
    }
}
