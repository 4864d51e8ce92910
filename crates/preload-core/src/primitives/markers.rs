//! Small per-user marker files that hooks leave for each other between calls.
//!
//! The mechanism, independent of any one hook:
//! - a private directory per user (default `${TMPDIR:-/tmp}/claude-preload-<uid>`, mode 0700,
//!   `PRELOAD_MARKER_DIR` overrides) that is used only when it is a real directory (never a
//!   symbolic link) owned by the current user;
//! - writes through the one atomic write ([`file::write_atomic_with`]): a fresh file created
//!   exclusively (`O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600, named with a prefix readers skip) and
//!   renamed into place, so a planted link is replaced, never written through;
//! - reads that never follow a symbolic link and trust only a regular file with one link owned
//!   by the current user ([`read_trusted`], also used for legacy markers in `/tmp`);
//! - a one-shot consume ([`MarkerDir::take`]) that renames the marker to a unique name before
//!   reading it, so of many concurrent consumers exactly one gets it.
//!
//! Marker names are built with [`marker_name`], which refuses anything but a plain file name.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use crate::primitives::clock;
use crate::primitives::env::{self, Env};
use crate::primitives::file;
use crate::primitives::paths;

/// Largest marker read; a bigger file is not a marker of ours.
pub const MAX_MARKER_BYTES: u64 = 64 * 1024;
/// Longest session id (or other key) accepted inside a marker name.
pub const MAX_KEY_CHARS: usize = 128;
/// Where the legacy hooks kept their markers when `PRELOAD_LEGACY_MARKER_DIR` is not set.
pub const DEFAULT_LEGACY_DIR: &str = "/tmp";

/// Prefix of the files a write creates before renaming them into place.
const TEMP_PREFIX: &str = ".tmp-";
/// Prefix of the files a consume renames a marker to before reading it.
const TAKEN_PREFIX: &str = ".taken-";

