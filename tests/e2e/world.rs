//! The world a scenario's client runs in: a temporary `HOME` with the bundled example engine, a
//! project, the product installed by its own `preload install` exactly as a user installs it
//! (binaries in `~/.claude/engine/bin`, the project's `.claude/settings.local.json`, the default
//! `guards.json`), and a stand-in for the engine's `engine session …` and `engine log` on `PATH`.

use std::cell::Cell;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{Value, json};

use crate::client::RUN_TIMEOUT;
use preload_test_support::sandbox::{Sandbox, Wiring, bin, copy_tree, repo};

/// Name of the session directory the scripted lifecycle activates (under `sessions/`).
pub const SESSION: &str = "e2e";
/// How many `--chunk I/N` registrations `preload install` gives SessionStart (the product's own
/// constant: the scenarios check the wiring install really writes).
pub use preload_cli::install::wiring::SESSION_START_CHUNKS;
/// The rules `guards.json` holds after install: the shipped default set, all of it.
pub const DEFAULT_RULES: &[&str] = &[
    "overflow-dehydration",
    "session-gate",
    "idle-gate",
    "read-throttle",
    "heartbeat-warn",
    "heartbeat-block",
    "preload",
    "synthesis-commands",
];

/// One hook registration: event, matcher, executable, arguments, timeout in seconds. Only the
/// harness's own tests wire hooks by hand (stand-ins that replace the product).
#[derive(Debug, Clone)]
pub struct Hook {
    /// Claude Code event name.
    pub event: String,
    /// Matcher (`None` for events without one).
    pub matcher: Option<String>,
    /// Absolute path of the executable (exec form).
    pub command: PathBuf,
    /// Arguments.
    pub args: Vec<String>,
    /// Timeout in seconds.
    pub timeout: u32,
}

impl Hook {
    /// A registration of `command` on `event` (with `matcher`).
    pub fn new(event: &str, matcher: Option<&str>, command: &Path, args: &[&str]) -> Self {
        Self {
            event: event.into(),
            matcher: matcher.map(Into::into),
            command: command.to_path_buf(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            timeout: 10,
        }
    }
}

/// The settings object that wires `hooks` (exec form, grouped by event and matcher).
pub fn settings_for(hooks: &[Hook]) -> Value {
    let mut events = serde_json::Map::new();
    for hook in hooks {
        let groups = events
            .entry(hook.event.clone())
            .or_insert_with(|| json!([]));
        let groups = groups.as_array_mut().expect("groups array");
        let handler = json!({"type": "command", "command": hook.command, "args": hook.args,
            "timeout": hook.timeout});
        let matcher = hook.matcher.clone().map(Value::String);
        if let Some(group) = groups
            .iter_mut()
            .find(|g| g.get("matcher").cloned() == matcher)
        {
            group["hooks"]
                .as_array_mut()
                .expect("hooks array")
                .push(handler);
        } else {
            let mut group = json!({"hooks": [handler]});
            if let Some(m) = matcher {
                group["matcher"] = m;
            }
            groups.push(group);
        }
    }
    json!({"hooks": events})
}

/// A scenario's world.
pub struct World {
    /// Temporary `HOME`, project and delivery log (the unit suites' sandbox).
    pub sandbox: Sandbox,
    /// Where the client runs (the project root).
    pub cwd: PathBuf,
    /// Directory put first on `PATH` (the engine stand-in).
    pub bin_dir: PathBuf,
    /// How the hooks were wired (printed with the results).
    pub wiring: String,
    /// Extra environment of every client run (besides the cleared one `client::start` builds).
    pub client_env: Vec<(String, String)>,
    /// How long one client run may take before it is killed.
    pub run_timeout: Duration,
    /// The real engine checkout installed as `~/.claude/engine`, when this is a real-engine
    /// world ([`World::real_engine`]); `None` for the bundled example.
    pub engine: Option<PathBuf>,
    /// Where the product's binaries are: `~/.claude/engine/bin` once `preload install` ran,
    /// the plugin's `bin/` for a plugin world.
    pub installed: PathBuf,
    /// The plugin directory every client run loads with `--plugin-dir`, in a plugin world
    /// ([`World::install_plugin`]).
    pub plugin_dir: Option<PathBuf>,
    runs: Cell<usize>,
}

impl World {
    /// The bundled example engine and project, with `sessions/`, the engine stand-in on
    /// `PATH`, no `guards.json` (install writes the default one) and nothing wired yet.
    pub fn new() -> Self {
        let sandbox = Sandbox::new();
        let bin_dir = sandbox.root().join("bin");
        fs::create_dir_all(&bin_dir).expect("bin dir");
        let installed = sandbox.home.join(".claude/engine/bin");
        write_script(
            &bin_dir.join("engine"),
            &engine_stand_in(&installed.join("preload")),
        );
        fs::remove_file(sandbox.home.join(".claude/engine/guards.json"))
            .expect("the example's guards.json");
        Self {
            cwd: sandbox.project.clone(),
            sandbox,
            bin_dir,
            wiring: String::from("nothing wired"),
            client_env: Vec::new(),
            run_timeout: RUN_TIMEOUT,
            engine: None,
            installed,
            plugin_dir: None,
            runs: Cell::new(0),
        }
    }

