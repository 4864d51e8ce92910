//! The one wiring table ([`WIRING`]) and the tables beside it, from which all wiring derives.
//!
//! [`WIRING`] says which binary serves which event and matcher, [`SHIMS`] which engine script
//! each binary replaces, [`BINARIES`] which binaries are installed; the functions here read a
//! row as Claude Code handlers and recognise our handlers and the engine's. `preload install`,
//! the committed `hooks/settings.json` and `hooks/shims/*`, `preload doctor` and `make demo` all
//! derive from these tables; a test keeps the committed files in step.

use std::path::Path;

use preload_core::hooks::dispatcher::Route;
use serde_json::{Map, Value, json};

pub use super::dispatch::WiringMode;

/// How many `--chunk I/N` registrations `SessionStart` gets.
///
/// Each slice stays within the 9,500-character output budget, so 32 slices carry up to 304,000
/// characters. The engine's six core standards alone are about 160,000 (the three large ones go
/// out in parts of 8,500, one slice each); with the active skill's SKILL.md, the current
/// phase's commands and templates, the session's artifacts and a dehydrated session's restore,
/// they all reach the first context window, as they did with the engine's 48 bash slots. What
/// still does not fit stays queued and goes out first on the next tool calls. An unused
/// registration costs one process start (about a millisecond, in parallel) and prints nothing.
pub const SESSION_START_CHUNKS: usize = 32;

/// The install directory under `$HOME` when `--prefix` is not given.
pub const DEFAULT_PREFIX: &str = ".claude/engine/bin";

/// How `hooks/settings.json` spells the install directory (exec form does not expand `~`, so
/// `preload install` writes absolute paths instead).
pub const TEMPLATE_PREFIX: &str = "~/.claude/engine/bin";

/// Every binary `preload install` copies (the e2e auto-answer hook included, though it is
/// never wired: it is for test sessions only).
pub const BINARIES: &[&str] = &[
    "preload",
    "preload-session-start",
    "preload-prompt-submit",
    "preload-templates",
    "preload-phase-commands",
    "preload-overflow",
    "preload-injections",
    "preload-compaction-reread",
    "preload-session-end",
    "preload-subagent-start",
    "preload-e2e-auto-answer",
    DISPATCHER,
];

/// The binary that runs every policy of an event in one process (`preload install --dispatch`).
pub const DISPATCHER: &str = "preload-dispatch";

/// One handler of the wiring: a binary with its arguments on one event and matcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wiring {
    /// Binary name.
    pub binary: &'static str,
    /// Arguments (exec form).
    pub args: &'static [&'static str],
    /// Claude Code event name.
    pub event: &'static str,
    /// Matcher; `None` for events without one or to match everything.
    pub matcher: Option<&'static str>,
    /// Timeout in seconds (the kill; each hook keeps to a far smaller budget of its own).
    pub timeout: u32,
    /// Wired as [`SESSION_START_CHUNKS`] registrations with `--chunk I/N`.
    pub chunked: bool,
    /// The client's `if` (a permission rule such as `Bash(git *)`): the handler is spawned
    /// only for tool calls it matches. For a policy that can act on no other call; the
    /// policy still checks its input itself (the client runs it when it cannot tell).
    pub filter: Option<&'static str>,
}

/// The one wiring table: every handler `preload install` writes, in order. The order is also
/// the order in which `preload-dispatch` runs an event's policies within one answer: what a
/// policy delivers itself (a skill's or a phase's files) goes before the stash
/// `preload-injections` hands out, which keeps what does not fit for the next call.
pub const WIRING: &[Wiring] = &[
    Wiring {
        binary: "preload-session-start",
        args: &[],
        event: "SessionStart",
        matcher: None,
        timeout: 15,
        chunked: true,
        filter: None,
    },
    Wiring {
        binary: "preload-compaction-reread",
        args: &["sessionstart"],
        event: "SessionStart",
        matcher: Some("compact"),
        timeout: 10,
        chunked: false,
        filter: None,
    },
    Wiring {
        binary: "preload-prompt-submit",
        args: &[],
        event: "UserPromptSubmit",
        matcher: None,
        timeout: 10,
        chunked: false,
        filter: None,
    },
    Wiring {
        binary: "preload-overflow",
        args: &[],
        event: "PreToolUse",
        matcher: Some("*"),
        timeout: 5,
        chunked: false,
        filter: None,
    },
    Wiring {
        binary: "preload-compaction-reread",
        args: &["pretooluse"],
        event: "PreToolUse",
        matcher: Some("*"),
        timeout: 5,
        chunked: false,
        filter: None,
    },
    Wiring {
        binary: "preload-templates",
        args: &[],
        event: "PostToolUse",
        matcher: Some("Skill"),
        timeout: 10,
        chunked: false,
        filter: None,
    },
    Wiring {
        binary: "preload-templates",
        args: &[],
        event: "PostToolUse",
        matcher: Some("Bash"),
        timeout: 10,
        chunked: false,
        filter: Some("Bash(engine session activate *)"),
    },
    Wiring {
        binary: "preload-templates",
        args: &[],
        event: "PostToolUse",
        matcher: Some("Bash"),
        timeout: 10,
        chunked: false,
        filter: Some("Bash(engine session continue *)"),
    },
    Wiring {
        binary: "preload-templates",
        args: &[],
        event: "PostToolUse",
        matcher: Some("Bash"),
        timeout: 10,
        chunked: false,
        filter: Some("Bash(preload activate *)"),
    },
    Wiring {
        binary: "preload-phase-commands",
        args: &[],
        event: "PostToolUse",
        matcher: Some("Bash"),
        timeout: 5,
        chunked: false,
        filter: Some("Bash(engine session phase *)"),
    },
    Wiring {
        binary: "preload-phase-commands",
        args: &[],
        event: "PostToolUse",
        matcher: Some("Bash"),
        timeout: 5,
        chunked: false,
        filter: Some("Bash(preload phase *)"),
    },
    Wiring {
        binary: "preload-injections",
        args: &[],
        event: "PostToolUse",
        matcher: Some("*"),
        timeout: 5,
        chunked: false,
        filter: None,
    },
    Wiring {
        binary: "preload-compaction-reread",
        args: &["register"],
        event: "PostToolUse",
        matcher: Some("Skill"),
        timeout: 5,
        chunked: false,
        filter: None,
    },
    Wiring {
        binary: "preload-compaction-reread",
        args: &["precompact"],
        event: "PreCompact",
        matcher: None,
        timeout: 5,
        chunked: false,
        filter: None,
    },
    Wiring {
        binary: "preload-compaction-reread",
        args: &["stop"],
        event: "Stop",
        matcher: None,
        timeout: 5,
        chunked: false,
        filter: None,
    },
    // Every SessionEnd hook shares one exit budget (1.5 s by default), which the highest
    // timeout of a settings file raises: 2 s keeps that raise small.
    Wiring {
        binary: "preload-session-end",
        args: &[],
        event: "SessionEnd",
        matcher: None,
        timeout: 2,
        chunked: false,
        filter: None,
    },
    Wiring {
        binary: "preload-subagent-start",
        args: &[],
        event: "SubagentStart",
        matcher: None,
        timeout: 10,
        chunked: false,
        filter: None,
    },
];

