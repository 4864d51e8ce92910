//! `preload plugin DIR`: the hooks as a Claude Code plugin directory, wired by the one table.
//!
//! The directory holds `.claude-plugin/plugin.json` (the manifest), `.claude-plugin/
//! marketplace.json` (a one-plugin marketplace, so `/plugin marketplace add DIR` works),
//! `hooks/hooks.json` (exec form, derived from [`WIRING`](crate::install::wiring::WIRING)
//! exactly as `preload install` derives its settings), `bin/<platform>/preload` for each
//! platform it carries (this machine's, or every one of a `make dist`), the launcher under
//! every hook's name in `bin/`, the default `guards.json`, and a README. Nothing outside the
//! directory is touched.
//!
//! The launcher (`plugin/launch.sh`) runs the events that come once a session or a prompt
//! (SessionStart, UserPromptSubmit): it links this machine's binary under every hook's name
//! into `${CLAUDE_PLUGIN_DATA}/bin` when the links are missing or stale, and execs the hook.
//! Every other event, the hooks of each tool call among them, execs those links directly: no
//! shell and no `node` in front of a tool call.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Map, Value, json};

use preload_core::primitives::file;
use preload_core::primitives::file::OpError;

use crate::exit::{self, CommandError, Exit};
use crate::install::binaries::{self, BinaryError, MULTI_CALL};
use crate::install::guards::DEFAULT_GUARDS;
use crate::install::settings::to_pretty;
use crate::install::wiring::{BINARIES, hooks_value};
use crate::words;

/// The plugin's name (`preload-hooks@preload-hooks` once installed from its own marketplace).
pub const PLUGIN_NAME: &str = "preload-hooks";
/// The name of the one-plugin marketplace the directory also is.
pub const MARKETPLACE_NAME: &str = "preload-hooks";
/// Where `hooks/hooks.json` runs the launcher: the plugin's `bin/` (Claude Code substitutes the
/// plugin's root for the placeholder).
pub const PLUGIN_BIN: &str = "${CLAUDE_PLUGIN_ROOT}/bin";
/// Where `hooks/hooks.json` runs the hooks of every other event: the links the launcher makes
/// in the plugin's data directory, which Claude Code keeps across sessions and updates.
pub const PLUGIN_LINKS: &str = "${CLAUDE_PLUGIN_DATA}/bin";
/// The events whose hooks go through the launcher: each comes once a session or once a prompt,
/// before any tool call, so the links are there when the tool calls' hooks exec them.
pub const LAUNCHED_EVENTS: &[&str] = &["SessionStart", "UserPromptSubmit"];
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
const LAUNCHER: &str = include_str!("plugin/launch.sh");

/// A platform the plugin can carry a binary for, named as the npm packages name theirs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Platform {
    /// The name of its directory in `bin/` (`linux-x64`, ...).
    pub name: &'static str,
    /// The target `make dist` builds for it.
    pub target: &'static str,
    /// What `uname -sm` prints there.
    pub uname: &'static [&'static str],
    /// `std::env::consts::OS` and `ARCH` there.
    os: &'static str,
    arch: &'static str,
}

/// Every platform a release is built for (`make dist`).
pub const PLATFORMS: &[Platform] = &[
    Platform {
        name: "linux-x64",
        target: "x86_64-unknown-linux-musl",
        uname: &["Linux x86_64"],
        os: "linux",
        arch: "x86_64",
    },
    Platform {
        name: "linux-arm64",
        target: "aarch64-unknown-linux-musl",
        uname: &["Linux aarch64", "Linux arm64"],
        os: "linux",
        arch: "aarch64",
    },
    Platform {
        name: "darwin-x64",
        target: "x86_64-apple-darwin",
        uname: &["Darwin x86_64"],
        os: "macos",
        arch: "x86_64",
    },
    Platform {
        name: "darwin-arm64",
        target: "aarch64-apple-darwin",
        uname: &["Darwin arm64"],
        os: "macos",
        arch: "aarch64",
    },
];

/// The platform this `preload` runs on, when a release is built for it.
pub fn this_platform() -> Option<&'static Platform> {
    PLATFORMS
        .iter()
        .find(|p| p.os == std::env::consts::OS && p.arch == std::env::consts::ARCH)
}

/// The multi-call binary of `platform` in a plugin rooted at `root`.
pub fn platform_binary(root: &Path, platform: &Platform) -> PathBuf {
    root.join("bin").join(platform.name).join(MULTI_CALL)
}

/// `preload plugin`.
#[derive(Debug, Clone, clap::Args)]
pub struct PluginArgs {
    /// The directory to write the plugin into (created; an existing one must be empty or hold
    /// an earlier copy of this plugin).
    #[arg(value_name = "DIR", value_parser = crate::path_arg)]
    pub dir: PathBuf,
    /// Carry the binaries of every platform found in DIST, a directory holding the unpacked
    /// release tarballs of this version (`preload-hooks-<version>-<target>/bin/preload`, as
    /// `make dist` writes them), instead of this machine's binary alone.
    #[arg(long, value_name = "DIST", value_parser = crate::path_arg)]
    pub dist: Option<PathBuf>,
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
    /// The running `preload` cannot find its own binary.
    #[error("cannot locate preload: {source}")]
    Locate {
        /// The underlying error.
        source: io::Error,
    },
    /// This machine is none of the release platforms, and no `--dist` was given.
    #[error(
        "this machine ({os} {arch}) is none of the platforms a plugin carries; pass --dist with the release tarballs unpacked"
    )]
    UnknownPlatform {
        /// `std::env::consts::OS`.
        os: &'static str,
        /// `std::env::consts::ARCH`.
        arch: &'static str,
    },
    /// `--dist` holds no binary of this version for any platform.
    #[error(
        "{dist} holds no unpacked release of version {version} (preload-hooks-{version}-<target>/bin/preload)"
    )]
    EmptyDist {
        /// The directory.
        dist: PathBuf,
        /// This `preload`'s version.
        version: &'static str,
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
    let cwd = crate::process_cwd();
    let dir = cwd.join(&args.dir);
    let result = match &args.dist {
        Some(dist) => from_dist(&cwd.join(dist)),
        None => this_machine(),
    }
    .and_then(|binaries| write_plugin(&dir, &binaries));
    exit::finish("plugin", result.map(|lines| lines.join("\n")))
}

