//! The wiring checks of `preload doctor`: every row of [`WIRING`] wired exactly once.
//!
//! Across the settings files Claude Code merges and the enabled plugins that wire our hooks, a
//! row must not also run through the engine's bash hook or a shim, the hooks must not be wired
//! both by a settings file and by a plugin, and a chunked row needs all its `--chunk`
//! registrations.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::plugins::PluginHooks;
use super::{DoctorArgs, Finding};
use crate::install::settings::{self, SettingsError};
use crate::install::shims::{self, is_shim};
use crate::install::targets::Targets;
use crate::install::wiring::all_handlers;
use crate::install::wiring::{
    DISPATCHER, SESSION_START_CHUNKS, SHIMS, WIRING, Wiring, our_binary, program_of,
    replaced_script,
};
use preload_core::primitives::env::{self, Env};

/// The settings files Claude Code merges for this project, the one we wire first.
pub(super) fn settings_files(
    args: &DoctorArgs,
    home: &Path,
    cwd: &Path,
    root: Option<&Path>,
) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let targets = Targets::resolve(
        args.prefix.as_deref(),
        args.settings.as_deref(),
        &Env::from_pairs([(env::HOME, home.to_string_lossy())]),
        cwd,
    );
    if let Ok(t) = targets {
        files.push(t.settings);
    }
    if let Some(root) = root {
        files.push(root.join(".claude/settings.local.json"));
        files.push(root.join(".claude/settings.json"));
    }
    files.push(home.join(".claude/settings.json"));
    let mut seen = BTreeSet::new();
    files.retain(|f| seen.insert(f.clone()));
    files
}

/// A handler found in one of the settings files or in a plugin's `hooks/hooks.json` (`file`).
struct Found {
    file: PathBuf,
    event: String,
    handler: Value,
}

/// The identity of a native handler for double-wiring checks: command and arguments, with a
/// chunk index reduced to its count (`--chunk 3/8` → `--chunk */8`).
fn route_key(handler: &Value) -> String {
    let command = handler.get("command").and_then(Value::as_str).unwrap_or("");
    let args: Vec<String> = handler
        .get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|a| match a.split_once('/') {
            Some((i, n)) if i.parse::<u32>().is_ok() && n.parse::<u32>().is_ok() => {
                format!("*/{n}")
            }
            _ => a.to_owned(),
        })
        .collect();
    format!("{command} {}", args.join(" "))
}

