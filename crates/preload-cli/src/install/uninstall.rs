//! `preload uninstall`: take the wiring (or the shims) out again; the binaries stay.

use std::path::PathBuf;
use std::process::ExitCode;

use preload_core::primitives::env::Env;

use super::PlaceArgs;
use super::guards::{GuardsError, GuardsRemoval};
use super::settings::{self, Change, SettingsError};
use super::shims::{self, ShimError};
use super::targets::{Scope, Targets, TargetsError};
use super::wiring::{Agent, all_handlers, our_binary};
use crate::exit::{self, CommandError, Exit};

/// `preload uninstall`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct UninstallArgs {
    /// Where the binaries were installed and what was wired.
    #[command(flatten)]
    pub place: PlaceArgs,
}

/// Why uninstall stopped.
#[derive(Debug, thiserror::Error)]
pub enum UninstallError {
    /// The command line or the environment does not say where the wiring is.
    #[error(transparent)]
    Targets(#[from] TargetsError),
    /// The settings file was not unwired.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The engine's scripts were not put back.
    #[error(transparent)]
    Shims(#[from] ShimError),
    /// The default rules install wrote were not taken out.
    #[error(transparent)]
    Guards(#[from] GuardsError),
}

impl CommandError for UninstallError {
    fn exit(&self) -> Exit {
        match self {
            Self::Targets(_) => Exit::Usage,
            _ => Exit::Failure,
        }
    }
}

/// A wiring of the hooks other than the one just taken out, in the places install writes: the
/// project's and the user's Claude Code settings and Codex hooks files.
fn still_wired(targets: &Targets) -> Option<PathBuf> {
    let vars = Env::from_process();
    let cwd = crate::process_cwd();
    let mut files = Vec::new();
    if let Some(project) = &targets.project {
        files.push(project.join(".claude/settings.local.json"));
        files.push(project.join(".claude/settings.json"));
    }
    files.push(targets.home.join(".claude/settings.json"));
    for global in [false, true] {
        let scope = Scope {
            agent: Agent::Codex,
            global,
        };
        if let Ok(codex) = Targets::resolve_for(None, None, scope, &vars, &cwd) {
            files.push(codex.settings);
        }
    }
    files.into_iter().find(|file| {
        file != &targets.settings
            && settings::read_document(file)
                .ok()
                .flatten()
                .is_some_and(|doc| all_handlers(&doc).any(|(_, _, h)| our_binary(h).is_some()))
    })
}

/// Run `preload uninstall`.
pub fn run(args: &UninstallArgs) -> ExitCode {
    let result = args
        .place
        .targets()
        .map_err(UninstallError::from)
        .and_then(|targets| uninstall(&targets, args.place.scope().agent));
    exit::finish("uninstall", result.map(|lines| lines.join("\n")))
}

fn uninstall(targets: &Targets, agent: Agent) -> Result<Vec<String>, UninstallError> {
    let mut lines = Vec::new();
    let trusted = if agent == Agent::Codex {
        super::codex::registrations_in(&targets.settings)
    } else {
        Vec::new()
    };
    let change = settings::uninstall_settings(&targets.settings)?;
    lines.push(format!(
        "settings: {} {}",
        targets.settings.display(),
        match change {
            Change::Unchanged => "had no preload wiring",
            Change::Written => "preload wiring removed, the replaced bash hooks put back",
            Change::Restored => "restored from the backup",
            Change::Removed => "removed (there was none before install)",
        }
    ));
    if change != Change::Unchanged {
        lines.push(format!(
            "previous version kept in {}",
            super::previous_of(&targets.settings).display()
        ));
    }
    if agent == Agent::Codex {
        lines.extend(super::codex::after_uninstall(targets, &trusted));
    }
    // The seeds' ignore rule and the shims belong to the Claude Code wiring.
    let rule = targets
        .project
        .as_deref()
        .filter(|_| agent == Agent::ClaudeCode)
        .and_then(super::ignore::IgnoreRule::for_project);
    if let Some(rule) = rule {
        match rule.remove() {
            Ok(true) => lines.push(format!(
                "ignore: {} removed from {}",
                rule.pattern,
                rule.exclude.display()
            )),
            Ok(false) => {}
            Err(err) => lines.push(format!("ignore: {err}; the rule stays")),
        }
    }
    let restored = if agent == Agent::ClaudeCode {
        shims::uninstall_shims(&targets.hooks_dir())?
    } else {
        Vec::new()
    };
    if !restored.is_empty() {
        lines.push(format!("shims: {} engine scripts restored", restored.len()));
    }
    let in_use = still_wired(targets);
    match super::guards::uninstall_default_guards(&targets.home, in_use.as_deref())? {
        GuardsRemoval::NotInstalled => {}
        GuardsRemoval::Removed(path) => lines.push(format!(
            "rules: {} removed (the default rules install wrote, unchanged)",
            path.display()
        )),
        GuardsRemoval::Changed(path) => lines.push(format!(
            "rules: {} kept: it changed since install wrote the default rules",
            path.display()
        )),
        GuardsRemoval::InUse(path, wiring) => lines.push(format!(
            "rules: {} kept: {} still wires the hooks, which read it",
            path.display(),
            wiring.display()
        )),
    }
    lines.push(format!(
        "binaries left in {} (remove the directory to delete them)",
        targets.prefix.display()
    ));
    Ok(lines)
}
