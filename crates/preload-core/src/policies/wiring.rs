//! The one wiring table ([`WIRING`]): which hook binary of the table of hooks
//! ([`super::HOOKS`]) serves which Claude Code event and matcher, with its arguments, timeout
//! and `if`; the engine's hook scripts each binary replaces ([`SHIMS`]). `preload install` writes the settings from
//! it, `preload doctor` checks them against it, and `preload-dispatch` runs each event's
//! policies in its order: the one place all three read.

use super::{
    compaction_reread, e2e_auto_answer, guards, injections, phase_commands, prompt_submit,
    session_end, session_start, subagent_start, templates,
};
use crate::primitives::hook::HookEvent;

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

/// One handler of the wiring: a binary with its arguments on one event and matcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wiring {
    /// Binary name.
    pub binary: &'static str,
    /// Arguments (exec form).
    pub args: &'static [&'static str],
    /// The event.
    pub event: HookEvent,
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
        binary: session_start::SPEC.binary,
        args: &[],
        event: HookEvent::SessionStart,
        matcher: None,
        timeout: 15,
        chunked: true,
        filter: None,
    },
    Wiring {
        binary: compaction_reread::BINARY,
        args: &["sessionstart"],
        event: HookEvent::SessionStart,
        matcher: Some("compact"),
        timeout: 10,
        chunked: false,
        filter: None,
    },
    Wiring {
        binary: prompt_submit::SPEC.binary,
        args: &[],
        event: HookEvent::UserPromptSubmit,
        matcher: None,
        timeout: 10,
        chunked: false,
        filter: None,
    },
    Wiring {
        binary: guards::SPEC.binary,
        args: &[],
        event: HookEvent::PreToolUse,
        matcher: Some("*"),
        timeout: 5,
        chunked: false,
        filter: None,
    },
    Wiring {
        binary: compaction_reread::BINARY,
        args: &["pretooluse"],
        event: HookEvent::PreToolUse,
        matcher: Some("*"),
        timeout: 5,
        chunked: false,
        filter: None,
    },
    Wiring {
        binary: templates::SPEC.binary,
        args: &[],
        event: HookEvent::PostToolUse,
        matcher: Some("Skill"),
        timeout: 10,
        chunked: false,
        filter: None,
    },
    Wiring {
        binary: templates::SPEC.binary,
        args: &[],
        event: HookEvent::PostToolUse,
        matcher: Some("Bash"),
        timeout: 10,
        chunked: false,
        filter: Some("Bash(engine session activate *)"),
    },
    Wiring {
        binary: templates::SPEC.binary,
        args: &[],
        event: HookEvent::PostToolUse,
        matcher: Some("Bash"),
        timeout: 10,
        chunked: false,
        filter: Some("Bash(engine session continue *)"),
    },
    Wiring {
        binary: templates::SPEC.binary,
        args: &[],
        event: HookEvent::PostToolUse,
        matcher: Some("Bash"),
        timeout: 10,
        chunked: false,
        filter: Some("Bash(preload activate *)"),
    },
    Wiring {
        binary: phase_commands::SPEC.binary,
        args: &[],
        event: HookEvent::PostToolUse,
        matcher: Some("Bash"),
        timeout: 5,
        chunked: false,
        filter: Some("Bash(engine session phase *)"),
    },
    Wiring {
        binary: phase_commands::SPEC.binary,
        args: &[],
        event: HookEvent::PostToolUse,
        matcher: Some("Bash"),
        timeout: 5,
        chunked: false,
        filter: Some("Bash(preload phase *)"),
    },
    Wiring {
        binary: injections::SPEC.binary,
        args: &[],
        event: HookEvent::PostToolUse,
        matcher: Some("*"),
        timeout: 5,
        chunked: false,
        filter: None,
    },
    Wiring {
        binary: compaction_reread::BINARY,
        args: &["register"],
        event: HookEvent::PostToolUse,
        matcher: Some("Skill"),
        timeout: 5,
        chunked: false,
        filter: None,
    },
    Wiring {
        binary: compaction_reread::BINARY,
        args: &["precompact"],
        event: HookEvent::PreCompact,
        matcher: None,
        timeout: 5,
        chunked: false,
        filter: None,
    },
    Wiring {
        binary: compaction_reread::BINARY,
        args: &["stop"],
        event: HookEvent::Stop,
        matcher: None,
        timeout: 5,
        chunked: false,
        filter: None,
    },
    // Every SessionEnd hook shares one exit budget (1.5 s by default), which the highest
    // timeout of a settings file raises: 2 s keeps that raise small.
    Wiring {
        binary: session_end::SPEC.binary,
        args: &[],
        event: HookEvent::SessionEnd,
        matcher: None,
        timeout: 2,
        chunked: false,
        filter: None,
    },
    Wiring {
        binary: subagent_start::SPEC.binary,
        args: &[],
        event: HookEvent::SubagentStart,
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
        binary: guards::SPEC.binary,
        args: "",
    },
    Shim {
        script: "post-tool-use-injections.sh",
        binary: injections::SPEC.binary,
        args: "",
    },
    Shim {
        script: "post-tool-use-templates.sh",
        binary: templates::SPEC.binary,
        args: "",
    },
    Shim {
        script: "post-tool-use-phase-commands.sh",
        binary: phase_commands::SPEC.binary,
        args: "",
    },
    Shim {
        script: "user-prompt-submit-session-gate.sh",
        binary: prompt_submit::SPEC.binary,
        args: "",
    },
    Shim {
        script: "session-start-restore.sh",
        binary: session_start::SPEC.binary,
        args: "",
    },
    Shim {
        script: "session-start-chunk.sh",
        binary: session_start::SPEC.binary,
        args: " --chunk \"${1:-0}/${2:-1}\"",
    },
    Shim {
        script: "subagent-start-context.sh",
        binary: subagent_start::SPEC.binary,
        args: "",
    },
    Shim {
        script: "e2e-auto-answer.sh",
        binary: e2e_auto_answer::SPEC.binary,
        args: "",
    },
];

impl Wiring {
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
