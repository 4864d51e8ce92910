//! `preload plugin DIR`: the hooks as a Claude Code plugin directory, wired by the one table.
//!
//! The directory holds `.claude-plugin/plugin.json` (the manifest), `.claude-plugin/
//! marketplace.json` (a one-plugin marketplace, so `/plugin marketplace add DIR` works),
//! `hooks/hooks.json` (exec form, every command under `${CLAUDE_PLUGIN_ROOT}/bin`, derived from
//! [`WIRING`](crate::install::wiring::WIRING) exactly as `preload install` derives its
//! settings), `bin/` with the binaries copied from the directory of the running `preload`, the
//! default `guards.json`, and a README. Nothing outside the directory is touched.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Value, json};

use preload_core::primitives::file;
use preload_core::primitives::file::OpError;

use crate::exit::{self, CommandError, Exit};
use crate::install::binaries::{self, BinaryError};
use crate::install::guards::DEFAULT_GUARDS;
use crate::install::settings::to_pretty;
use crate::install::wiring::{BINARIES, hooks_value};

/// The plugin's name (`preload-hooks@preload-hooks` once installed from its own marketplace).
pub const PLUGIN_NAME: &str = "preload-hooks";
/// The name of the one-plugin marketplace the directory also is.
pub const MARKETPLACE_NAME: &str = "preload-hooks";
/// How `hooks/hooks.json` names the directory of the binaries; Claude Code substitutes the
/// plugin's root for the placeholder.
pub const PLUGIN_BIN: &str = "${CLAUDE_PLUGIN_ROOT}/bin";
/// The manifest, relative to the plugin's root.
pub const MANIFEST: &str = ".claude-plugin/plugin.json";
/// The marketplace file, relative to the plugin's root.
pub const MARKETPLACE: &str = ".claude-plugin/marketplace.json";
/// The hook wiring, relative to the plugin's root.
pub const HOOKS_FILE: &str = "hooks/hooks.json";

const DESCRIPTION: &str = "Native preload hooks for the workflow engine: standards, skill \
                           protocols, phase commands, templates and directives reach the \
                           agent's context exactly once, within Claude Code's output cap.";
const README: &str = include_str!("plugin/README.md");

/// `preload plugin`.
#[derive(Debug, Clone, clap::Args)]
pub struct PluginArgs {
    /// The directory to write the plugin into (created; an existing one must be empty or hold
    /// an earlier copy of this plugin).
    #[arg(value_name = "DIR", value_parser = crate::path_arg)]
    pub dir: PathBuf,
}

/// Why the plugin was not written.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The directory holds something else; nothing was written.
    #[error(
        "{dir} is not empty and holds no earlier copy of the {PLUGIN_NAME} plugin; choose an empty or new directory"
    )]
    Occupied {
        /// The directory.
        dir: PathBuf,
    },
    /// The running `preload` cannot find its own binary, next to which the others are.
    #[error("cannot locate preload: {source}")]
    Locate {
        /// The underlying error.
        source: io::Error,
    },
    /// The binaries were not copied.
    #[error(transparent)]
    Binaries(#[from] BinaryError),
    /// A file operation failed.
    #[error(transparent)]
    Io(#[from] OpError),
}

impl CommandError for PluginError {
    fn exit(&self) -> Exit {
        Exit::Failure
    }
}

/// Run `preload plugin`.
pub fn run(args: &PluginArgs) -> ExitCode {
    let dir = crate::process_cwd().join(&args.dir);
    let result = std::env::current_exe()
        .map_err(|source| PluginError::Locate { source })
        .and_then(|exe| write_plugin(&dir, exe.parent().unwrap_or(Path::new("."))));
    exit::finish("plugin", result.map(|lines| lines.join("\n")))
}

/// The manifest `.claude-plugin/plugin.json`.
pub fn manifest() -> Value {
    json!({
        "name": PLUGIN_NAME,
        "version": env!("CARGO_PKG_VERSION"),
        "description": DESCRIPTION,
        "author": {"name": "preload-hooks"},
        "repository": env!("CARGO_PKG_REPOSITORY"),
        "license": env!("CARGO_PKG_LICENSE"),
        "keywords": ["hooks", "preload", "workflow-engine", "context"],
        // The hooks and the command line reach no network host.
        "network": {"hosts": []},
    })
}

/// The one-plugin marketplace `.claude-plugin/marketplace.json`: the plugin is the directory
/// itself (`./`).
pub fn marketplace() -> Value {
    json!({
        "name": MARKETPLACE_NAME,
        "owner": {"name": "preload-hooks"},
        "description": "The preload-hooks plugin, from this directory.",
        "plugins": [{
            "name": PLUGIN_NAME,
            "source": "./",
            "description": DESCRIPTION,
            "version": env!("CARGO_PKG_VERSION"),
        }],
    })
}

/// `hooks/hooks.json`: the wiring of `preload install`, with the binaries under
/// [`PLUGIN_BIN`].
pub fn hooks_document() -> Value {
    json!({
        "description": "preload-hooks: the native hooks of the workflow engine's preload pipeline",
        "hooks": hooks_value(PLUGIN_BIN),
    })
}

/// True when `dir` may be written: absent, empty, or holding an earlier copy of this plugin.
fn may_write(dir: &Path) -> bool {
    let Ok(mut entries) = fs::read_dir(dir) else {
        return !dir.exists();
    };
    if entries.next().is_none() {
        return true;
    }
    fs::read_to_string(dir.join(MANIFEST))
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .is_some_and(|m| m["name"] == PLUGIN_NAME)
}

fn write_text(path: &Path, text: &str) -> Result<(), PluginError> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(OpError::at("create", parent))?;
    }
    file::write_atomic(path, text.as_bytes())
        .map_err(|err| OpError::at("write", path)(err.source).into())
}

