//! The bash shims `preload install --shims` writes over the engine's hook scripts.
//!
//! Each shim is named exactly like the engine script it replaces and `exec`s the binary; the
//! original is kept as `<script>.preload-backup` and put back on uninstall.

use std::fs;
use std::path::{Path, PathBuf};

use preload_core::primitives::file;
use preload_core::primitives::file::OpError;

use super::backup_of;
use super::binaries::make_executable;
use super::wiring::{DEFAULT_PREFIX, SHIMS, Shim};

/// The first line after the shebang of every shim; marks a script as ours.
pub const SHIM_MARKER: &str = "# preload-hooks shim";

/// Where the engine's hook scripts are, and so the shims: `~/.claude/hooks`.
pub fn hooks_dir(home: &Path) -> PathBuf {
    home.join(".claude/hooks")
}

/// Why a shim was not written or an engine script not put back.
#[derive(Debug, thiserror::Error)]
pub enum ShimError {
    /// A file operation failed.
    #[error(transparent)]
    Io(#[from] OpError),
}

/// The text of the shim for `shim`, running binaries from `prefix` (default: the install
/// directory under `$HOME`, spelled so bash expands it).
pub fn shim_text(shim: &Shim, prefix: Option<&Path>) -> String {
    let dir = prefix.map_or_else(
        || format!("$HOME/{DEFAULT_PREFIX}"),
        |p| p.display().to_string(),
    );
    format!(
        "#!/usr/bin/env bash\n{SHIM_MARKER}: the engine's {script}, replaced by the native {binary}.\nexec \"{dir}/{binary}\"{args}\n",
        script = shim.script,
        binary = shim.binary,
        args = shim.args,
    )
}

/// True when `path` is a shim written by `preload install --shims`.
pub fn is_shim(path: &Path) -> bool {
    fs::read_to_string(path)
        .is_ok_and(|t| t.lines().nth(1).is_some_and(|l| l.starts_with(SHIM_MARKER)))
}

/// Whether `hooks_dir` holds any of the engine's scripts a shim replaces (or a shim already).
pub fn any_to_replace(hooks_dir: &Path) -> bool {
    SHIMS
        .iter()
        .any(|shim| fs::symlink_metadata(hooks_dir.join(shim.script)).is_ok())
}

/// Write the shims over the engine's scripts in `hooks_dir` (originals renamed to
/// `<script>.preload-backup`); returns (written, skipped because the engine has no such script).
pub fn install_shims(
    hooks_dir: &Path,
    prefix: &Path,
) -> Result<(Vec<&'static str>, Vec<&'static str>), ShimError> {
    let mut written = Vec::new();
    let mut skipped = Vec::new();
    for shim in SHIMS {
        let target = hooks_dir.join(shim.script);
        let text = shim_text(shim, Some(prefix));
        let exists = fs::symlink_metadata(&target).is_ok();
        if !exists {
            skipped.push(shim.script);
            continue;
        }
        if is_shim(&target) {
            if fs::read_to_string(&target).is_ok_and(|t| t == text) {
                continue;
            }
        } else {
            let backup = backup_of(&target);
            if fs::symlink_metadata(&backup).is_err() {
                // The engine's hooks are symlinks into the engine checkout: move the link
                // itself aside, never write through it.
                fs::rename(&target, &backup).map_err(OpError::at("back up", &target))?;
            } else {
                fs::remove_file(&target).map_err(OpError::at("replace", &target))?;
            }
        }
        file::write_atomic(&target, text.as_bytes())
            .map_err(|err| err.source)
            .map_err(OpError::at("write", &target))?;
        make_executable(&target).map_err(OpError::at("chmod", &target))?;
        written.push(shim.script);
    }
    Ok((written, skipped))
}

/// Put the engine's scripts back where shims were written; returns the restored names.
pub fn uninstall_shims(hooks_dir: &Path) -> Result<Vec<&'static str>, ShimError> {
    let mut restored = Vec::new();
    for shim in SHIMS {
        let target = hooks_dir.join(shim.script);
        let backup = backup_of(&target);
        if is_shim(&target) && fs::symlink_metadata(&backup).is_ok() {
            fs::rename(&backup, &target).map_err(OpError::at("restore", &target))?;
            restored.push(shim.script);
        }
    }
    Ok(restored)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn chunk_shim_maps_positional_arguments() {
        let shim = SHIMS
            .iter()
            .find(|s| s.script == "session-start-chunk.sh")
            .unwrap();
        let text = shim_text(shim, Some(Path::new("/opt/b")));
        assert!(text.contains("exec \"/opt/b/preload-session-start\" --chunk \"${1:-0}/${2:-1}\""));
        assert_eq!(text.lines().filter(|l| l.starts_with("exec")).count(), 1);
    }
}
