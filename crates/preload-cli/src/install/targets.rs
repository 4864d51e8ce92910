//! Where install and uninstall work: `$HOME`, the binary directory and the settings file.
//!
//! Resolved from the command line, the environment and the working directory.

use std::path::{Path, PathBuf};

use preload_core::primitives::env::{self, Env};
use preload_core::primitives::paths;

use super::shims;
use super::wiring::DEFAULT_PREFIX;

/// Why the targets could not be resolved (a usage error: exit 2).
#[derive(Debug, thiserror::Error)]
pub enum TargetsError {
    /// `HOME` is not set.
    #[error("HOME is not set")]
    NoHome,
    /// No `--settings` and no project above the working directory.
    #[error(
        "no project here: neither {cwd} nor a parent has a .claude/ directory; run it in your project or pass --settings PATH"
    )]
    NoProject {
        /// The working directory.
        cwd: PathBuf,
    },
}

/// Where things go: resolved from options, `HOME` and the working directory.
#[derive(Debug, Clone)]
pub struct Targets {
    /// `$HOME`.
    pub home: PathBuf,
    /// The binary directory.
    pub prefix: PathBuf,
    /// The settings file.
    pub settings: PathBuf,
    /// The project around the working directory (its nearest ancestor with `.claude/`), if any.
    pub project: Option<PathBuf>,
}

impl Targets {
    /// Resolve the targets from `--prefix` and `--settings`; the default prefix is
    /// [`DEFAULT_PREFIX`] under `HOME`, the default settings file the project's
    /// `.claude/settings.local.json` (project root = nearest ancestor of `cwd` with `.claude/`).
    pub fn resolve(
        prefix: Option<&Path>,
        settings: Option<&Path>,
        vars: &Env,
        cwd: &Path,
    ) -> Result<Self, TargetsError> {
        let home = vars
            .get(env::HOME)
            .map(PathBuf::from)
            .ok_or(TargetsError::NoHome)?;
        let absolute = |p: &Path| {
            paths::lexical_clean(&cwd.join(paths::expand_tilde(&p.to_string_lossy(), &home)))
        };
        let prefix = prefix.map_or_else(|| home.join(DEFAULT_PREFIX), absolute);
        let project = paths::find_project_root(cwd);
        let settings = match settings {
            Some(p) => absolute(p),
            None => project
                .as_ref()
                .map(|root| root.join(".claude/settings.local.json"))
                .ok_or_else(|| TargetsError::NoProject {
                    cwd: cwd.to_path_buf(),
                })?,
        };
        Ok(Self {
            home,
            prefix,
            settings,
            project,
        })
    }

    /// Where the engine's hook scripts are, and so the shims: `~/.claude/hooks`.
    pub fn hooks_dir(&self) -> PathBuf {
        shims::hooks_dir(&self.home)
    }
}
