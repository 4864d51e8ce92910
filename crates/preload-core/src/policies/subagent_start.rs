//! `preload-subagent-start` (`SubagentStart`): a sub-agent's own start-up context, once per
//! `agent_id`: how to log (the session's log template and `CMD_APPEND_LOG.md`), the context
//! packs due for it (`SessionStart` and `agent:TYPE`), and the directives the main agent found
//! in the directories it touched.
//!
//! Everything is recorded in the sub-agent's own record (`preloadedFiles_sub:<agent_id>`); the
//! main agent's record and queue are never touched. What does not fit the output waits in the
//! sub-agent's own queue (`pendingPreloads_sub:<agent_id>`) for its next tool calls. It
//! replaces the engine's `subagent-start-context.sh`, which sent every file of the main agent's
//! record but three standards, without a budget.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::mechanisms::ledger;
use crate::mechanisms::packs::Moment;
use crate::mechanisms::session;
use crate::mechanisms::skill;
use crate::pipeline::preload::{self, Audience, Mode, Request};
use crate::pipeline::runner;
use crate::primitives::delivery::Packer;
use crate::primitives::hook::{HookEvent, HookSpec};
use crate::state::fields;
use crate::state::{IN_CONTEXT, State};
use crate::{Context, HookError, HookInput, HookOutput};

/// The binary.
pub const SPEC: HookSpec = HookSpec {
    name: "subagent-start",
    binary: "preload-subagent-start",
    event: HookEvent::SubagentStart,
    help: "preload-subagent-start: SubagentStart hook (every agent type).

Gives a starting sub-agent, once per agent_id, the session's log template and
CMD_APPEND_LOG.md, the context packs due for it (on SessionStart, agent:TYPE) and the
directives the main agent discovered, as additionalContext within the output budget. They
are recorded in preloadedFiles_sub:<agent_id>; the main agent's record is never touched.
What does not fit waits in pendingPreloads_sub:<agent_id> for the sub-agent's next calls.

Reads stdin: agent_id, agent_type, cwd.
Env: HOME, CLAUDE_SUPERVISOR_PID/CLAUDE_PID, CLAUDE_SESSION_CACHE_DIR, WORKSPACE,
     PRELOAD_OUTPUT_BUDGET, PRELOAD_MAX_FILE_BYTES, PRELOAD_BUDGET_MS,
     PRELOAD_LOCK_TIMEOUT_MS, PRELOAD_TEST_LOG, HOOK_DEBUG.
Files: the session .state.json or sessions/.seeds/<pid>.json (never created),
       ~/.claude/skills/<skill>/, ~/.claude/engine/.directives/commands/CMD_APPEND_LOG.md,
       .claude/context-packs.json and ~/.claude/engine/context-packs.json.",
};

/// The command every sub-agent needs to log its work.
pub const LOG_COMMAND: &str = "APPEND_LOG";

/// Entry point of the binary.
pub fn main() -> ExitCode {
    runner::main(&SPEC, handle)
}

/// Deliver a starting sub-agent's context.
pub fn handle(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    let Some(agent) = input.agent_id().filter(|a| !a.is_empty()) else {
        return Ok(HookOutput::Silent);
    };
    let kind = input.agent_type().unwrap_or("");
    let Some(target) = session::existing_preload_state(ctx) else {
        return Ok(HookOutput::Silent);
    };
    let mut packer = Packer::new(ctx.budget);
    let audience = Audience::SubAgent(agent);
    let batch = ledger::update(ctx, &target, ctx.per_call(), |s| {
        let wanted = requests(ctx, s, agent, kind);
        preload::apply_for(ctx, s, &wanted, Mode::Direct, &mut packer, audience)
    })?;
    batch.log(ctx, target.is_session);
    Ok(HookOutput::Context(batch.text()))
}

/// What a sub-agent starts with, in order: how to log, its packs, the main agent's directives.
fn requests(ctx: &Context, s: &State, agent: &str, kind: &str) -> Vec<Request> {
    let source = format!("subagent-start({kind})");
    let mut out: Vec<Request> = Vec::new();
    if let Some(template) = log_template(ctx, s) {
        out.push(Request::new(template.to_string_lossy(), source.as_str()));
    }
    let log_command = ctx.paths.command_file(LOG_COMMAND);
    if log_command.is_file() {
        out.push(Request::new(log_command.to_string_lossy(), source.as_str()));
    }
    out.extend(preload::pack_requests(
        ctx,
        s,
        Audience::SubAgent(agent),
        Moment::SubAgent(kind),
        &source,
    ));
    let held = s.path_list(IN_CONTEXT);
    for path in s.touched_files() {
        if held.contains(&path) && !out.iter().any(|r| r.path == path) {
            out.push(Request::new(path, source.as_str()));
        }
    }
    out
}

/// The session's log template: the state's `logTemplate` (absolute after activation), else the
/// skill's, relative to its folder.
fn log_template(ctx: &Context, s: &State) -> Option<PathBuf> {
    let name = s.str(fields::SKILL).filter(|n| skill::is_valid_name(n))?;
    let dir = ctx.paths.skills.join(name);
    let rel = s.str(fields::LOG_TEMPLATE).map(str::to_owned).or_else(|| {
        ctx.skills
            .load(&ctx.paths, name)?
            .definition
            .template(fields::LOG_TEMPLATE)
            .map(str::to_owned)
    })?;
    let path = if rel.starts_with('/') {
        PathBuf::from(rel)
    } else {
        dir.join(rel)
    };
    path.is_file().then_some(path)
}
