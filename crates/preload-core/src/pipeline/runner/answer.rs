//! The answer a hook call prints: each policy's output, the outputs of an event's policies
//! merged into one, and that one rendered as the JSON line Claude Code reads.
//!
//! The merge follows what Claude Code does with the answers of parallel handlers: every
//! `additionalContext` is kept (joined in the policies' order, blocks apart by a blank line),
//! the strongest permission decision wins (deny over allow; no policy asks), deny reasons and
//! block reasons are joined in order. One output alone renders as that policy's own answer.

use serde::Serialize;

use crate::primitives::delivery::{self, MIN_BUDGET};
use crate::primitives::env::Agent;
use crate::primitives::hook::HookEvent;

/// What goes between two policies' texts: blocks stay one blank line apart.
pub const SEPARATOR: &str = "\n\n";

/// What a handler answers.
#[derive(Debug, Clone, PartialEq)]
pub enum HookOutput {
    /// Print nothing.
    Silent,
    /// `hookSpecificOutput.additionalContext` (empty text prints nothing, except PreToolUse,
    /// which always prints its allow decision).
    Context(String),
    /// PreToolUse allow, with optional context.
    Allow(Option<String>),
    /// PreToolUse deny with a reason.
    Deny(String),
    /// Top-level `decision: "block"` with a reason (Stop, PreCompact, PostToolUse).
    Block(String),
}

impl HookOutput {
    /// The text of the answer that counts against the output budget: the context or the
    /// reason (empty for [`HookOutput::Silent`]).
    pub fn text(&self) -> &str {
        match self {
            Self::Silent | Self::Allow(None) => "",
            Self::Context(text)
            | Self::Allow(Some(text))
            | Self::Deny(text)
            | Self::Block(text) => text,
        }
    }
}

/// What a failed call prints for `event`: the allow decision for PreToolUse, else nothing.
pub fn fail_open(event: HookEvent) -> HookOutput {
    if event == HookEvent::PreToolUse {
        HookOutput::Allow(None)
    } else {
        HookOutput::Silent
    }
}

/// Render `output` alone as the one JSON line for `event`, as `agent` reads it, or nothing.
pub fn render(event: HookEvent, output: &HookOutput, agent: Agent) -> Option<String> {
    merge(event, std::slice::from_ref(output)).render(event, agent)
}

/// The output budget of the next policy when the ones before it used `used` characters of
/// `total`: what is left after a separator, never below the smallest budget a policy works
/// with (so it can still queue what it does not send).
pub fn share(total: usize, used: usize) -> usize {
    if used == 0 {
        return total;
    }
    total.saturating_sub(used + SEPARATOR.len()).max(MIN_BUDGET)
}

/// The characters an output puts into the answer (its context and its reason).
pub fn chars_of(output: &HookOutput) -> usize {
    delivery::chars(output.text())
}

/// The characters used after one more output (the separator counted when both speak).
pub fn used_after(used: usize, output: &HookOutput) -> usize {
    match chars_of(output) {
        0 => used,
        n if used == 0 => n,
        n => used + SEPARATOR.len() + n,
    }
}

/// The permission decision, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Decision {
    Allow,
    Deny,
}

/// The outputs of an event's policies, merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Merged {
    decision: Option<Decision>,
    contexts: Vec<String>,
    reasons: Vec<String>,
    blocks: Vec<String>,
}

/// Merge `outputs` (in the policies' order) into one answer for `event`.
pub fn merge(event: HookEvent, outputs: &[HookOutput]) -> Merged {
    let mut merged = Merged::default();
    let mut decide = |d: Decision| {
        merged.decision = merged.decision.max(Some(d));
    };
    let mut contexts = Vec::new();
    let mut reasons = Vec::new();
    let mut blocks = Vec::new();
    for output in outputs {
        match output {
            HookOutput::Silent => {}
            HookOutput::Context(text) => {
                if event == HookEvent::PreToolUse {
                    decide(Decision::Allow);
                }
                contexts.push(text.clone());
            }
            HookOutput::Allow(text) => {
                decide(Decision::Allow);
                contexts.extend(text.clone());
            }
            HookOutput::Deny(reason) => {
                decide(Decision::Deny);
                reasons.push(reason.clone());
            }
            HookOutput::Block(reason) => blocks.push(reason.clone()),
        }
    }
    contexts.retain(|t: &String| !t.is_empty());
    merged.contexts = contexts;
    merged.reasons = reasons;
    merged.blocks = blocks;
    merged
}

impl Merged {
    /// The one JSON line for `event`, as `agent` reads it, or nothing. Codex takes a PreToolUse
    /// `allow` without `updatedInput` for an error and drops the answer's context: to it an
    /// allowed call's answer says no decision.
    pub fn render(&self, event: HookEvent, agent: Agent) -> Option<String> {
        let joined = |parts: &[String]| (!parts.is_empty()).then(|| parts.join(SEPARATOR));
        let (permission_decision, permission_decision_reason) = match self.decision {
            Some(Decision::Deny) => (Some("deny"), Some(self.reasons.join(SEPARATOR))),
            Some(Decision::Allow) if agent == Agent::ClaudeCode => (Some("allow"), None),
            Some(Decision::Allow) | None => (None, None),
        };
        let specific = Specific {
            hook_event_name: event.name(),
            permission_decision,
            permission_decision_reason,
            additional_context: joined(&self.contexts),
        };
        let says = specific.permission_decision.is_some() || specific.additional_context.is_some();
        let reason = joined(&self.blocks);
        let answer = Answer {
            decision: reason.as_ref().map(|_| "block"),
            reason,
            hook_specific_output: says.then_some(specific),
        };
        let empty = answer.decision.is_none() && answer.hook_specific_output.is_none();
        (!empty).then(|| serde_json::to_string(&answer).unwrap_or_default())
    }
}

/// A hook's answer as the clients read it (the members in the order they are written).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    /// `block`, with the reason: the turn does not end (Stop), the prompt is refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hook_specific_output: Option<Specific>,
}

/// The event's own part of an answer.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Specific {
    hook_event_name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    permission_decision: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    permission_decision_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    additional_context: Option<String>,
}

/// The answer printed should the policy after `outputs` outlive its budget: theirs merged,
/// that one failing open, a newline after it.
pub(super) fn answer_if_late(
    event: HookEvent,
    outputs: &[HookOutput],
    late: HookEvent,
    agent: Agent,
) -> Vec<u8> {
    let mut so_far = outputs.to_vec();
    so_far.push(fail_open(late));
    merge(event, &so_far)
        .render(event, agent)
        .map(|line| format!("{line}\n").into_bytes())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