fn args_of(handler: &Value) -> Vec<&str> {
    handler
        .get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// True when a native handler is the one `row` describes (same binary and arguments, a chunk
/// argument standing for the chunked row), or the dispatcher of its event.
fn is_row(row: &Wiring, handler: &Value) -> bool {
    if our_binary(handler) == Some(DISPATCHER) {
        // `preload-dispatch <Event>` runs every row of its event (a chunked one only through
        // its `--chunk` registrations).
        let args = args_of(handler);
        return args.first() == Some(&row.event.name())
            && (!row.chunked || args.contains(&"--chunk"));
    }
    if our_binary(handler) != Some(row.binary) {
        return false;
    }
    let args = args_of(handler);
    let plain: Vec<&str> = if row.chunked {
        let Some(at) = args.iter().position(|a| *a == "--chunk") else {
            return false;
        };
        args[..at]
            .iter()
            .chain(args.iter().skip(at + 2))
            .copied()
            .collect()
    } else {
        args
    };
    plain == row.args
}

/// What the settings files hold.
enum Collected {
    /// No settings file exists.
    None,
    /// One of them cannot be read as install reads it (reported): what is wired is unknown.
    Broken,
    /// Every handler of the files that exist.
    Handlers(Vec<Found>),
}

/// Every handler of the settings files that exist. A file install would refuse is one finding,
/// with what is wrong with it, and nothing else is judged.
fn collect_handlers(files: &[PathBuf], findings: &mut Vec<Finding>) -> Collected {
    let mut found = Vec::new();
    let mut read_any = false;
    let mut broken = false;
    for file in files {
        let doc = match settings::read_document(file) {
            Ok(Some(doc)) => doc,
            Ok(None) => continue,
            Err(err) => {
                broken = true;
                let what = match err {
                    SettingsError::NotJson { why, .. } => format!("is not valid JSON ({why})"),
                    SettingsError::NotAnObject { found, .. } => {
                        format!("is JSON but not an object (it holds {found})")
                    }
                    SettingsError::Io(err) => format!("cannot be read ({})", err.source),
                };
                findings.push(Finding::fail(
                    format!("settings: {} {what}", file.display()),
                    "fix it first: Claude Code does not read a broken settings file as you meant it, and preload install refuses to touch it until then",
                ));
                continue;
            }
        };
        read_any = true;
        for (event, _, handler) in all_handlers(&doc) {
            found.push(Found {
                file: file.clone(),
                event: event.to_owned(),
                handler: handler.clone(),
            });
        }
    }
    match (broken, read_any) {
        (true, _) => Collected::Broken,
        (false, true) => Collected::Handlers(found),
        (false, false) => Collected::None,
    }
}

/// The handlers of the plugins that wire our hooks.
fn plugin_handlers(plugins: &[PluginHooks]) -> Vec<Found> {
    plugins
        .iter()
        .flat_map(|p| {
            all_handlers(&p.hooks).map(|(event, _, handler)| Found {
                file: p.file.clone(),
                event: event.to_owned(),
                handler: handler.clone(),
            })
        })
        .collect()
}

/// The findings for the wiring of every row of [`WIRING`] in `files` and in `plugins`.
pub(super) fn check_settings(
    files: &[PathBuf],
    plugins: &[PluginHooks],
    home: &Path,
    findings: &mut Vec<Finding>,
) {
    let from_settings = match collect_handlers(files, findings) {
        Collected::Broken => return,
        Collected::None => None,
        Collected::Handlers(found) => Some(found),
    };
    if from_settings.is_none() && plugins.is_empty() {
        findings.push(Finding::fail(
            "settings: no settings file wires the preload hooks",
            "run `preload install` in your project (or `make install`), or enable the plugin (`preload plugin DIR`)",
        ));
        return;
    }
    let mut found = from_settings.unwrap_or_default();
    let ours_in_settings: Vec<PathBuf> = found
        .iter()
        .filter(|f| our_binary(&f.handler).is_some())
        .map(|f| f.file.clone())
        .fold(Vec::new(), |mut files, f| {
            if !files.contains(&f) {
                files.push(f);
            }
            files
        });
    let mut problems = 0;
    if let Some(plugin) = plugins.first() {
        if ours_in_settings.is_empty() {
            found.extend(plugin_handlers(plugins));
        } else {
            // Both run: judge the settings' wiring alone below, and warn once here (the client
            // runs both: every file twice).
            problems += 1;
            let shown: Vec<String> = ours_in_settings
                .iter()
                .map(|f| f.display().to_string())
                .collect();
            findings.push(Finding::warn(
                format!(
                    "settings: the hooks are wired twice: in {} and by the enabled plugin {} ({})",
                    shown.join(", "),
                    plugin.id,
                    plugin.root.display()
                ),
                format!(
                    "Claude Code runs both, so every file is delivered twice; keep one: `preload uninstall` in the project (keeps the plugin) or `/plugin disable {}` (keeps the settings)",
                    plugin.id
                ),
            ));
        }
    }
    problems += check_programs(&found, findings);
    let hooks_dir = shims::hooks_dir(home);
    for row in WIRING {
        problems += check_row(row, &found, &hooks_dir, findings);
    }
    if problems == 0 {
        let mut sources: Vec<String> = files
            .iter()
            .filter(|f| f.is_file())
            .map(|f| f.display().to_string())
            .collect();
        if ours_in_settings.is_empty() {
            sources.extend(
                plugins
                    .iter()
                    .map(|p| format!("plugin {} in {}", p.id, p.root.display())),
            );
        }
        findings.push(Finding::ok(format!(
            "settings: every hook wired once ({})",
            sources.join(", ")
        )));
    }
}

/// The findings for handlers of ours whose program is not there (the directory they were
/// wired into went, as an npm package's does when npm updates or removes it); how many.
fn check_programs(found: &[Found], findings: &mut Vec<Finding>) -> usize {
    let missing: BTreeSet<String> = found
        .iter()
        .filter(|f| our_binary(&f.handler).is_some())
        .filter_map(|f| program_of(&f.handler))
        // A plugin's `${CLAUDE_PLUGIN_ROOT}` is the client's to fill in.
        .filter(|p| !p.contains("${") && !Path::new(p).is_file())
        .collect();
    if missing.is_empty() {
        return 0;
    }
    findings.push(Finding::fail(
        format!(
            "settings: hooks wired to a missing binary: {}",
            missing.into_iter().collect::<Vec<_>>().join(", ")
        ),
        "Claude Code cannot start them; run `preload install` again (it copies the binaries into ~/.claude/engine/bin and wires those)",
    ));
    1
}

/// How a finding names a wiring row: the binary and its arguments, the event, and what tells
/// it from the other registrations of that binary (its matcher and its `if`).
fn row_label(row: &Wiring) -> String {
    let name: Vec<&str> = std::iter::once(row.binary)
        .chain(row.args.iter().copied())
        .collect();
    let matcher = row.matcher.map(|m| format!(", matcher {m}"));
    let filter = row.filter.map(|f| format!(", if {f}"));
    format!(
        "{} ({}{}{})",
        name.join(" "),
        row.event.name(),
        matcher.unwrap_or_default(),
        filter.unwrap_or_default()
    )
}

/// The findings for one wiring row; returns how many problems it found.
fn check_row(
    row: &Wiring,
    found: &[Found],
    hooks_dir: &Path,
    findings: &mut Vec<Finding>,
) -> usize {
    let mut problems = 0;
    let native: Vec<&Found> = found
        .iter()
        .filter(|f| f.event == row.event.name() && is_row(row, &f.handler))
        .collect();
    let routes: BTreeSet<String> = native.iter().map(|f| route_key(&f.handler)).collect();
    let bash: Vec<(&Found, &str)> = found
        .iter()
        .filter(|f| f.event == row.event.name())
        .filter_map(|f| replaced_script(&f.handler).map(|s| (f, s)))
        .filter(|(_, s)| {
            SHIMS
                .iter()
                .any(|x| x.script == *s && x.binary == row.binary)
        })
        .collect();
    let label = row_label(row);
    if routes.len() > 1 {
        problems += 1;
        findings.push(Finding::fail(
            format!(
                "settings: {label} is wired twice: {}",
                routes.iter().cloned().collect::<Vec<_>>().join(" | ")
            ),
            "Claude Code runs both, so files are delivered twice; run `preload install` again (it replaces older wiring of ours) or remove one",
        ));
    }
    if !native.is_empty() {
        for (f, script) in &bash {
            problems += 1;
            let kind = if is_shim(&hooks_dir.join(script)) {
                "the shim"
            } else {
                "the bash hook"
            };
            findings.push(Finding::fail(
                format!(
                    "settings: {label} is wired natively and through {kind} {script} in {}",
                    f.file.display()
                ),
                "both run on every call (double injection); `preload install` removes the bash entry, or remove it by hand",
            ));
        }
        if row.chunked && routes.len() == 1 {
            let mut chunks: Vec<String> = native
                .iter()
                .map(|f| args_of(&f.handler).join(" "))
                .collect();
            chunks.sort();
            chunks.dedup();
            let total = routes
                .iter()
                .next()
                .and_then(|r| r.rsplit_once("*/"))
                .and_then(|(_, n)| n.parse::<usize>().ok())
                .unwrap_or(SESSION_START_CHUNKS);
            if chunks.len() != total {
                problems += 1;
                findings.push(Finding::fail(
                    format!(
                        "settings: {label} has {} of {total} --chunk registrations",
                        chunks.len()
                    ),
                    "the missing slices are never delivered; run `preload install` again",
                ));
            }
        }
    } else if bash.is_empty() {
        problems += 1;
        findings.push(Finding::fail(
            format!("settings: {label} is not wired"),
            "run `preload install` in your project",
        ));
    } else if !bash.iter().any(|(_, s)| is_shim(&hooks_dir.join(s))) {
        problems += 1;
        findings.push(Finding::warn(
            format!(
                "settings: {label} still runs the engine's bash hook {}",
                bash[0].1
            ),
            "run `preload install` (native wiring) or `preload install --shims`",
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use preload_core::primitives::hook::HookEvent;
    use serde_json::json;

    #[test]
    fn chunk_registrations_reduce_to_one_route() {
        let a = json!({"command": "/b/preload-session-start", "args": ["--chunk", "0/8"]});
        let b = json!({"command": "/b/preload-session-start", "args": ["--chunk", "7/8"]});
        let c = json!({"command": "/b/preload-session-start", "args": ["--chunk", "7/16"]});
        assert_eq!(route_key(&a), route_key(&b));
        assert_ne!(route_key(&a), route_key(&c));
        assert!(is_row(&WIRING[0], &a));
        let reread = json!({"command": "/b/preload-compaction-reread", "args": ["stop"]});
        assert!(
            WIRING
                .iter()
                .any(|r| is_row(r, &reread) && r.event == HookEvent::Stop)
        );
        assert!(
            !WIRING
                .iter()
                .any(|r| r.event == HookEvent::PreCompact && is_row(r, &reread))
        );
    }
}
