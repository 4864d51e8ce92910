//! "Is this file already in context?": path equality after normalisation, then device + inode
//! against every `preloadedFiles` entry (hardlinks, file symlinks, other spellings).

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

/// The device and inode of paths, looked up once per hook call however many passes ask.
///
/// A hook process lives for one call, so a file's identity does not change under it.
#[derive(Debug, Default)]
pub struct FileIds {
    known: Mutex<HashMap<String, Option<(u64, u64)>>>,
}

impl FileIds {
    /// The device and inode of `path` (symlinks followed), from the memo when known.
    pub fn get(&self, path: &str) -> Option<(u64, u64)> {
        let Ok(mut known) = self.known.lock() else {
            return file_id(Path::new(path));
        };
        *known
            .entry(path.to_owned())
            .or_insert_with(|| file_id(Path::new(path)))
    }
}

/// The set of files already in context, with the inode index built only when needed.
#[derive(Debug, Default)]
pub struct InContext {
    paths: HashSet<String>,
    inodes: Option<HashSet<(u64, u64)>>,
}

/// The device and inode of an existing file (symlinks followed).
pub fn file_id(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl InContext {
    /// From the `preloadedFiles` entries.
    pub fn new<S: AsRef<str>>(preloaded: &[S]) -> Self {
        Self {
            paths: preloaded.iter().map(|s| s.as_ref().to_owned()).collect(),
            inodes: None,
        }
    }

    /// Whether `normalized` is already in context, and how; identities come from `ids`.
    pub fn check(&mut self, normalized: &str, ids: &FileIds) -> Option<Hit> {
        if self.paths.contains(normalized) {
            return Some(Hit::Path);
        }
        let id = ids.get(normalized)?;
        let paths = &self.paths;
        let inodes = self
            .inodes
            .get_or_insert_with(|| paths.iter().filter_map(|p| ids.get(p)).collect());
        inodes.contains(&id).then_some(Hit::Inode)
    }

    /// Record a newly delivered file.
    pub fn add(&mut self, normalized: &str, ids: &FileIds) {
        self.paths.insert(normalized.to_owned());
        if let (Some(inodes), Some(id)) = (self.inodes.as_mut(), ids.get(normalized)) {
            inodes.insert(id);
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
    fn missing_files_never_match_by_inode() {
        let mut set = InContext::new(&["/nope/a.md"]);
        assert_eq!(set.check("/nope/b.md", &FileIds::default()), None);
    }
}
