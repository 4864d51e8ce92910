//! Where install and uninstall work: `$HOME`, the binary directory and the settings file.
//!
//! Resolved from the command line, the environment and the working directory.

use std::path::{Path, PathBuf};

use preload_core::primitives::env::{self, Env};
use preload_core::primitives::paths;

use super::shims;
use super::wiring::{Agent, DEFAULT_PREFIX};

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
    /// `--agent codex` with no `--settings`, no `--global` and no project above the working
    /// directory.
    #[error(
        "no project here: neither {cwd} nor a parent has a .codex/, .claude/ or .git directory; run it in your project, or pass --global or --settings PATH"
    )]
    NoCodexProject {
        /// The working directory.
        cwd: PathBuf,
    },
}

/// Which client's hooks file, at which level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scope {
    /// The client.
    pub agent: Agent,
    /// The user-level file instead of the project's.
    pub global: bool,
}

impl Default for Scope {
    fn default() -> Self {
        Self {
            agent: Agent::ClaudeCode,
            global: false,
        }
    }
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
    /// The Codex CLI's home: `$CODEX_HOME`, else `~/.codex`.
    pub codex_home: PathBuf,
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
        Self::resolve_for(prefix, settings, Scope::default(), vars, cwd)
    }

    /// [`Targets::resolve`] for `scope`'s agent and level. The hooks file: `--settings`; else
    /// for Claude Code the project's `.claude/settings.local.json` (`--global`:
    /// `~/.claude/settings.json`); for Codex the project's `.codex/hooks.json` (the project
    /// root: the nearest ancestor with `.codex/`, `.claude/` or `.git`), `--global`:
    /// `$CODEX_HOME/hooks.json` (`~/.codex/hooks.json`).
    pub fn resolve_for(
        prefix: Option<&Path>,
        settings: Option<&Path>,
        scope: Scope,
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
        let codex_home = || {
            vars.get(env::CODEX_HOME)
                .map_or_else(|| home.join(".codex"), |h| absolute(Path::new(h)))
        };
        let settings = match (settings, scope.agent, scope.global) {
            (Some(p), ..) => absolute(p),
            (None, Agent::ClaudeCode, true) => home.join(".claude/settings.json"),
            (None, Agent::ClaudeCode, false) => project
                .as_ref()
                .map(|root| root.join(".claude/settings.local.json"))
                .ok_or_else(|| TargetsError::NoProject {
                    cwd: cwd.to_path_buf(),
                })?,
            (None, Agent::Codex, true) => codex_home().join("hooks.json"),
            (None, Agent::Codex, false) => cwd
                .ancestors()
                .find(|d| {
                    [".codex", ".claude", ".git"]
                        .iter()
                        .any(|m| d.join(m).exists())
                })
                .map(|root| root.join(".codex/hooks.json"))
                .ok_or_else(|| TargetsError::NoCodexProject {
                    cwd: cwd.to_path_buf(),
                })?,
        };
        let codex_home = codex_home();
        Ok(Self {
            home,
            prefix,
            settings,
            project,
            codex_home,
        })
    }

    /// Where the engine's hook scripts are, and so the shims: `~/.claude/hooks`.
    pub fn hooks_dir(&self) -> PathBuf {
        shims::hooks_dir(&self.home)
    }
}
