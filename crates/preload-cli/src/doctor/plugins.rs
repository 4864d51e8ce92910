//! The Claude Code plugins that wire our hooks for this project: enabled and installed.
//!
//! A plugin is enabled by `enabledPlugins` (`"<name>@<marketplace>": true`) in the settings
//! files, the project's local file winning over the project's, the project's over the user's;
//! it is installed where `~/.claude/plugins/installed_plugins.json` says (`installPath`). Its
//! `hooks/hooks.json` runs beside the settings files' hooks, so a plugin of ours and a settings
//! file wired by `preload install` would both run.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{BinDir, Finding};
use crate::install::wiring::our_binary;
use crate::install::wiring::{BINARIES, all_handlers};
use crate::plugin::HOOKS_FILE;
use crate::plugin::{PLATFORMS, platform_binary, this_platform};
use crate::sandbox::Sandbox;

/// Where Claude Code records the installed plugins, under `$HOME`.
pub const INSTALLED_PLUGINS: &str = ".claude/plugins/installed_plugins.json";
/// The placeholder Claude Code replaces by a plugin's root in its hook commands.
const PLUGIN_ROOT: &str = "${CLAUDE_PLUGIN_ROOT}";

/// An enabled, installed plugin whose hooks run our binaries.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginHooks {
    /// `<name>@<marketplace>`.
    pub id: String,
    /// Its install directory.
    pub root: PathBuf,
    /// Its `hooks/hooks.json`.
    pub file: PathBuf,
    /// That document with the plugin root put in for the placeholder.
    pub hooks: Value,
}

/// The ids `enabledPlugins` leaves enabled across `files` (highest precedence first).
pub fn enabled_plugins(files: &[PathBuf]) -> Vec<String> {
    let mut state: Vec<(String, bool)> = Vec::new();
    for file in files.iter().rev() {
        let Some(Value::Object(enabled)) = fs::read_to_string(file)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|doc| doc.get("enabledPlugins").cloned())
        else {
            continue;
        };
        for (id, on) in enabled {
            let on = on.as_bool() == Some(true);
            match state.iter_mut().find(|(i, _)| *i == id) {
                Some(entry) => entry.1 = on,
                None => state.push((id, on)),
            }
        }
    }
    state
        .into_iter()
        .filter_map(|(id, on)| on.then_some(id))
        .collect()
}

/// The install directories `installed_plugins.json` records for `id`.
pub fn install_roots(home: &Path, id: &str) -> Vec<PathBuf> {
    let Some(doc) = fs::read_to_string(home.join(INSTALLED_PLUGINS))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
    else {
        return Vec::new();
    };
    let mut roots: Vec<PathBuf> = doc["plugins"][id]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|entry| entry["installPath"].as_str().map(PathBuf::from))
        .collect();
    roots.dedup();
    roots
}

