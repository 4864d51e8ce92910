//! The Codex checks of `preload doctor`: a Codex `hooks.json` that wires our hooks (the
//! project's `.codex/hooks.json`, the user's `$CODEX_HOME/hooks.json`) wires every
//! registration once, and only one of them does.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Finding;
use crate::install::codex::hooks_off;
use crate::install::codex::project_of;
use crate::install::settings::installed_prefix;
use crate::install::targets::{Scope, Targets};
use crate::install::trust::{self, CodexConfig, TrustStatus};
use crate::install::wiring::{Agent, WiringMode, all_handlers, our_binary, wanted_for};
use crate::words::plural;
use preload_core::primitives::env::Env;

/// The Codex hooks files to look at: the project's, then the user's.
fn codex_files(vars: &Env, cwd: &Path) -> (Vec<PathBuf>, Option<PathBuf>) {
    let resolve = |global| {
        let scope = Scope {
            agent: Agent::Codex,
            global,
        };
        Targets::resolve_for(None, None, scope, vars, cwd).ok()
    };
    let files = [resolve(false), resolve(true)]
        .into_iter()
        .flatten()
        .map(|t| t.settings)
        .collect();
    let config = resolve(true).map(|t| t.codex_home.join("config.toml"));
    (files, config)
}

/// One registration: event, matcher, command line.
type Registration = (String, String, String);

fn registrations_of(doc: &Value) -> Vec<Registration> {
    all_handlers(doc)
        .filter(|(_, _, h)| our_binary(h).is_some())
        .map(|(event, matcher, h)| {
            let command = h.get("command").and_then(Value::as_str).unwrap_or("");
            (event.to_owned(), matcher.to_owned(), command.to_owned())
        })
        .collect()
}

/// Check the Codex wiring; `required` (`--agent codex`): no Codex wiring is a failure.
pub(super) fn check_codex(vars: &Env, cwd: &Path, required: bool, findings: &mut Vec<Finding>) {
    let (files, config) = codex_files(vars, cwd);
    let codex_home = config
        .as_deref()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut wired = Vec::new();
    for file in &files {
        let Ok(text) = fs::read_to_string(file) else {
            continue;
        };
        let Ok(doc) = serde_json::from_str::<Value>(&text) else {
            findings.push(Finding::fail(
                format!("codex: {} is not valid JSON", file.display()),
                "fix it, then run `preload install --agent codex`",
            ));
            continue;
        };
        let found = registrations_of(&doc);
        let Some(prefix) = installed_prefix(&doc) else {
            continue;
        };
        wired.push(file.clone());
        let expected: Vec<Registration> = wanted_for(&prefix, WiringMode::of(&doc), Agent::Codex)
            .into_iter()
            .flat_map(|(event, matcher, handlers)| {
                handlers.into_iter().map(move |h| {
                    let command = h["command"].as_str().unwrap_or("").to_owned();
                    (event.to_owned(), matcher.unwrap_or("").to_owned(), command)
                })
            })
            .collect();
        let mut problems = 0;
        for (event, matcher, command) in &expected {
            let times = found
                .iter()
                .filter(|(e, m, c)| e == event && m == matcher && c == command)
                .count();
            if times != 1 {
                problems += 1;
                let how = if times == 0 {
                    "is not wired"
                } else {
                    "is wired more than once"
                };
                let matcher = if matcher.is_empty() {
                    String::new()
                } else {
                    format!(", matcher {matcher}")
                };
                findings.push(Finding::fail(
                    format!(
                        "codex: {command} ({event}{matcher}) {how} in {}",
                        file.display()
                    ),
                    "run `preload install --agent codex` (with --global for the user's file)",
                ));
            }
        }
        if problems == 0 {
            findings.push(Finding::ok(format!(
                "codex: {} wires every registration once ({})",
                file.display(),
                expected.len()
            )));
        }
        if let Some(config) = &config {
            check_trust(file, &doc, config, &codex_home, findings);
        }
    }
    if wired.len() > 1 {
        findings.push(Finding::warn(
            format!(
                "codex: both {} and {} wire the hooks: Codex runs both, every file twice",
                wired[0].display(),
                wired[1].display()
            ),
            "keep one: `preload uninstall --agent codex` (with --global for the user's file)",
        ));
    }
    if wired.is_empty() && required {
        findings.push(Finding::fail(
            "codex: no hooks.json wires the preload hooks",
            "run `preload install --agent codex` in your project (or with --global)",
        ));
    }
    let off = config
        .as_deref()
        .and_then(|c| fs::read_to_string(c).ok().map(|t| (c.to_path_buf(), t)))
        .filter(|(_, text)| !hooks_off(text).is_empty());
    if let (Some((config, _)), false) = (off, wired.is_empty()) {
        findings.push(Finding::fail(
            format!("codex: {} turns hooks off ([features])", config.display()),
            "run `preload install --agent codex --enable`",
        ));
    }
}

/// Whether Codex trusts each of our registrations in `file` (`[hooks.state]` of `config`:
/// the hash matches, is stale or is missing) and, for a project's file, the project.
fn check_trust(
    file: &Path,
    doc: &Value,
    config: &Path,
    codex_home: &Path,
    findings: &mut Vec<Finding>,
) {
    let config = match CodexConfig::read(config) {
        Ok(config) => config,
        Err(err) => {
            findings.push(Finding::fail(
                format!("codex: {err}"),
                "Codex cannot start with it either: fix it",
            ));
            return;
        }
    };
    let registrations = trust::registrations(file, doc);
    let mut stale = Vec::new();
    let mut missing = Vec::new();
    for r in &registrations {
        let name = format!("{} {}", r.event, r.command.rsplit('/').next().unwrap_or(""));
        match config.status(r) {
            TrustStatus::Trusted => {}
            TrustStatus::Stale => stale.push(name),
            TrustStatus::Missing => missing.push(name),
        }
    }
    if stale.is_empty() && missing.is_empty() {
        findings.push(Finding::ok(format!(
            "codex: {} trusted in {} (each hash matches)",
            plural(registrations.len(), "registration", "registrations"),
            config.path.display()
        )));
    } else {
        let mut what = Vec::new();
        if !stale.is_empty() {
            what.push(format!(
                "{} stale (trusted with another definition: {})",
                stale.len(),
                stale.join(", ")
            ));
        }
        if !missing.is_empty() {
            what.push(format!(
                "{} missing{}",
                missing.len(),
                if missing.len() == registrations.len() {
                    " (none is trusted)".to_owned()
                } else {
                    format!(": {}", missing.join(", "))
                }
            ));
        }
        findings.push(Finding::fail(
            format!(
                "codex: {} of {} in {} not trusted, so Codex skips them without a word: {}",
                stale.len() + missing.len(),
                plural(registrations.len(), "registration", "registrations"),
                file.display(),
                what.join("; ")
            ),
            "run `preload install --agent codex --trust` (or review them in codex's /hooks)",
        ));
    }
    if let Some(project) = project_of(file, codex_home) {
        let key = trust::project_key(&project);
        if !config.project_trusted(&key) {
            findings.push(Finding::fail(
                format!(
                    "codex: project {} is not trusted: Codex does not load its .codex/, hooks included",
                    key.display()
                ),
                "run `preload install --agent codex --trust-project` (or trust it when codex asks)",
            ));
        }
    }
}
