//! The session index: which session directory holds an owner PID, a last-known PID, a fleet
//! pane or a conversation, kept in `sessions/.preload-index/` so that a lookup reads one small
//! file and one state instead of every state.
//!
//! Entries are spread over at most [`BUCKETS`] files by a stable hash of their key (FNV-1a), each
//! a JSON object from key (`pid:<n>`, `last:<n>`, `pane:<id>`, `conv:<id>`) to the name of a
//! session directory beside the index. The index is a cache and is never trusted: every hit is
//! checked against the state file it names, a bucket that does not parse is a miss, and the
//! engine's bash writers (which set `pid`, `fleetPaneId` and `sessionId` without knowing of it)
//! are caught by the scan a miss falls back to, which rebuilds the index from every state. A
//! `stamp` records the sessions directory as the scan listed it: once a session directory has
//! been added or removed since, the index is not used until the next scan. Our writers add the
//! entries they create, after the state write that made them true; concurrent writers of one
//! bucket exclude each other with the directory's latch.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::primitives::file;
use crate::primitives::lock::Latch;
use crate::state::Keyed;

/// The index directory inside a sessions directory.
pub const DIR: &str = ".preload-index";
/// How many bucket files the entries are spread over.
pub const BUCKETS: u64 = 256;
/// Largest bucket file read.
const MAX_BUCKET_BYTES: u64 = 4 * 1024 * 1024;
/// How long a writer waits for another writer of the index.
const LATCH_WAIT: Duration = Duration::from_millis(200);

/// What an entry is found by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key<'a> {
    /// The session's `pid`.
    Pid(u32),
    /// The session's `lastKnownPid`.
    LastPid(u32),
    /// The session's `fleetPaneId`.
    Pane(&'a str),
    /// The conversation of the session (`sessionId`, or `<id>.jsonl` as `primaryTranscriptKey`).
    Conversation(&'a str),
}

impl Key<'_> {
    /// The entry's name in its bucket.
    pub fn text(&self) -> String {
        match self {
            Self::Pid(pid) => format!("pid:{pid}"),
            Self::LastPid(pid) => format!("last:{pid}"),
            Self::Pane(pane) => format!("pane:{pane}"),
            Self::Conversation(id) => format!("conv:{id}"),
        }
    }
}

/// FNV-1a: the same bucket for a key in every build and every release.
fn bucket_of(key: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in key.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash % BUCKETS
}

fn bucket_file(root: &Path, bucket: u64) -> PathBuf {
    root.join(DIR).join(format!("{bucket:02x}.json"))
}

/// A bucket's entries, key text to session directory name, in the order they were written.
type Bucket = Keyed<String>;

/// The bucket file at `path`; empty when it is missing or not an object (a miss, rebuilt by the
/// scan). An entry whose name is not text is left out.
fn read_bucket(path: &Path) -> Bucket {
    file::read_text(path, MAX_BUCKET_BYTES)
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// Whether two buckets hold the same entries, in whatever order.
fn same_entries(a: &Bucket, b: &Bucket) -> bool {
    a.iter().count() == b.iter().count() && a.iter().all(|(key, name)| b.get(key) == Some(name))
}

/// Write a bucket (best effort: a failure leaves it as it was, and the next miss rebuilds it).
fn write_bucket(path: &Path, bucket: &Bucket) {
    if let Ok(bytes) = serde_json::to_vec(bucket) {
        let _ = file::write_cache(path, &bytes);
    }
}

/// A session directory name: one plain path component.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/')
}

/// The stamp file of the index of `root`.
fn stamp_file(root: &Path) -> PathBuf {
    root.join(DIR).join("stamp")
}

/// The sessions directory `root` as a stamp: its inode and modification time, which change when
/// an entry is added or removed.
pub fn stamp_of(root: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = fs::symlink_metadata(root).ok()?;
    Some(format!(
        "{} {} {}",
        meta.ino(),
        meta.mtime(),
        meta.mtime_nsec()
    ))
}

/// Make the index directory of `root` when `root` holds a session directory (before a stamp is
/// taken: making it changes `root`); a sessions directory without sessions is left untouched.
pub fn prepare(root: &Path) {
    let dir = root.join(DIR);
    if dir.is_dir() {
        return;
    }
    let has_session = fs::read_dir(root).is_ok_and(|mut entries| {
        entries.any(|e| e.is_ok_and(|e| !e.file_name().to_string_lossy().starts_with('.')))
    });
    if has_session {
        let _ = fs::create_dir(dir);
    }
}

/// True when the index of `root` was rebuilt from a scan of the session directories `root`
/// holds now (none added or removed since).
pub fn is_current(root: &Path) -> bool {
    let recorded = file::read_text(&stamp_file(root), 256);
    recorded.is_some_and(|r| Some(r.trim()) == stamp_of(root).as_deref())
}

