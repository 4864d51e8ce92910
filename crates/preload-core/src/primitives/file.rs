//! File primitives every writer and reader shares: bounded reads of regular files only (a FIFO,
//! device or directory never blocks or floods a hook), the one atomic write every file the
//! product writes goes through ([`write_atomic_with`] and its [`WriteOptions`]), the
//! temporary-name scheme it and staged locks use, and the sweep that removes temporaries left by
//! killed processes.
//!
//! A temporary is `<name>.tmp.<pid>.<n>` (the engine's bash writes `<name>.tmp.<pid>`), in the
//! directory of the file it stands in for. It is orphaned when its PID is dead, or when it is
//! older than [`ORPHAN_AFTER`] (a PID reused by a later process).

use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::primitives::clock;
use crate::primitives::process;

mod write;
#[cfg(test)]
pub(crate) use write::next_temp_number;
pub use write::{
    HELD_TEMP_SUFFIX, WriteOptions, syncs_on_this_thread, temp_path, write_atomic,
    write_atomic_with, write_cache,
};

/// The open flags of a file that must not be a link and must not block the open (a FIFO):
/// `O_NOFOLLOW | O_NONBLOCK`, for `OpenOptionsExt::custom_flags`.
pub const NO_FOLLOW_NONBLOCK: i32 = nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK;

/// A temporary older than this is orphaned whatever its PID (writes take milliseconds).
pub const ORPHAN_AFTER: Duration = Duration::from_secs(60);

/// Why a file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// Missing, not a regular file (directory, FIFO, device, socket), or unreadable.
    #[error("cannot read {path}: missing, not a regular file, or unreadable")]
    Unavailable {
        /// The file.
        path: PathBuf,
    },
    /// A regular file larger than the cap.
    #[error("{path} holds {size} bytes, more than the {max} read")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size (at least `max + 1`).
        size: u64,
        /// The cap.
        max: u64,
    },
}

/// An atomic write that failed; the file is as it was.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {source}")]
pub struct WriteError {
    /// The file.
    pub path: PathBuf,
    /// The underlying error.
    #[source]
    pub source: io::Error,
}

/// Open the regular file at `path` (symlinks followed) non-blocking, checked with `fstat` on the
/// open descriptor.
fn open_regular(path: &Path) -> Result<(fs::File, fs::Metadata), ReadError> {
    let unavailable = || ReadError::Unavailable {
        path: path.to_path_buf(),
    };
    let nonblock = nix::fcntl::OFlag::O_NONBLOCK.bits();
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(nonblock)
        .open(path)
        .map_err(|_| unavailable())?;
    let meta = file.metadata().map_err(|_| unavailable())?;
    if !meta.is_file() {
        return Err(unavailable());
    }
    Ok((file, meta))
}

/// A file operation that failed: what was being done, on which file or directory, and why.
#[derive(Debug, thiserror::Error)]
#[error("cannot {action} {path}: {source}")]
pub struct OpError {
    /// What was being done (`read`, `write`, `create`, ...).
    pub action: &'static str,
    /// The file or directory.
    pub path: PathBuf,
    /// The underlying error.
    #[source]
    pub source: io::Error,
}

