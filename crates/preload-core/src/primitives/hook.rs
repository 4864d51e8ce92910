//! What a hook is, as the client names it: the events the hooks serve ([`HookEvent`], with
//! each one's default time budget) and what one hook binary is ([`HookSpec`]). The policies'
//! table of hooks, the runner and the command line all speak of hooks in these terms.

use std::time::Duration;

/// The Claude Code events the hooks serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// SessionStart.
    SessionStart,
    /// UserPromptSubmit.
    UserPromptSubmit,
    /// PreToolUse.
    PreToolUse,
    /// PostToolUse.
    PostToolUse,
    /// PreCompact.
    PreCompact,
    /// Stop.
    Stop,
    /// SessionEnd.
    SessionEnd,
    /// SubagentStart.
    SubagentStart,
}

impl HookEvent {
    /// Every event the hooks serve.
    pub const ALL: [Self; 8] = [
        Self::SessionStart,
        Self::UserPromptSubmit,
        Self::PreToolUse,
        Self::PostToolUse,
        Self::PreCompact,
        Self::Stop,
        Self::SessionEnd,
        Self::SubagentStart,
    ];

    /// The event Claude Code calls `name`, when the hooks serve it.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The name Claude Code uses (`hookEventName`).
    pub fn name(self) -> &'static str {
        match self {
            Self::SessionStart => "SessionStart",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::PreCompact => "PreCompact",
            Self::Stop => "Stop",
            Self::SessionEnd => "SessionEnd",
            Self::SubagentStart => "SubagentStart",
        }
    }

    /// The default time budget of one call.
    pub fn default_budget(self) -> Duration {
        match self {
            Self::PreToolUse => Duration::from_millis(300),
            Self::SessionStart => Duration::from_secs(5),
            _ => Duration::from_secs(1),
        }
    }
}

/// What a hook binary is: its name, event and `--help` text.
#[derive(Debug, Clone, Copy)]
pub struct HookSpec {
    /// The policy's name: the delivery log's `hook` (`guards`, `templates`, ...).
    pub name: &'static str,
    /// The binary's name (`preload-overflow`, `preload-templates`, ...).
    pub binary: &'static str,
    /// The event it serves.
    pub event: HookEvent,
    /// One screen: the event, the env vars it reads, the files it touches.
    pub help: &'static str,
}
