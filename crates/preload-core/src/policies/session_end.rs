//! `preload-session-end` (`SessionEnd`): when a context window ends, its compaction marker
//! goes, and when the Claude process ends, so does the owner's seed; sessions stay.
//!
//! - The conversation's one-shot compaction marker (`compaction-<session_id>`, left by a
//!   `PreCompact` whose compaction never reached its next call) is removed on every reason:
//!   no later call of that conversation may take it.
//! - On `clear` and `resume` the process goes on and a `SessionStart` (`clear`, `resume`)
//!   follows that writes the owner's seed afresh for the new context window; the seed is left
//!   to it, so this hook can never remove the record of the window that follows.
//! - On every other reason (`logout`, `prompt_input_exit`, `other`, or none) the process ends.
//!   With an owner's session, the seed and carry it has not taken in yet go into it, as its
//!   next hook would have done, and are removed. Without one, the seed and its carry become
//!   one record, `sessions/.seeds/<pid>.<conversation>.ended.json`, when they know their
//!   conversation (a later `--resume` of it goes on from there; it is swept once 30 days old,
//!   Claude Code's own retention of conversations), and are removed. A seed or carry that does
//!   not parse is left for `preload doctor`.
//!   A session whose restart is under way (the next process's `continue` replaces its lists)
//!   leaves its window as `sessions/.seeds/<pid>.<conversation>.ended.json` too.

use std::path::Path;
use std::process::ExitCode;

use crate::mechanisms::ledger;
use crate::mechanisms::reread;
use crate::mechanisms::session::{self, PreloadState, STATE_FILE};
use crate::pipeline::runner;
use crate::primitives::hook::{HookEvent, HookSpec};
use crate::state;
use crate::{Context, HookError, HookInput, HookOutput};

/// The binary.
pub const SPEC: HookSpec = HookSpec {
    name: "session-end",
    binary: "preload-session-end",
    event: HookEvent::SessionEnd,
    help: "preload-session-end: SessionEnd hook (every reason).

Removes the conversation's compaction marker. When the Claude process ends (reason logout,
prompt_input_exit, other), removes the owner's seed: its owner's session, if any, takes in what
the seed still holds; without one, a seed that knows its conversation is kept as
sessions/.seeds/<pid>.<conversation>.ended.json for a later --resume. On clear and resume the
seed is left to the SessionStart that follows. Sessions are never removed. Prints nothing.

Reads stdin: reason, session_id, cwd.
Env: HOME, CLAUDE_SUPERVISOR_PID/CLAUDE_PID, CLAUDE_SESSION_CACHE_DIR, WORKSPACE, TMPDIR,
     PRELOAD_MARKER_DIR, PRELOAD_BUDGET_MS, PRELOAD_LOCK_TIMEOUT_MS, HOOK_DEBUG.
Files: sessions/.seeds/<pid>.json, <pid>.carry.json, <pid>.<conversation>.ended.json and their .lock
       directories; the owner's session .state.json (only to take in its seed);
       ${TMPDIR:-/tmp}/claude-preload-<uid>/compaction-<session_id>.",
};

/// Entry point of the binary.
pub fn main() -> ExitCode {
    runner::main(&SPEC, handle)
}

/// True when `reason` ends the Claude process (not `/clear` or an interactive `/resume`, after
/// which the same process starts a new context window).
pub fn process_ends(reason: Option<&str>) -> bool {
    !matches!(reason, Some("clear" | "resume"))
}

/// End the context window of this call.
pub fn handle(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    let marker = match input.session_id() {
        Some(sid) => reread::drop_marker(ctx, sid).map_err(|err| HookError::Other(err.to_string())),
        None => Ok(false),
    };
    if process_ends(input.reason()) {
        let owned = session::find_session(ctx).filter(|dir| dir.join(STATE_FILE).is_file());
        let held = owned.as_deref().and_then(|dir| Some((dir.parent()?, dir)));
        if let Some((sessions, dir)) = held {
            if let Ok(s) = state::load(&dir.join(STATE_FILE)) {
                ledger::keep_restarting_window(sessions, &s, ledger::KeptBy::Owner);
            }
        }
        end_seed(ctx, owned.as_deref())?;
    }
    marker?;
    Ok(HookOutput::Silent)
}

/// The owner's seed and carry go: into the owner's session (`owned`), or into the ended
/// record.
fn end_seed(ctx: &Context, owned: Option<&Path>) -> Result<(), HookError> {
    let Some(sessions) = ctx.sessions_dir() else {
        return Ok(());
    };
    let seed = session::seed_path(&sessions, ctx.owner_pid);
    if !seed.is_file() && !ledger::carry_path(&seed).is_file() {
        return Ok(());
    }
    if let Some(dir) = owned {
        // The session's own write takes the seed and carry in and removes them.
        ledger::update(ctx, &PreloadState::session(dir), ctx.per_call(), |_| ())?;
        return Ok(());
    }
    if seed.is_file() {
        ledger::retire_seed(&seed, ctx.lock_deadline())?;
    }
    // A carry without its seed waits for the session an activator made of it.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_clear_and_resume_keep_the_process() {
        for reason in ["clear", "resume"] {
            assert!(!process_ends(Some(reason)), "{reason}");
        }
        for reason in [
            Some("logout"),
            Some("prompt_input_exit"),
            Some("other"),
            Some("bypass_permissions_disabled"),
            Some(""),
            None,
        ] {
            assert!(process_ends(reason), "{reason:?}");
        }
    }
}
