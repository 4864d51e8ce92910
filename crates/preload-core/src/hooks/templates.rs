//! `preload-templates` (`PostToolUse`, `Skill` and `Bash`): when a skill starts (a `Skill` call, or
//! `engine session activate|continue` / `preload activate` in Bash), delivers the phase's
//! commands and the skill's templates at once (with the context packs of the skill and of that
//! phase), tracks SKILL.md (a `Skill` call loaded it into the context already; on Bash it is
//! delivered when it is not in context yet), queues the references they make, and drains what
//! is already queued, all within the output budget and in one locked write of the preload
//! state.

use std::process::ExitCode;

use crate::delivery::Packer;
use crate::fields;
use crate::ledger;
use crate::packs::Moment;
use crate::preload::{self, Audience, Mode, Request};
use crate::runner::{self, HookEvent, HookSpec};
use crate::session;
use crate::skill;
use crate::{Context, HookError, HookInput, HookOutput};

/// The binary.
pub const SPEC: HookSpec = HookSpec {
    name: "templates",
    event: HookEvent::PostToolUse,
    help: "preload-templates: PostToolUse hook (matchers Skill, Bash).

On a Skill call, or a Bash call of `engine session activate|continue` (or `preload activate`),
delivers the phase's command files and the skill's templates as additionalContext (Phase 0 on
a Skill call, the session's current phase on Bash) with the mode file of a chosen mode and
the context packs of the skill and phase (skill:NAME, phase:LABEL), tracks SKILL.md (a Skill
call loaded it already; on Bash it is delivered when not in context yet), queues the
references they make, and drains pendingPreloads within the output budget. Files that do not
fit stay queued.

Reads stdin: tool_name, tool_input.skill, tool_input.command, cwd.
Env: HOME, CLAUDE_SUPERVISOR_PID/CLAUDE_PID, CLAUDE_SESSION_CACHE_DIR, WORKSPACE,
     PRELOAD_OUTPUT_BUDGET, PRELOAD_MAX_FILE_BYTES, PRELOAD_BUDGET_MS, PRELOAD_LOCK_TIMEOUT_MS,
     PRELOAD_TEST_LOG, HOOK_DEBUG.
Files: ~/.claude/skills/<skill>/SKILL.md and templates, ~/.claude/engine/.directives/,
       .claude/context-packs.json and ~/.claude/engine/context-packs.json,
       the session .state.json or sessions/.seeds/<pid>.json (created when missing).",
};

/// Entry point of the binary.
pub fn main() -> ExitCode {
    runner::main(&SPEC, handle)
}

/// True when a Bash command starts or resumes a session.
pub fn is_activation(command: &str) -> bool {
    [
        "engine session activate",
        "engine session continue",
        "preload activate",
    ]
    .iter()
    .any(|needle| command.contains(needle))
}

/// What started the skill.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Trigger {
    /// A `Skill` call naming the skill.
    Skill(String),
    /// A session activation in Bash: the skill is the session's.
    Activation,
}

fn trigger_of(input: &HookInput) -> Option<Trigger> {
    match input.tool_name()? {
        "Skill" => input
            .tool_input_str("skill")
            .map(|s| Trigger::Skill(s.trim().trim_start_matches('/').to_owned())),
        "Bash" => input
            .tool_input_str("command")
            .filter(|c| is_activation(c))
            .map(|_| Trigger::Activation),
        _ => None,
    }
}

