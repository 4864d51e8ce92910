//! The default guard rules: the shipped `guards.json` (beside this file; `hooks/guards.json` in
//! the repository and the release tarballs), written where the engine has none, and taken out
//! again by uninstall while they are still what install wrote.

use std::fs;
use std::path::{Path, PathBuf};

use preload_core::primitives::file;
use preload_core::primitives::file::OpError;
use preload_core::primitives::paths::EnginePaths;

/// The shipped default rules (`hooks/guards.json`): the engine's own rule set.
pub const DEFAULT_GUARDS: &str = include_str!("guards.json");

/// Why the default rules were not written.
#[derive(Debug, thiserror::Error)]
pub enum GuardsError {
    /// A file operation failed.
    #[error(transparent)]
    Io(#[from] OpError),
}

/// Beside `guards.json`: a copy of the rules install wrote there, which says install wrote
/// them (an engine's own `guards.json` may hold the same rules).
pub const WRITTEN_SUFFIX: &str = ".preload-written";

/// Where install records the rules it wrote.
fn record_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(WRITTEN_SUFFIX);
    PathBuf::from(name)
}

/// Write the default rules to `~/.claude/engine/guards.json` when the engine has none (and
/// their copy in `guards.json.preload-written`); an existing file (even a broken one, which
/// `preload doctor` reports) is never replaced. True when written.
pub fn install_default_guards(home: &Path) -> Result<bool, GuardsError> {
    let path = EnginePaths::new(home).guards;
    if fs::symlink_metadata(&path).is_ok() {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(OpError::at("create", dir))?;
    }
    let record = record_of(&path);
    file::write_atomic(&record, DEFAULT_GUARDS.as_bytes())
        .map_err(|err| OpError::at("write", &record)(err.source))?;
    file::write_atomic(&path, DEFAULT_GUARDS.as_bytes())
        .map_err(|err| OpError::at("write", &path)(err.source))?;
    Ok(true)
}

/// What uninstall did with the rules install wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuardsRemoval {
    /// Install did not write `guards.json` (the engine had its own): left alone.
    NotInstalled,
    /// Still byte for byte what install wrote: removed.
    Removed(PathBuf),
    /// Changed since install: kept (it is the user's now).
    Changed(PathBuf),
    /// Still what install wrote, but another wiring of the hooks reads it: kept.
    InUse(PathBuf, PathBuf),
}

/// Take out `~/.claude/engine/guards.json` when install wrote it and it is still byte for byte
/// what install wrote, unless `in_use` names a wiring that still runs the hooks.
pub fn uninstall_default_guards(
    home: &Path,
    in_use: Option<&Path>,
) -> Result<GuardsRemoval, GuardsError> {
    let path = EnginePaths::new(home).guards;
    let record = record_of(&path);
    let Ok(written) = fs::read(&record) else {
        return Ok(GuardsRemoval::NotInstalled);
    };
    let now = fs::read(&path).ok();
    if now.as_deref() != Some(written.as_slice()) {
        fs::remove_file(&record).map_err(OpError::at("remove", &record))?;
        return Ok(if now.is_some() {
            GuardsRemoval::Changed(path)
        } else {
            GuardsRemoval::NotInstalled
        });
    }
    if let Some(wiring) = in_use {
        return Ok(GuardsRemoval::InUse(path, wiring.to_path_buf()));
    }
    fs::remove_file(&path).map_err(OpError::at("remove", &path))?;
    fs::remove_file(&record).map_err(OpError::at("remove", &record))?;
    Ok(GuardsRemoval::Removed(path))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn default_rules_are_written_only_where_the_engine_has_none() {
        let tmp = tempfile::tempdir().unwrap();
        let guards = EnginePaths::new(tmp.path()).guards;
        assert!(install_default_guards(tmp.path()).unwrap());
        let rules =
            preload_core::pipeline::rules::parse(&fs::read_to_string(&guards).unwrap()).unwrap();
        assert!(rules.iter().any(|r| r.id == "preload"));
        fs::write(&guards, "[]").unwrap();
        assert!(!install_default_guards(tmp.path()).unwrap());
        assert_eq!(fs::read_to_string(&guards).unwrap(), "[]");
    }

    #[test]
    fn uninstall_removes_the_rules_install_wrote_only_while_they_are_as_written() {
        let tmp = tempfile::tempdir().unwrap();
        let guards = EnginePaths::new(tmp.path()).guards;
        // The engine's own file, the same rules: install did not write it, so it stays.
        fs::create_dir_all(guards.parent().unwrap()).unwrap();
        fs::write(&guards, DEFAULT_GUARDS).unwrap();
        assert!(!install_default_guards(tmp.path()).unwrap());
        let kept = uninstall_default_guards(tmp.path(), None).unwrap();
        assert_eq!(kept, GuardsRemoval::NotInstalled);
        assert!(guards.exists());
        // Written by install, then in use elsewhere, then unchanged: removed.
        fs::remove_file(&guards).unwrap();
        assert!(install_default_guards(tmp.path()).unwrap());
        let other = Path::new("/p/.codex/hooks.json");
        let in_use = uninstall_default_guards(tmp.path(), Some(other)).unwrap();
        assert_eq!(
            in_use,
            GuardsRemoval::InUse(guards.clone(), other.to_path_buf())
        );
        let removed = uninstall_default_guards(tmp.path(), None).unwrap();
        assert_eq!(removed, GuardsRemoval::Removed(guards.clone()));
        assert!(!guards.exists() && !record_of(&guards).exists());
        // Written by install, then edited: kept.
        assert!(install_default_guards(tmp.path()).unwrap());
        fs::write(&guards, "[]").unwrap();
        let changed = uninstall_default_guards(tmp.path(), None).unwrap();
        assert_eq!(changed, GuardsRemoval::Changed(guards.clone()));
        assert_eq!(fs::read_to_string(&guards).unwrap(), "[]");
    }
}
