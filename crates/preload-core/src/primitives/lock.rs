//! The engine's mkdir lock, so bash and native writers exclude each other.
//!
//! The lock of `<file>` is the directory `<file>.lock`, created with `mkdir`; the holder writes
//! its PID to `<file>.lock/pid`. A waiter retries every 10 ms until its deadline, and removes the
//! lock at once when the recorded holder is dead, or when the directory is older than
//! [`STALE_AFTER`]. Release removes `pid`, then the directory. This module is the only one that
//! creates or removes lock directories.
//!
//! Our own locks appear with their `pid` file already inside (built under a temporary name and
//! renamed into place without replacing), and a released one becomes the directory's spare
//! ([`SPARE`]), from which the next lock there is built instead of creating a directory and a
//! file and freeing both again. A holder killed at any instant is reclaimed by the
//! PID check at once, never by the 10 s age rule, by us and by the engine's `lib.sh` alike: the
//! directory holds `pid` and nothing else, so the engine's `rm -f pid; rmdir` succeeds before
//! it ever reaches its age check (whose BSD-only `stat -f` aborts the engine's writer on Linux).
//!
//! The engine's reclaim is racy: it reads a dead holder's PID, and by the time it removes
//! `pid` and the directory the lock may have changed hands. A holder of ours therefore checks,
//! right before it commits, that the lock still names it ([`StateLock::still_held`]); a lock
//! taken from under it aborts the write instead of racing the new holder. Release and reclaim
//! rename a lock away (to the spare, or to a temporary name before deleting it), and release
//! touches only a lock that still names this process. A release sweeps the temporaries that
//! killed writers left next to the file ([`file::remove_orphans`]) only when there is some:
//! when its acquisition took an abandoned lock over (a writer killed while it held the lock),
//! or when the directory holds a directory other than the spare (a lock killed while staged or
//! half-removed).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::primitives::clock;
use crate::primitives::file;
use crate::primitives::process;
use crate::primitives::system::rename;

mod latch;
mod stage;
pub use latch::Latch;
pub use stage::SPARE;
use stage::{Parked, Stage, rename_no_replace};

/// A lock directory older than this is taken to be left by a crashed holder.
pub const STALE_AFTER: Duration = Duration::from_secs(10);
/// Pause between two attempts.
pub const RETRY_EVERY: Duration = Duration::from_millis(10);
/// Default wait for a lock (`PRELOAD_LOCK_TIMEOUT_MS`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);

