//! How a registration waits for the one that generates the text, and how it is woken.
//!
//! On Linux each lock file has a named pipe beside it (`.wake-<nn>`, made once, like the lock
//! files). A waiter opens it for reading before it looks for the cache, then sleeps in `poll`.
//! The generator, once the cache is in place (or its attempt is over) and the lock let go, opens
//! the pipe for writing and closes it: the kernel reports a hang-up to every reader that opened
//! the pipe before, and they print at once, instead of up to a polling step later, having slept
//! instead of waking every step. A generator that dies cannot wake them: the sleep is cut at
//! [`RECHECK`], when the lock is tried again. A hang-up for another event on the same stripe
//! costs a look and a reopening.
//!
//! (inotify would tell the same without the pipe, but closing an instance that held a watch
//! waits for the kernel's SRCU grace period: 10 to 15 ms at each registration's exit here.)
//!
//! Elsewhere, or where the pipe cannot be made or opened, the wait is a sleep of one polling
//! step.

use std::path::Path;
use std::time::Duration;

/// The step of the polling wait.
const POLL: Duration = Duration::from_millis(1);
/// The longest sleep between two tries of the lock while the pipe is watched: how late a
/// waiter notices a generator that died without waking it.
#[cfg(any(target_os = "linux", target_os = "android"))]
const RECHECK: Duration = Duration::from_millis(5);

/// One polling step, or `most` when shorter: never woken.
fn poll_step(most: Duration) -> bool {
    std::thread::sleep(POLL.min(most));
    false
}

/// A waiter's end of the pipe.
#[derive(Debug)]
pub struct Wake {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pipe: Option<Pipe>,
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[derive(Debug)]
struct Pipe {
    path: std::path::PathBuf,
    reader: std::fs::File,
}

#[cfg(any(target_os = "linux", target_os = "android"))]
impl Pipe {
    /// The pipe at `path` opened for reading without waiting for a writer, made (private to
    /// the user) when missing; `None` when it cannot be, or something else is there.
    fn open(path: &Path) -> Option<Self> {
        use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
        let open = || {
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(crate::file::NO_FOLLOW_NONBLOCK)
                .open(path)
        };
        let reader = match open() {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                let mode = nix::sys::stat::Mode::from_bits_truncate(0o600);
                match nix::unistd::mkfifo(path, mode) {
                    Ok(()) | Err(nix::errno::Errno::EEXIST) => open().ok()?,
                    Err(_) => return None,
                }
            }
            other => other.ok()?,
        };
        let fifo = reader
            .metadata()
            .is_ok_and(|meta| meta.file_type().is_fifo());
        fifo.then(|| Self {
            path: path.to_path_buf(),
            reader,
        })
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
impl Wake {
    /// Open the pipe at `path` for reading (made when missing); polling where that fails.
    pub fn watch(path: &Path) -> Self {
        Self {
            pipe: Pipe::open(path),
        }
    }

    /// Sleep until woken, [`RECHECK`] or `most` has passed (one polling step without the pipe);
    /// whether it was woken.
    pub fn wait(&mut self, most: Duration) -> bool {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        use std::os::fd::AsFd;
        let Some(pipe) = &self.pipe else {
            return poll_step(most);
        };
        // Whole milliseconds, rounded up: a wait never spins on a zero timeout.
        let ms = most.min(RECHECK).as_micros().div_ceil(1000).max(1);
        let timeout = PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(pipe.reader.as_fd(), PollFlags::POLLIN)];
        let woken = poll(&mut fds, timeout).is_ok_and(|ready| ready > 0);
        if woken {
            // A hang-up stays reported until the pipe is opened again.
            self.pipe = Pipe::open(&pipe.path);
        }
        woken
    }
}

/// Wake the waiters reading the pipe at `path`: open it for writing and close it. Nothing to do
/// when no one reads it (`ENXIO`) or it is missing.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn wake(path: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(crate::file::NO_FOLLOW_NONBLOCK)
        .open(path);
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
impl Wake {
    /// Poll: this system's `poll` is not relied on for pipes.
    pub fn watch(_path: &Path) -> Self {
        Self {}
    }

    /// One polling step, or `most` when shorter; never woken.
    #[allow(clippy::unused_self)]
    pub fn wait(&mut self, most: Duration) -> bool {
        poll_step(most)
    }
}

/// Nothing to wake where the waiters poll.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn wake(_path: &Path) {}

#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn a_waiter_is_woken_when_the_generator_lets_go_and_not_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".wake-07");
        let mut waiter = Wake::watch(&path);
        assert!(
            waiter.pipe.is_some(),
            "the pipe was refused: the waits would poll"
        );
        let done = Arc::new(AtomicBool::new(false));
        let generator = {
            let (done, path) = (Arc::clone(&done), path.clone());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                done.store(true, Ordering::SeqCst);
                wake(&path);
            })
        };
        let mut waits = 0;
        while !waiter.wait(Duration::from_secs(5)) {
            waits += 1;
            assert!(waits < 1_000, "never woken");
        }
        assert!(
            done.load(Ordering::SeqCst),
            "woken before the generator let go"
        );
        generator.join().unwrap();
        // Opened again: the hang-up is not reported a second time.
        assert!(
            !waiter.wait(Duration::from_millis(10)),
            "woken again with no one letting go"
        );
    }

    #[test]
    fn waking_with_no_one_waiting_neither_blocks_nor_fails() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".wake-07");
        wake(&path);
        drop(Wake::watch(&path));
        wake(&path);
        assert!(std::fs::metadata(&path).is_ok_and(|m| {
            use std::os::unix::fs::FileTypeExt;
            m.file_type().is_fifo()
        }));
    }

    #[test]
    fn something_else_at_the_pipes_name_leaves_the_wait_polling() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".wake-07");
        std::fs::write(&path, "planted").unwrap();
        let mut waiter = Wake::watch(&path);
        assert!(waiter.pipe.is_none());
        assert!(!waiter.wait(Duration::from_millis(5)));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "planted");
    }
}
