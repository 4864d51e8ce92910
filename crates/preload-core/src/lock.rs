//! The engine's mkdir lock, so bash and native writers exclude each other.
//!
//! The lock of `<file>` is the directory `<file>.lock`, created with `mkdir`; the holder writes
//! its PID to `<file>.lock/pid`. A waiter retries every 10 ms until its deadline, and removes the
//! lock at once when the recorded holder is dead, or when the directory is older than
//! [`STALE_AFTER`]. Release removes `pid`, then the directory. This module is the only one that
//! creates or removes lock directories.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::process;

/// A lock directory older than this is taken to be left by a crashed holder.
pub const STALE_AFTER: Duration = Duration::from_secs(10);
/// Pause between two attempts.
pub const RETRY_EVERY: Duration = Duration::from_millis(10);
/// Default wait for a lock (`PRELOAD_LOCK_TIMEOUT_MS`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);

/// Why a lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
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
}

/// The lock directory that guards `file`.
pub fn lock_dir_for(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

impl StateLock {
    /// Take the lock of `file`, waiting until `deadline`.
    pub fn acquire(file: &Path, deadline: Instant) -> Result<Self, LockError> {
        let dir = lock_dir_for(file);
        let started = Instant::now();
        loop {
            match fs::create_dir(&dir) {
                Ok(()) => {
                    let lock = Self {
                        dir,
                        released: false,
                    };
                    lock.write_pid();
                    return Ok(lock);
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                    if reclaim_if_abandoned(&dir) {
                        continue;
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::NotFound => {
                    return Err(LockError::Create {
                        path: dir,
                        source: err,
                    });
                }
                Err(err) => {
                    return Err(LockError::Create {
                        path: dir,
                        source: err,
                    });
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

    fn write_pid(&self) {
        let pid_file = self.dir.join("pid");
        // A missing pid file only delays reclaim to the age rule; the lock is still held.
        if let Ok(mut file) = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(pid_file)
        {
            let _ = writeln!(file, "{}", std::process::id());
        }
    }

    /// Release the lock now (also done on drop).
    pub fn release(mut self) {
        self.remove();
    }

    fn remove(&mut self) {
        if !self.released {
            self.released = true;
            let _ = fs::remove_file(self.dir.join("pid"));
            let _ = fs::remove_dir(&self.dir);
        }
    }
}

impl Drop for StateLock {
    fn drop(&mut self) {
        self.remove();
    }
}

fn read_holder(dir: &Path) -> Option<u32> {
    fs::read_to_string(dir.join("pid"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn age(dir: &Path) -> Option<Duration> {
    let modified = fs::symlink_metadata(dir).ok()?.modified().ok()?;
    SystemTime::now().duration_since(modified).ok()
}

/// Remove the lock when its holder is dead or it is older than [`STALE_AFTER`].
///
/// Returns true when the caller should retry at once.
fn reclaim_if_abandoned(dir: &Path) -> bool {
    match read_holder(dir) {
        Some(pid) if !process::is_alive(pid) => {
            // Re-read right before removing, so a lock re-taken meanwhile is left alone.
            if read_holder(dir) == Some(pid) {
                let _ = fs::remove_file(dir.join("pid"));
                let _ = fs::remove_dir(dir);
            }
            true
        }
        Some(_) => false,
        None => match age(dir) {
            Some(elapsed) if elapsed > STALE_AFTER => {
                let _ = fs::remove_file(dir.join("pid"));
                let _ = fs::remove_dir(dir);
                true
            }
            // Not there any more: retry at once.
            None => !dir.exists(),
            Some(_) => false,
        },
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
mod tests {
    use super::*;

    fn soon(ms: u64) -> Instant {
        Instant::now() + Duration::from_millis(ms)
    }

    #[test]
    fn acquire_writes_pid_and_release_cleans_up() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join(".state.json");
        let lock = StateLock::acquire(&file, soon(100)).unwrap();
        let dir = lock_dir_for(&file);
        assert_eq!(read_holder(&dir), Some(std::process::id()));
        lock.release();
        assert!(!dir.exists());
    }

    #[test]
    fn a_live_bash_holder_excludes_us_until_timeout() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("s.json");
        let dir = lock_dir_for(&file);
        // The way the engine's bash takes it: mkdir, then its own PID (alive: this process's parent).
        fs::create_dir(&dir).unwrap();
        fs::write(
            dir.join("pid"),
            format!("{}\n", std::os::unix::process::parent_id()),
        )
        .unwrap();
        let err = StateLock::acquire(&file, soon(60)).unwrap_err();
        assert!(matches!(err, LockError::Timeout { .. }), "{err}");
        assert!(
            dir.join("pid").exists(),
            "a live holder's lock is never removed"
        );
    }

    #[test]
    fn a_dead_holder_is_reclaimed_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("s.json");
        let dir = lock_dir_for(&file);
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("pid"), "4000000\n").unwrap();
        let started = Instant::now();
        let lock = StateLock::acquire(&file, soon(2000)).unwrap();
        assert!(started.elapsed() < Duration::from_millis(500));
        assert_eq!(read_holder(lock.path()), Some(std::process::id()));
    }

    #[test]
    fn a_pidless_lock_is_reclaimed_only_when_old() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("s.json");
        let dir = lock_dir_for(&file);
        fs::create_dir(&dir).unwrap();
        assert_eq!(inspect(&dir), LockHealth::Fresh);
        assert!(StateLock::acquire(&file, soon(40)).is_err());
        let old = SystemTime::now() - Duration::from_secs(30);
        fs::File::open(&dir).unwrap().set_modified(old).unwrap();
        assert_eq!(inspect(&dir), LockHealth::Stale);
        assert!(StateLock::acquire(&file, soon(100)).is_ok());
    }

    #[test]
    fn threads_are_serialised() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("count");
        fs::write(&file, "0").unwrap();
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let file = file.clone();
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        let _lock = StateLock::acquire(&file, soon(5000)).unwrap();
                        let n: u32 = fs::read_to_string(&file).unwrap().parse().unwrap();
                        fs::write(&file, (n + 1).to_string()).unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(fs::read_to_string(&file).unwrap(), "160");
    }
}