fn json_text(value: &Value) -> String {
    let mut text = to_pretty(value, b"  ");
    text.push('\n');
    text
}

/// Write the plugin into `dir`, with the binaries copied from `from`; returns what was done.
pub fn write_plugin(dir: &Path, from: &Path) -> Result<Vec<String>, PluginError> {
    if !may_write(dir) {
        return Err(PluginError::Occupied {
            dir: dir.to_path_buf(),
        });
    }
    let copied = binaries::install_binaries(from, &dir.join("bin"))?;
    write_text(&dir.join(MANIFEST), &json_text(&manifest()))?;
    write_text(&dir.join(MARKETPLACE), &json_text(&marketplace()))?;
    write_text(&dir.join(HOOKS_FILE), &json_text(&hooks_document()))?;
    write_text(&dir.join("guards.json"), DEFAULT_GUARDS)?;
    write_text(&dir.join("README.md"), README)?;
    Ok(vec![
        format!("plugin: {PLUGIN_NAME} {} in {}", env!("CARGO_PKG_VERSION"), dir.display()),
        format!("binaries: {} in {} ({copied} updated)", BINARIES.len(), dir.join("bin").display()),
        format!("wiring: {} (the table `preload install` writes)", dir.join(HOOKS_FILE).display()),
        format!("try it: claude --plugin-dir {}", dir.display()),
        format!(
            "or install it: /plugin marketplace add {}, then /plugin install {PLUGIN_NAME}@{MARKETPLACE_NAME}",
            dir.display()
        ),
        "do not also wire the hooks with `preload install`: both would run (`preload doctor` says so)"
            .into(),
    ])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::install::wiring::{SESSION_START_CHUNKS, WIRING};

    #[test]
    fn every_hook_command_lives_under_the_plugin_root() {
        let doc = hooks_document();
        let mut commands = 0;
        for groups in doc["hooks"].as_object().unwrap().values() {
            for group in groups.as_array().unwrap() {
                for handler in group["hooks"].as_array().unwrap() {
                    let command = handler["command"].as_str().unwrap();
                    assert!(
                        command.starts_with("${CLAUDE_PLUGIN_ROOT}/bin/"),
                        "{command}"
                    );
                    assert!(handler["args"].is_array(), "exec form: {handler}");
                    commands += 1;
                }
            }
        }
        let rows = WIRING.iter().filter(|w| !w.chunked).count();
        assert_eq!(commands, rows + SESSION_START_CHUNKS);
    }

    #[test]
    fn the_marketplace_lists_the_directory_as_its_plugin() {
        let m = marketplace();
        assert_eq!(m["plugins"][0]["name"], manifest()["name"]);
        assert_eq!(m["plugins"][0]["source"], "./");
        assert_eq!(m["plugins"][0]["version"], manifest()["version"]);
    }

    #[test]
    fn an_occupied_directory_is_refused_and_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("notes.txt"), "mine").unwrap();
        let err = write_plugin(tmp.path(), tmp.path()).unwrap_err();
        assert!(matches!(err, PluginError::Occupied { .. }), "{err}");
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 1);
    }
}