/// A hooks document with `${CLAUDE_PLUGIN_ROOT}` replaced by `root` in every string.
fn substitute(value: &Value, root: &str) -> Value {
    match value {
        Value::String(s) => Value::String(s.replace(PLUGIN_ROOT, root)),
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, root)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute(v, root)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The enabled, installed plugins (enabled by `settings_files`) whose hooks run our binaries.
pub fn plugins_wiring_ours(home: &Path, settings_files: &[PathBuf]) -> Vec<PluginHooks> {
    let mut out = Vec::new();
    for id in enabled_plugins(settings_files) {
        for root in install_roots(home, &id) {
            let file = root.join(HOOKS_FILE);
            let Some(doc) = fs::read_to_string(&file)
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            else {
                continue;
            };
            let hooks = substitute(&doc, &root.to_string_lossy());
            if all_handlers(&hooks).any(|(_, _, h)| our_binary(h).is_some()) {
                out.push(PluginHooks {
                    id: id.clone(),
                    root,
                    file,
                    hooks,
                });
            }
        }
    }
    out
}

/// The plugin's binary for this machine under every hook's name, as the plugin's launcher
/// links it into `${CLAUDE_PLUGIN_DATA}/bin`: links in a throwaway directory, so doctor changes
/// nothing. A finding when the plugin carries no binary for this machine.
pub fn plugin_bin_dir(plugin: &PluginHooks) -> Result<BinDir, Finding> {
    let carried = || -> String {
        let names: Vec<&str> = PLATFORMS
            .iter()
            .filter(|p| platform_binary(&plugin.root, p).is_file())
            .map(|p| p.name)
            .collect();
        if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        }
    };
    let Some(platform) = this_platform().filter(|p| platform_binary(&plugin.root, p).is_file())
    else {
        return Err(Finding::fail(
            format!(
                "binaries: the plugin {} in {} carries no binary for this machine (it carries: {})",
                plugin.id,
                plugin.root.display(),
                carried()
            ),
            "its hooks do nothing here; write a plugin for this machine with `preload plugin DIR` from a build of your own, or one of every platform with `--dist`",
        ));
    };
    let binary = platform_binary(&plugin.root, platform);
    let fail = |why: String| {
        Finding::fail(
            format!(
                "binaries: cannot check the plugin's {}: {why}",
                binary.display()
            ),
            "check that $TMPDIR is writable",
        )
    };
    let links = Sandbox::empty("plugin-bin", &plugin.root).map_err(|e| fail(e.to_string()))?;
    let path = links.root().join("bin");
    fs::create_dir_all(&path).map_err(|e| fail(e.to_string()))?;
    for name in BINARIES {
        std::os::unix::fs::symlink(&binary, path.join(name)).map_err(|e| fail(e.to_string()))?;
    }
    Ok(BinDir {
        path,
        shown: format!(
            "the plugin's {} (bin/{}/preload, under every hook's name)",
            plugin.root.display(),
            platform.name
        ),
        links: Some(links),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_project_file_overrides_the_users_choice() {
        let tmp = tempfile::tempdir().unwrap();
        let local = tmp.path().join("local.json");
        let user = tmp.path().join("user.json");
        fs::write(
            &user,
            json!({"enabledPlugins": {"a@m": true, "b@m": true}}).to_string(),
        )
        .unwrap();
        fs::write(
            &local,
            json!({"enabledPlugins": {"b@m": false}}).to_string(),
        )
        .unwrap();
        assert_eq!(enabled_plugins(&[local.clone(), user.clone()]), ["a@m"]);
        assert_eq!(enabled_plugins(&[user]), ["a@m", "b@m"]);
    }

    #[test]
    fn an_installed_plugin_of_ours_is_found_with_its_root_put_in() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path();
        let root = home.join("cache/p/1.0");
        fs::create_dir_all(root.join("hooks")).unwrap();
        let handler = json!({"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/bin/preload-overflow", "args": []});
        fs::write(
            root.join(HOOKS_FILE),
            json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [handler]}]}}).to_string(),
        )
        .unwrap();
        fs::create_dir_all(home.join(".claude/plugins")).unwrap();
        fs::write(
            home.join(INSTALLED_PLUGINS),
            json!({"version": 2, "plugins": {"p@m": [{"scope": "user", "installPath": root}]}})
                .to_string(),
        )
        .unwrap();
        let settings = home.join("settings.json");
        fs::write(
            &settings,
            json!({"enabledPlugins": {"p@m": true}}).to_string(),
        )
        .unwrap();
        let found = plugins_wiring_ours(home, std::slice::from_ref(&settings));
        assert_eq!(found.len(), 1);
        let command = &found[0].hooks["hooks"]["PreToolUse"][0]["hooks"][0]["command"];
        assert_eq!(
            command.as_str().unwrap(),
            root.join("bin/preload-overflow").to_str().unwrap()
        );
        fs::write(
            &settings,
            json!({"enabledPlugins": {"p@m": false}}).to_string(),
        )
        .unwrap();
        assert!(plugins_wiring_ours(home, &[settings]).is_empty());
    }
}
