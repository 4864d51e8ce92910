//! `preload-prompt-submit` (UserPromptSubmit): records a skill's SKILL.md as in context when the
//! prompt invokes the skill (`/name args`) and delivers the skill's context packs, and speaks the
//! session gate with `SESSION_REQUIRED=1`.
//!
//! Claude Code expands `/name` into the skill's SKILL.md itself; without a record of that, the
//! templates hook and the preload rule would deliver the file again. The record goes into the
//! preload state (the owner's session, else its seed) in one locked write.

use std::process::ExitCode;

use crate::mechanisms::ledger;
use crate::mechanisms::packs::Moment;
use crate::mechanisms::session::{self, STATE_FILE};
use crate::mechanisms::skill;
use crate::pipeline::preload::{self, Audience, Mode, Request};
use crate::pipeline::runner;
use crate::primitives::delivery::{self, Packer};
use crate::primitives::env;
use crate::primitives::hook::{HookEvent, HookSpec};
use crate::state;
use crate::state::fields;
use crate::{Context, HookError, HookInput, HookOutput};

/// The binary.
pub const SPEC: HookSpec = HookSpec {
    name: "prompt-submit",
    binary: "preload-prompt-submit",
    event: HookEvent::UserPromptSubmit,
    help: "preload-prompt-submit: UserPromptSubmit hook.

When the prompt invokes a skill (/name args, with ~/.claude/skills/name/SKILL.md present),
records that SKILL.md in preloadedFiles of the session (else the seed): Claude Code's own
skill expansion delivered it; the skill's context packs (skill:NAME) are delivered with the
prompt. With SESSION_REQUIRED=1, prints the session-gate message when no session is active
or the session is completed.

Reads stdin: prompt, cwd.
Env: HOME, CLAUDE_SUPERVISOR_PID/CLAUDE_PID, CLAUDE_SESSION_CACHE_DIR, WORKSPACE,
     SESSION_REQUIRED, PRELOAD_LOCK_TIMEOUT_MS, PRELOAD_BUDGET_MS, PRELOAD_TEST_LOG, HOOK_DEBUG.
Files: the session .state.json or sessions/.seeds/<pid>.json (created when missing),
       .claude/context-packs.json and ~/.claude/engine/context-packs.json.",
};

/// Entry point of the binary.
pub fn main() -> ExitCode {
    runner::main(&SPEC, handle)
}

/// The skill a prompt invokes: `/name` at the start, followed by whitespace or the end.
pub fn invoked_skill(prompt: &str) -> Option<&str> {
    let rest = prompt.trim_start().strip_prefix('/')?;
    let name = rest.split(char::is_whitespace).next()?;
    skill::is_valid_name(name).then_some(name)
}

/// The gate message, when one is due.
fn gate_message(ctx: &Context) -> Result<Option<String>, HookError> {
    let Some(dir) = session::find_session(ctx) else {
        return Ok(Some(
            "§CMD_REQUIRE_ACTIVE_SESSION: No active session.\n\
             Before any work, activate a skill: invoke it directly (/do for a small task, \
             /implement, /analyze, /fix, /test), or use AskUserQuestion to ask the user which \
             skill fits the request."
                .to_owned(),
        ));
    };
    let state = state::load(&dir.join(STATE_FILE))?;
    let lifecycle = state.lifecycle_or_active();
    if lifecycle.is_live() {
        return Ok(None);
    }
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let skill = state.str(fields::SKILL).unwrap_or("none");
    Ok(Some(format!(
        "§CMD_REQUIRE_ACTIVE_SESSION: Previous session '{name}' (skill: {skill}) is {lifecycle}.\n\
         Before new work, activate a skill directly (/do for a small task, /implement, /analyze, \
         /fix, /test), or use AskUserQuestion to ask the user which skill fits the request."
    )))
}

/// Record the invoked skill's SKILL.md as in context and queue its references, and deliver the
/// skill's context packs within `budget` characters (one locked write); the packs' blocks.
fn track_expansion(
    ctx: &Context,
    input: &HookInput,
    name: &str,
    budget: usize,
) -> Result<String, HookError> {
    let file = ctx.paths.skill_file(name);
    if !file.is_file() {
        return Ok(String::new());
    }
    let Some(target) = session::find_preload_state(ctx)? else {
        return Ok(String::new());
    };
    let request = Request::new(file.to_string_lossy(), format!("skill-expansion({name})"));
    let mut packer = Packer::new(budget);
    let batch = ledger::update(ctx, &target, ctx.per_call(), |s| {
        s.push_unique(fields::INVOKED_SKILLS, name);
        let mut batch = preload::record(ctx, s, std::slice::from_ref(&request));
        let packs = preload::pack_requests(
            ctx,
            s,
            Audience::Main,
            Moment::Skill(name),
            &format!("skill-expansion({name})"),
        );
        batch.extend(preload::apply(ctx, s, &packs, Mode::Direct, &mut packer));
        // What the prompt carried, by the prompt: a rewind that drops it takes it back. The
        // client expanded the skill with this prompt whether or not the window held it already.
        if let Some(prompt) = input.prompt_id() {
            let skill = ctx.normalize(&request.path);
            let mut carried: Vec<String> = batch.delivered().map(str::to_owned).collect();
            if !carried.contains(&skill) {
                carried.push(skill);
            }
            ledger::note_carried(s, &ledger::prompt_carrier(prompt), &carried, &batch.text());
        }
        batch
    })?;
    batch.log(ctx, target.is_session);
    Ok(batch.text())
}

/// Track a skill expansion (and deliver its packs); speak the gate when required.
pub fn handle(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    let gate = if ctx.env.is_one(env::SESSION_REQUIRED) {
        gate_message(ctx)?
    } else {
        None
    };
    let room = ctx
        .budget
        .saturating_sub(gate.as_deref().map_or(0, |g| delivery::chars(g) + 2));
    let packs = match input.prompt().and_then(invoked_skill) {
        Some(name) => track_expansion(ctx, input, name, room)?,
        None => String::new(),
    };
    let text: Vec<String> = gate
        .into_iter()
        .chain(Some(packs))
        .filter(|t| !t.is_empty())
        .collect();
    if text.is_empty() {
        return Ok(HookOutput::Silent);
    }
    Ok(HookOutput::Context(text.join("\n\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skill_invocations_are_recognised() {
        assert_eq!(invoked_skill("/implement add auth"), Some("implement"));
        assert_eq!(invoked_skill("  /do"), Some("do"));
        assert_eq!(invoked_skill("/fix\nmore"), Some("fix"));
        assert_eq!(invoked_skill("please /implement"), None);
        assert_eq!(invoked_skill("/../etc/passwd"), None);
        assert_eq!(invoked_skill("/"), None);
    }
}
