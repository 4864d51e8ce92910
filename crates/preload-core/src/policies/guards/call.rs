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
    pub(super) command: &'a str,
    pub(super) agent: Option<&'a str>,
    /// `toolCallsByTranscript` key: the transcript basename, or `sub:<agent_id>`.
    pub(super) key: String,
}

impl<'a> Call<'a> {
    pub(super) fn new(input: &'a HookInput) -> Self {
        let agent = input.agent_id();
        let key = match agent {
            Some(id) => format!("sub:{id}"),
            None => input.transcript_key().unwrap_or("unknown").to_owned(),
        };
        Self {
            input,
            tool: input.tool_name().unwrap_or(""),
            command: input.tool_input_str("command").unwrap_or(""),
            agent,
            key,
        }
    }

    pub(super) fn is_sub(&self) -> bool {
        self.agent.is_some()
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

/// The engine command `call` runs, if it is one.
pub(super) fn engine_command(call: &Call) -> Option<EngineCommand> {
    if call.tool != "Bash" {
        return None;
    }
    if rules::is_engine_cmd(call.command, "log") {
        Some(EngineCommand::Log)
    } else if call.command.contains("engine session dehydrate") {
        Some(EngineCommand::Dehydrate)
    } else if continued(call.command).is_some() {
        Some(EngineCommand::Continue)
    } else if rules::is_engine_cmd(call.command, "session") {
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
