//! Names of every environment variable the hooks read, one constant each.
//!
//! Tests import these constants instead of spelling the names again.

/// The user's home; locates `~/.claude`, the engine, skills, directives and rules.
pub const HOME: &str = "HOME";
/// Project directory Claude Code started in; the project root when stdin has no `cwd`.
pub const CLAUDE_PROJECT_DIR: &str = "CLAUDE_PROJECT_DIR";
/// PID of the Claude process that owns the session (set by the engine's `run.sh`).
pub const CLAUDE_SUPERVISOR_PID: &str = "CLAUDE_SUPERVISOR_PID";
/// PID of the Claude process, set by Claude Code itself (2.1.214 and later).
pub const CLAUDE_PID: &str = "CLAUDE_PID";
/// Nests `sessions/` under a subtree of the project root.
pub const WORKSPACE: &str = "WORKSPACE";
/// Directory of the engine's session PID cache (`claude-session-cache-<pid>`), default `/tmp`.
pub const CLAUDE_SESSION_CACHE_DIR: &str = "CLAUDE_SESSION_CACHE_DIR";
/// `1` makes the prompt gate speak (the engine's `run.sh` exports it).
pub const SESSION_REQUIRED: &str = "SESSION_REQUIRED";
/// `1` raises the overflow threshold from 0.76 to 0.95.
pub const DISABLE_AUTO_COMPACT: &str = "DISABLE_AUTO_COMPACT";
/// `1` turns the PostToolUse injections hook off.
pub const DISABLE_TOOL_USE_HOOK: &str = "DISABLE_TOOL_USE_HOOK";
/// Set inside tmux; enables paste-mode rules.
pub const TMUX: &str = "TMUX";
/// The tmux pane paste-mode rules target.
pub const TMUX_PANE: &str = "TMUX_PANE";
/// Any non-empty value writes diagnostics to stderr.
pub const HOOK_DEBUG: &str = "HOOK_DEBUG";
/// Path of the delivery event log (JSON lines); unset means no log.
pub const PRELOAD_TEST_LOG: &str = "PRELOAD_TEST_LOG";
/// Sequential tool-call number recorded in the delivery event log.
pub const TOOL_CALL_NUM: &str = "TOOL_CALL_NUM";
/// Character budget of one `additionalContext` or reason (default 9,500).
pub const PRELOAD_OUTPUT_BUDGET: &str = "PRELOAD_OUTPUT_BUDGET";
/// Time budget of one hook call in milliseconds (defaults per event).
pub const PRELOAD_BUDGET_MS: &str = "PRELOAD_BUDGET_MS";
/// How long a writer waits for a state lock, in milliseconds (default 1,000).
pub const PRELOAD_LOCK_TIMEOUT_MS: &str = "PRELOAD_LOCK_TIMEOUT_MS";
/// Largest file delivered by content; larger files go out as a pointer (default 256 KiB).
pub const PRELOAD_MAX_FILE_BYTES: &str = "PRELOAD_MAX_FILE_BYTES";
/// `1` lets the guard engine auto-activate an ad-hoc `/do` session when none exists.
pub const PRELOAD_AUTO_ACTIVATE: &str = "PRELOAD_AUTO_ACTIVATE";
/// `0` keeps due files out of PreToolUse answers (a client older than Claude Code 2.1.9 drops
/// a PreToolUse context): they then go out with PostToolUse only.
pub const PRELOAD_PRETOOLUSE_CONTEXT: &str = "PRELOAD_PRETOOLUSE_CONTEXT";
/// The client that runs the hooks: `codex` for the Codex CLI (`preload install --agent codex`
/// writes it into every command); unset for Claude Code.
pub const PRELOAD_AGENT: &str = "PRELOAD_AGENT";
/// The Codex CLI's home (default `~/.codex`): its user-level `hooks.json`.
pub const CODEX_HOME: &str = "CODEX_HOME";
/// Directory of the SessionStart text cache shared by the `--chunk` registrations.
pub const PRELOAD_CACHE_DIR: &str = "PRELOAD_CACHE_DIR";
/// Directory of the compaction markers (default `${TMPDIR:-/tmp}/claude-preload-<uid>`).
pub const PRELOAD_MARKER_DIR: &str = "PRELOAD_MARKER_DIR";
/// Directory of the legacy hooks' markers (`claude-handler-<sid>`, `claude-loop-<sid>`,
/// `claude-handler-active`), read for compatibility; default `/tmp`, independent of `TMPDIR`.
pub const PRELOAD_LEGACY_MARKER_DIR: &str = "PRELOAD_LEGACY_MARKER_DIR";
/// Directory holding `handler-state.md` and `handler-dispatches/` of a handler session
/// (default: the nearest `docs/` with a `handler-state.md` above the session's `cwd`).
pub const PRELOAD_HANDLER_DIR: &str = "PRELOAD_HANDLER_DIR";
/// Temporary directory used for caches and markers.
pub const TMPDIR: &str = "TMPDIR";
/// Enables the AskUserQuestion auto-answer hook and names its strategy.
pub const E2E_AUTO_ANSWER: &str = "E2E_AUTO_ANSWER";
/// Seed that makes the `random` auto-answer strategy reproducible.
pub const E2E_AUTO_ANSWER_SEED: &str = "E2E_AUTO_ANSWER_SEED";

