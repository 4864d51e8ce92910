//! `preload-templates` (`PostToolUse`, `Skill` and `Bash`): when a skill starts (a `Skill` call, or
//! `engine session activate|continue` / `preload activate` in Bash), delivers the phase's
//! commands and the skill's templates at once (with the context packs of the skill and of that
//! phase), tracks SKILL.md (a `Skill` call loaded it into the context already; on Bash it is
//! delivered when it is not in context yet), queues the references they make, and drains what
//! is already queued, all within the output budget and in one locked write of the preload
//! state.

use std::path::Path;
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
use crate::state::{Phase, PhaseDef, State};
use crate::{Context, HookError, HookInput, HookOutput};

/// The binary.
pub const SPEC: HookSpec = HookSpec {
    name: "templates",
    binary: "preload-templates",
    event: HookEvent::PostToolUse,
    help: "preload-templates: PostToolUse hook (matchers Skill, Bash).

On a Skill call, or a Bash call of `engine session activate|continue` (or `preload activate`),
delivers the phase's command files and the skill's templates as additionalContext (Phase 0 on
a Skill call, the session's current phase on Bash) with the mode file of a chosen mode and
the context packs of the skill and phase (skill:NAME, phase:LABEL), tracks SKILL.md (a Skill
call loaded it already; on Bash it is delivered when not in context yet), queues the
references they make, and drains pendingPreloads within the output budget. Files that do not
fit stay queued. A sub-agent's call (agent_id) fills the sub-agent's own record and queue
(preloadedFiles_sub:<agent_id>); the main agent's record and invokedSkills stay, and only a
sub-agent's activation queues the phase's files for the main agent.

Reads stdin: tool_name, tool_input.skill, tool_input.command, agent_id, cwd.
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

/// What a trigger asks for, before any audience's record is looked at.
struct Wanted {
    name: String,
    source: String,
    /// The skill's SKILL.md.
    skill_file: String,
    /// The phase's commands, templates and mode file.
    phase_files: Vec<Request>,
    label: String,
    phase_name: String,
}

impl Wanted {
    fn of(ctx: &Context, s: &State, trigger: &Trigger) -> Option<Self> {
        let (name, label) = match trigger {
            Trigger::Skill(name) => (name.clone(), "0".to_owned()),
            Trigger::Activation => {
                let name = s.str(fields::SKILL)?.to_owned();
                let label = s.current_phase().map_or("0", Phase::label).to_owned();
                (name, label)
            }
        };
        if !skill::is_valid_name(&name) {
            return None;
        }
        let source = format!("templates({name})");
        // The state's phases and templates when it is this skill's session, else the skill's.
        let phase_files = if s.str(fields::SKILL) == Some(name.as_str()) {
            skill::session_phase_cmds(&ctx.paths, &ctx.skills, s, &label)
        } else {
            let mut only = State::default();
            only.set_text(fields::SKILL, &name);
            skill::session_phase_cmds(&ctx.paths, &ctx.skills, &only, &label)
        };
        let phase_name = match trigger {
            Trigger::Activation => s.current_phase().map_or("", Phase::name).to_owned(),
            Trigger::Skill(_) => ctx
                .skills
                .load(&ctx.paths, &name)
                .map(|k| {
                    k.phases()
                        .find(&label)
                        .map_or("", PhaseDef::name)
                        .to_owned()
                })
                .unwrap_or_default(),
        };
        Some(Self {
            skill_file: ctx.paths.skill_file(&name).to_string_lossy().into_owned(),
            phase_files: phase_files
                .into_iter()
                .map(|p| Request::new(p.to_string_lossy(), source.clone()))
                .collect(),
            name,
            source,
            label,
            phase_name,
        })
    }

    /// What `audience` is sent: SKILL.md on an activation (a `Skill` call loaded it itself),
    /// the phase's files, and the packs of the skill and of the phase it has not had yet.
    fn requests(
        &self,
        ctx: &Context,
        s: &State,
        trigger: &Trigger,
        audience: Audience<'_>,
    ) -> Vec<Request> {
        let mut requests = Vec::new();
        if *trigger == Trigger::Activation && Path::new(&self.skill_file).is_file() {
            requests.push(Request::new(self.skill_file.as_str(), self.source.as_str()));
        }
        requests.extend(self.phase_files.iter().cloned());
        for moment in [
            Moment::Skill(&self.name),
            Moment::Phase {
                label: &self.label,
                name: &self.phase_name,
            },
        ] {
            requests.extend(preload::pack_requests(
                ctx,
                s,
                audience,
                moment,
                &self.source,
            ));
        }
        requests
    }

    /// The record of the SKILL.md a `Skill` call put into `audience`'s conversation.
    fn loaded(&self) -> Request {
        Request::new(
            self.skill_file.as_str(),
            format!("skill-call({})", self.name),
        )
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
    let agent = input.agent_id();
    let batch = ledger::update(ctx, &target, ctx.per_call(), |s| {
        let Some(wanted) = Wanted::of(ctx, s, &trigger) else {
            return preload::Batch::default();
        };
        match agent {
            None => for_main(ctx, s, &trigger, &wanted, input.tool_use_id(), &mut packer),
            Some(agent) => for_sub_agent(ctx, s, &trigger, &wanted, agent, &mut packer),
        }
    })?;
    batch.log(ctx, target.is_session);
    Ok(HookOutput::Context(batch.text()))
}

/// The main agent's call: its record and queue, drained into the same output.
fn for_main(
    ctx: &Context,
    s: &mut State,
    trigger: &Trigger,
    wanted: &Wanted,
    call: Option<&str>,
    packer: &mut Packer,
) -> preload::Batch {
    let mut batch = preload::Batch::default();
    if matches!(trigger, Trigger::Skill(_)) {
        // The Skill call put the skill's SKILL.md into the context itself (and the client
        // puts it back after a compaction): recorded, not sent a second time.
        s.push_unique(fields::INVOKED_SKILLS, &wanted.name);
        batch = preload::record(ctx, s, std::slice::from_ref(&wanted.loaded()));
    }
    let requests = wanted.requests(ctx, s, trigger, Audience::Main);
    batch.extend(preload::apply(ctx, s, &requests, Mode::Direct, packer));
    let queued = preload::pending_requests(ctx, s, "pending-drain");
    batch.extend(preload::apply(ctx, s, &queued, Mode::Direct, packer));
    let out: Vec<String> = batch.delivered().map(str::to_owned).collect();
    ledger::note_call_deliveries(s, call, &out, &batch.text());
    batch
}

/// A sub-agent's call: what reaches the sub-agent's own conversation is checked against and
/// recorded in its own record (`preloadedFiles_sub:<id>`), and what does not fit waits in its
/// own queue. The main agent's record is left as it is, `invokedSkills` included (it names
/// what the client puts back into the main conversation). Only an activation, which moves the
/// session the main agent works in, queues the phase's files for the main agent too, as a
/// sub-agent's phase transition does.
fn for_sub_agent(
    ctx: &Context,
    s: &mut State,
    trigger: &Trigger,
    wanted: &Wanted,
    agent: &str,
    packer: &mut Packer,
) -> preload::Batch {
    let audience = Audience::SubAgent(agent);
    let mut batch = preload::Batch::default();
    if *trigger == Trigger::Activation {
        let main = wanted.requests(ctx, s, trigger, Audience::Main);
        batch.extend(preload::apply(ctx, s, &main, Mode::Queue, packer));
    } else {
        let loaded = wanted.loaded();
        batch.extend(preload::record_for(
            ctx,
            s,
            std::slice::from_ref(&loaded),
            audience,
        ));
    }
    let requests = wanted.requests(ctx, s, trigger, audience);
    batch.extend(preload::apply_for(
        ctx,
        s,
        &requests,
        Mode::Direct,
        packer,
        audience,
    ));
    let queued = preload::pending_requests_for(ctx, s, "pending-drain", audience);
    batch.extend(preload::apply_for(
        ctx,
        s,
        &queued,
        Mode::Direct,
        packer,
        audience,
    ));
    batch
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
