//! `preload-injections` (PostToolUse `*`): delivers what the PreToolUse guard engine stashed
//! for this agent in `pendingAllowInjections`.
//!
//! The entries of this agent (`agentId` = stdin `agent_id`, empty for the main agent) are read
//! and removed in one locked write, and only the ones that fit the output budget leave the
//! stash; the rest stay for the next call. Other agents' entries are never touched.

use std::process::ExitCode;

use serde_json::Value;

use crate::delivery::{self, chars};
use crate::env;
use crate::fields;
use crate::ledger;
use crate::runner::{self, HookEvent, HookSpec};
use crate::session;
use crate::{Context, HookError, HookInput, HookOutput};

/// The binary.
pub const SPEC: HookSpec = HookSpec {
    name: "injections",
    event: HookEvent::PostToolUse,
    help: "preload-injections: PostToolUse hook (matcher *).

Delivers, as additionalContext, the entries the PreToolUse guard engine (preload-overflow)
stashed for this agent in pendingAllowInjections; other agents' entries stay.

Reads stdin: agent_id, cwd.
Env: HOME, CLAUDE_SUPERVISOR_PID/CLAUDE_PID, CLAUDE_SESSION_CACHE_DIR, WORKSPACE,
     DISABLE_TOOL_USE_HOOK=1 (off), PRELOAD_OUTPUT_BUDGET, PRELOAD_BUDGET_MS,
     PRELOAD_LOCK_TIMEOUT_MS, HOOK_DEBUG.
Files: the session .state.json (or sessions/.seeds/<pid>.json) and its .lock directory.",
};

/// Entry point of the binary.
pub fn main() -> ExitCode {
    runner::main(&SPEC, handle)
}

fn agent_of(entry: &Value) -> &str {
    entry.get("agentId").and_then(Value::as_str).unwrap_or("")
}

/// Take this agent's entries that fit `budget` out of `entries`; returns the texts.
pub fn drain(entries: &mut Vec<Value>, agent: &str, budget: usize) -> Vec<String> {
    let mut taken = Vec::new();
    let mut used = 0;
    let mut kept = Vec::with_capacity(entries.len());
    let mut full = false;
    for mut entry in entries.drain(..) {
        if full || agent_of(&entry) != agent {
            kept.push(entry);
            continue;
        }
        let content = entry
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let text = delivery::trim_trailing_newlines(&content).to_owned();
        if text.is_empty() {
            continue;
        }
        let sep = if taken.is_empty() { 0 } else { 2 };
        let len = chars(&text);
        if used + sep + len <= budget {
            used += sep + len;
            taken.push(text);
        } else if taken.is_empty() {
            // One entry larger than the whole budget: deliver its head, keep the rest queued.
            let head: String = text.chars().take(budget).collect();
            let rest: String = text.chars().skip(budget).collect();
            entry["content"] = Value::String(rest);
            taken.push(head);
            kept.push(entry);
            full = true;
        } else {
            kept.push(entry);
            full = true;
        }
    }
    *entries = kept;
    taken
}

/// Deliver this agent's stashed injections.
pub fn handle(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    if ctx.env.is_one(env::DISABLE_TOOL_USE_HOOK) {
        return Ok(HookOutput::Silent);
    }
    let Some(target) = session::existing_preload_state(ctx) else {
        return Ok(HookOutput::Silent);
    };
    let agent = input.agent_id().unwrap_or("").to_owned();
    let budget = ctx.budget.saturating_sub(1);
    let call = input.tool_use_id();
    let taken = ledger::update(ctx, &target, |s| {
        let Some(Value::Array(entries)) = s.0.get_mut(fields::STASH) else {
            return Vec::new();
        };
        let taken = drain(entries, &agent, budget);
        if agent.is_empty() {
            let files: Vec<String> = taken
                .iter()
                .flat_map(|t| delivery::block_paths(t))
                .collect();
            ledger::note_call_deliveries(s, call, &files);
        }
        taken
    })?;
    if taken.is_empty() {
        return Ok(HookOutput::Silent);
    }
    let mut text = taken.join("\n\n");
    text.push('\n');
    Ok(HookOutput::Context(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn drains_only_this_agent_within_budget() {
        let mut entries = vec![
            json!({"ruleId": "preload", "content": "A\n", "agentId": ""}),
            json!({"ruleId": "heartbeat-warn", "content": "sub", "agentId": "sub1"}),
            json!({"ruleId": "synthesis", "content": "B", "agentId": ""}),
            json!({"ruleId": "x", "content": "C".repeat(50)}),
        ];
        let taken = drain(&mut entries, "", 10);
        assert_eq!(taken, vec!["A", "B"]);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0]["agentId"], "sub1");
        assert_eq!(entries[1]["ruleId"], "x");
    }

    #[test]
    fn an_oversized_entry_goes_out_in_pieces() {
        let mut entries = vec![json!({"ruleId": "r", "content": "x".repeat(25)})];
        let first = drain(&mut entries, "", 10);
        assert_eq!(first, vec!["x".repeat(10)]);
        let second = drain(&mut entries, "", 10);
        let third = drain(&mut entries, "", 10);
        assert_eq!(second[0].len() + third[0].len(), 15);
        assert!(entries.is_empty());
    }
}
