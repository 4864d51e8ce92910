//! What `preload install --agent codex` says and does beyond the hooks file: whether Codex's
//! `config.toml` turns its hooks off (`[features] hooks = false`, or the older `codex_hooks`),
//! turning them on with `--enable`, and trusting the hooks (and the project) with `--trust`
//! and `--trust-project` ([`super::trust`]).

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::previous_of;
use super::targets::Targets;
use super::trust::{self, CodexConfig, Registration, TrustError, TrustStatus};
use crate::words::plural;

/// Why Codex's `config.toml` was not read or changed.
#[derive(Debug, thiserror::Error)]
pub enum CodexError {
    /// The trust entries were not written.
    #[error(transparent)]
    Trust(#[from] TrustError),
}

/// The feature keys that turn Codex's hooks on or off (`codex_hooks`: the older name).
const FEATURE_KEYS: [&str; 2] = ["hooks", "codex_hooks"];

/// The lines of `text` (a `config.toml`) that turn hooks off: `hooks = false` or
/// `codex_hooks = false` in the `[features]` table, or `features.hooks = false` at the top.
pub fn hooks_off(text: &str) -> Vec<usize> {
    let mut table = String::new();
    let mut off = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split('#').next().unwrap_or("").trim();
        if code.starts_with('[') {
            code.trim_matches(|c| c == '[' || c == ']')
                .trim()
                .clone_into(&mut table);
            continue;
        }
        let Some((key, value)) = code.split_once('=') else {
            continue;
        };
        let key = key.trim().trim_matches('"');
        let feature = match table.as_str() {
            "features" => FEATURE_KEYS.contains(&key),
            "" => key
                .strip_prefix("features.")
                .is_some_and(|k| FEATURE_KEYS.contains(&k)),
            _ => false,
        };
        if feature && value.trim() == "false" {
            off.push(i);
        }
    }
    off
}

/// `text` with the lines `off` says turn hooks off set to `true`, the rest as it was.
fn turned_on(text: &str, off: &[usize]) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if off.contains(&i) {
            out.push_str(&line.replacen("false", "true", 1));
        } else {
            out.push_str(line);
        }
    }
    out
}

/// What `--trust` and `--trust-project` ask for.
#[derive(Debug, Clone, Copy, Default)]
pub struct TrustRequest {
    /// Trust the hooks just wired.
    pub hooks: bool,
    /// Trust the project whose `.codex/hooks.json` was wired.
    pub project: bool,
}

/// Our registrations in the hooks file at `path` as it is now (none when absent or broken).
pub fn registrations_in(path: &Path) -> Vec<Registration> {
    fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .map(|doc| trust::registrations(path, &doc))
        .unwrap_or_default()
}

/// The project whose `.codex/` holds `hooks`, when it is a project's file and not the user's
/// `$CODEX_HOME/hooks.json`.
pub fn project_of(hooks: &Path, codex_home: &Path) -> Option<PathBuf> {
    let dir = hooks.parent()?;
    let is_dot_codex = dir.file_name().is_some_and(|n| n == ".codex");
    (is_dot_codex && trust::real_path(dir) != trust::real_path(codex_home))
        .then(|| dir.parent().map(Path::to_path_buf))
        .flatten()
}