/// Deliver the skill's phase files.
pub fn handle(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    let Some(trigger) = trigger_of(input) else {
        return Ok(HookOutput::Silent);
    };
    if let Trigger::Skill(name) = &trigger {
        if !skill::is_valid_name(name) || !ctx.paths.skill_file(name).is_file() {
            return Ok(HookOutput::Silent);
        }
    }
    let Some(target) = session::find_preload_state(ctx)? else {
        return Ok(HookOutput::Silent);
    };
    let mut packer = Packer::new(ctx.budget);
    let call = input.tool_use_id().filter(|_| input.agent_id().is_none());
    let batch = ledger::update(ctx, &target, |s| {
        let (name, label) = match &trigger {
            Trigger::Skill(name) => (name.clone(), "0".to_owned()),
            Trigger::Activation => {
                let Some(name) = s.str(fields::SKILL).map(str::to_owned) else {
                    return preload::Batch::default();
                };
                let label = skill::label_of(s.str(fields::CURRENT_PHASE).unwrap_or("0"));
                (name, label)
            }
        };
        if !skill::is_valid_name(&name) {
            return preload::Batch::default();
        }
        let source = format!("templates({name})");
        let file = ctx.paths.skill_file(&name);
        let mut batch = preload::Batch::default();
        let mut requests = Vec::new();
        if matches!(trigger, Trigger::Skill(_)) {
            // The Skill call put the skill's SKILL.md into the context itself (and the client
            // puts it back after a compaction): recorded, not sent a second time.
            s.push_unique(fields::INVOKED_SKILLS, &name);
            let loaded = Request::new(file.to_string_lossy(), format!("skill-call({name})"));
            batch = preload::record(ctx, s, std::slice::from_ref(&loaded));
        } else if file.is_file() {
            requests.push(Request::new(file.to_string_lossy(), source.clone()));
        }
        // The state's phases and templates when it is this skill's session, else the skill's.
        let phase_files = if s.str(fields::SKILL) == Some(name.as_str()) {
            skill::session_phase_cmds(&ctx.paths, &s.0, &label)
        } else {
            let mut only = serde_json::Map::new();
            only.insert(
                fields::SKILL.into(),
                serde_json::Value::String(name.clone()),
            );
            skill::session_phase_cmds(&ctx.paths, &only, &label)
        };
        for path in phase_files {
            requests.push(Request::new(path.to_string_lossy(), source.clone()));
        }
        // The packs of the skill and of the phase it starts in.
        let phase_name = match &trigger {
            Trigger::Activation => {
                skill::name_of(s.str(fields::CURRENT_PHASE).unwrap_or("")).to_owned()
            }
            Trigger::Skill(_) => skill::Skill::load(&ctx.paths, &name)
                .map(|k| skill::phase_name(k.phases(), &label).to_owned())
                .unwrap_or_default(),
        };
        for moment in [
            Moment::Skill(&name),
            Moment::Phase {
                label: &label,
                name: &phase_name,
            },
        ] {
            requests.extend(preload::pack_requests(
                ctx,
                s,
                Audience::Main,
                moment,
                &source,
            ));
        }
        batch.extend(preload::apply(ctx, s, &requests, Mode::Direct, &mut packer));
        let queued = preload::pending_requests(ctx, s, "pending-drain");
        batch.extend(preload::apply(ctx, s, &queued, Mode::Direct, &mut packer));
        let out: Vec<String> = batch.delivered().map(str::to_owned).collect();
        ledger::note_call_deliveries(s, call, &out);
        batch
    })?;
    batch.log(ctx, target.is_session);
    Ok(HookOutput::Context(batch.text()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn triggers() {
        let skill = HookInput::from_value(
            json!({"tool_name": "Skill", "tool_input": {"skill": "implement"}}),
        );
        assert_eq!(trigger_of(&skill), Some(Trigger::Skill("implement".into())));
        let bash = HookInput::from_value(json!({"tool_name": "Bash",
            "tool_input": {"command": "engine session activate sessions/x implement <<'EOF'\n{}\nEOF"}}));
        assert_eq!(trigger_of(&bash), Some(Trigger::Activation));
        let other = HookInput::from_value(
            json!({"tool_name": "Bash", "tool_input": {"command": "engine session phase x"}}),
        );
        assert_eq!(trigger_of(&other), None);
        let read =
            HookInput::from_value(json!({"tool_name": "Read", "tool_input": {"file_path": "/x"}}));
        assert_eq!(trigger_of(&read), None);
    }
}
