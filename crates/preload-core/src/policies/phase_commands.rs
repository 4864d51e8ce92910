//! `preload-phase-commands` (`PostToolUse`, `Bash`): after a phase transition (the command's stdout
//! starts with `Phase:`), delivers the new phase's command files, the skill's templates, the
//! chosen mode's file and the phase's context packs with the transition's own result, then what
//! else is queued, within the budget, in one locked write; what does not fit is queued in
//! `pendingPreloads` for the next tool calls, and files already in context are skipped
//! (`skip-dedup`).

use std::process::ExitCode;

use crate::mechanisms::ledger;
use crate::mechanisms::packs::Moment;
use crate::mechanisms::session;
use crate::mechanisms::skill;
use crate::pipeline::preload::{self, Audience, Mode, Request};
use crate::pipeline::runner;
use crate::primitives::delivery::Packer;
use crate::primitives::hook::{HookEvent, HookSpec};
use crate::state::{Phase, State};
use crate::{Context, HookError, HookInput, HookOutput};

/// The binary.
pub const SPEC: HookSpec = HookSpec {
    name: "phase-commands",
    binary: "preload-phase-commands",
    event: HookEvent::PostToolUse,
    help: "preload-phase-commands: PostToolUse hook (matcher Bash).

When the Bash output starts with `Phase: <label>: <name>` (engine session phase, preload
phase), delivers that phase's command files (steps + commands), the skill's templates, the
file of the mode the session chose (the latest proof's `mode`) and the context packs of the
phase (phase:LABEL) in additionalContext, then what else is queued, within the budget, in one
locked write; the rest is queued in pendingPreloads. Labels such as 3.A work. The phases come
from the state's `phases`, else from the skill's SKILL.md.

Reads stdin: tool_name, tool_response (object with stdout, or a string), cwd.
Env: HOME, CLAUDE_SUPERVISOR_PID/CLAUDE_PID, CLAUDE_SESSION_CACHE_DIR, WORKSPACE,
     PRELOAD_BUDGET_MS, PRELOAD_LOCK_TIMEOUT_MS, PRELOAD_TEST_LOG, HOOK_DEBUG.
Files: the session .state.json (or the seed), ~/.claude/skills/<skill>/SKILL.md,
       ~/.claude/engine/.directives/commands/, the context-packs files.",
};

/// Entry point of the binary.
pub fn main() -> ExitCode {
    runner::main(&SPEC, handle)
}

/// The phase a `Phase:` output names (`"3.A: Build Loop"`): its first line, or the line after
/// `Phase transition approved (non-sequential): …`.
pub fn announced_phase(stdout: &str) -> Option<&str> {
    let mut lines = stdout.lines();
    let mut line = lines.next()?;
    if line.starts_with("Phase transition approved") {
        line = lines.next()?;
    }
    let phase = line.strip_prefix("Phase:")?.trim();
    (!phase.is_empty()).then_some(phase)
}

/// Deliver the new phase's commands (and queue what does not fit).
pub fn handle(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    if input.tool_name() != Some("Bash") {
        return Ok(HookOutput::Silent);
    }
    let Some(phase) = input.tool_stdout().and_then(announced_phase) else {
        return Ok(HookOutput::Silent);
    };
    let label = Phase::new(phase).label();
    let Some(target) = session::existing_preload_state(ctx) else {
        return Ok(HookOutput::Silent);
    };
    let source = format!("phase-cmds({phase})");
    let mut packer = Packer::new(ctx.budget);
    let batch = ledger::update(ctx, &target, ctx.per_call(), |s| {
        let phase_files: Vec<Request> =
            skill::session_phase_cmds(&ctx.paths, &ctx.skills, s, label)
                .into_iter()
                .map(|p| Request::new(p.to_string_lossy(), source.clone()))
                .collect();
        let moment = Moment::Phase {
            label,
            name: Phase::new(phase).name(),
        };
        // The phase's files and the packs this audience has not had yet.
        let wanted = |s: &State, audience| {
            let mut requests = phase_files.clone();
            requests.extend(preload::pack_requests(ctx, s, audience, moment, &source));
            requests
        };
        let requests = wanted(s, Audience::Main);
        // A sub-agent's transition: its own context gets the phase now; the main agent's
        // queue gets it for later, as it got every other queued file.
        if let Some(agent) = input.agent_id() {
            let mut batch = preload::apply(ctx, s, &requests, Mode::Queue, &mut packer);
            let audience = Audience::SubAgent(agent);
            let own = wanted(s, audience);
            batch.extend(preload::apply_for(
                ctx,
                s,
                &own,
                Mode::Direct,
                &mut packer,
                audience,
            ));
            return batch;
        }
        let mut batch = preload::apply(ctx, s, &requests, Mode::Direct, &mut packer);
        let queued = preload::pending_requests(ctx, s, "pending-drain");
        batch.extend(preload::apply(ctx, s, &queued, Mode::Direct, &mut packer));
        let out: Vec<String> = batch.delivered().map(str::to_owned).collect();
        ledger::note_call_deliveries(s, input.tool_use_id(), &out, &batch.text());
        batch
    })?;
    batch.log(ctx, target.is_session);
    Ok(HookOutput::Context(batch.text()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_lines() {
        assert_eq!(
            announced_phase("Phase: 3.A: Build Loop\nSteps:\n"),
            Some("3.A: Build Loop")
        );
        assert_eq!(
            announced_phase("Phase: 1: Interrogation"),
            Some("1: Interrogation")
        );
        assert_eq!(
            announced_phase("Phase transition approved (non-sequential): 4"),
            None
        );
        assert_eq!(
            announced_phase("Phase transition approved (non-sequential): 4\nPhase: 4: Synthesis"),
            Some("4: Synthesis")
        );
        assert_eq!(announced_phase("ls\nPhase: 2: Planning"), None);
        assert_eq!(announced_phase("Phase:   "), None);
        assert_eq!(announced_phase(""), None);
    }
}