/// After the hooks file was wired: the lines install reports about Codex. With `enable` its
/// hooks are turned on where `config.toml` turns them off; with `request` the hooks just wired
/// (and the project) are trusted there, and the entries of `before` (our registrations before
/// this install) that no longer name one of ours are taken out. The file as it was is kept in
/// `config.toml.preload-previous`.
pub fn after_install(
    targets: &Targets,
    enable: bool,
    config: Result<CodexConfig, TrustError>,
    request: TrustRequest,
    before: &[Registration],
) -> Result<Vec<String>, CodexError> {
    let mut lines = Vec::new();
    let mut config = match config {
        Ok(config) => config,
        Err(err) => {
            lines.push(format!("codex: {err}; the hooks' trust was not checked"));
            return Ok(lines);
        }
    };
    let path = config.path.clone();
    let off = config.text().map(hooks_off).unwrap_or_default();
    if !off.is_empty() && enable {
        config.edit_text(|text| turned_on(text, &off))?;
        lines.push(format!(
            "codex: hooks turned on in {} ([features])",
            path.display()
        ));
    } else if !off.is_empty() {
        lines.push(format!(
            "codex: {} turns hooks off ([features] hooks = false): none of them runs; `preload install --agent codex --enable` turns them on",
            path.display()
        ));
    }
    let now = registrations_in(&targets.settings);
    let project =
        project_of(&targets.settings, &targets.codex_home).map(|p| trust::project_key(&p));
    if request.hooks {
        for old in before
            .iter()
            .filter(|old| !now.iter().any(|n| n.key == old.key))
        {
            config.untrust(old);
        }
        for registration in &now {
            config.trust(registration)?;
        }
    }
    if let (true, Some(key)) = (request.project, &project) {
        config.trust_project(key)?;
    }
    if config.save()? {
        lines.push(format!(
            "codex: {} updated (the file as it was kept in {})",
            path.display(),
            previous_of(&path).display()
        ));
    }
    let untrusted = now
        .iter()
        .filter(|r| config.status(r) != TrustStatus::Trusted)
        .count();
    if untrusted == 0 {
        lines.push(format!(
            "codex: {} trusted in {}",
            plural(now.len(), "hook", "hooks"),
            path.display()
        ));
    } else {
        lines.push(format!(
            "codex: {untrusted} of {} not trusted: Codex skips a hook until it is trusted, \
             without a word; `preload install --agent codex --trust` trusts them (or review them \
             in codex's /hooks, or run `codex exec --dangerously-bypass-hook-trust` for one run)",
            plural(now.len(), "hook", "hooks"),
        ));
    }
    match &project {
        Some(key) if config.project_trusted(key) => {
            lines.push(format!("codex: project {} trusted", key.display()));
        }
        Some(key) => lines.push(format!(
            "codex: project {} not trusted: Codex does not load its .codex/ (hooks included) \
             until it is; `preload install --agent codex --trust-project` trusts it (or answer \
             codex's prompt, or run `codex exec --trust`)",
            key.display()
        )),
        None => {}
    }
    Ok(lines)
}

/// Take out what install trusted for the registrations of `before` (ours as they were before
/// an uninstall took them out of the hooks file): each entry that still trusts exactly its
/// definition, and the project's trust table when install added it. The lines to report.
pub fn after_uninstall(targets: &Targets, before: &[Registration]) -> Vec<String> {
    let mut config = match CodexConfig::read(&targets.codex_home.join("config.toml")) {
        Ok(config) => config,
        Err(err) => return vec![format!("codex: {err}; its trust entries stay")],
    };
    let removed = before.iter().filter(|r| config.untrust(r)).count();
    let project = project_of(&targets.settings, &targets.codex_home)
        .map(|p| trust::project_key(&p))
        .filter(|key| config.untrust_project(key));
    let mut lines = Vec::new();
    match config.save() {
        Ok(false) => {}
        Ok(true) => {
            let mut what = Vec::new();
            if removed > 0 {
                what.push(plural(removed, "hook trust entry", "hook trust entries"));
            }
            if let Some(key) = project {
                what.push(format!("the trust of project {}", key.display()));
            }
            lines.push(format!(
                "codex: {} removed from {} (the file as it was kept in {})",
                what.join(" and "),
                config.path.display(),
                previous_of(&config.path).display()
            ));
        }
        Err(err) => lines.push(format!("codex: {err}; its trust entries stay")),
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_are_off_only_where_the_features_table_says_so() {
        let text = "model = \"x\"\nfeatures.hooks = false\n[features]\nhooks = false # off\n\
                    other = false\n[profiles.a]\nhooks = false\n[features]\ncodex_hooks=true\n";
        assert_eq!(hooks_off(text), [1, 3]);
        let on = turned_on(text, &hooks_off(text));
        assert_eq!(
            on,
            "model = \"x\"\nfeatures.hooks = true\n[features]\nhooks = true # off\n\
             other = false\n[profiles.a]\nhooks = false\n[features]\ncodex_hooks=true\n"
        );
        assert!(hooks_off(&on).is_empty());
        assert!(hooks_off("[features]\nhooks = true\n").is_empty());
    }
}
