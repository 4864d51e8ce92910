//! The directory latch: an advisory `flock` native writers take before the engine's `mkdir` lock.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{LockError, lock_dir_for};

/// Native writers also exclude each other with an advisory `flock` on the directory that holds
/// the file, taken before the engine's `mkdir` lock. The kernel drops it when its holder dies,
/// so it never outlives a crash, and bash never sees it. It closes the one gap the engine's
/// protocol leaves open between two native writers: the engine's racy reclaim removing a live
/// lock, after which a second native writer could take the name while the first still writes.
/// Within one process it is counted (two locks in one directory never wait on each other).
#[derive(Debug)]
pub struct Latch {
    dir: Option<PathBuf>,
}

/// The directories this process holds latches on, with their open file and a count.
pub(super) static LATCHES: std::sync::Mutex<Vec<(PathBuf, nix::fcntl::Flock<fs::File>, usize)>> =
    std::sync::Mutex::new(Vec::new());

impl Latch {
    /// True when the latch is held (false where the directory has no `flock`).
    pub fn is_held(&self) -> bool {
        self.dir.is_some()
    }

    /// Take the latch of the directory holding `file`, waiting until `deadline` (for a file
    /// only native writers touch, the latch alone excludes them). A directory
    /// that cannot be opened gives no latch (the `mkdir` lock still excludes everyone).
    pub fn take(file: &Path, deadline: Instant) -> Result<Self, LockError> {
        use nix::fcntl::{Flock, FlockArg};
        let dir = match file.parent() {
            Some(d) if d.as_os_str().is_empty() => Path::new("."),
            Some(d) => d,
            None => return Ok(Self { dir: None }),
        };
        let started = Instant::now();
        let mut handle = None;
        loop {
            let mut held = LATCHES
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(entry) = held.iter_mut().find(|(d, ..)| d == dir) {
                entry.2 += 1;
                return Ok(Self {
                    dir: Some(dir.to_path_buf()),
                });
            }
            let file_handle = match handle.take() {
                Some(h) => h,
                None => match fs::File::open(dir) {
                    Ok(h) => h,
                    Err(_) => return Ok(Self { dir: None }),
                },
            };
            match Flock::lock(file_handle, FlockArg::LockExclusiveNonblock) {
                Ok(locked) => {
                    held.push((dir.to_path_buf(), locked, 1));
                    return Ok(Self {
                        dir: Some(dir.to_path_buf()),
                    });
                }
                Err((h, nix::errno::Errno::EWOULDBLOCK | nix::errno::Errno::EINTR)) => {
                    handle = Some(h);
                }
                // No flock on this file system: the mkdir lock alone.
                Err(_) => return Ok(Self { dir: None }),
            }
            drop(held);
            let now = Instant::now();
            if now >= deadline {
                return Err(LockError::Timeout {
                    path: lock_dir_for(file),
                    waited_ms: now.duration_since(started).as_millis(),
                    holder: "another native writer".to_owned(),
                });
            }
            std::thread::sleep(LATCH_RETRY.min(deadline - now));
        }
    }
}

impl Drop for Latch {
    fn drop(&mut self) {
        let Some(dir) = self.dir.take() else { return };
        let mut held = LATCHES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(at) = held.iter().position(|(d, ..)| *d == dir) {
            held[at].2 -= 1;
            if held[at].2 == 0 {
                // Closing the last descriptor releases the flock.
                held.swap_remove(at);
            }
        }
    }
}

/// Pause between two attempts at the latch.
const LATCH_RETRY: Duration = Duration::from_millis(1);
