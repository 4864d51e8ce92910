//! The default guard rules: the shipped `guards.json` (beside this file; `hooks/guards.json` in
//! the repository and the release tarballs), written where the engine has none.

use std::fs;
use std::path::Path;

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

/// Write the default rules to `~/.claude/engine/guards.json` when the engine has none; an
/// existing file (even a broken one, which `preload doctor` reports) is never replaced. True
/// when written.
pub fn install_default_guards(home: &Path) -> Result<bool, GuardsError> {
    let path = EnginePaths::new(home).guards;
    if fs::symlink_metadata(&path).is_ok() {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(OpError::at("create", dir))?;
    }
    file::write_atomic(&path, DEFAULT_GUARDS.as_bytes())
        .map_err(|err| OpError::at("write", &path)(err.source))?;
    Ok(true)
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
}
