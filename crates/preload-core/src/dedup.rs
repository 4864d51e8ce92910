//! "Is this file already in context?": path equality after normalisation, then device + inode.
//!
//! The inode comparison catches other spellings of a path (a `~` form, a symlinked directory
//! not normalised by an older writer), hardlinks and file symlinks. To stay cheap on sessions
//! with thousands of `preloadedFiles`, a plain file (one link, not a symlink) is compared only
//! with the entries of the same name; a file with several links, or reached through a symlink,
//! is compared with every entry.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Mutex;

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

/// The identity of an existing file.
pub fn identity(path: &Path) -> Option<Identity> {
    let meta = std::fs::metadata(path).ok()?;
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    Some(Identity {
        id: (meta.dev(), meta.ino()),
        aliased: is_link || meta.nlink() > 1,
    })
}

/// File identities looked up once per hook call, however many passes ask.
///
/// A hook process lives for one call, so a file's identity does not change under it.
#[derive(Debug, Default)]
pub struct FileIds {
    known: Mutex<HashMap<String, Option<Identity>>>,
}

impl FileIds {
    /// The identity of `path`, from the memo when known.
    pub fn get(&self, path: &str) -> Option<Identity> {
        let Ok(mut known) = self.known.lock() else {
            return identity(Path::new(path));
        };
        *known
            .entry(path.to_owned())
            .or_insert_with(|| identity(Path::new(path)))
    }
}

fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The set of files already in context, with the inode index built only when needed.
#[derive(Debug, Default)]
pub struct InContext {
    paths: HashSet<String>,
    /// Entries by file name, for the cheap comparison.
    by_name: HashMap<String, Vec<String>>,
    /// Every entry's inode, built the first time an aliased candidate needs it.
    inodes: Option<HashSet<(u64, u64)>>,
}

impl InContext {
    /// From the `preloadedFiles` entries.
    pub fn new<S: AsRef<str>>(preloaded: &[S]) -> Self {
        let mut set = Self::default();
        for entry in preloaded {
            set.insert(entry.as_ref());
        }
        set
    }

    fn insert(&mut self, path: &str) {
        if self.paths.insert(path.to_owned()) {
            self.by_name
                .entry(base_name(path).to_owned())
                .or_default()
                .push(path.to_owned());
        }
    }

    /// Whether `normalized` is already in context, and how; identities come from `ids`.
    pub fn check(&mut self, normalized: &str, ids: &FileIds) -> Option<Hit> {
        if self.paths.contains(normalized) {
            return Some(Hit::Path);
        }
        let candidate = ids.get(normalized)?;
        let same_name = self
            .by_name
            .get(base_name(normalized))
            .into_iter()
            .flatten();
        if same_name
            .filter_map(|p| ids.get(p))
            .any(|other| other.id == candidate.id)
        {
            return Some(Hit::Inode);
        }
        if !candidate.aliased {
            return None;
        }
        let paths = &self.paths;
        let inodes = self.inodes.get_or_insert_with(|| {
            paths
                .iter()
                .filter_map(|p| ids.get(p))
                .map(|i| i.id)
                .collect()
        });
        inodes.contains(&candidate.id).then_some(Hit::Inode)
    }

    /// Record a newly delivered file.
    pub fn add(&mut self, normalized: &str, ids: &FileIds) {
        self.insert(normalized);
        if let (Some(inodes), Some(found)) = (self.inodes.as_mut(), ids.get(normalized)) {
            inodes.insert(found.id);
        }
    }

    /// True when the exact path is recorded.
    pub fn contains_path(&self, normalized: &str) -> bool {
        self.paths.contains(normalized)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hardlink_and_directory_symlink_are_the_same_file() {
        let tmp = tempfile::tempdir().unwrap();
        let real_dir = tmp.path().join("engine/.directives");
        std::fs::create_dir_all(&real_dir).unwrap();
        let original = real_dir.join("COMMANDS.md");
        std::fs::write(&original, "c").unwrap();
        let hard = tmp.path().join("hard.md");
        std::fs::hard_link(&original, &hard).unwrap();
        let link_dir = tmp.path().join("linked");
        std::os::unix::fs::symlink(&real_dir, &link_dir).unwrap();

        let ids = FileIds::default();
        let mut set = InContext::new(&[original.to_string_lossy().into_owned()]);
        assert_eq!(
            set.check(&original.to_string_lossy(), &ids),
            Some(Hit::Path)
        );
        assert_eq!(set.check(&hard.to_string_lossy(), &ids), Some(Hit::Inode));
        assert_eq!(
            set.check(&link_dir.join("COMMANDS.md").to_string_lossy(), &ids),
            Some(Hit::Inode)
        );

        let other = tmp.path().join("other.md");
        std::fs::write(&other, "o").unwrap();
        assert_eq!(set.check(&other.to_string_lossy(), &ids), None);
        set.add(&other.to_string_lossy(), &ids);
        assert_eq!(set.check(&other.to_string_lossy(), &ids), Some(Hit::Path));
    }

    #[test]
    fn a_symlink_under_another_name_is_the_same_file() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("REAL.md");
        std::fs::write(&real, "r").unwrap();
        let alias = tmp.path().join("ALIAS.md");
        std::os::unix::fs::symlink(&real, &alias).unwrap();
        let ids = FileIds::default();
        let mut set = InContext::new(&[real.to_string_lossy().into_owned()]);
        assert_eq!(set.check(&alias.to_string_lossy(), &ids), Some(Hit::Inode));
    }

    #[test]
    fn missing_files_never_match_by_inode() {
        let mut set = InContext::new(&["/nope/a.md"]);
        assert_eq!(set.check("/nope/b.md", &FileIds::default()), None);
    }
}
