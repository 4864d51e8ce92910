//! The one atomic write every file the product writes goes through, and the temporary names
//! it and staged locks use.

use std::cell::Cell;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::WriteError;
use crate::primitives::system::rename::{HAS_RENAMEAT2, Rename, is_unsupported, rename_with};

static TEMP_COUNTER: AtomicU32 = AtomicU32::new(0);

thread_local! {
    /// The files this thread has synced before publishing them.
    static SYNCS: Cell<u64> = const { Cell::new(0) };
}

/// How many files this thread has synced (`fdatasync`) before their rename: which writes pay
/// for a sync is a promise (docs/reliability.md), and this is how the tests hold it.
pub fn syncs_on_this_thread() -> u64 {
    SYNCS.with(Cell::get)
}

/// What [`WriteOptions::held_temp`] appends to a file's name for its temporary.
pub const HELD_TEMP_SUFFIX: &str = ".tmp.held";

/// A fresh temporary name next to `path`: `<path>.tmp.<pid>.<n>`, unique in this process.
///
/// Callers create it exclusively (`create_new`, `mkdir`), so a planted entry of that name is
/// never followed or reused.
pub fn temp_path(path: &Path) -> PathBuf {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".tmp.{}.{n}", std::process::id()));
    PathBuf::from(name)
}

/// How [`write_atomic_with`] writes a file. Every file the product writes goes through that one
/// function; these are the ways its writers differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOptions {
    /// Sync the data to the disk (`fdatasync`; plain `fsync` on macOS, where `F_FULLFSYNC`
    /// takes milliseconds) before the rename: after a crash the file is its old or its new
    /// version, never empty or torn. Off for caches, which their readers check and rebuild, and
    /// for the state a tool call writes (`state::Durability::PerCall`): a crash of the process
    /// alone never tears a file either way.
    pub sync: bool,
    /// Permission bits of the new file, before the umask.
    pub mode: u32,
    /// Replace a file already at the path; when false the write happens only when nothing
    /// (not even a dangling link) is there, and reports false otherwise.
    pub replace: bool,
    /// Name the temporary `<dir>/<prefix><pid>.<n>` instead of `<file>.tmp.<pid>.<n>`, for a
    /// directory whose readers skip names with that prefix (the marker directory).
    pub hidden_temp: Option<&'static str>,
    /// The caller holds a lock that no other writer of this file passes: the temporary is
    /// `<file>.tmp.held`. Where `renameat2` can exchange two names (Linux), it is written in
    /// place and exchanged with the file, so no file is created or freed: the previous version
    /// stays under the temporary's name and the next write overwrites it. A reader that opened
    /// the file before an exchange and still reads it then may read it torn, so the readers of
    /// such a file must check what they read (the counters carry a hash of their text).
    /// Elsewhere, one already there was left by a holder that was killed, and is removed first.
    /// Either way a killed writer's temporary is the next writer's, and never litter that only
    /// a sweep of the directory would find.
    pub held_temp: bool,
}

impl WriteOptions {
    /// A file of the user's or shared with the engine (states, seeds, settings): synced,
    /// replaced, readable as the umask allows.
    pub const DURABLE: Self = Self {
        sync: true,
        mode: 0o666,
        replace: true,
        hidden_temp: None,
        held_temp: false,
    };
    /// A cache its readers verify and rebuild (the PID cache, the session index, SessionStart's
    /// text, the counters' checkpoint): not synced.
    pub const CACHE: Self = Self {
        sync: false,
        ..Self::DURABLE
    };
}

/// Write bytes to `path` atomically and durably ([`WriteOptions::DURABLE`]): a temporary file
/// created exclusively beside it, its data synced to the disk (`fdatasync`), then renamed over
/// `path`. After a crash or a power cut the file is its old or its new version, never empty or
/// torn. The directory is not synced: the rename itself may be lost to a power cut, which
/// leaves the old version (docs/reliability.md).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    write_atomic_with(path, bytes, WriteOptions::DURABLE, || true).map(|_| ())
}

/// Write a cache file atomically without syncing it ([`WriteOptions::CACHE`]): its readers
/// verify what they read and rebuild it when it is missing or wrong.
pub fn write_cache(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    write_atomic_with(path, bytes, WriteOptions::CACHE, || true).map(|_| ())
}

/// Put the data of `file` on the disk before the rename that publishes it: `fdatasync`.
///
/// On macOS the standard library's `sync_data` asks the drive to empty its own cache too
/// (`F_FULLFSYNC`), which takes milliseconds, on every counted tool call. Plain `fsync` hands the
/// data to the drive before the rename, as `SQLite` does by default there: a crash of the system
/// leaves the old or the new file; a power cut that the drive's cache does not survive is the
/// one case it leaves to the drive.
fn sync_data(file: &fs::File) -> io::Result<()> {
    #[cfg(target_vendor = "apple")]
    {
        nix::unistd::fsync(file).map_err(io::Error::from)
    }
    #[cfg(not(target_vendor = "apple"))]
    {
        file.sync_data()
    }
}