/// One engine hook script and the binary that replaces it.
#[derive(Debug, Clone, Copy)]
pub struct Shim {
    /// The engine's script name under `~/.claude/hooks/`.
    pub script: &'static str,
    /// The binary that replaces it.
    pub binary: &'static str,
    /// Bash text appended to the `exec` line (argument mapping).
    pub args: &'static str,
}

/// The engine scripts the binaries replace, one shim each.
pub const SHIMS: &[Shim] = &[
    Shim {
        script: "pre-tool-use-overflow-v2.sh",
        binary: "preload-overflow",
        args: "",
    },
    Shim {
        script: "post-tool-use-injections.sh",
        binary: "preload-injections",
        args: "",
    },
    Shim {
        script: "post-tool-use-templates.sh",
        binary: "preload-templates",
        args: "",
    },
    Shim {
        script: "post-tool-use-phase-commands.sh",
        binary: "preload-phase-commands",
        args: "",
    },
    Shim {
        script: "user-prompt-submit-session-gate.sh",
        binary: "preload-prompt-submit",
        args: "",
    },
    Shim {
        script: "session-start-restore.sh",
        binary: "preload-session-start",
        args: "",
    },
    Shim {
        script: "session-start-chunk.sh",
        binary: "preload-session-start",
        args: " --chunk \"${1:-0}/${2:-1}\"",
    },
    Shim {
        script: "subagent-start-context.sh",
        binary: "preload-subagent-start",
        args: "",
    },
    Shim {
        script: "e2e-auto-answer.sh",
        binary: "preload-e2e-auto-answer",
        args: "",
    },
];

/// Scripts whose bash handlers the native wiring replaces (the e2e hook is never wired).
fn replaced_scripts() -> impl Iterator<Item = &'static str> {
    SHIMS
        .iter()
        .filter(|s| WIRING.iter().any(|w| w.binary == s.binary))
        .map(|s| s.script)
}

impl Wiring {
    /// This row as `preload-dispatch` runs it (the wiring without its timeout and filter).
    pub const fn route(&self) -> Route {
        Route {
            binary: self.binary,
            args: self.args,
            event: self.event,
            matcher: self.matcher,
            chunked: self.chunked,
        }
    }

    /// The argument lists of this row's registrations: one, or [`SESSION_START_CHUNKS`] with
    /// `--chunk I/N` appended for a chunked row.
    pub fn registrations(&self) -> Vec<Vec<String>> {
        let base: Vec<String> = self.args.iter().map(|a| (*a).to_owned()).collect();
        if !self.chunked {
            return vec![base];
        }
        (0..SESSION_START_CHUNKS)
            .map(|i| {
                let mut args = base.clone();
                args.push("--chunk".into());
                args.push(format!("{i}/{SESSION_START_CHUNKS}"));
                args
            })
            .collect()
    }
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
            .find(|(e, m, _)| *e == row.event && *m == row.matcher)
        {
            Some((_, _, list)) => list.extend(handlers),
            None => groups.push((row.event, row.matcher, handlers)),
        }
    }
    groups
}

/// The `hooks` object for binaries in `prefix`.
pub fn hooks_value(prefix: &str) -> Value {
    hooks_value_in(prefix, WiringMode::Binaries)
}

/// The `hooks` object for binaries in `prefix`, wired in `mode`.
pub fn hooks_value_in(prefix: &str, mode: WiringMode) -> Value {
    let mut hooks = Map::new();
    for (event, matcher, handlers) in super::dispatch::wanted_in(prefix, mode) {
        let list = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = list {
            list.push(group(matcher, handlers));
        }
    }
    Value::Object(hooks)
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
    let command = handler.get("command")?.as_str()?;
    let first = command.split_whitespace().next()?;
    let name = Path::new(first.trim_matches(|c| c == '"' || c == '\''))
        .file_name()?
        .to_str()?;
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