impl OpError {
    /// For `map_err`: the failure of `action` on `path`.
    pub fn at(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> Self + use<> {
        let path = path.to_path_buf();
        move |source| Self {
            action,
            path,
            source,
        }
    }
}

/// Read at most `max_bytes` of the regular file at `path` (symlinks followed).
///
/// The file is opened non-blocking and checked with `fstat` on the open descriptor, so a FIFO
/// or device planted where a file was expected is refused without blocking, and a file swapped
/// after a check is never the one read.
pub fn read_regular(path: &Path, max_bytes: u64) -> Result<Vec<u8>, ReadError> {
    read_regular_with(path, max_bytes).1
}

/// [`read_regular`], with the metadata of the file whenever it was opened, a file too large to
/// read included (`None` only when it could not be opened as a regular file). The metadata is
/// taken from the open descriptor before the read: a change made while reading leaves it older
/// than the bytes, never newer.
pub fn read_regular_with(
    path: &Path,
    max_bytes: u64,
) -> (Option<fs::Metadata>, Result<Vec<u8>, ReadError>) {
    match open_regular(path) {
        Ok((file, meta)) => {
            let bytes = read_opened(path, file, &meta, max_bytes);
            (Some(meta), bytes)
        }
        Err(err) => (None, Err(err)),
    }
}

/// The bytes of `file`, opened at `path` with metadata `meta`, at most `max_bytes`.
fn read_opened(
    path: &Path,
    file: fs::File,
    meta: &fs::Metadata,
    max_bytes: u64,
) -> Result<Vec<u8>, ReadError> {
    let unavailable = || ReadError::Unavailable {
        path: path.to_path_buf(),
    };
    let too_large = |size| ReadError::TooLarge {
        path: path.to_path_buf(),
        size,
        max: max_bytes,
    };
    if meta.len() > max_bytes {
        return Err(too_large(meta.len()));
    }
    // Sized from the metadata, so a file is read in one or two calls.
    let expected = usize::try_from(meta.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(expected.saturating_add(1));
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|_| unavailable())?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Whether the regular file at `path` holds exactly `expected`, read a chunk at a time into one
/// small buffer: a caller that read a large file before asks whether it is still that, without
/// a second copy of it in fresh memory (on a 346 KB state, 84 page faults). Any failure to read
/// is `false`.
pub fn holds(path: &Path, expected: &[u8]) -> bool {
    const CHUNK: usize = 64 * 1024;
    let Ok((mut file, meta)) = open_regular(path) else {
        return false;
    };
    if meta.len() != expected.len() as u64 {
        return false;
    }
    let mut buffer = vec![0u8; CHUNK.min(expected.len() + 1)];
    let mut rest = expected;
    loop {
        let n = match file.read(&mut buffer) {
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return false,
        };
        if n == 0 {
            return rest.is_empty();
        }
        let Some((head, tail)) = rest.split_at_checked(n) else {
            return false;
        };
        if !crate::primitives::bytes::same(head, &buffer[..n]) {
            return false;
        }
        rest = tail;
    }
}

/// The last `max_bytes` (at most) of the regular file at `path`, with the file's size; the same
/// refusals as [`read_regular`]. For growing logs, which are read from their end.
pub fn read_tail(path: &Path, max_bytes: u64) -> Result<(Vec<u8>, u64), ReadError> {
    use std::io::{Seek, SeekFrom};
    let unavailable = || ReadError::Unavailable {
        path: path.to_path_buf(),
    };
    let (mut file, meta) = open_regular(path)?;
    let size = meta.len();
    let start = size.saturating_sub(max_bytes);
    file.seek(SeekFrom::Start(start))
        .map_err(|_| unavailable())?;
    let mut bytes = Vec::with_capacity(usize::try_from(size - start).unwrap_or(0));
    file.take(max_bytes)
        .read_to_end(&mut bytes)
        .map_err(|_| unavailable())?;
    Ok((bytes, size))
}

/// [`read_regular`] as UTF-8 text (lossy), `None` on any failure.
pub fn read_text(path: &Path, max_bytes: u64) -> Option<String> {
    read_regular(path, max_bytes).ok().map(lossy_text)
}

/// `bytes` as text, invalid UTF-8 replaced by U+FFFD. Valid text (nearly always) is checked by
/// the standard library's word-at-a-time validation and kept without a copy; only invalid text
/// takes the byte-by-byte lossy decoding.
pub fn lossy_text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes)
        .unwrap_or_else(|invalid| String::from_utf8_lossy(invalid.as_bytes()).into_owned())
}

/// The PID a temporary name carries: `….tmp.<pid>.<n>` or the bash form `….tmp.<pid>`.
pub fn temp_owner(name: &str) -> Option<u32> {
    let (_, tail) = name.rsplit_once(".tmp.")?;
    let (pid, counter) = match tail.split_once('.') {
        Some((pid, n)) => (pid, Some(n)),
        None => (tail, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || counter.is_some_and(|n| !digits(n)) {
        return None;
    }
    pid.parse().ok()
}

fn is_orphan(meta: &fs::Metadata, pid: u32) -> bool {
    if !process::is_alive(pid) {
        return true;
    }
    meta.modified()
        .ok()
        .map(clock::age)
        .is_some_and(|age| age > ORPHAN_AFTER)
}

/// Remove the orphaned temporaries directly in `dir` (files, and the staging directories of
/// locks with their [`LOCK_FILES`]); returns how many were removed. Nothing else is touched: a
/// directory is removed only when it holds nothing but those files.
pub fn remove_orphans(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temp_owner) else {
            continue;
        };
        let path = entry.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if !is_orphan(&meta, pid) {
            continue;
        }
        let gone = if meta.is_dir() {
            remove_lock_dir(&path).is_ok()
        } else {
            fs::remove_file(&path).is_ok()
        };
        removed += usize::from(gone);
    }
    removed
}

/// The files a lock directory holds: the engine's `pid` and nothing else, so the engine's own
/// reclaim of a dead holder (`rm -f pid; rmdir`) always succeeds, on Linux as on macOS. The
/// `owner` file older releases wrote is still removed with the lock.
pub const LOCK_FILES: [&str; 2] = ["pid", "owner"];

/// The files a lock of ours is created with.
pub const LOCK_FILES_WRITTEN: [&str; 1] = ["pid"];

/// Remove an entry created by a lock: its files, then the directory.
pub fn remove_lock_dir(dir: &Path) -> io::Result<()> {
    for name in LOCK_FILES {
        let _ = fs::remove_file(dir.join(name));
    }
    fs::remove_dir(dir)
}

#[cfg(test)]
mod tests;
