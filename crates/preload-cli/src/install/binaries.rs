//! Copying the binaries into the install directory.
//!
//! Every binary of the package is one program, `preload`, which runs every hook under the
//! hook's name (`preload_cli::multi_call`). So `preload` is copied once, from where it is, and
//! every name of [`BINARIES`] becomes a hard link to that copy (a copy of its own where the
//! file system has no hard links), whatever else lies beside it: a package that ships
//! `preload` alone, as the npm packages do, installs all of them. A changed file is renamed
//! over the old one, so a running hook keeps its own copy.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use preload_core::primitives::file;
use preload_core::primitives::file::OpError;

use super::wiring::BINARIES;

/// Why the binaries were not copied.
#[derive(Debug, thiserror::Error)]
pub enum BinaryError {
    /// `preload` is missing where the binaries are copied from.
    #[error("missing in {dir}: {names}; build them first with `cargo build --release --locked`")]
    Missing {
        /// Where they were looked for.
        dir: PathBuf,
        /// Which are missing.
        names: String,
    },
    /// A file operation failed.
    #[error(transparent)]
    Io(#[from] OpError),
}

/// The binary that runs every hook under the hook's name (`policies::main_of`).
pub const MULTI_CALL: &str = "preload";

/// Copy the binaries from `from` into `prefix`; returns how many were (re)written.
pub fn install_binaries(from: &Path, prefix: &Path) -> Result<usize, BinaryError> {
    let multi_call = from.join(MULTI_CALL);
    if !multi_call.is_file() {
        return Err(BinaryError::Missing {
            dir: from.to_path_buf(),
            names: MULTI_CALL.into(),
        });
    }
    if same_dir(from, prefix) {
        return Ok(0);
    }
    fs::create_dir_all(prefix).map_err(OpError::at("create", prefix))?;
    // `preload` first, then every other name a hard link to it (a copy of its own where the
    // file system has no hard links).
    let first = prefix.join(MULTI_CALL);
    let mut copied = usize::from(install_file(&multi_call, &first)?);
    for name in BINARIES.iter().filter(|name| **name != MULTI_CALL) {
        let target = prefix.join(name);
        if file_id(&target).ok() == file_id(&first).ok() {
            continue;
        }
        if link_over(&first, &target).is_err() {
            copied += usize::from(install_file(&multi_call, &target)?);
            continue;
        }
        copied += 1;
    }
    Ok(copied)
}

/// Copy the executable `source` to `target` unless `target` holds the same bytes already;
/// true when it was written. A new file is renamed over the old one: a running hook keeps its
/// own copy.
pub fn install_file(source: &Path, target: &Path) -> Result<bool, OpError> {
    let bytes = fs::read(source).map_err(OpError::at("read", source))?;
    if fs::read(target).is_ok_and(|old| old == bytes) {
        return Ok(false);
    }
    file::write_atomic(target, &bytes)
        .map_err(|err| err.source)
        .map_err(OpError::at("write", target))?;
    make_executable(target).map_err(OpError::at("chmod", target))?;
    Ok(true)
}

/// A file's identity: its device and inode.
type FileId = (u64, u64);

fn file_id(path: &Path) -> io::Result<FileId> {
    use std::os::unix::fs::MetadataExt;
    let meta = fs::metadata(path)?;
    Ok((meta.dev(), meta.ino()))
}

/// Make `target` another name of `first`: a hard link made under a temporary name, renamed
/// over `target` (a running hook keeps its own copy).
fn link_over(first: &Path, target: &Path) -> io::Result<()> {
    let temp = file::temp_path(target);
    fs::hard_link(first, &temp)?;
    fs::rename(&temp, target).inspect_err(|_| {
        let _ = fs::remove_file(&temp);
    })
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Make a file executable by everyone (`0o755`).
pub(crate) fn make_executable(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
}
