//! How a lock directory comes into being, and where it goes when it is released.
//!
//! Where the kernel has `renameat2(RENAME_NOREPLACE)`, a lock is built under a temporary name
//! with its `pid` file already inside and renamed into place, so a lock of ours is never seen
//! without its holder: a holder killed at any instant leaves a lock that the next waiter
//! reclaims at once by the PID check. Elsewhere it is the engine's `mkdir`, then the PID.
//!
//! A released lock is not deleted: it is renamed to the directory's [`SPARE`], and the next lock
//! taken in that directory is built from it, its `pid` rewritten in place. Creating a directory
//! and a file and freeing both again is most of what taking and releasing a lock costs (140 us
//! against 30 on an ext4 disk): a new inode is looked for among the free ones, a freed one is
//! written back and its blocks released. The spare is one per directory, not per lock, so a
//! directory of many locked files (the seeds) keeps one; it holds the
//! `pid` of its last holder and nothing else, is never a lock (the engine looks only at
//! `<file>.lock`), and a waiter that finds none, or finds it taken by another waiter, makes a
//! new directory as before. A release that finds a spare already there deletes its lock.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::primitives::file;
use crate::primitives::system::rename;

/// The released lock a directory keeps for its next lock.
pub const SPARE: &str = ".preload-lock-spare";

/// The spare beside the lock directory `dir`.
fn spare_for(dir: &Path) -> Option<PathBuf> {
    Some(dir.parent()?.join(SPARE))
}

/// Where a lock directory of ours went when it was let go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parked {
    /// It is the directory's spare now.
    Spare,
    /// The directory already had a spare; the lock was deleted.
    Deleted,
    /// It could not be renamed (no `renameat2`, or the rename failed); the lock was deleted.
    Unparked,
}

/// Let go of the lock directory `dir`, which names this process: into the spare when the
/// directory has none, else renamed away (so it is never seen without its pid file) and deleted.
pub fn park(dir: &Path) -> Parked {
    let parked = match spare_for(dir).map(|spare| rename_no_replace(dir, &spare)) {
        Some(Ok(())) => return Parked::Spare,
        Some(Err(err))
            if matches!(
                err.kind(),
                io::ErrorKind::AlreadyExists | io::ErrorKind::DirectoryNotEmpty
            ) =>
        {
            Parked::Deleted
        }
        _ => Parked::Unparked,
    };
    let grave = file::temp_path(dir);
    if fs::rename(dir, &grave).is_ok() {
        let _ = file::remove_lock_dir(&grave);
    } else {
        let _ = file::remove_lock_dir(dir);
    }
    parked
}

/// One acquisition's staged lock, kept across its tries.
pub struct Stage {
    staged: Option<PathBuf>,
    unsupported: bool,
}

impl Stage {
    pub fn new() -> Self {
        Self {
            staged: None,
            unsupported: !rename::HAS_RENAMEAT2,
        }
    }

    /// One attempt: true when the lock is ours now, false when someone holds it.
    pub fn take(&mut self, dir: &Path) -> io::Result<bool> {
        if !self.unsupported {
            match self.take_staged(dir) {
                Ok(taken) => return Ok(taken),
                Err(err) if rename::is_unsupported(&err) => {
                    self.discard();
                    self.unsupported = true;
                }
                Err(err) => {
                    self.discard();
                    return Err(err);
                }
            }
        }
        take_direct(dir)
    }

    fn take_staged(&mut self, dir: &Path) -> io::Result<bool> {
        let staged = match &self.staged {
            Some(path) => path.clone(),
            None => self.stage(dir)?,
        };
        match rename_no_replace(&staged, dir) {
            Ok(()) => {
                self.staged = None;
                Ok(true)
            }
            Err(err)
                if matches!(
                    err.kind(),
                    io::ErrorKind::AlreadyExists | io::ErrorKind::DirectoryNotEmpty
                ) =>
            {
                Ok(false)
            }
            Err(err) => Err(err),
        }
    }

    /// The lock-to-be under a temporary name, with this process's PID inside: the directory's
    /// spare when there is one to claim, else a new directory.
    fn stage(&mut self, dir: &Path) -> io::Result<PathBuf> {
        let path = file::temp_path(dir);
        if claim_spare(dir, &path) {
            self.staged = Some(path.clone());
            if write_pid_file(&path, true).is_ok() {
                return Ok(path);
            }
            self.discard();
        }
        fs::create_dir(&path)?;
        self.staged = Some(path.clone());
        write_pid_file(&path, false)?;
        Ok(path)
    }

    fn discard(&mut self) {
        if let Some(path) = self.staged.take() {
            let _ = file::remove_lock_dir(&path);
        }
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        self.discard();
    }
}

/// Rename the directory's spare to `to` when it is a directory (anything else by that name is
/// not ours and is left alone). False when there is none, or another waiter claimed it first.
fn claim_spare(dir: &Path, to: &Path) -> bool {
    spare_for(dir).is_some_and(|spare| {
        fs::symlink_metadata(&spare).is_ok_and(|meta| meta.is_dir())
            && fs::rename(&spare, to).is_ok()
    })
}

/// `renameat2(RENAME_NOREPLACE)`, where there is one ([`rename::rename_with`]).
pub fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    rename::rename_with(from, to, rename::Rename::NoReplace)
}

/// The engine's way: `mkdir`, then the PID.
fn take_direct(dir: &Path) -> io::Result<bool> {
    match fs::create_dir(dir) {
        Ok(()) => {
            // A missing pid file only delays reclaim to the age rule; the lock is still held.
            let _ = write_pid_file(dir, false);
            Ok(true)
        }
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(err) => Err(err),
    }
}

/// Write this process's PID to the lock's `pid` file (see [`file::LOCK_FILES_WRITTEN`]): a new
/// file, or, in a claimed spare (`reuse`), over its last holder's, in place and then cut to its
/// length, so the file keeps its inode and its block (truncating it first would free the block
/// and take a new one); a link planted in its place is not followed.
fn write_pid_file(dir: &Path, reuse: bool) -> io::Result<()> {
    let line = format!("{}\n", std::process::id());
    for name in file::LOCK_FILES_WRITTEN {
        let mut options = fs::OpenOptions::new();
        options.write(true);
        if reuse {
            options.create(true).custom_flags(nix::libc::O_NOFOLLOW);
        } else {
            options.create_new(true);
        }
        let mut out = options.open(dir.join(name))?;
        out.write_all(line.as_bytes())?;
        if reuse {
            out.set_len(line.len() as u64)?;
        }
    }
    Ok(())
}
