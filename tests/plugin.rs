//! Scenarios: `preload plugin DIR` writes a complete plugin wired by the install table, and
//! `preload doctor` sees a plugin of ours that Claude Code would load, alone or beside a
//! settings file that wires the same hooks.

use std::fs;
use std::path::Path;

use preload_cli::install::settings::settings_template;
use preload_cli::install::wiring::{BINARIES, TEMPLATE_PREFIX};
use serde_json::{Value, json};

use crate::common::{Answer, Sandbox, read_json};

fn preload(sb: &Sandbox, args: &[&str]) -> Answer {
    sb.run_raw("preload", args, "")
}

/// Marks the plugin in `dir` as installed and enabled for the user, as `/plugin install` does.
fn install_and_enable(sb: &Sandbox, dir: &Path) {
    let plugins = sb.home.join(".claude/plugins");
    fs::create_dir_all(&plugins).unwrap();
    let installed = json!({"version": 2, "plugins": {"preload-hooks@preload-hooks": [
        {"scope": "user", "installPath": dir, "version": "0.1.0"}]}});
    fs::write(
        plugins.join("installed_plugins.json"),
        installed.to_string(),
    )
    .unwrap();
    let enabled = json!({"enabledPlugins": {"preload-hooks@preload-hooks": true}});
    fs::write(sb.home.join(".claude/settings.json"), enabled.to_string()).unwrap();
}

#[test]
fn plugin_writes_a_complete_plugin_wired_like_install() {
    let sb = Sandbox::new();
    let dir = sb.root().join("plugin");
    let out = preload(&sb, &["plugin", dir.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);

    let manifest = read_json(&dir.join(".claude-plugin/plugin.json"));
    assert_eq!(manifest["name"], "preload-hooks");
    assert_eq!(manifest["version"], env!("CARGO_PKG_VERSION"));
    let market = read_json(&dir.join(".claude-plugin/marketplace.json"));
    assert_eq!(market["plugins"][0]["name"], manifest["name"]);
    assert_eq!(market["plugins"][0]["source"], "./");
    assert!(market["owner"]["name"].is_string());

    // The same table as `preload install`: the committed settings with the plugin's root.
    let hooks = read_json(&dir.join("hooks/hooks.json"));
    let template: Value = serde_json::from_str(
        &settings_template().replace(TEMPLATE_PREFIX, "${CLAUDE_PLUGIN_ROOT}/bin"),
    )
    .unwrap();
    assert_eq!(hooks["hooks"], template["hooks"]);

    for name in BINARIES {
        let path = dir.join("bin").join(name);
        let version = std::process::Command::new(&path)
            .arg("--version")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&version.stdout).trim(),
            format!("{name} {}", env!("CARGO_PKG_VERSION"))
        );
    }
    assert!(
        fs::read_to_string(dir.join("README.md"))
            .unwrap()
            .contains("--plugin-dir")
    );
    assert_eq!(
        fs::read_to_string(dir.join("guards.json")).unwrap(),
        fs::read_to_string(crate::common::repo().join("hooks/guards.json")).unwrap()
    );

    // Again into the same directory: fine, nothing else changes.
    let before = fs::read(dir.join("hooks/hooks.json")).unwrap();
    assert_eq!(preload(&sb, &["plugin", dir.to_str().unwrap()]).code, 0);
    assert_eq!(fs::read(dir.join("hooks/hooks.json")).unwrap(), before);

    // A directory holding something else is refused and left alone.
    let other = sb.root().join("other");
    fs::create_dir_all(&other).unwrap();
    fs::write(other.join("notes.md"), "mine").unwrap();
    let refused = preload(&sb, &["plugin", other.to_str().unwrap()]);
    assert_eq!(refused.code, 1);
    assert!(refused.stderr.contains("not empty"), "{}", refused.stderr);
    assert_eq!(fs::read_dir(&other).unwrap().count(), 1);
}

#[test]
fn doctor_sees_an_enabled_plugin_and_flags_it_beside_settings_wiring() {
    let sb = Sandbox::new();
    let dir = sb.root().join("plugin");
    assert_eq!(preload(&sb, &["plugin", dir.to_str().unwrap()]).code, 0);
    install_and_enable(&sb, &dir);

    let alone = preload(&sb, &["doctor"]);
    assert_eq!(
        alone.code, 0,
        "the plugin alone is healthy:\n{}",
        alone.stdout
    );
    assert!(
        alone.stdout.contains("every hook wired once")
            && alone.stdout.contains("plugin preload-hooks@preload-hooks"),
        "{}",
        alone.stdout
    );
    assert!(
        alone
            .stdout
            .contains(&format!("runnable in {}", dir.join("bin").display())),
        "the plugin's own binaries are checked: {}",
        alone.stdout
    );

    let prefix = sb.root().join("bin");
    let installed = preload(&sb, &["install", "--prefix", prefix.to_str().unwrap()]);
    assert_eq!(installed.code, 0, "{}", installed.stderr);
    let twice = preload(&sb, &["doctor", "--prefix", prefix.to_str().unwrap()]);
    assert_eq!(twice.code, 0, "a warning, not a failure: {}", twice.stdout);
    assert!(
        !twice.stdout.contains("every hook wired once"),
        "{}",
        twice.stdout
    );
    assert!(
        twice.stdout.contains(&format!(
            "warn  settings: the hooks are wired twice: in {} and by the enabled plugin preload-hooks@preload-hooks",
            sb.project.join(".claude/settings.local.json").display()
        )),
        "{}",
        twice.stdout
    );

    // Disabled for this project: the settings' wiring alone runs again.
    let local = sb.project.join(".claude/settings.local.json");
    let mut doc = read_json(&local);
    doc["enabledPlugins"] = json!({"preload-hooks@preload-hooks": false});
    fs::write(&local, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let once = preload(&sb, &["doctor", "--prefix", prefix.to_str().unwrap()]);
    assert_eq!(once.code, 0, "{}", once.stdout);
    assert!(!once.stdout.contains("wired twice"), "{}", once.stdout);
}