/// Why the marker directory or a marker could not be used.
#[derive(Debug, thiserror::Error)]
pub enum MarkerError {
    /// A file operation failed.
    #[error(transparent)]
    Io(#[from] file::OpError),
    /// The directory belongs to someone else.
    #[error("{path} belongs to uid {owner}, not {expected}; remove it or set PRELOAD_MARKER_DIR")]
    NotOwned {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The current user.
        expected: u32,
    },
    /// The directory path is a symbolic link.
    #[error("{path} is a symbolic link; marker directories are never followed through links")]
    Symlink {
        /// The path.
        path: PathBuf,
    },
    /// The directory path is something other than a directory.
    #[error("{path} is not a directory")]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// A marker name that is not a plain file name.
    #[error("marker name {name:?} is not a plain file name")]
    UnsafeName {
        /// The name.
        name: String,
    },
}

fn written(err: file::WriteError) -> MarkerError {
    MarkerError::Io(file::OpError {
        action: "write",
        path: err.path,
        source: err.source,
    })
}

/// The effective uid: the owner of every file this process creates.
pub fn current_uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// `<prefix>-<key>` when `key` is a plain name (`[A-Za-z0-9._-]`, not `.`/`..`, at most
/// [`MAX_KEY_CHARS`]); `None` otherwise, so a session id like `../../etc/x` never reaches a path.
pub fn marker_name(prefix: &str, key: &str) -> Option<String> {
    (paths::is_safe_name(key) && key.len() <= MAX_KEY_CHARS).then(|| format!("{prefix}-{key}"))
}

/// The default marker directory for `env`: `${TMPDIR:-/tmp}/claude-preload-<uid>`, or
/// `PRELOAD_MARKER_DIR` when set.
pub fn default_dir(env: &Env) -> PathBuf {
    env.get(env::PRELOAD_MARKER_DIR)
        .map_or_else(|| user_dir(env), PathBuf::from)
}

/// The current user's private directory under the temporary directory:
/// `${TMPDIR:-/tmp}/claude-preload-<uid>` (markers and the SessionStart cache share it).
pub fn user_dir(env: &Env) -> PathBuf {
    let tmp = env.get(env::TMPDIR).unwrap_or("/tmp");
    Path::new(tmp).join(format!("claude-preload-{}", current_uid()))
}

/// The directory of the legacy hooks' markers: `PRELOAD_LEGACY_MARKER_DIR`, else `/tmp`
/// (independent of `TMPDIR`, as the legacy hooks wrote there).
pub fn legacy_dir(env: &Env) -> PathBuf {
    PathBuf::from(
        env.get(env::PRELOAD_LEGACY_MARKER_DIR)
            .unwrap_or(DEFAULT_LEGACY_DIR),
    )
}

/// Read `path` only when it is a regular file with one link, owned by `uid`, at most
/// [`MAX_MARKER_BYTES`]; never follows a symbolic link. `Ok(None)` when it is missing or not
/// trusted; `Err` only when reading a trusted file failed.
pub fn read_trusted(path: &Path, uid: u32) -> Result<Option<Vec<u8>>, MarkerError> {
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(file::NO_FOLLOW_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(err) => {
            let link = err.raw_os_error() == Some(nix::libc::ELOOP);
            if link || err.kind() == io::ErrorKind::NotFound {
                return Ok(None);
            }
            return Err(file::OpError::at("open", path)(err).into());
        }
    };
    let meta = file
        .metadata()
        .map_err(file::OpError::at("inspect", path))?;
    if !meta.is_file() || meta.uid() != uid || meta.nlink() != 1 || meta.len() > MAX_MARKER_BYTES {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    file.take(MAX_MARKER_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(file::OpError::at("read", path))?;
    if bytes.len() as u64 > MAX_MARKER_BYTES {
        return Ok(None);
    }
    Ok(Some(bytes))
}

/// A unique suffix within this machine: pid, clock and a process-wide counter.
fn unique_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{}-{nanos}-{n}", std::process::id())
}

/// A private marker directory of the current user.
#[derive(Debug, Clone)]
pub struct MarkerDir {
    path: PathBuf,
    uid: u32,
}

impl MarkerDir {
    /// The directory for `env` ([`default_dir`]), created (mode 0700) when missing.
    pub fn open(env: &Env) -> Result<Self, MarkerError> {
        let path = default_dir(env);
        Self::at(&path, true)?.ok_or(MarkerError::NotADirectory { path })
    }

    /// The directory for `env` when it already exists; `Ok(None)` when it does not.
    pub fn existing(env: &Env) -> Result<Option<Self>, MarkerError> {
        Self::at(&default_dir(env), false)
    }

    /// The directory at `path`, checked (a real directory owned by the current user, access
    /// for the owner only, tightened when looser); created when missing and `create` is set.
    pub fn at(path: &Path, create: bool) -> Result<Option<Self>, MarkerError> {
        let uid = current_uid();
        let meta = match fs::symlink_metadata(path) {
            Ok(meta) => meta,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                if !create {
                    return Ok(None);
                }
                match DirBuilder::new().recursive(true).mode(0o700).create(path) {
                    Ok(()) => {}
                    Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(err) => return Err(file::OpError::at("create", path)(err).into()),
                }
                fs::symlink_metadata(path).map_err(file::OpError::at("inspect", path))?
            }
            Err(err) => return Err(file::OpError::at("inspect", path)(err).into()),
        };
        if meta.file_type().is_symlink() {
            return Err(MarkerError::Symlink {
                path: path.to_path_buf(),
            });
        }
        if !meta.is_dir() {
            return Err(MarkerError::NotADirectory {
                path: path.to_path_buf(),
            });
        }
        if meta.uid() != uid {
            return Err(MarkerError::NotOwned {
                path: path.to_path_buf(),
                owner: meta.uid(),
                expected: uid,
            });
        }
        if meta.mode() & 0o077 != 0 {
            fs::set_permissions(path, fs::Permissions::from_mode(0o700))
                .map_err(file::OpError::at("restrict", path))?;
        }
        Ok(Some(Self {
            path: path.to_path_buf(),
            uid,
        }))
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn child(&self, name: &str) -> Result<PathBuf, MarkerError> {
        if paths::is_safe_name(name)
            && !name.starts_with(TEMP_PREFIX)
            && !name.starts_with(TAKEN_PREFIX)
        {
            Ok(self.path.join(name))
        } else {
            Err(MarkerError::UnsafeName { name: name.into() })
        }
    }

    /// A marker file: private (0600), synced, its temporary hidden under [`TEMP_PREFIX`].
    const WRITE: file::WriteOptions = file::WriteOptions {
        mode: 0o600,
        hidden_temp: Some(TEMP_PREFIX),
        held_temp: false,
        ..file::WriteOptions::DURABLE
    };

    /// Create marker `name` with `bytes` only when no file (or link) of that name exists;
    /// true when this call created it. The marker appears whole or not at all.
    pub fn create(&self, name: &str, bytes: &[u8]) -> Result<bool, MarkerError> {
        let path = self.child(name)?;
        let options = file::WriteOptions {
            replace: false,
            ..Self::WRITE
        };
        file::write_atomic_with(&path, bytes, options, || true).map_err(written)
    }

    /// Write marker `name` with `bytes`, replacing any earlier marker (or planted link) of that
    /// name atomically: a fresh file is created exclusively and renamed into place.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<(), MarkerError> {
        let path = self.child(name)?;
        file::write_atomic_with(&path, bytes, Self::WRITE, || true)
            .map(|_| ())
            .map_err(written)
    }

    /// Read marker `name` without consuming it; `None` when missing or not trusted.
    pub fn read(&self, name: &str) -> Result<Option<Vec<u8>>, MarkerError> {
        read_trusted(&self.child(name)?, self.uid)
    }

    /// Consume marker `name`: of any number of concurrent callers, exactly one gets its
    /// content. A marker that is not a trusted file (a planted link, another user's file) is
    /// removed and reads as `None`.
    pub fn take(&self, name: &str) -> Result<Option<Vec<u8>>, MarkerError> {
        let source = self.child(name)?;
        let taken = self
            .path
            .join(format!("{TAKEN_PREFIX}{}-{name}", unique_suffix()));
        match fs::rename(&source, &taken) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(file::OpError::at("claim", &source)(err).into()),
        }
        let content = read_trusted(&taken, self.uid);
        let _ = fs::remove_file(&taken);
        content
    }

    /// Remove marker `name`; true when there was one.
    pub fn remove(&self, name: &str) -> Result<bool, MarkerError> {
        let path = self.child(name)?;
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(err) => Err(file::OpError::at("remove", &path)(err).into()),
        }
    }

    /// Remove what crashed writers and consumers left behind (temporary and claimed files)
    /// older than `age`. Best effort: failures are ignored.
    pub fn sweep(&self, age: Duration) {
        let Ok(entries) = fs::read_dir(&self.path) else {
            return;
        };
        let now = SystemTime::now();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !(name.starts_with(TEMP_PREFIX) || name.starts_with(TAKEN_PREFIX)) {
                continue;
            }
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .map(|m| clock::distance(m, now))
                .is_some_and(|d| d >= age);
            if old {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

#[cfg(test)]
mod tests;
