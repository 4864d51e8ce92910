//! `preload install`: copy the binaries and wire them into a settings file (or write shims).
//!
//! It also writes the default rules where the engine has none, and keeps the seeds out of git.
//! Everything derives from the tables in [`wiring`]. The parts: [`binaries`] copies, [`guards`]
//! writes the default rules, [`merge`] edits the settings document and [`settings`] the file
//! (with its backups), [`ignore`] the project's ignore rule for seeds, [`shims`] writes the bash
//! shims, [`targets`] says where all of it goes, and [`uninstall`] takes the wiring out again.
//! [`per_event`] derives the one-process-per-event wiring of `--dispatch`.

pub mod binaries;
pub mod codex;
pub mod guards;
pub mod ignore;
pub mod merge;
pub mod per_event;
pub mod settings;
pub mod shims;
pub mod targets;
pub mod uninstall;
pub mod wiring;

use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::json;

use preload_core::primitives::env::Env;
use preload_core::primitives::paths::EnginePaths;

use crate::exit::{self, CommandError, Exit};
use binaries::BinaryError;
use guards::GuardsError;
use settings::{Change, SettingsError};
use shims::ShimError;
use targets::{Scope, Targets, TargetsError};
use wiring::{Agent, BINARIES, WiringMode};

/// Suffix of the backup kept next to a settings file or a replaced script.
pub const BACKUP_SUFFIX: &str = ".preload-backup";

/// Suffix of the copy of a settings file as it was before the latest write of it.
pub const PREVIOUS_SUFFIX: &str = ".preload-previous";

/// The backup path of a file.
pub fn backup_of(path: &Path) -> PathBuf {
    with_suffix(path, BACKUP_SUFFIX)
}

