//! `preload-injections` (PostToolUse `*`): delivers what the PreToolUse guard engine stashed
//! for this agent in `pendingAllowInjections`.
//!
//! The entries of this agent (`agentId` = stdin `agent_id`, empty for the main agent) are read
//! and removed in one locked write, and only the ones that fit the output budget leave the
//! stash; the rest stay for the next call. Other agents' entries are never touched.

use std::process::ExitCode;

use crate::mechanisms::ledger;
use crate::mechanisms::session;
use crate::mechanisms::stash;
use crate::pipeline::runner;
use crate::primitives::delivery;
use crate::primitives::env;
use crate::primitives::hook::{HookEvent, HookSpec};
use crate::{Context, HookError, HookInput, HookOutput};

/// The binary.
pub const SPEC: HookSpec = HookSpec {
    name: "injections",
    binary: "preload-injections",
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
    let taken = ledger::update(ctx, &target, ctx.per_call(), |s| {
        let Some(taken) = stash::take(s, &agent, budget, delivery::part_size(ctx.part_budget))
        else {
            return Vec::new();
        };
        if agent.is_empty() {
            let text = taken.join("\n");
            ledger::note_call_deliveries(s, call, &delivery::block_paths(&text), &text);
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
