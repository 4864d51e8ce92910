//! The facts of one tool call as the guard engine sees them: the call itself, the engine
//! commands that bypass the rules, and whether the state is quiet.

use crate::HookInput;
use crate::pipeline::rules;
use crate::state::State;
use crate::state::fields;

/// Tools that never count toward the heartbeat.
pub const UNCOUNTED_TOOLS: [&str; 3] = ["Task", "TaskOutput", "Agent"];

/// The facts of one tool call.
#[derive(Debug)]
pub(super) struct Call<'a> {
    pub(super) input: &'a HookInput,
    pub(super) tool: &'a str,
    pub(super) agent: Option<&'a str>,
    /// `toolCallsByTranscript` key: the transcript basename, or `sub:<agent_id>`.
    pub(super) key: String,
    /// The engine command the call runs, if it is one.
    pub(super) engine: Option<EngineCommand>,
    /// The session directory an `engine session continue` names (`""`: it names none, the
    /// engine finds the owner's); `None` for any other call.
    pub(super) continues: Option<&'a str>,
}

impl<'a> Call<'a> {
    pub(super) fn new(input: &'a HookInput) -> Self {
        let agent = input.agent_id();
        let key = match agent {
            Some(id) => format!("sub:{id}"),
            None => input.transcript_key().unwrap_or("unknown").to_owned(),
        };
        let tool = input.tool_name().unwrap_or("");
        let command = input.tool_input_str("command").unwrap_or("");
        let continued = (tool == "Bash").then(|| continued(command)).flatten();
        let engine = engine_command(tool, command, continued.is_some());
        Self {
            input,
            tool,
            agent,
            key,
            engine,
            continues: continued.filter(|_| engine == Some(EngineCommand::Continue)),
        }
    }

    pub(super) fn is_sub(&self) -> bool {
        self.agent.is_some()
    }

    /// The skill a `Skill` call expands, when it names a valid one.
    pub(super) fn skill(&self) -> Option<&'a str> {
        self.input
            .tool_input_str("skill")
            .map(|n| n.trim().trim_start_matches('/'))
            .filter(|n| self.tool == "Skill" && crate::mechanisms::skill::is_valid_name(n))
    }
}

/// An `engine log` / `engine session` call: allowed without rules, never counted, yet what is
/// queued still rides along (except on `engine session dehydrate`, the context's last call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EngineCommand {
    /// `engine log …`: the agent's counter starts over.
    Log,
    /// `engine session …`.
    Session,
    /// `engine session dehydrate …`.
    Dehydrate,
    /// `engine session continue [dir]`: another session taken over.
    Continue,
}

/// The engine command a call of `tool` with `command` runs, if it is one (`continues`: the
/// command is an `engine session continue`).
fn engine_command(tool: &str, command: &str, continues: bool) -> Option<EngineCommand> {
    if tool != "Bash" {
        return None;
    }
    if rules::is_engine_cmd(command, "log") {
        Some(EngineCommand::Log)
    } else if command.contains("engine session dehydrate") {
        Some(EngineCommand::Dehydrate)
    } else if continues {
        Some(EngineCommand::Continue)
    } else if rules::is_engine_cmd(command, "session") {
        Some(EngineCommand::Session)
    } else {
        None
    }
}

/// The session directory an `engine session continue` command names: `Some("")` when it
/// names none (the engine finds the owner's), `None` when the command is not one.
pub(super) fn continued(command: &str) -> Option<&str> {
    const CONTINUE: &str = "engine session continue";
    let at = command.find(CONTINUE)?;
    let rest = &command[at + CONTINUE.len()..];
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let dir = rest.split_whitespace().next().unwrap_or("");
    Some(if dir.starts_with(['-', '<', '|', ';', '&']) {
        ""
    } else {
        dir.trim_matches(['"', '\''])
    })
}

/// Whether claims may be made and stashed (false when the state cannot be written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Writes {
    /// The state can be written.
    Allowed,
    /// It cannot: nothing is claimed or stashed.
    Impossible,
}

/// No counting and no discovery while loading, overflowed or not at work.
pub(super) fn is_quiet(s: &State) -> bool {
    s.flag(fields::LOADING) || s.flag(fields::OVERFLOWED) || s.lifecycle_or_active().is_quiet()
}
