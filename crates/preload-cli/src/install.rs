//! `preload install`: copy the binaries and wire them into a settings file (or write shims).
//!
//! It also writes the default rules where the engine has none, and keeps the seeds out of git.
//! Everything derives from the tables in [`wiring`]. The parts: [`binaries`] copies, [`guards`]
//! writes the default rules, [`merge`] edits the settings document and [`settings`] the file
//! (with its backups), [`ignore`] the project's ignore rule for seeds, [`shims`] writes the bash
//! shims, [`targets`] says where all of it goes, and [`uninstall`] takes the wiring out again.
//! [`dispatch`] derives the one-process-per-event wiring of `--dispatch`.

pub mod binaries;
pub mod codex;
pub mod dispatch;
pub mod guards;
pub mod ignore;
pub mod merge;
pub mod settings;
pub mod shims;
pub mod targets;
pub mod trust;
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

/// Where `preload install` and `preload uninstall` work: the binaries' directory, the settings
/// file and the client.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PlaceArgs {
    /// Where the binaries are installed (default: ~/.claude/engine/bin).
    #[arg(long, value_name = "DIR", value_parser = crate::path_arg)]
    pub prefix: Option<PathBuf>,
    /// The settings file wired (default: the project's .claude/settings.local.json; with
    /// --agent codex, the project's .codex/hooks.json).
    #[arg(long, value_name = "PATH", value_parser = crate::path_arg)]
    pub settings: Option<PathBuf>,
    /// The client wired.
    #[arg(long, value_enum, default_value_t)]
    pub agent: AgentArg,
    /// The user-level file (`~/.claude/settings.json`; with --agent codex,
    /// `$CODEX_HOME/hooks.json`) instead of the project's.
    #[arg(long, conflicts_with = "settings")]
    pub global: bool,
}

impl PlaceArgs {
    /// The agent and level these flags name.
    pub fn scope(&self) -> Scope {
        Scope {
            agent: self.agent.into(),
            global: self.global,
        }
    }

    /// The files these flags name, from this process's environment and working directory.
    pub fn targets(&self) -> Result<Targets, TargetsError> {
        Targets::resolve_for(
            self.prefix.as_deref(),
            self.settings.as_deref(),
            self.scope(),
            &Env::from_process(),
            &crate::process_cwd(),
        )
    }
}

