//! The world a scenario's client runs in: a temporary `HOME` with the bundled example engine, a
//! project, the product's hooks wired into the project's `.claude/settings.local.json`, and a
//! stand-in for the engine's `engine session activate|phase|log` on `PATH`.

use std::cell::Cell;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{Sandbox, bin};

/// Name of the session directory the scripted lifecycle activates (under `sessions/`).
pub const SESSION: &str = "e2e";

/// The engine's rules file for the scenarios: its `preload` rule alone (delivers
/// `pendingPreloads` on the next tool call), without the session gate and heartbeat rules that a
/// scripted model with a stand-in engine cannot satisfy.
pub const PRELOAD_RULE: &str = r#"[
  {"id": "preload", "description": "deliver queued preloads",
   "trigger": {"type": "discovery", "condition": {"field": "pendingPreloads", "nonEmpty": true}},
   "payload": {"preload": "$pendingPreloads"}, "mode": "preload", "urgency": "allow",
   "priority": 20, "inject": "always"}
]
"#;

/// One hook registration: event, matcher, executable, arguments, timeout in seconds.
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

/// How many SessionStart registrations share the start-up text (`--chunk I/N`).
pub const SESSION_START_CHUNKS: usize = 4;

/// The product's hooks, wired as CONTRACT section 2 lists them.
pub fn product_hooks() -> Vec<Hook> {
    let mut hooks = Vec::new();
    for i in 0..SESSION_START_CHUNKS {
        let chunk = format!("{i}/{SESSION_START_CHUNKS}");
        hooks.push(Hook::new(
            "SessionStart",
            None,
            &bin("preload-session-start"),
            &["--chunk", &chunk],
        ));
    }
    hooks.push(Hook::new(
        "UserPromptSubmit",
        None,
        &bin("preload-prompt-submit"),
        &[],
    ));
    hooks.push(Hook::new(
        "PreToolUse",
        Some("*"),
        &bin("preload-overflow"),
        &[],
    ));
    hooks.push(Hook::new(
        "PostToolUse",
        Some("Skill|Bash"),
        &bin("preload-templates"),
        &[],
    ));
    hooks.push(Hook::new(
        "PostToolUse",
        Some("Bash"),
        &bin("preload-phase-commands"),
        &[],
    ));
    hooks.push(Hook::new(
        "PostToolUse",
        Some("*"),
        &bin("preload-injections"),
        &[],
    ));
    hooks
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
    runs: Cell<usize>,
}

impl World {
    /// The bundled example engine and project, with `sessions/`, the engine stand-in on
    /// `PATH`, and nothing wired yet.
    pub fn new() -> Self {
        let sandbox = Sandbox::new();
        let bin_dir = sandbox.root().join("bin");
        fs::create_dir_all(&bin_dir).expect("bin dir");
        write_script(&bin_dir.join("engine"), &engine_stand_in(&bin("preload")));
        fs::write(
            sandbox.home.join(".claude/engine/guards.json"),
            PRELOAD_RULE,
        )
        .expect("guards.json");
        Self {
            cwd: sandbox.project.clone(),
            sandbox,
            bin_dir,
            wiring: String::from("nothing wired"),
            runs: Cell::new(0),
        }
    }

    /// The same, for a project that does not use the engine: no `sessions/` directory.
    pub fn without_engine_sessions() -> Self {
        let world = Self::new();
        fs::remove_dir_all(&world.sandbox.sessions).expect("remove sessions/");
        world
    }

    /// Wires the product's hooks into the project the way users do: `preload install` when it
    /// can, else the same exec-form settings written here.
    pub fn install_product_hooks(&mut self) {
        let settings = self.settings_path();
        let prefix = self.sandbox.root().join("prefix");
        let installed = Command::new(bin("preload"))
            .arg("install")
            .arg("--prefix")
            .arg(&prefix)
            .arg("--settings")
            .arg(&settings)
            .env("HOME", &self.sandbox.home)
            .current_dir(&self.sandbox.project)
            .output()
            .is_ok_and(|o| o.status.success())
            && fs::read_to_string(&settings).is_ok_and(|s| s.contains("preload-session-start"));
        if installed {
            self.wiring = format!("preload install --prefix {}", prefix.display());
        } else {
            self.wire(&product_hooks());
            self.wiring = "exec-form settings written by the e2e harness \
                           (`preload install` is not available yet)"
                .into();
        }
    }

    /// Writes exactly `hooks` into the project's `.claude/settings.local.json`.
    pub fn wire(&mut self, hooks: &[Hook]) {
        let text = serde_json::to_string_pretty(&settings_for(hooks)).expect("settings JSON");
        fs::write(self.settings_path(), text).expect("write settings");
        self.wiring = format!("{} registrations written by the e2e harness", hooks.len());
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

    /// The session's parsed `.state.json`, if present.
    pub fn session_state(&self) -> Option<Value> {
        let text =
            fs::read_to_string(self.sandbox.sessions.join(SESSION).join(".state.json")).ok()?;
        serde_json::from_str(&text).ok()
    }
}

fn write_script(path: &Path, body: &str) {
    fs::write(path, body).expect("write script");
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("chmod script");
}

/// `engine session activate|phase|log|continue`, backed by the `preload` command line.
fn engine_stand_in(preload: &Path) -> String {
    format!(
        r#"#!/usr/bin/env bash
# Stand-in for the engine's session commands, backed by `preload activate` / `preload phase`.
set -euo pipefail
PRELOAD='{preload}'
[ "${{1:-}}" = session ] || {{ echo "engine stand-in: only 'engine session …' is known" >&2; exit 2; }}
shift
cmd="${{1:-}}"; dir="${{2:-}}"
case "$cmd" in
  activate|continue)
    skill="${{3:-}}"
    if [ -n "$skill" ]; then "$PRELOAD" activate "$dir" --skill "$skill"; else "$PRELOAD" activate "$dir"; fi ;;
  phase) "$PRELOAD" phase "$dir" "$3" ;;
  log) shift 2; mkdir -p "$dir"; printf '%s\n' "$*" >> "$dir/LOG.md"; echo "Logged to $dir/LOG.md" ;;
  *) echo "engine stand-in: unknown 'session $cmd'" >&2; exit 2 ;;
esac
"#,
        preload = preload.display()
    )
}
