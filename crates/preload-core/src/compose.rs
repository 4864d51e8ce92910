//! Several policies of one event in one process: which of them a call selects, the output
//! budget they share, and their outputs merged into the one answer Claude Code gets.
//!
//! The merge follows what Claude Code does with the answers of parallel handlers: every
//! `additionalContext` is kept (joined in the policies' order, blocks apart by a blank line),
//! the strongest permission decision wins (deny over allow; no policy asks), deny reasons and
//! block reasons are joined in order. One policy's answer merged alone is exactly what its own
//! binary prints. [`run_all`] runs them, with the runner's protocol for each.

use std::process::ExitCode;
use std::sync::Arc;

use regex::Regex;
use serde_json::{Map, Value, json};

use crate::delivery::{self, MIN_BUDGET};
use crate::env::{self, Env};
use crate::input::InputError;
use crate::runner::{GRACE, STDIN_TIMEOUT, budget_for, debug_note, emit, fail_open, render};
use crate::watchdog;
use crate::{Context, HookError, HookEvent, HookInput, HookOutput};

/// The name a failure before any policy runs is reported under (`HOOK_DEBUG`).
const NAME: &str = "dispatch";

/// A policy's handler.
pub type Handler = Arc<dyn Fn(&HookInput, &Context) -> Result<HookOutput, HookError> + Send + Sync>;

/// What goes between two policies' texts: blocks stay one blank line apart.
pub const SEPARATOR: &str = "\n\n";

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
    match output {
        HookOutput::Silent | HookOutput::Allow(None) => 0,
        HookOutput::Context(text)
        | HookOutput::Allow(Some(text))
        | HookOutput::Deny(text)
        | HookOutput::Block(text) => delivery::chars(text),
    }
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
    /// The one JSON line for `event`, or nothing.
    pub fn render(&self, event: HookEvent) -> Option<String> {
        let mut answer = Map::new();
        if !self.blocks.is_empty() {
            answer.insert("decision".into(), json!("block"));
            answer.insert("reason".into(), json!(self.blocks.join(SEPARATOR)));
        }
        let mut specific = Map::new();
        match self.decision {
            Some(Decision::Deny) => {
                specific.insert("permissionDecision".into(), json!("deny"));
                specific.insert(
                    "permissionDecisionReason".into(),
                    json!(self.reasons.join(SEPARATOR)),
                );
            }
            Some(Decision::Allow) => {
                specific.insert("permissionDecision".into(), json!("allow"));
            }
            None => {}
        }
        if !self.contexts.is_empty() {
            specific.insert(
                "additionalContext".into(),
                json!(self.contexts.join(SEPARATOR)),
            );
        }
        if !specific.is_empty() {
            let mut named = Map::new();
            named.insert("hookEventName".into(), json!(event.name()));
            named.extend(specific);
            answer.insert("hookSpecificOutput".into(), Value::Object(named));
        }
        (!answer.is_empty()).then(|| Value::Object(answer).to_string())
    }
}

/// The answer printed should the policy after `outputs` outlive its budget: theirs merged,
/// that one failing open, a newline after it.
fn answer_if_late(event: HookEvent, outputs: &[HookOutput], late: HookEvent) -> Vec<u8> {
    let mut so_far = outputs.to_vec();
    so_far.push(fail_open(late));
    merge(event, &so_far)
        .render(event)
        .map(|line| format!("{line}\n").into_bytes())
        .unwrap_or_default()
}

/// Run `policies` one after the other on one call's stdin, each selected by its matchers,
/// with its own time budget and fail-open, the later ones within what is left of the output
/// budget; print their outputs merged ([`merge`]) and return the exit code (always
/// success).
///
/// Everything runs on this thread, as in [`crate::runner::run`]: before each policy the
/// watchdog ([`crate::watchdog`]) is armed for that policy's budget (plus [`GRACE`]) with the
/// answer of the policies before it and this one failing open. A policy that outlives its
/// budget can commit nothing past its deadline (`state::commit_before`); the watchdog then
/// prints that answer and ends the process, and the policies after it do not run this time
/// (they committed nothing either, so what they would have delivered waits for the next
/// call). A failing or panicking policy fails open and the next one runs.
pub fn run_all(event: HookEvent, policies: &[Policy]) -> ExitCode {
    let env = Env::from_process();
    if env.get(env::HOOK_DEBUG).is_none() {
        std::panic::set_hook(Box::new(|_| {}));
    }
    let nothing = answer_if_late(event, &[], event);
    if let Err(err) = watchdog::arm(STDIN_TIMEOUT, &nothing) {
        // Without a watchdog there is no bound on the call: answer now.
        debug_note(&env, NAME, &err.to_string());
        emit(render(event, &fail_open(event)));
        return ExitCode::SUCCESS;
    }
    let input = match HookInput::read_from(std::io::stdin().lock()) {
        Ok(input) => input,
        Err(err) => {
            let why = match err {
                InputError::Empty => "empty stdin".to_owned(),
                err => err.to_string(),
            };
            debug_note(&env, NAME, &why);
            watchdog::disarm();
            emit(render(event, &fail_open(event)));
            return ExitCode::SUCCESS;
        }
    };
    let mut outputs: Vec<HookOutput> = Vec::with_capacity(policies.len());
    let mut used = 0;
    for policy in policies {
        let output = if policy.selected(event, &input) {
            let budget = budget_for(&env, policy.event);
            let mut ctx = Context::new(env.clone(), policy.name, &input, budget);
            ctx.budget = share(ctx.budget, used);
            let late = answer_if_late(event, &outputs, policy.event);
            let _ = watchdog::arm(budget + GRACE, &late);
            crate::state::commit_before(Some(ctx.deadline));
            let called = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                (policy.handler)(&input, &ctx)
            }));
            match called {
                Ok(Ok(output)) => output,
                Ok(Err(err)) => {
                    debug_note(&env, policy.name, &err.to_string());
                    fail_open(policy.event)
                }
                Err(_) => {
                    debug_note(&env, policy.name, "handler panicked");
                    fail_open(policy.event)
                }
            }
        } else {
            HookOutput::Silent
        };
        used = used_after(used, &output);
        outputs.push(output);
    }
    // From here on this process answers; a signal already sent is handled before this returns.
    watchdog::disarm();
    crate::state::commit_before(None);
    emit(merge(event, &outputs).render(event));
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests;