/// Why a lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The lock was taken from under its holder before the write (the engine's racy reclaim);
    /// nothing was written.
    #[error("lock {path} was taken over by another writer before the write; nothing written")]
    Lost {
        /// The lock directory.
        path: PathBuf,
    },
    /// Another live holder kept the lock past the deadline.
    #[error("timed out after {waited_ms} ms waiting for lock {path} (held by {holder})")]
    Timeout {
        /// The lock directory.
        path: PathBuf,
        /// How long the waiter waited.
        waited_ms: u128,
        /// The recorded holder PID, or `unknown`.
        holder: String,
    },
    /// The lock directory could not be created for a reason other than contention.
    #[error("cannot create lock {path}: {source}")]
    Create {
        /// The lock directory.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

/// A held lock; released on drop.
#[derive(Debug)]
pub struct StateLock {
    dir: PathBuf,
    released: bool,
    /// The acquisition took an abandoned lock out of the way: its holder's leftovers are swept
    /// on release.
    met_debris: bool,
    _latch: Latch,
}

/// The lock directory that guards `file`.
pub fn lock_dir_for(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

impl StateLock {
    /// Take the lock of `file`, waiting until `deadline`: try, reclaim an abandoned lock, and
    /// sleep between tries.
    pub fn acquire(file: &Path, deadline: Instant) -> Result<Self, LockError> {
        let latch = Latch::take(file, deadline)?;
        let dir = lock_dir_for(file);
        let started = Instant::now();
        let mut stage = Stage::new();
        let mut met_debris = false;
        loop {
            match stage.take(&dir) {
                Ok(true) => {
                    return Ok(Self {
                        dir,
                        released: false,
                        met_debris,
                        _latch: latch,
                    });
                }
                Ok(false) => {
                    if reclaim_if_abandoned(&dir) {
                        met_debris = true;
                        continue;
                    }
                }
                Err(source) => {
                    return Err(LockError::Create { path: dir, source });
                }
            }
            let now = Instant::now();
            if now >= deadline {
                let holder =
                    read_holder(&dir).map_or_else(|| "unknown".to_owned(), |p| p.to_string());
                return Err(LockError::Timeout {
                    waited_ms: now.duration_since(started).as_millis(),
                    path: dir,
                    holder,
                });
            }
            std::thread::sleep(RETRY_EVERY.min(deadline - now));
        }
    }

    /// The lock directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// True while the lock directory still names this process as its holder (a racy reclaim by
    /// the engine's bash can take it away; see the module documentation).
    pub fn still_held(&self) -> bool {
        !self.released && read_holder(&self.dir) == Some(std::process::id())
    }

    /// Release the lock now (also done on drop).
    pub fn release(mut self) {
        self.remove();
    }

    fn remove(&mut self) {
        if !self.released {
            self.released = true;
            // A lock reclaimed from us (held past STALE_AFTER) now belongs to someone else.
            let parked = (read_holder(&self.dir) == Some(std::process::id()))
                .then(|| stage::park(&self.dir));
            // What killed writers left here goes with the release of a lock whose acquisition
            // met it: a writer killed with the lock held (its temporary) left that lock, and a
            // lock killed while staged or half-removed is a directory the link count shows
            // (beside the spare, when there is one).
            let spare = matches!(parked, Some(Parked::Spare | Parked::Deleted));
            if let Some(parent) = self.dir.parent() {
                if self.met_debris || holds_directories(parent, spare) {
                    file::remove_orphans(parent);
                }
            }
        }
    }
}

impl Drop for StateLock {
    fn drop(&mut self) {
        self.remove();
    }
}

/// True when `dir` holds a directory other than its spare (its link count is past the 2 of a
/// directory without any, plus one for a `spare` known to be there), or when its file system
/// does not count them.
fn holds_directories(dir: &Path, spare: bool) -> bool {
    use std::os::unix::fs::MetadataExt;
    fs::symlink_metadata(dir).map_or(true, |meta| {
        meta.nlink() < 2 || meta.nlink() > 2 + u64::from(spare)
    })
}

/// The holder's PID: from `pid`, else from `owner` (a bash waiter may have removed `pid`).
fn read_holder(dir: &Path) -> Option<u32> {
    file::LOCK_FILES
        .iter()
        .find_map(|name| read_pid(&dir.join(name)))
}

/// The PID in a lock's file: one line (a holder writes it with one `write`); more than a PID's
/// worth is not one. Checked before every commit, so it is read with [`process::read_line`].
fn read_pid(path: &Path) -> Option<u32> {
    process::read_line(path, 32)?.trim().parse().ok()
}

fn age(dir: &Path) -> Option<Duration> {
    let modified = fs::symlink_metadata(dir).ok()?.modified().ok()?;
    Some(clock::age(modified))
}

/// Remove the lock when its holder is dead or it is older than [`STALE_AFTER`].
///
/// Returns true when the caller should retry at once.
fn reclaim_if_abandoned(dir: &Path) -> bool {
    match read_holder(dir) {
        Some(pid) if !process::is_alive(pid) => {
            remove_abandoned(dir, Some(pid));
            true
        }
        Some(_) => false,
        None => match age(dir) {
            Some(elapsed) if elapsed > STALE_AFTER => {
                remove_abandoned(dir, None);
                true
            }
            // Not there any more: retry at once.
            None => !dir.exists(),
            Some(_) => false,
        },
    }
}

/// Take an abandoned lock out of the way by renaming it to a temporary name first, so two
/// waiters reclaiming at once cannot delete the fresh lock one of them just took. When the
/// renamed lock turns out not to be the abandoned one, it is put back.
fn remove_abandoned(dir: &Path, expected: Option<u32>) {
    let grave = file::temp_path(dir);
    if fs::rename(dir, &grave).is_err() {
        return;
    }
    if read_holder(&grave) == expected {
        let _ = file::remove_lock_dir(&grave);
    } else {
        // When the name was taken again meanwhile, the grave stays and is swept once this
        // process is gone (it carries our PID).
        let _ = rename_no_replace(&grave, dir).or_else(|err| {
            if rename::is_unsupported(&err) {
                fs::rename(&grave, dir)
            } else {
                Err(err)
            }
        });
    }
}

/// What `doctor` reports about a lock directory left on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockHealth {
    /// Held by a live process.
    Held(u32),
    /// Its recorded holder is dead.
    DeadHolder(u32),
    /// No holder recorded and older than [`STALE_AFTER`].
    Stale,
    /// No holder recorded yet, young (being taken right now).
    Fresh,
}

/// Inspect a lock directory without touching it.
pub fn inspect(dir: &Path) -> LockHealth {
    match read_holder(dir) {
        Some(pid) if process::is_alive(pid) => LockHealth::Held(pid),
        Some(pid) => LockHealth::DeadHolder(pid),
        None if age(dir).is_some_and(|a| a > STALE_AFTER) => LockHealth::Stale,
        None => LockHealth::Fresh,
    }
}

#[cfg(test)]
mod tests;
