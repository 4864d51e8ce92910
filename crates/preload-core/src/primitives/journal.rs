//! Append-only journals of small JSON records beside a file: appended by writers that cannot
//! or need not take the file's lock, and taken by whoever holds it.
//!
//! A record is one line, written with one `write(2)` preceded by a newline, so a line torn by a
//! power cut never swallows the next record, and a line that does not parse is skipped.
//! Appenders never wait on each other or on a taker: each holds a shared `flock` on the journal
//! while it writes. A taker (one at a time: the caller holds the file's lock) renames the journal
//! to `<journal>.taken`, so new records start a new journal, then holds the renamed one
//! exclusively (appenders that opened it before the rename finish first), reads it, and removes
//! it once its records are committed elsewhere ([`Taken::empty`]). A taker killed on the way
//! leaves `<journal>.taken`, which the next taker takes first; the caller recognises records it
//! already committed by their ids. A journal is bounded ([`MAX_BYTES`]): past it, appends are
//! refused until the next taker takes it.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::fcntl::{Flock, FlockArg};
use serde_json::Value;

/// The largest a journal grows; appends past it are refused.
pub const MAX_BYTES: u64 = 256 * 1024;
/// Pause between two attempts at a journal's `flock`.
const RETRY: Duration = Duration::from_millis(1);

/// Why a record could not be appended or the journal taken.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The journal is at its bound; the record was not written.
    #[error("journal {path} is full ({MAX_BYTES} bytes); the record was not written")]
    Full {
        /// The journal.
        path: PathBuf,
    },
    /// Another process held the journal past the deadline.
    #[error("journal {path} stayed locked past the deadline")]
    Busy {
        /// The journal.
        path: PathBuf,
    },
    /// A file operation failed.
    #[error("cannot {action} journal {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The journal.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

fn io_error(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> JournalError {
    let path = path.to_path_buf();
    move |source| JournalError::Io {
        action,
        path,
        source,
    }
}

fn open(path: &Path, create: bool) -> io::Result<File> {
    fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(create)
        .custom_flags(crate::primitives::file::NO_FOLLOW_NONBLOCK)
        .open(path)
}

/// `flock` the journal until `deadline`.
fn lock(
    file: File,
    how: FlockArg,
    path: &Path,
    deadline: Instant,
) -> Result<Flock<File>, JournalError> {
    let mut file = file;
    loop {
        match Flock::lock(file, how) {
            Ok(locked) => return Ok(locked),
            Err((back, nix::errno::Errno::EWOULDBLOCK | nix::errno::Errno::EINTR)) => {
                file = back;
            }
            Err((_, errno)) => return Err(io_error("lock", path)(errno.into())),
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(JournalError::Busy {
                path: path.to_path_buf(),
            });
        }
        std::thread::sleep(RETRY.min(deadline - now));
    }
}

/// True while the open journal is still the one at `path` (not removed or replaced meanwhile).
fn still_at(file: &File, path: &Path) -> bool {
    match (file.metadata(), fs::symlink_metadata(path)) {
        (Ok(open), Ok(named)) => open.ino() == named.ino() && open.dev() == named.dev(),
        _ => false,
    }
}

/// Append `record` to the journal at `path` (created when missing); an appender that opened it
/// just as a taker renamed it waits for that taker at most until `deadline`, then appends to
/// the new journal.
pub fn append(path: &Path, record: &Value, deadline: Instant) -> Result<(), JournalError> {
    let mut line = Vec::with_capacity(128);
    line.push(b'\n');
    serde_json::to_writer(&mut line, record).map_err(|e| io_error("encode", path)(e.into()))?;
    line.push(b'\n');
    loop {
        let file = open(path, true).map_err(io_error("open", path))?;
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            return Err(io_error("open", path)(io::ErrorKind::InvalidInput.into()));
        }
        let mut locked = lock(file, FlockArg::LockSharedNonblock, path, deadline)?;
        if !still_at(&locked, path) {
            // Removed while we waited: append to the one there now.
            continue;
        }
        let size = locked.metadata().map_or(0, |m| m.len());
        if size + line.len() as u64 > MAX_BYTES {
            return Err(JournalError::Full {
                path: path.to_path_buf(),
            });
        }
        return locked.write_all(&line).map_err(io_error("append to", path));
    }
}

/// The records of the bytes of a journal; torn or foreign lines are skipped.
fn records_of(bytes: &[u8]) -> Vec<Value> {
    bytes
        .split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .filter(Value::is_object)
        .collect()
}

/// Where a taker puts the journal at `path` while it takes it.
pub fn taken_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".taken");
    PathBuf::from(name)
}

fn read_file(path: &Path) -> Vec<Value> {
    crate::primitives::file::read_regular(path, MAX_BYTES + 64 * 1024)
        .map(|bytes| records_of(&bytes))
        .unwrap_or_default()
}

/// The records of the journal at `path` not yet taken for good (those of a taking under way
/// first), without taking them; none when there is no journal.
pub fn read(path: &Path) -> Vec<Value> {
    let mut records = read_file(&taken_path(path));
    records.extend(read_file(path));
    records
}

/// A journal being taken, with its records: held exclusively until removed ([`Taken::empty`])
/// or let go (dropped: the next taker takes the same records again).
#[derive(Debug)]
pub struct Taken {
    file: Option<Flock<File>>,
    path: PathBuf,
    /// The records, oldest first.
    pub records: Vec<Value>,
}

/// Take the journal at `path`: the one a killed taker left if there is one, else the journal
/// itself, renamed out of the appenders' way. Appenders that opened it before the rename are
/// waited for until `deadline`. A missing journal is taken with no records and nothing held.
/// The caller holds the lock of the file the journal belongs to (one taker at a time).
pub fn take(path: &Path, deadline: Instant) -> Result<Taken, JournalError> {
    let taken = taken_path(path);
    let nothing = || Taken {
        file: None,
        path: taken.clone(),
        records: Vec::new(),
    };
    if fs::symlink_metadata(&taken).is_err() {
        match fs::rename(path, &taken) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(nothing()),
            Err(err) => return Err(io_error("rename", path)(err)),
        }
    }
    let file = match open(&taken, false) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(nothing()),
        Err(err) => return Err(io_error("open", &taken)(err)),
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err(io_error("open", &taken)(io::ErrorKind::InvalidInput.into()));
    }
    let mut locked = lock(file, FlockArg::LockExclusiveNonblock, &taken, deadline)?;
    let mut bytes = Vec::new();
    (&mut *locked)
        .take(MAX_BYTES + 64 * 1024)
        .read_to_end(&mut bytes)
        .map_err(io_error("read", &taken))?;
    Ok(Taken {
        records: records_of(&bytes),
        file: Some(locked),
        path: taken,
    })
}

impl Taken {
    /// Remove the taken journal (its records are committed elsewhere).
    pub fn empty(self) -> Result<(), JournalError> {
        if self.file.is_none() {
            return Ok(());
        }
        match fs::remove_file(&self.path) {
            Err(err) if err.kind() != io::ErrorKind::NotFound => {
                Err(io_error("remove", &self.path)(err))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests;
