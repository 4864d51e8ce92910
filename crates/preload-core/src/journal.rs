//! Append-only journals of small JSON records beside a file: appended by writers that cannot
//! or need not take the file's lock, and taken (read, then emptied) by whoever holds it.
//!
//! A record is one line, written with one `write(2)` preceded by a newline, so a line torn by a
//! power cut never swallows the next record, and a line that does not parse is skipped.
//! Appenders hold a shared `flock` on the journal while they write (they never wait on each
//! other); a taker holds it exclusively from its read until it has emptied the journal, so no
//! record lands between the two. The kernel drops a `flock` when its holder dies. A journal is
//! bounded ([`MAX_BYTES`]): past it, appends are refused until the next taker empties it.

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
        .custom_flags((nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK).bits())
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

/// Append `record` to the journal at `path` (created when missing), waiting for a taker at most
/// until `deadline`.
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

/// The records of the journal at `path`, without taking them (none when it is missing).
pub fn read(path: &Path) -> Vec<Value> {
    crate::file::read_regular(path, MAX_BYTES + 64 * 1024)
        .map(|bytes| records_of(&bytes))
        .unwrap_or_default()
}

/// A journal held exclusively with the records it held when taken: no record is appended until
/// it is emptied ([`Taken::empty`]) or let go (dropped, keeping the records).
#[derive(Debug)]
pub struct Taken {
    file: Option<Flock<File>>,
    path: PathBuf,
    /// The records, oldest first.
    pub records: Vec<Value>,
}

/// Take the journal at `path` exclusively until `deadline` (appenders finish first). A missing
/// journal is taken with no records and nothing held.
pub fn take(path: &Path, deadline: Instant) -> Result<Taken, JournalError> {
    let file = match open(path, false) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Ok(Taken {
                file: None,
                path: path.to_path_buf(),
                records: Vec::new(),
            });
        }
        Err(err) => return Err(io_error("open", path)(err)),
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err(io_error("open", path)(io::ErrorKind::InvalidInput.into()));
    }
    let mut locked = lock(file, FlockArg::LockExclusiveNonblock, path, deadline)?;
    let mut bytes = Vec::new();
    (&mut *locked)
        .take(MAX_BYTES + 64 * 1024)
        .read_to_end(&mut bytes)
        .map_err(io_error("read", path))?;
    Ok(Taken {
        records: records_of(&bytes),
        file: Some(locked),
        path: path.to_path_buf(),
    })
}

impl Taken {
    /// Empty the journal (its records are committed elsewhere) and let it go.
    pub fn empty(self) -> Result<(), JournalError> {
        match &self.file {
            Some(file) => file.set_len(0).map_err(io_error("empty", &self.path)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests;
