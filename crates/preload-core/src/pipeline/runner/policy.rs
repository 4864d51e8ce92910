//! The policies a hook process runs: each a handler with its name, its event and the matchers
//! of the wiring rows that run it, selected by a call as Claude Code's matchers select handlers.

use std::sync::Arc;

use regex::Regex;

use super::{HookError, HookOutput};
use crate::primitives::hook::HookEvent;
use crate::{Context, HookInput};

/// A policy's handler.
pub type Handler = Arc<dyn Fn(&HookInput, &Context) -> Result<HookOutput, HookError> + Send + Sync>;

/// One policy of an event as one process runs it.
#[derive(Clone)]
pub struct Policy {
    /// Its binary's name without `preload-` (the delivery log's `hook`).
    pub name: &'static str,
    /// The event whose time budget and fail-open answer it has.
    pub event: HookEvent,
    /// The matchers of the wiring rows that run it; empty runs it on every call.
    pub matchers: Vec<&'static str>,
    /// The handler.
    pub handler: Handler,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("name", &self.name)
            .field("event", &self.event)
            .field("matchers", &self.matchers)
            .finish_non_exhaustive()
    }
}

impl Policy {
    /// The one policy of a hook binary: `handler` as `name`, on every call of `event`.
    pub fn only(
        name: &'static str,
        event: HookEvent,
        handler: impl Fn(&HookInput, &Context) -> Result<HookOutput, HookError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            name,
            event,
            matchers: Vec::new(),
            handler: Arc::new(handler),
        }
    }

    /// True when the call `input` of `event` selects this policy, as Claude Code's matchers
    /// select handlers.
    pub fn selected(&self, event: HookEvent, input: &HookInput) -> bool {
        self.matchers.is_empty() || self.matchers.iter().any(|m| matches(m, event, input))
    }
}

/// The input field a matcher of `event` is tested against (`None`: the event has no matcher).
fn matched_field(event: HookEvent, input: &HookInput) -> Option<&str> {
    match event {
        HookEvent::PreToolUse | HookEvent::PostToolUse => input.tool_name(),
        HookEvent::SessionStart => input.source(),
        HookEvent::PreCompact => input.trigger(),
        HookEvent::UserPromptSubmit
        | HookEvent::Stop
        | HookEvent::SessionEnd
        | HookEvent::SubagentStart => None,
    }
}

/// Claude Code's matcher rule: `*`, empty or no matcher matches everything; a matcher of
/// letters, digits, `_`, `-`, space, `,` and `|` is a list of exact names; anything else is a
/// regular expression tested unanchored. An event without matchers matches always; a field
/// the call does not carry matches only everything-matchers.
pub fn matches(matcher: &str, event: HookEvent, input: &HookInput) -> bool {
    let matcher = matcher.trim();
    if matcher.is_empty() || matcher == "*" {
        return true;
    }
    if matches!(event, HookEvent::UserPromptSubmit | HookEvent::Stop) {
        return true;
    }
    let Some(value) = matched_field(event, input) else {
        return false;
    };
    let exact = matcher
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' ' | ',' | '|'));
    if exact {
        matcher
            .split(['|', ','])
            .map(str::trim)
            .any(|name| name == value)
    } else {
        Regex::new(matcher).is_ok_and(|re| re.is_match(value))
    }
}