/// The binary of each platform the plugin carries.
pub type Binaries = Vec<(&'static Platform, PathBuf)>;

/// This machine's platform with the running `preload`.
fn this_machine() -> Result<Binaries, PluginError> {
    let platform = this_platform().ok_or(PluginError::UnknownPlatform {
        os: std::env::consts::OS,
        arch: std::env::consts::ARCH,
    })?;
    let exe = std::env::current_exe().map_err(|source| PluginError::Locate { source })?;
    Ok(vec![(platform, exe)])
}

/// Every platform whose unpacked release of this version is in `dist`.
pub fn from_dist(dist: &Path) -> Result<Binaries, PluginError> {
    let version = env!("CARGO_PKG_VERSION");
    let found: Binaries = PLATFORMS
        .iter()
        .map(|p| {
            let release = format!("preload-hooks-{version}-{}", p.target);
            (p, dist.join(release).join("bin").join(MULTI_CALL))
        })
        .filter(|(_, binary)| binary.is_file())
        .collect();
    if found.is_empty() {
        return Err(PluginError::EmptyDist {
            dist: dist.to_path_buf(),
            version,
        });
    }
    Ok(found)
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

/// `hooks/hooks.json`: the wiring of `preload install`, the [`LAUNCHED_EVENTS`] through the
/// launcher in [`PLUGIN_BIN`], every other event straight to its link in [`PLUGIN_LINKS`].
pub fn hooks_document() -> Value {
    let (Value::Object(launched), Value::Object(linked)) =
        (hooks_value(PLUGIN_BIN), hooks_value(PLUGIN_LINKS))
    else {
        unreachable!("hooks_value builds an object")
    };
    let hooks: Map<String, Value> = linked
        .into_iter()
        .map(|(event, groups)| match launched.get(&event) {
            Some(through_launcher) if LAUNCHED_EVENTS.contains(&event.as_str()) => {
                (event, through_launcher.clone())
            }
            _ => (event, groups),
        })
        .collect();
    json!({
        "description": "preload-hooks: the native hooks of the workflow engine's preload pipeline",
        "hooks": hooks,
    })
}

/// The launcher: the platforms by what `uname -sm` says, and every hook to link.
pub fn launcher() -> String {
    let arms: Vec<String> = PLATFORMS
        .iter()
        .map(|p| {
            let patterns: Vec<String> = p.uname.iter().map(|u| format!("\"{u}\"")).collect();
            format!("    {}) echo {} ;;", patterns.join(" | "), p.name)
        })
        .collect();
    LAUNCHER
        .replace(
            "    # @PLATFORMS@ (one arm each, written by `preload plugin`)",
            &arms.join("\n"),
        )
        .replace("@HOOKS@", &BINARIES.join(" "))
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

/// Write the plugin into `dir`, carrying `binaries`; returns what was done.
pub fn write_plugin(dir: &Path, binaries: &Binaries) -> Result<Vec<String>, PluginError> {
    if !may_write(dir) {
        return Err(PluginError::Occupied {
            dir: dir.to_path_buf(),
        });
    }
    let bin = dir.join("bin");
    let mut copied = 0;
    for (platform, from) in binaries {
        let to = platform_binary(dir, platform);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).map_err(OpError::at("create", parent))?;
        }
        copied += usize::from(binaries::install_file(from, &to)?);
    }
    let carried: Vec<&Platform> = binaries.iter().map(|(p, _)| *p).collect();
    let launcher = launcher();
    for name in BINARIES {
        let path = bin.join(name);
        write_text(&path, &launcher)?;
        binaries::make_executable(&path).map_err(OpError::at("chmod", &path))?;
    }
    write_text(&dir.join(MANIFEST), &json_text(&manifest()))?;
    write_text(&dir.join(MARKETPLACE), &json_text(&marketplace()))?;
    write_text(&dir.join(HOOKS_FILE), &json_text(&hooks_document()))?;
    write_text(&dir.join("guards.json"), DEFAULT_GUARDS)?;
    write_text(&dir.join("README.md"), README)?;
    Ok(vec![
        format!("plugin: {PLUGIN_NAME} {} in {}", env!("CARGO_PKG_VERSION"), dir.display()),
        format!(
            "binaries: {} in {} ({copied} updated), each running every hook",
            words::plural(carried.len(), "platform", "platforms"),
            carried
                .iter()
                .map(|p| format!("bin/{}", p.name))
                .collect::<Vec<_>>()
                .join(", ")
        ),
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
mod tests;