/// `preload install`: where the binaries and the wiring go.
#[allow(clippy::struct_excessive_bools)] // Its command-line flags.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct InstallArgs {
    /// Where to install and what to wire.
    #[command(flatten)]
    pub place: PlaceArgs,
    /// With --agent codex: turn Codex's hooks on where its config.toml turns them off.
    #[arg(long)]
    pub enable: bool,
    /// With --agent codex: trust the hooks just wired in `$CODEX_HOME/config.toml`
    /// (`[hooks.state]` `trusted_hash`), so Codex runs them without a review.
    #[arg(long)]
    pub trust: bool,
    /// With --agent codex, for a project's .codex/hooks.json: also trust the project, without
    /// which Codex does not load its .codex/ (hooks, config and rules); implies --trust.
    #[arg(long)]
    pub trust_project: bool,
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
    /// Codex's config.toml could not be read or written for the trust entries.
    #[error(transparent)]
    Trust(#[from] trust::TrustError),
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
    let result = opts
        .place
        .targets()
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
    let agent = Agent::from(opts.place.agent);
    check_flags(opts, agent)?;
    if opts.print {
        let hooks = wiring::hooks_value_in(&targets.prefix.to_string_lossy(), mode, agent);
        return Ok(vec![settings::to_pretty(&json!({ "hooks": hooks }), b"  ")]);
    }
    // A settings file that cannot be wired stops install before anything is copied, and so
    // does `--shims` with no engine script to replace.
    settings::check(&targets.settings)?;
    // The trust entries go into a config.toml read whole first: one that cannot be read stops
    // install before anything is changed when they are asked for.
    let wants_trust = opts.trust || opts.trust_project;
    let codex_config = match agent {
        Agent::Codex => match trust::CodexConfig::read(&targets.codex_home.join("config.toml")) {
            Err(err) if wants_trust || opts.enable => return Err(err.into()),
            read => Some(read),
        },
        Agent::ClaudeCode => None,
    };
    let before = if agent == Agent::Codex {
        codex::registrations_in(&targets.settings)
    } else {
        Vec::new()
    };
    if opts.shims && !shims::any_to_replace(&targets.hooks_dir()) {
        return Err(InstallError::NoEngineScripts {
            dir: targets.hooks_dir(),
        });
    }
    let mut lines = vec![copy_binaries(&targets.prefix)?];
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
    // No backup: there was no file before preload (uninstall removes it again).
    let backed_up = backup_of(&targets.settings).exists();
    let kept = if backed_up {
        "backup kept"
    } else {
        "a new file: uninstall removes it"
    };
    let what = match (change, opts.shims, mode) {
        (Change::Unchanged, false, _) => "already wired, nothing changed".to_owned(),
        (Change::Unchanged, true, _) => "no native wiring to remove".to_owned(),
        (_, false, WiringMode::Binaries) => format!("wired ({kept})"),
        (_, false, WiringMode::Dispatch) => format!("wired, one process per event ({kept})"),
        (_, true, _) => "native wiring removed (the bash entries run the shims)".to_owned(),
    };
    lines.push(format!("settings: {} {what}", targets.settings.display()));
    if let Some(line) = ignore_seeds(targets) {
        lines.push(line);
    }
    if change != Change::Unchanged && backed_up {
        lines.push(format!(
            "backup: {} (before preload), {} (before this change)",
            backup_of(&targets.settings).display(),
            previous_of(&targets.settings).display()
        ));
    }
    if let Some(config) = codex_config {
        let request = codex::TrustRequest {
            hooks: opts.trust || opts.trust_project,
            project: opts.trust_project,
        };
        lines.extend(codex::after_install(
            targets,
            opts.enable,
            config,
            request,
            &before,
        )?);
    }
    lines.push(check_with(targets, agent));
    Ok(lines)
}

/// Refuse the flags that do not apply to `agent` or to each other; nothing was changed.
fn check_flags(opts: &InstallArgs, agent: Agent) -> Result<(), InstallError> {
    if agent == Agent::Codex && opts.shims {
        return Err(InstallError::Usage(
            "--shims replaces the Claude Code engine's bash hooks; Codex has none to replace",
        ));
    }
    if agent != Agent::Codex && (opts.enable || opts.trust || opts.trust_project) {
        return Err(InstallError::Usage(
            "--enable, --trust and --trust-project apply to --agent codex only",
        ));
    }
    if opts.place.global && opts.trust_project {
        return Err(InstallError::Usage(
            "--trust-project trusts the project of a project's .codex/hooks.json; --global wires the user's file, which needs no project trust",
        ));
    }
    Ok(())
}

/// Copy the binaries from the directory of the running `preload` into `prefix`; the line to
/// report.
fn copy_binaries(prefix: &Path) -> Result<String, InstallError> {
    let exe = std::env::current_exe().map_err(|source| InstallError::Locate { source })?;
    let from = exe.parent().unwrap_or(Path::new("."));
    let present = BINARIES.iter().filter(|b| prefix.join(b).exists()).count();
    let copied = binaries::install_binaries(from, prefix)?;
    let dir = prefix.display();
    Ok(match (present, copied) {
        (0, _) => format!("binaries: {} copied to {dir}", BINARIES.len()),
        (_, 0) => format!("binaries: {} in {dir}, all up to date", BINARIES.len()),
        _ => format!("binaries: {} in {dir} ({copied} updated)", BINARIES.len()),
    })
}

/// The last line: how to run `preload doctor`, by its full path when the install directory
/// is not on `PATH` (`~/.claude/engine/bin` is not, by default), with how to put it there.
fn check_with(targets: &Targets, agent: Agent) -> String {
    let args = if agent == Agent::Codex {
        " doctor --agent codex"
    } else {
        " doctor"
    };
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir == targets.prefix));
    if on_path {
        return format!("check with: preload{args}");
    }
    let dir = targets.prefix.display();
    format!(
        "check with: {dir}/preload{args} ({dir} is not on PATH; to run `preload` by name, add \
         `export PATH=\"{dir}:$PATH\"` to your shell's profile)"
    )
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