/// The session directory the index names for `key` under the sessions directory `root`, not
/// yet checked against its state.
pub fn lookup(root: &Path, key: Key) -> Option<PathBuf> {
    let text = key.text();
    let bucket = read_bucket(&bucket_file(root, bucket_of(&text)));
    let name = bucket.get(&text)?;
    is_plain_name(name).then(|| root.join(name))
}

/// Record that the session directory `dir` (inside a sessions directory) holds `keys`, when
/// that sessions directory has an index. Best effort: a failure leaves the index as it was, and
/// the next miss rebuilds it.
pub fn record(dir: &Path, keys: &[Key]) {
    let (Some(root), Some(name)) = (dir.parent(), dir.file_name().and_then(|n| n.to_str())) else {
        return;
    };
    // Without an index (no scan made one yet) there is nothing to keep up to date.
    if keys.is_empty() || !is_plain_name(name) || !root.join(DIR).is_dir() {
        return;
    }
    let mut by_bucket: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for key in keys {
        let text = key.text();
        by_bucket.entry(bucket_of(&text)).or_default().push(text);
    }
    for (bucket, texts) in by_bucket {
        let path = bucket_file(root, bucket);
        let Ok(latch) = Latch::take(&path, Instant::now() + LATCH_WAIT) else {
            continue;
        };
        let mut entries = read_bucket(&path);
        let before = entries.clone();
        for text in texts {
            entries.insert(&text, name.to_owned());
        }
        if entries != before {
            write_bucket(&path, &entries);
        }
        drop(latch);
    }
}