/// Every variable a hook reads; the runner snapshots exactly these.
pub const ALL: &[&str] = &[
    HOME,
    CLAUDE_PROJECT_DIR,
    CLAUDE_SUPERVISOR_PID,
    CLAUDE_PID,
    WORKSPACE,
    CLAUDE_SESSION_CACHE_DIR,
    SESSION_REQUIRED,
    DISABLE_AUTO_COMPACT,
    DISABLE_TOOL_USE_HOOK,
    TMUX,
    TMUX_PANE,
    HOOK_DEBUG,
    PRELOAD_TEST_LOG,
    TOOL_CALL_NUM,
    PRELOAD_OUTPUT_BUDGET,
    PRELOAD_BUDGET_MS,
    PRELOAD_LOCK_TIMEOUT_MS,
    PRELOAD_MAX_FILE_BYTES,
    PRELOAD_AUTO_ACTIVATE,
    PRELOAD_PRETOOLUSE_CONTEXT,
    PRELOAD_AGENT,
    CODEX_HOME,
    PRELOAD_CACHE_DIR,
    PRELOAD_MARKER_DIR,
    PRELOAD_LEGACY_MARKER_DIR,
    PRELOAD_HANDLER_DIR,
    TMPDIR,
    E2E_AUTO_ANSWER,
    E2E_AUTO_ANSWER_SEED,
];

use std::collections::HashMap;

/// The client that runs the hooks: the same events and JSON, with a few differences in what
/// an answer may say and in the tools a hook sees (docs/agents.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    /// Claude Code.
    ClaudeCode,
    /// The Codex CLI: its shell is `Bash` (`tool_input.command`), its edits `apply_patch` (the
    /// patch in `tool_input.command`), and a PreToolUse `allow` without `updatedInput` is an
    /// error to it that drops the answer's context.
    Codex,
}

/// A snapshot of the environment variables the hooks read.
///
/// Handlers never call `std::env` themselves, so tests can build any environment.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: HashMap<String, String>,
}

impl Env {
    /// Snapshot the process environment (only the names in [`ALL`]).
    pub fn from_process() -> Self {
        let vars = ALL
            .iter()
            .filter_map(|name| std::env::var(name).ok().map(|v| ((*name).to_owned(), v)))
            .collect();
        Self { vars }
    }

    /// Build an environment from explicit pairs (tests, embedding).
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Self {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// The value of `name` when it is set and not empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// True when `name` is exactly `1`.
    pub fn is_one(&self, name: &str) -> bool {
        self.get(name) == Some("1")
    }

    /// The value of `name` parsed as a number, when it parses.
    pub fn number<T: std::str::FromStr>(&self, name: &str) -> Option<T> {
        self.get(name).and_then(|v| v.trim().parse().ok())
    }

    /// The client that runs the hooks ([`PRELOAD_AGENT`]).
    pub fn agent(&self) -> Agent {
        match self.get(PRELOAD_AGENT) {
            Some("codex") => Agent::Codex,
            _ => Agent::ClaudeCode,
        }
    }

    /// Set a variable (tests and the command-line tool).
    pub fn set(&mut self, name: &str, value: impl Into<String>) {
        self.vars.insert(name.to_owned(), value.into());
    }
}
