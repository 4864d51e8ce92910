//! Files on disk as the suites look at them: a directory tree with its bytes, for "untouched"
//! and "nothing torn" checks, and a file's modification time set to a known instant.

use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

/// Whether a [`snapshot`] lists directories (with empty bytes) besides the files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dirs {
    /// Each directory appears as an entry with empty bytes.
    Listed,
    /// Only files appear.
    Omitted,
}

/// Every entry under `dir` with its bytes, sorted; an entry whose path ends with one of `skip`
/// (and, for a directory, everything in it) is left out. A symbolic link is not followed: it
/// is recorded as the path it points to (anything else that is not a file, as empty).
pub fn snapshot(dir: &Path, dirs: Dirs, skip: &[&str]) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if skip.iter().any(|s| path.ends_with(s)) {
                continue;
            }
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                if dirs == Dirs::Listed {
                    out.push((path.clone(), Vec::new()));
                }
                stack.push(path);
            } else if kind.is_file() {
                let bytes = fs::read(&path).unwrap();
                out.push((path, bytes));
            } else {
                let target = fs::read_link(&path).map(PathBuf::into_os_string);
                out.push((path, target.map(OsString::into_vec).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

/// Sets the modification time of the file at `path` to `secs` seconds after the epoch.
pub fn set_mtime(path: &Path, secs: u64) {
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(UNIX_EPOCH + Duration::from_secs(secs))
        .unwrap();
}

/// The file at `path` reads exactly `expected`; `what` says why it should.
#[track_caller]
pub fn assert_contents(path: &Path, expected: &str, what: &str) {
    assert_eq!(fs::read_to_string(path).unwrap(), expected, "{what}");
}