    /// A world with the real engine: the checkout `engine` installed in a temporary `HOME` the
    /// way the engine's setup installs it (`tests/e2e/engine-home.sh`: `setup_engine_symlinks`,
    /// then `configure_hooks` writes the engine's own hook wiring into the project's
    /// `.claude/settings.local.json`), the example project (its packages carry their own
    /// `.directives`) with `sessions/`, `jq` (1.7 or newer, the engine's scripts need it) and an
    /// `engine` command first on `PATH`, and `SESSION_REQUIRED=1` for the client as the engine's
    /// `run.sh` exports it. Everything lives under `target/e2e-engine/`, because the engine's
    /// discovery skips any path with a component named `tmp`, `build`, `sessions`, ….
    /// `preload install` ([`World::install_product`]) then replaces the bash hooks it replaces.
    pub fn real_engine(engine: &Path, jq: &Path) -> Result<Self, String> {
        let base = repo().join("target/e2e-engine");
        if let Some(bad) = base.components().find(|c| {
            ["tmp", "build", "dist", "sessions", "node_modules", ".git"]
                .iter()
                .any(|x| c.as_os_str() == *x)
        }) {
            return Err(format!(
                "{} has a component named {:?}, which the engine's discovery skips",
                base.display(),
                bad.as_os_str()
            ));
        }
        let sandbox = Sandbox::bare_in(&base);
        // The bare sandbox's empty ~/.claude makes way for the engine's own layout.
        fs::remove_dir_all(sandbox.home.join(".claude")).map_err(|e| e.to_string())?;
        copy_tree(&repo().join("examples/project"), &sandbox.project)
            .map_err(|e| format!("copy the example project: {e}"))?;
        let bin_dir = sandbox.root().join("bin");
        fs::create_dir_all(&bin_dir).map_err(|e| e.to_string())?;
        std::os::unix::fs::symlink(jq, bin_dir.join("jq")).map_err(|e| e.to_string())?;
        write_script(&bin_dir.join("engine"), REAL_ENGINE_COMMAND);
        let out = Command::new(repo().join("tests/e2e/engine-home.sh"))
            .arg(engine)
            .arg(&sandbox.home)
            .arg(sandbox.project.join(".claude/settings.local.json"))
            .env_clear()
            .env("HOME", &sandbox.home)
            .env("PATH", format!("{}:/usr/bin:/bin", bin_dir.display()))
            .output()
            .map_err(|e| format!("run tests/e2e/engine-home.sh: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "installing the engine failed ({}):\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(Self {
            cwd: sandbox.project.clone(),
            installed: sandbox.home.join(".claude/engine/bin"),
            plugin_dir: None,
            sandbox,
            bin_dir,
            wiring: String::from("the engine's configure_hooks"),
            client_env: vec![("SESSION_REQUIRED".into(), "1".into())],
            run_timeout: Duration::from_secs(150),
            engine: Some(engine.to_path_buf()),
            runs: Cell::new(0),
        })
    }

    /// The same, for a project that does not use the engine: no `sessions/` directory.
    pub fn without_engine_sessions() -> Self {
        let world = Self::new();
        fs::remove_dir_all(&world.sandbox.sessions).expect("remove sessions/");
        world
    }

    /// The directory the product's binaries are in: where `preload install` puts them (its
    /// default), or the plugin's `bin/`.
    pub fn prefix(&self) -> PathBuf {
        self.installed.clone()
    }

    /// Points the `engine` stand-in on `PATH` at the `preload` in `dir`.
    pub fn use_binaries_in(&mut self, dir: &Path) {
        self.installed = dir.to_path_buf();
        write_script(
            &self.bin_dir.join("engine"),
            &engine_stand_in(&dir.join("preload")),
        );
    }

    /// Installs the product the way the README tells users to: `preload install`, run inside
    /// the project with the user's `HOME`. Fails with install's output when it fails, and
    /// checks what it wrote: every `--chunk` registration of SessionStart, the compaction
    /// hooks, and the shipped `guards.json` with all its rules.
    ///
    /// Under `PRELOAD_WIRING=dispatch` ([`Wiring::Dispatch`]) it is `preload install --dispatch`:
    /// one `preload-dispatch <Event>` process per event.
    pub fn install_product(&mut self) {
        let dispatch = self.sandbox.wiring == Wiring::Dispatch;
        let mut install = self.user_command(bin("preload"));
        install
            .arg("install")
            .args(dispatch.then_some("--dispatch"));
        succeeded(install, "preload install");
        self.wiring = format!(
            "`preload install{}` (binaries in {})",
            if dispatch { " --dispatch" } else { "" },
            self.prefix().display()
        );
        self.check_install();
    }

    /// `program` as the user runs it in the project: with the world's `HOME` and a plain
    /// `PATH`, nothing else of this process's environment.
    pub fn user_command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("HOME", &self.sandbox.home)
            .env("PATH", "/usr/bin:/bin")
            .current_dir(&self.sandbox.project);
        cmd
    }

    fn check_install(&self) {
        let settings: Value = serde_json::from_str(
            &fs::read_to_string(self.settings_path()).expect("install wrote the settings"),
        )
        .expect("the settings are JSON");
        let prefix = self.prefix();
        let has = |event: &str, binary: &str, args: &[&str]| {
            let command = prefix.join(binary).to_string_lossy().into_owned();
            handlers_of(&settings, event).iter().any(|(c, a)| {
                *c == command && a.iter().map(String::as_str).eq(args.iter().copied())
            })
        };
        let mut missing = Vec::new();
        let dispatch = self.sandbox.wiring == Wiring::Dispatch;
        let (start_binary, start_args) = if dispatch {
            ("preload-dispatch", &["SessionStart"][..])
        } else {
            ("preload-session-start", &[][..])
        };
        for i in 0..SESSION_START_CHUNKS {
            let chunk = format!("{i}/{SESSION_START_CHUNKS}");
            let args: Vec<&str> = start_args
                .iter()
                .copied()
                .chain(["--chunk", &chunk])
                .collect();
            if !has("SessionStart", start_binary, &args) {
                missing.push(format!("SessionStart --chunk {chunk}"));
            }
        }
        let events = [
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PreCompact",
            "Stop",
        ];
        let events = events.into_iter().chain(["SessionEnd", "SubagentStart"]);
        for event in events.filter(|_| dispatch) {
            if !has(event, "preload-dispatch", &[event]) {
                missing.push(format!("{event} preload-dispatch {event}"));
            }
        }
        for (event, binary, args) in [
            (
                "SessionStart",
                "preload-compaction-reread",
                &["sessionstart"][..],
            ),
            (
                "PreCompact",
                "preload-compaction-reread",
                &["precompact"][..],
            ),
            (
                "PreToolUse",
                "preload-compaction-reread",
                &["pretooluse"][..],
            ),
            ("Stop", "preload-compaction-reread", &["stop"][..]),
            (
                "PostToolUse",
                "preload-compaction-reread",
                &["register"][..],
            ),
            ("UserPromptSubmit", "preload-prompt-submit", &[][..]),
            ("PreToolUse", "preload-overflow", &[][..]),
            ("PostToolUse", "preload-templates", &[][..]),
            ("PostToolUse", "preload-phase-commands", &[][..]),
            ("PostToolUse", "preload-injections", &[][..]),
        ] {
            if !dispatch && !has(event, binary, args) {
                missing.push(format!("{event} {binary} {}", args.join(" ")));
            }
        }
        assert!(
            missing.is_empty(),
            "`preload install` did not wire: {missing:?}\n{settings:#}"
        );
        let guards_path = self.sandbox.home.join(".claude/engine/guards.json");
        let guards = fs::read_to_string(&guards_path).expect("install wrote guards.json");
        if self.engine.is_some() {
            Self::check_real_engine_wiring(&settings, &guards);
            return;
        }
        assert_eq!(
            guards,
            fs::read_to_string(repo().join("hooks/guards.json")).expect("hooks/guards.json"),
            "install writes the shipped default rules"
        );
        let ids: Vec<String> = serde_json::from_str::<Value>(&guards)
            .expect("guards.json is JSON")
            .as_array()
            .expect("guards.json is an array")
            .iter()
            .filter_map(|r| r["id"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(ids, DEFAULT_RULES, "every default rule is in force");
    }

    /// After `preload install` over the engine's wiring: no handler runs a bash hook the product
    /// replaces, the engine's other handlers are still there, and the engine's own rules
    /// (`~/.claude/engine/guards.json`, which install leaves alone) hold a session gate and the
    /// preload rule.
    fn check_real_engine_wiring(settings: &Value, guards: &str) {
        let commands: Vec<String> = settings["hooks"]
            .as_object()
            .into_iter()
            .flatten()
            .flat_map(|(_, groups)| groups.as_array().into_iter().flatten())
            .flat_map(|g| g["hooks"].as_array().into_iter().flatten())
            .filter_map(|h| h["command"].as_str().map(str::to_owned))
            .collect();
        let replaced: Vec<&String> = commands
            .iter()
            .filter(|c| {
                [
                    "session-start-restore.sh",
                    "session-start-chunk.sh",
                    "pre-tool-use-overflow-v2.sh",
                    "post-tool-use-injections.sh",
                    "post-tool-use-templates.sh",
                    "post-tool-use-phase-commands.sh",
                    "user-prompt-submit-session-gate.sh",
                ]
                .iter()
                .any(|s| c.contains(s))
            })
            .collect();
        assert!(
            replaced.is_empty(),
            "`preload install` left replaced bash hooks wired: {replaced:?}"
        );
        assert!(
            commands
                .iter()
                .any(|c| c.contains("pre-tool-use-one-strike.sh")),
            "the engine's other hooks stay wired: {commands:?}"
        );
        let ids: Vec<String> = serde_json::from_str::<Value>(guards)
            .expect("the engine's guards.json is JSON")
            .as_array()
            .expect("guards.json is an array")
            .iter()
            .filter_map(|r| r["id"].as_str().map(str::to_owned))
            .collect();
        for id in ["session-gate", "preload"] {
            assert!(
                ids.iter().any(|i| i == id),
                "the engine's guards.json has no {id} rule: {ids:?}"
            );
        }
    }

    /// The test-session settings of `hooks/settings.e2e.json` (`E2E_AUTO_ANSWER=first`, the
    /// auto-answer hook on `AskUserQuestion`), pointed at the installed binary, as
    /// `docs/e2e-auto-answer.md` tells test harnesses to pass them with `--settings`.
    pub fn auto_answer_settings(&self) -> PathBuf {
        let path = self.sandbox.root().join("settings.e2e.json");
        if !path.is_file() {
            let shipped = fs::read_to_string(repo().join("hooks/settings.e2e.json"))
                .expect("hooks/settings.e2e.json");
            let text = shipped.replace(
                "/home/user/.claude/engine/bin",
                &self.prefix().to_string_lossy(),
            );
            assert_ne!(
                text, shipped,
                "settings.e2e.json names the install directory"
            );
            fs::write(&path, text).expect("write the test-session settings");
        }
        path
    }

    /// Writes exactly `hooks` into the project's `.claude/settings.local.json` (stand-ins only).
    pub fn wire(&mut self, hooks: &[Hook]) {
        let text = serde_json::to_string_pretty(&settings_for(hooks)).expect("settings JSON");
        fs::write(self.settings_path(), text).expect("write settings");
        self.wiring = format!(
            "{} stand-in registrations written by the e2e harness",
            hooks.len()
        );
    }

    /// The project's local settings file.
    pub fn settings_path(&self) -> PathBuf {
        self.sandbox.project.join(".claude/settings.local.json")
    }

    /// `PATH` for the client: the stand-in first, then the test's own.
    pub fn path_var(&self) -> String {
        let outer = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
        format!("{}:{outer}", self.bin_dir.display())
    }

    /// Numbers the client runs of this world.
    pub fn next_run(&self) -> usize {
        let n = self.runs.get() + 1;
        self.runs.set(n);
        n
    }

    /// A stand-in hook: prints the file `output` (a complete hook answer) and ignores stdin.
    pub fn stand_in_hook(&self, name: &str, output: &Value) -> PathBuf {
        let answer = self.bin_dir.join(format!("{name}.json"));
        fs::write(&answer, output.to_string()).expect("stand-in answer");
        let script = self.bin_dir.join(name);
        write_script(
            &script,
            &format!("#!/bin/sh\ncat >/dev/null\ncat '{}'\n", answer.display()),
        );
        script
    }

    /// The parsed `.state.json` of session `name`, if present.
    pub fn state_of(&self, name: &str) -> Option<Value> {
        let text = fs::read_to_string(self.sandbox.sessions.join(name).join(".state.json")).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The parsed `.state.json` of the scripted session ([`SESSION`]), if present.
    pub fn session_state(&self) -> Option<Value> {
        self.state_of(SESSION)
    }

    /// The session was activated and its owner PID is `pid` (`whose` says whose it should be).
    pub fn assert_session_owner(&self, pid: u32, whose: &str) {
        let state = self.session_state().expect("the session was activated");
        assert_eq!(state["pid"], json!(pid), "{whose}");
    }
}

/// The (command, arguments) of every handler of `event` in a settings document.
fn handlers_of(settings: &Value, event: &str) -> Vec<(String, Vec<String>)> {
    settings["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["hooks"].as_array().into_iter().flatten())
        .map(|h| {
            let args = h["args"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect();
            (h["command"].as_str().unwrap_or_default().to_owned(), args)
        })
        .collect()
}

fn write_script(path: &Path, body: &str) {
    fs::write(path, body).expect("write script");
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("chmod script");
}

/// The `engine` command of a real-engine world: `engine <cmd> …` runs the engine's
/// `scripts/<cmd>.sh` as `engine.sh` dispatches it, without `engine.sh`'s lookup of the user's
/// identity (a Google Drive path or a cached e-mail, which a sandbox has not). `session.sh`
/// records `CLAUDE_SUPERVISOR_PID` as the session's owner (the engine's `run.sh` exports it),
/// else its own parent, a shell that ends with the tool call; under a bare client the one
/// process that the hooks and the scripts both know is the client, `CLAUDE_PID`.
const REAL_ENGINE_COMMAND: &str = r#"#!/usr/bin/env bash
# engine <command> [args…]: the engine's ~/.claude/engine/scripts/<command>.sh, as engine.sh
# dispatches it, minus engine.sh's identity lookup.
set -euo pipefail
cmd="${1:?usage: engine <command> [args...]}"
shift
script="$HOME/.claude/engine/scripts/$cmd.sh"
[ -x "$script" ] || { echo "engine: unknown command '$cmd'" >&2; exit 2; }
export CLAUDE_SUPERVISOR_PID="${CLAUDE_SUPERVISOR_PID:-${CLAUDE_PID:-$PPID}}"
exec "$script" "$@"
"#;

/// `engine session activate|continue|phase|log` and `engine log`, backed by the installed
/// `preload` command line (`preload activate`, `preload phase`); the logs append what they are
/// given.
fn engine_stand_in(preload: &Path) -> String {
    format!(
        r#"#!/usr/bin/env bash
# Stand-in for the engine's session and log commands, backed by `preload activate` / `preload phase`.
set -euo pipefail
PRELOAD='{preload}'
case "${{1:-}}" in
  log)
    # engine log <file> [text]: appends the text, or stdin when there is none.
    file="${{2:?engine log needs a file}}"; shift 2
    mkdir -p "$(dirname "$file")"
    if [ "$#" -gt 0 ]; then printf '%s\n' "$*" >> "$file"; else cat >> "$file"; fi
    echo "Logged to $file"; exit 0 ;;
  session) shift ;;
  *) echo "engine stand-in: only 'engine session …' and 'engine log …' are known" >&2; exit 2 ;;
esac
cmd="${{1:-}}"; dir="${{2:-}}"
case "$cmd" in
  # Arguments after the directory (the skill, the phase, flags) and stdin (session parameters,
  # proof) go through as they are.
  activate|continue) shift; "$PRELOAD" activate "$@" ;;
  phase) shift; "$PRELOAD" phase "$@" ;;
  log) shift 2; mkdir -p "$dir"; printf '%s\n' "$*" >> "$dir/LOG.md"; echo "Logged to $dir/LOG.md" ;;
  *) echo "engine stand-in: unknown 'session $cmd'" >&2; exit 2 ;;
esac
"#,
        preload = preload.display()
    )
}

/// Runs `cmd` (`what` names it in the failure), which must succeed: fails with its status and
/// output. Its output.
pub fn succeeded(mut cmd: Command, what: &str) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("run `{what}`: {e}"));
    assert!(
        out.status.success(),
        "`{what}` failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
