//! The one wiring table ([`WIRING`]) and the tables beside it, from which all wiring derives.
//!
//! [`WIRING`] says which binary serves which event and matcher, [`SHIMS`] which engine script
//! each binary replaces, [`BINARIES`] which binaries are installed; the functions here read a
//! row as Claude Code handlers and recognise our handlers and the engine's. `preload install`,
//! the committed `hooks/settings.json` and `hooks/shims/*`, `preload doctor` and `make demo` all
//! derive from these tables; a test keeps the committed files in step.

use std::path::Path;

use serde_json::{Map, Value, json};

pub use preload_core::policies::wiring::{SESSION_START_CHUNKS, SHIMS, Shim, WIRING, Wiring};
pub use preload_core::policies::{BINARIES, DISPATCHER};
pub use preload_core::primitives::env::Agent;
use preload_core::primitives::shell;

/// The install directory under `$HOME` when `--prefix` is not given.
pub const DEFAULT_PREFIX: &str = ".claude/engine/bin";

/// How `hooks/settings.json` spells the install directory (exec form does not expand `~`, so
/// `preload install` writes absolute paths instead).
pub const TEMPLATE_PREFIX: &str = "~/.claude/engine/bin";

/// Scripts whose bash handlers the native wiring replaces (the e2e hook is never wired).
fn replaced_scripts() -> impl Iterator<Item = &'static str> {
    SHIMS
        .iter()
        .filter(|s| WIRING.iter().any(|w| w.binary == s.binary))
        .map(|s| s.script)
}

/// The handlers of one wiring row, expanded (`--chunk I/N` for `SessionStart`).
fn handlers_of(row: &Wiring, prefix: &str) -> Vec<Value> {
    let command = format!("{prefix}/{}", row.binary);
    row.registrations()
        .into_iter()
        .map(|args| {
            let mut h =
                json!({"type": "command", "command": command, "args": args, "timeout": row.timeout});
            if let Some(rule) = row.filter {
                h["if"] = json!(rule);
            }
            h
        })
        .collect()
}

/// Our handlers grouped by (event, matcher), in table order.
pub(super) fn wanted(prefix: &str) -> Vec<(&'static str, Option<&'static str>, Vec<Value>)> {
    let mut groups: Vec<(&str, Option<&str>, Vec<Value>)> = Vec::new();
    for row in WIRING {
        let handlers = handlers_of(row, prefix);
        match groups
            .iter_mut()
            .find(|(e, m, _)| *e == row.event.name() && *m == row.matcher)
        {
            Some((_, _, list)) => list.extend(handlers),
            None => groups.push((row.event.name(), row.matcher, handlers)),
        }
    }
    groups
}

/// The `hooks` object for binaries in `prefix`.
pub fn hooks_value(prefix: &str) -> Value {
    hooks_value_in(prefix, WiringMode::Binaries, Agent::ClaudeCode)
}

/// The `hooks` object for binaries in `prefix`, wired in `mode` for `agent`.
pub fn hooks_value_in(prefix: &str, mode: WiringMode, agent: Agent) -> Value {
    let mut hooks = Map::new();
    for (event, matcher, handlers) in wanted_for(prefix, mode, agent) {
        let list = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = list {
            list.push(group(matcher, handlers));
        }
    }
    Value::Object(hooks)
}

/// How the handlers reach the policies: one binary per row (the default), or one
/// `preload-dispatch` process per event (`preload install --dispatch`, [`super::dispatch`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WiringMode {
    /// One handler per row of [`WIRING`], each its own process.
    #[default]
    Binaries,
    /// One `preload-dispatch <Event>` handler per event.
    Dispatch,
}

impl WiringMode {
    /// The mode of the wiring in a settings document: `Dispatch` when one of its handlers
    /// runs the dispatcher.
    pub fn of(settings: &Value) -> Self {
        let dispatches = all_handlers(settings).any(|(_, _, h)| our_binary(h) == Some(DISPATCHER));
        if dispatches {
            Self::Dispatch
        } else {
            Self::Binaries
        }
    }
}

/// Our handlers in `mode`, grouped by (event, matcher), in table order.
pub fn wanted_in(
    prefix: &str,
    mode: WiringMode,
) -> Vec<(&'static str, Option<&'static str>, Vec<Value>)> {
    match mode {
        WiringMode::Binaries => wanted(prefix),
        WiringMode::Dispatch => super::dispatch::groups(prefix),
    }
}

