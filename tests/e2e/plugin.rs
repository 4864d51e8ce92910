//! The product as a Claude Code plugin: `preload plugin DIR` writes it, the client loads it with
//! `--plugin-dir`, and the lifecycle scenario passes with no settings file wiring anything.

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::model::ModelServer;
use crate::model::Script;
use crate::scenario::Scenario;
use crate::scenarios::check_implement_lifecycle;
use crate::support::{client_or_skip, notice};
use crate::world::{World, succeeded};
use preload_cli::install::wiring::BINARIES;
use preload_cli::plugin::{platform_binary, this_platform};
use preload_test_support::sandbox::bin;

impl World {
    /// Writes the plugin with the built `preload plugin` into the world and loads it in every
    /// client run (`--plugin-dir`); the `engine` stand-in and the auto-answer settings use its
    /// `bin/`. As the plugin's README says, its `guards.json` goes to the engine when the
    /// engine has none (the example world has none). Nothing is written into a settings file.
    pub fn install_plugin(&mut self) {
        let dir = self.sandbox.root().join("plugin");
        let mut plugin = self.user_command(bin("preload"));
        plugin.arg("plugin").arg(&dir);
        succeeded(plugin, "preload plugin");
        check_plugin(&dir);
        let guards = self.sandbox.home.join(".claude/engine/guards.json");
        if !guards.exists() {
            fs::copy(dir.join("guards.json"), &guards).expect("the plugin's guards.json");
        }
        // The harness's own tools (the `engine` stand-in, the auto-answer hook) run the
        // plugin's binary under their names, as the plugin's links do.
        let tools = self.sandbox.root().join("plugin-tools");
        fs::create_dir_all(&tools).expect("plugin-tools/");
        let binary = platform_binary(&dir, this_platform().expect("a release platform"));
        for name in BINARIES {
            std::os::unix::fs::symlink(&binary, tools.join(name)).expect("link a tool");
        }
        self.use_binaries_in(&tools);
        self.wiring = format!(
            "`preload plugin` (loaded with --plugin-dir {})",
            dir.display()
        );
        self.plugin_dir = Some(dir);
    }
}

/// What `preload plugin` must have written: the manifest, the marketplace, this machine's
/// binary, and a `hooks/hooks.json` whose every command is a hook of ours, run through the
/// launcher in `bin/` (which must be there) or straight from its link in the data directory.
fn check_plugin(dir: &Path) {
    let read = |rel: &str| -> Value {
        serde_json::from_str(
            &fs::read_to_string(dir.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}")),
        )
        .unwrap_or_else(|e| panic!("{rel} is not JSON: {e}"))
    };
    assert_eq!(read(".claude-plugin/plugin.json")["name"], "preload-hooks");
    assert_eq!(
        read(".claude-plugin/marketplace.json")["plugins"][0]["source"],
        "./"
    );
    assert!(platform_binary(dir, this_platform().expect("a release platform")).is_file());
    let hooks = read("hooks/hooks.json");
    let (mut launched, mut linked) = (0, 0);
    for groups in hooks["hooks"].as_object().expect("hooks by event").values() {
        for group in groups.as_array().expect("groups") {
            for handler in group["hooks"].as_array().expect("handlers") {
                let command = handler["command"].as_str().expect("command");
                if let Some(name) = command.strip_prefix("${CLAUDE_PLUGIN_ROOT}/bin/") {
                    assert!(dir.join("bin").join(name).is_file(), "bin/{name} missing");
                    launched += 1;
                } else {
                    let name = command
                        .strip_prefix("${CLAUDE_PLUGIN_DATA}/bin/")
                        .unwrap_or_else(|| panic!("neither launched nor linked: {command}"));
                    assert!(BINARIES.contains(&name), "{command}");
                    linked += 1;
                }
            }
        }
    }
    assert!(
        launched > 32 && linked > 8,
        "{launched} launched and {linked} linked handlers in hooks/hooks.json"
    );
}

/// The whole `/implement` lifecycle with the product loaded as a plugin: the same checks as
/// `scenarios::implement_lifecycle_delivers_each_file_once_at_its_phase`.
#[test]
fn the_plugin_loaded_with_plugin_dir_passes_the_lifecycle() {
    let name = "plugin_lifecycle";
    let Some(claude) = client_or_skip(name) else {
        return;
    };
    let mut world = World::new();
    world.install_plugin();
    let settings = fs::read_to_string(world.settings_path()).unwrap_or_default();
    assert!(
        !settings.contains("preload-"),
        "a plugin world wires nothing into the settings: {settings}"
    );
    notice(&format!("{name}: product installed by {}", world.wiring));
    let s = Scenario {
        name,
        claude,
        world,
        server: ModelServer::start(Script::default()),
    };
    check_implement_lifecycle(&s);
    let log = fs::read_to_string(s.log()).expect("the delivery log");
    assert!(
        log.lines()
            .any(|l| l.contains("\"hook\":\"session-start\"")),
        "the plugin's SessionStart hooks ran"
    );
    // The client gave the launcher its data directory, and every hook is linked there to
    // this machine's binary: the tool calls' hooks above ran those links.
    let dir = s.world.plugin_dir.as_ref().expect("the plugin");
    let links = s
        .world
        .sandbox
        .home
        .join(".claude/plugins/data/preload-hooks-inline/bin");
    let binary = platform_binary(dir, this_platform().expect("a release platform"));
    for name in BINARIES {
        assert_eq!(
            fs::read_link(links.join(name)).ok().as_ref(),
            Some(&binary),
            "{name} in {}",
            links.display()
        );
    }
    assert_eq!(
        fs::read_to_string(links.join(".root"))
            .unwrap_or_default()
            .trim(),
        dir.to_string_lossy()
    );
}