/// Replace the index of the sessions directory `root` with `entries` (key text, session
/// directory name), what a scan of every state found when `root` was `stamp` ([`stamp_of`],
/// taken before the scan listed it); the first entry of a key wins, as the scan's order does.
/// Buckets that did not change are not written, and those left empty go.
pub fn rebuild(root: &Path, stamp: Option<&str>, entries: &[(String, String)]) {
    let dir = root.join(DIR);
    if !dir.is_dir() {
        return;
    }
    let mut buckets: BTreeMap<u64, Bucket> = BTreeMap::new();
    for (key, name) in entries.iter().filter(|(_, name)| is_plain_name(name)) {
        let bucket = buckets.entry(bucket_of(key)).or_default();
        if bucket.get(key).is_none() {
            bucket.insert(key, name.clone());
        }
    }
    let Ok(latch) = Latch::take(&bucket_file(root, 0), Instant::now() + LATCH_WAIT) else {
        return;
    };
    for (bucket, map) in &buckets {
        let path = bucket_file(root, *bucket);
        if !same_entries(&read_bucket(&path), map) {
            write_bucket(&path, map);
        }
    }
    if let Ok(listing) = fs::read_dir(&dir) {
        for entry in listing.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let stale = name
                .strip_suffix(".json")
                .and_then(|hex| u64::from_str_radix(hex, 16).ok())
                .is_some_and(|bucket| !buckets.contains_key(&bucket));
            if stale {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
    file::remove_orphans(&dir);
    match stamp {
        Some(stamp) => {
            let _ = file::write_cache(&stamp_file(root), format!("{stamp}\n").as_bytes());
        }
        None => {
            let _ = fs::remove_file(stamp_file(root));
        }
    }
    drop(latch);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_land_in_stable_buckets() {
        // Fixed by the hash function: a change would orphan every index on disk.
        assert_eq!(bucket_of("pid:1234"), bucket_of("pid:1234"));
        assert_eq!(bucket_of(""), 0xcbf2_9ce4_8422_2325 % BUCKETS);
        let spread: std::collections::BTreeSet<u64> =
            (0..2_000).map(|n| bucket_of(&format!("pid:{n}"))).collect();
        assert!(spread.len() > 200, "{} buckets used", spread.len());
    }

    /// Two keys of one bucket, the first sorting after the second.
    fn colliding() -> (String, String) {
        let first = "pid:1".to_owned();
        let second = (2..100_000)
            .map(|n| format!("last:{n}"))
            .find(|k| bucket_of(k) == bucket_of(&first))
            .unwrap();
        assert!(first > second);
        (first, second)
    }

    /// A sessions directory with an index.
    fn indexed() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir(tmp.path().join(DIR)).unwrap();
        tmp
    }

    fn bucket_text(root: &Path, key: &str) -> String {
        fs::read_to_string(bucket_file(root, bucket_of(key))).unwrap()
    }

    #[test]
    fn buckets_keep_the_order_entries_came_in() {
        let (first, second) = colliding();
        let tmp = indexed();
        let root = tmp.path();
        rebuild(
            root,
            None,
            &[
                (first.clone(), "2026_A".into()),
                (second.clone(), "2026_B".into()),
            ],
        );
        let written = format!(r#"{{"{first}":"2026_A","{second}":"2026_B"}}"#);
        assert_eq!(bucket_text(root, &first), written);
        // The same entries in another order are the same bucket: it is not written again.
        rebuild(
            root,
            None,
            &[
                (second.clone(), "2026_B".into()),
                (first.clone(), "2026_A".into()),
            ],
        );
        assert_eq!(bucket_text(root, &first), written);
        // A record changes an entry in its place and adds new ones after the others.
        fs::write(
            bucket_file(root, bucket_of(&first)),
            format!(r#"{{"{second}":"2026_B", "{first}":"2026_A"}}"#),
        )
        .unwrap();
        record(&root.join("2026_C"), &[Key::Pid(1)]);
        assert_eq!(
            bucket_text(root, &first),
            format!(r#"{{"{second}":"2026_B","{first}":"2026_C"}}"#)
        );
        // A key written twice reads as its last.
        let text = format!(r#"{{"{first}":"2026_X","{second}":"2026_B","{first}":"2026_C"}}"#);
        fs::write(bucket_file(root, bucket_of(&first)), &text).unwrap();
        assert_eq!(lookup(root, Key::Pid(1)), Some(root.join("2026_C")));
        record(&root.join("2026_C"), &[Key::Pid(1)]);
        assert_eq!(
            bucket_text(root, &first),
            text,
            "nothing changed: not written"
        );
    }

    #[test]
    fn buckets_in_another_shape_read_as_empty() {
        let tmp = indexed();
        let root = tmp.path();
        let path = bucket_file(root, bucket_of("pid:7"));
        for other in ["[\"2026_A\"]", "\"2026_A\"", "7", "null", "{not json", ""] {
            fs::write(&path, other).unwrap();
            assert_eq!(lookup(root, Key::Pid(7)), None, "{other}");
            record(&root.join("2026_B"), &[Key::Pid(7)]);
            assert_eq!(
                bucket_text(root, "pid:7"),
                r#"{"pid:7":"2026_B"}"#,
                "{other}"
            );
        }
        for entry in [
            "7",
            "null",
            "[\"2026_A\"]",
            "{\"a\":\"2026_A\"}",
            "\"\"",
            "\"..\"",
            "\"a/b\"",
        ] {
            fs::write(&path, format!(r#"{{"pid:7":{entry}}}"#)).unwrap();
            assert_eq!(lookup(root, Key::Pid(7)), None, "{entry}");
        }
    }

    #[test]
    fn records_lookups_and_rebuilds() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let a = root.join("2026_A");
        let b = root.join("2026_B");
        record(&a, &[Key::Pid(7)]);
        assert!(!root.join(DIR).exists(), "no index is started by a record");
        fs::create_dir(&a).unwrap();
        prepare(root);
        fs::remove_dir(&a).unwrap();
        record(&a, &[Key::Pid(7), Key::Conversation("c-1")]);
        assert_eq!(lookup(root, Key::Pid(7)), Some(a.clone()));
        assert_eq!(lookup(root, Key::Conversation("c-1")), Some(a.clone()));
        assert_eq!(lookup(root, Key::LastPid(7)), None);
        record(&b, &[Key::Pid(7)]);
        assert_eq!(
            lookup(root, Key::Pid(7)),
            Some(b.clone()),
            "the latest record wins"
        );
        // A rebuild replaces everything; the first entry of a key wins.
        prepare(root);
        let stamp = stamp_of(root);
        rebuild(
            root,
            stamp.as_deref(),
            &[
                ("pid:9".into(), "2026_A".into()),
                ("pid:9".into(), "2026_B".into()),
                ("pane:%3".into(), "../escape".into()),
            ],
        );
        assert_eq!(lookup(root, Key::Pid(9)), Some(a));
        assert_eq!(lookup(root, Key::Pid(7)), None);
        assert_eq!(lookup(root, Key::Pane("%3")), None, "never a path out");
        let files = fs::read_dir(root.join(DIR)).unwrap().count();
        assert_eq!(
            files, 2,
            "empty buckets are removed; one bucket and the stamp stay"
        );
        assert!(is_current(root));
        fs::create_dir(root.join("2026_C")).unwrap();
        assert!(
            !is_current(root),
            "a new session directory is not in the index yet"
        );
        // A bucket that does not parse is a miss.
        let path = bucket_file(root, bucket_of("pid:9"));
        fs::write(&path, "{not json").unwrap();
        assert_eq!(lookup(root, Key::Pid(9)), None);
    }
}