/// Where a settings file is kept as it was before the latest write of it.
pub fn previous_of(path: &Path) -> PathBuf {
    with_suffix(path, PREVIOUS_SUFFIX)
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The client whose hooks file is wired (`--agent`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum AgentArg {
    /// Claude Code: `.claude/settings.local.json` (`--global`: `~/.claude/settings.json`).
    #[default]
    ClaudeCode,
    /// The Codex CLI: `.codex/hooks.json` (`--global`: `$CODEX_HOME/hooks.json`).
    Codex,
}

impl From<AgentArg> for Agent {
    fn from(arg: AgentArg) -> Self {
        match arg {
            AgentArg::ClaudeCode => Self::ClaudeCode,
            AgentArg::Codex => Self::Codex,
        }
    }
}

/// `preload install`: where the binaries and the wiring go.
#[allow(clippy::struct_excessive_bools)] // Its command-line flags.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct InstallArgs {
    /// Where the binaries go (default: ~/.claude/engine/bin).
    #[arg(long, value_name = "DIR", value_parser = crate::path_arg)]
    pub prefix: Option<PathBuf>,
    /// The settings file to wire (default: the project's .claude/settings.local.json; with
    /// --agent codex, the project's .codex/hooks.json).
    #[arg(long, value_name = "PATH", value_parser = crate::path_arg)]
    pub settings: Option<PathBuf>,
    /// The client to wire.
    #[arg(long, value_enum, default_value_t)]
    pub agent: AgentArg,
    /// Wire the user-level file (`~/.claude/settings.json`; with --agent codex,
    /// `$CODEX_HOME/hooks.json`) instead of the project's.
    #[arg(long, conflicts_with = "settings")]
    pub global: bool,
    /// With --agent codex: turn Codex's hooks on where its config.toml turns them off.
    #[arg(long)]
    pub enable: bool,
    /// Leave the settings alone and replace the engine's hook scripts by shims instead.
    #[arg(long)]
    pub shims: bool,
    /// Wire one process per event (`preload-dispatch <Event>`, every policy of the event in
    /// order) instead of one per hook binary.
    #[arg(long, conflicts_with = "shims")]
    pub dispatch: bool,
    /// Print the wiring and change nothing.
    #[arg(long)]
    pub print: bool,
}

/// Why install stopped.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The command line or the environment does not say where to install.
    #[error(transparent)]
    Targets(#[from] TargetsError),
    /// The running `preload` cannot find its own binary, next to which the others are.
    #[error("cannot locate preload: {source}")]
    Locate {
        /// The underlying error.
        source: io::Error,
    },
    /// `--shims` with none of the engine's hook scripts to replace: nothing was changed.
    #[error(
        "--shims: none of the engine's hook scripts is in {}, so there is nothing to replace; nothing changed (`preload install` without --shims wires the binaries into the settings)",
        dir.display()
    )]
    NoEngineScripts {
        /// The hooks directory looked in.
        dir: std::path::PathBuf,
    },
    /// `--shims` or `--enable` with an agent they do not apply to: nothing was changed.
    #[error("{0}; nothing changed")]
    Usage(&'static str),
    /// The binaries were not copied.
    #[error(transparent)]
    Binaries(#[from] BinaryError),
    /// Codex's config.toml was not changed.
    #[error(transparent)]
    Codex(#[from] codex::CodexError),
    /// The default rules were not written.
    #[error(transparent)]
    Guards(#[from] GuardsError),
    /// The shims were not written.
    #[error(transparent)]
    Shims(#[from] ShimError),
    /// The settings file was not wired.
    #[error(transparent)]
    Settings(#[from] SettingsError),
}

impl CommandError for InstallError {
    fn exit(&self) -> Exit {
        match self {
            Self::Targets(_) | Self::Usage(_) => Exit::Usage,
            _ => Exit::Failure,
        }
    }
}

/// Run `preload install`.
pub fn run(opts: &InstallArgs) -> ExitCode {
    let scope = Scope {
        agent: opts.agent.into(),
        global: opts.global,
    };
    let result = Targets::resolve_for(
        opts.prefix.as_deref(),
        opts.settings.as_deref(),
        scope,
        &Env::from_process(),
        &crate::process_cwd(),
    )
    .map_err(InstallError::from)
    .and_then(|targets| install(opts, &targets));
    exit::finish("install", result.map(|lines| lines.join("\n")))
}

fn install(opts: &InstallArgs, targets: &Targets) -> Result<Vec<String>, InstallError> {
    let mode = if opts.dispatch {
        WiringMode::Dispatch
    } else {
        WiringMode::Binaries
    };
    let agent = Agent::from(opts.agent);
    if agent == Agent::Codex && opts.shims {
        return Err(InstallError::Usage(
            "--shims replaces the Claude Code engine's bash hooks; Codex has none to replace",
        ));
    }
    if agent != Agent::Codex && opts.enable {
        return Err(InstallError::Usage(
            "--enable applies to --agent codex only",
        ));
    }
    if opts.print {
        let hooks = wiring::hooks_value_in(&targets.prefix.to_string_lossy(), mode, agent);
        return Ok(vec![settings::to_pretty(&json!({ "hooks": hooks }), b"  ")]);
    }
    // A settings file that cannot be wired stops install before anything is copied, and so
    // does `--shims` with no engine script to replace.
    settings::check(&targets.settings)?;
    if opts.shims && !shims::any_to_replace(&targets.hooks_dir()) {
        return Err(InstallError::NoEngineScripts {
            dir: targets.hooks_dir(),
        });
    }
    let mut lines = Vec::new();
    let exe = std::env::current_exe().map_err(|source| InstallError::Locate { source })?;
    let from = exe.parent().unwrap_or(Path::new("."));
    let copied = binaries::install_binaries(from, &targets.prefix)?;
    lines.push(format!(
        "binaries: {} in {} ({copied} updated)",
        BINARIES.len(),
        targets.prefix.display()
    ));
    if guards::install_default_guards(&targets.home)? {
        lines.push(format!(
            "rules: the engine had no guards.json; the default rules written to {}",
            EnginePaths::new(&targets.home).guards.display()
        ));
    }
    if opts.shims {
        let (written, skipped) = shims::install_shims(&targets.hooks_dir(), &targets.prefix)?;
        lines.push(format!(
            "shims: {} written in {}{}",
            written.len(),
            targets.hooks_dir().display(),
            if skipped.is_empty() {
                String::new()
            } else {
                format!(" (no engine script to replace: {})", skipped.join(", "))
            }
        ));
    }
    let change = settings::install_settings_in(
        &targets.settings,
        &targets.prefix,
        !opts.shims,
        mode,
        agent,
    )?;
    let what = match (change, opts.shims, mode) {
        (Change::Unchanged, false, _) => "already wired, nothing changed",
        (Change::Unchanged, true, _) => "no native wiring to remove",
        (_, false, WiringMode::Binaries) => "wired (backup kept)",
        (_, false, WiringMode::Dispatch) => "wired, one process per event (backup kept)",
        (_, true, _) => "native wiring removed (the bash entries run the shims)",
    };
    lines.push(format!("settings: {} {what}", targets.settings.display()));
    if let Some(line) = ignore_seeds(targets) {
        lines.push(line);
    }
    if change != Change::Unchanged {
        lines.push(format!(
            "backup: {} (before preload), {} (before this change)",
            backup_of(&targets.settings).display(),
            previous_of(&targets.settings).display()
        ));
    }
    if agent == Agent::Codex {
        lines.extend(codex::after_install(targets, opts.enable)?);
    }
    lines.push("check with: preload doctor".into());
    Ok(lines)
}

/// Add the seeds' ignore rule when the project is in a git repository; the line to report.
/// A failure is reported, not fatal: the hooks are wired either way.
fn ignore_seeds(targets: &Targets) -> Option<String> {
    let rule = ignore::IgnoreRule::for_project(targets.project.as_deref()?)?;
    Some(match rule.add() {
        Ok(true) => format!(
            "ignore: {} added to {}",
            rule.pattern,
            rule.exclude.display()
        ),
        Ok(false) => format!(
            "ignore: {} already in {}",
            rule.pattern,
            rule.exclude.display()
        ),
        Err(err) => format!("ignore: {err}; add {} to your ignore rules", rule.pattern),
    })
}