/// [`wanted_in`], the handlers as `agent` runs them (for Codex: one command line each).
pub fn wanted_for(
    prefix: &str,
    mode: WiringMode,
    agent: Agent,
) -> Vec<(&'static str, Option<&'static str>, Vec<Value>)> {
    let mut groups = wanted_in(prefix, mode);
    if agent == Agent::Codex {
        for (event, _, handlers) in &mut groups {
            // Rows that differ only in their `if` filter become one handler.
            let mut once: Vec<Value> = Vec::with_capacity(handlers.len());
            for handler in handlers.iter() {
                let codex = codex_handler(handler, event);
                if !once.contains(&codex) {
                    once.push(codex);
                }
            }
            *handlers = once;
        }
    }
    groups
}

/// What every command of a Codex wiring starts with: the hooks then speak Codex's dialect
/// ([`Agent::Codex`]).
pub const CODEX_MARK: &str = "PRELOAD_AGENT=codex";

/// The Claude Code `handler` (exec form: `command` and `args`; an `if` filter) as Codex runs
/// it: one command line (Codex runs `$SHELL -lc <command>`) that names the agent, its words
/// quoted for the shell; no `if` (Codex has none: the hooks tell an engine command from any
/// other call themselves, as under `--dispatch`); `SessionEnd` within the 3 s Codex allows it.
fn codex_handler(handler: &Value, event: &str) -> Value {
    let mut line = String::from(CODEX_MARK);
    let command = handler.get("command").and_then(Value::as_str).unwrap_or("");
    let args = handler
        .get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    for word in std::iter::once(command).chain(args) {
        line.push(' ');
        line.push_str(&shell::quote(word));
    }
    let timeout = handler.get("timeout").and_then(Value::as_u64).unwrap_or(10);
    let timeout = if event == "SessionEnd" {
        timeout.min(3)
    } else {
        timeout
    };
    json!({"type": "command", "command": line, "timeout": timeout})
}

/// The program a handler runs: its `command` itself in exec form (`args` beside it, spaces and
/// all), else the first word of the command line after its variable assignments, unquoted.
pub fn program_of(handler: &Value) -> Option<String> {
    let command = handler.get("command")?.as_str()?;
    if handler.get("args").is_some() {
        Some(command.to_owned())
    } else {
        shell::program(command)
    }
}

/// The agent a hooks document is wired for: Codex when a handler of ours names it.
pub fn agent_of(doc: &Value) -> Agent {
    let codex = all_handlers(doc).any(|(_, _, h)| {
        our_binary(h).is_some()
            && h.get("command")
                .and_then(Value::as_str)
                .is_some_and(|c| c.trim_start().starts_with(CODEX_MARK))
    });
    if codex {
        Agent::Codex
    } else {
        Agent::ClaudeCode
    }
}

/// A handler group of a settings file: its matcher (when it has one) and its handlers.
pub(super) fn group(matcher: Option<&str>, handlers: Vec<Value>) -> Value {
    let mut g = Map::new();
    if let Some(m) = matcher {
        g.insert("matcher".into(), json!(m));
    }
    g.insert("hooks".into(), Value::Array(handlers));
    Value::Object(g)
}

/// The binary a handler runs, when it is one of ours.
pub fn our_binary(handler: &Value) -> Option<&'static str> {
    let program = program_of(handler)?;
    let name = Path::new(&program).file_name()?.to_str()?;
    WIRING
        .iter()
        .map(|w| w.binary)
        .chain([DISPATCHER])
        .find(|b| *b == name)
}

/// The engine script a bash handler runs, when it is one of those the wiring replaces.
pub fn replaced_script(handler: &Value) -> Option<&'static str> {
    if our_binary(handler).is_some() {
        return None;
    }
    let command = handler.get("command")?.as_str()?;
    command
        .split_whitespace()
        .map(|t| t.trim_matches(|c| c == '"' || c == '\''))
        .filter_map(|t| Path::new(t).file_name().and_then(|n| n.to_str()))
        .find_map(|name| replaced_scripts().find(|s| *s == name))
}

/// Every handler of a settings document: (event, matcher, handler).
pub fn all_handlers(settings: &Value) -> impl Iterator<Item = (&str, &str, &Value)> {
    settings
        .get("hooks")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|hooks| hooks.iter())
        .flat_map(|(event, groups)| {
            groups.as_array().into_iter().flatten().flat_map(move |g| {
                g.get("hooks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(move |h| (event.as_str(), matcher_of(g), h))
            })
        })
}

/// The matcher of a handler group, `""` when it has none.
pub(super) fn matcher_of(group: &Value) -> &str {
    group.get("matcher").and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