/// The one atomic write: `bytes` go to a temporary created exclusively (`O_EXCL|O_NOFOLLOW`,
/// so a planted entry is never followed or reused) in the directory of `path` (or the held
/// temporary, see [`WriteOptions::held_temp`]), are synced when `options.sync`, and are published
/// by a rename over `path` (or, without `options.replace`, by a link that fails when `path`
/// exists) only when `still_ok` holds right before. True when published; on any failure the
/// temporary is removed and `path` is as it was.
pub fn write_atomic_with(
    path: &Path,
    bytes: &[u8],
    options: WriteOptions,
    still_ok: impl FnOnce() -> bool,
) -> Result<bool, WriteError> {
    let failed = |source| WriteError {
        path: path.to_path_buf(),
        source,
    };
    let (temp, mut file, reused) = create_temp(path, &options).map_err(failed)?;
    let mut kept = false;
    let result = (|| {
        file.write_all(bytes)?;
        if reused {
            file.set_len(bytes.len() as u64)?;
        }
        if options.sync {
            sync_data(&file)?;
            SYNCS.with(|n| n.set(n.get() + 1));
        }
        drop(file);
        // From the last check to the rename, the hook's answer is bound to this write.
        crate::primitives::system::watchdog::committing(|| {
            publish(&temp, path, &options, still_ok, &mut kept)
        })
    })();
    if !(kept || options.replace && matches!(result, Ok(true))) {
        let _ = fs::remove_file(&temp);
    }
    result.map_err(failed)
}

/// Publish the written temporary `temp` as `path` when `still_ok` holds: true when published
/// (`kept`: the held temporary was exchanged with the old file and stays as its spare).
fn publish(
    temp: &Path,
    path: &Path,
    options: &WriteOptions,
    still_ok: impl FnOnce() -> bool,
    kept: &mut bool,
) -> io::Result<bool> {
    {
        if !still_ok() {
            return Ok(false);
        }
        if options.replace {
            if options.held_temp {
                match rename_with(temp, path, Rename::Exchange) {
                    Ok(()) => {
                        *kept = true;
                        return Ok(true);
                    }
                    Err(err) if err.kind() != io::ErrorKind::NotFound && !is_unsupported(&err) => {
                        return Err(err);
                    }
                    Err(_) => {}
                }
            }
            return fs::rename(temp, path).map(|()| true);
        }
        match fs::hard_link(temp, path) {
            Ok(()) => Ok(true),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(err) => Err(err),
        }
    }
}

/// The temporary for `path`, and whether it is an earlier version reused in place: the held
/// temporary where it can be exchanged and is a regular file, else a fresh one created
/// exclusively (a name left by an earlier process with the same PID is skipped).
fn create_temp(path: &Path, options: &WriteOptions) -> io::Result<(PathBuf, fs::File, bool)> {
    if options.held_temp && HAS_RENAMEAT2 {
        let held = held_path(path);
        if let Ok(file) = fs::OpenOptions::new()
            .write(true)
            .custom_flags(super::NO_FOLLOW_NONBLOCK)
            .open(&held)
        {
            if file.metadata().is_ok_and(|meta| meta.is_file()) {
                return Ok((held, file, true));
            }
        }
    }
    let mut last = None;
    for _ in 0..8 {
        let temp = match options.hidden_temp {
            _ if options.held_temp => held_path(path),
            Some(prefix) => {
                let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
                path.with_file_name(format!("{prefix}{}.{n}", std::process::id()))
            }
            None => temp_path(path),
        };
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(options.mode)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&temp)
        {
            Ok(file) => return Ok((temp, file, false)),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                if options.held_temp {
                    // A killed holder's (or a planted entry, which is removed, not followed).
                    let _ = fs::remove_file(&temp);
                }
                last = Some(err);
            }
            Err(err) => return Err(err),
        }
    }
    Err(last.unwrap_or_else(|| io::ErrorKind::AlreadyExists.into()))
}

/// `<path>.tmp.held`.
fn held_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(HELD_TEMP_SUFFIX);
    PathBuf::from(name)
}

#[cfg(test)]
/// The counter the next [`temp_path`] of this process will use (tests plant entries there).
pub(crate) fn next_temp_number() -> u32 {
    TEMP_COUNTER.load(Ordering::Relaxed)
}
