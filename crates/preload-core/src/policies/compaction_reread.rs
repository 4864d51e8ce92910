//! `preload-compaction-reread`: after a compaction, hands handler, worker and loop sessions
//! the files their work lives in.
//!
//! One binary, five subcommands sharing one marker directory ([`crate::mechanisms::reread`]):
//! - `register` (`PostToolUse`, `Skill`): `/handler` or `/loop` leaves a registration marker for
//!   the `session_id` (holding `cwd`);
//! - `precompact` (`PreCompact`): detects the session type (handler, worker, loop, regular) and
//!   leaves a one-shot compaction marker `{type, handler_dir | dispatch_file | loop_file}`;
//! - `sessionstart` (`SessionStart`, `compact`): consumes the marker and injects the files
//!   themselves as `[Preloaded: …]` blocks, so the agent has them without choosing to read;
//! - `pretooluse` (`PreToolUse`) and `stop` (`Stop`): the fallback for clients without the
//!   `SessionStart` path: consume the marker and deny the first tool call (or block the first
//!   stop) once, naming the files to re-read.
//!
//! Every failure fails open: nothing printed (`PreToolUse`: the allow decision).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::mechanisms::reread::{self, HANDLER_PREFIX, LOOP_PREFIX, Reread, RereadError};
use crate::mechanisms::start_text::Chunk;
use crate::mechanisms::work_files::{HANDLER_DISPATCHES, HANDLER_STATE};
use crate::pipeline::runner;
use crate::primitives::delivery::{chars, shorten};
use crate::primitives::hook::HookEvent;
use crate::primitives::layout;
use crate::{Context, HookError, HookInput, HookOutput};

/// Binary name without `preload-` (the delivery log's `hook`).
pub const NAME: &str = "compaction-reread";
/// The binary.
pub const BINARY: &str = "preload-compaction-reread";
/// Every message starts with this tag.
const TAG: &str = "[Compaction re-read]";

/// `--help`.
pub const HELP: &str =
    "preload-compaction-reread: after a compaction, hands handler, worker and loop sessions
the files their work lives in.

Usage: preload-compaction-reread <subcommand>      (stdin: the hook's JSON)
  register      PostToolUse (matcher Skill): /handler or /loop registers this session_id
  precompact    PreCompact: detects the session type and leaves a one-shot compaction marker
  sessionstart  SessionStart (matcher compact): consumes the marker, injects the files
  pretooluse    PreToolUse (matcher *): consumes the marker, denies once naming the files
  stop          Stop: consumes the marker, blocks once (nothing when stop_hook_active)

Session types: handler (registered by /handler), worker ($HOME/.claude/worker-dispatch-path
exists), loop (registered by /loop; newest non-archived docs/loops/*.loop.md), else regular.

Reads stdin: session_id, agent_id (a sub-agent's call does nothing), cwd, tool_name,
     tool_input.skill, source, stop_hook_active.
Env: HOME, TMPDIR, PRELOAD_MARKER_DIR, PRELOAD_LEGACY_MARKER_DIR (default /tmp),
     PRELOAD_HANDLER_DIR, PRELOAD_OUTPUT_BUDGET, PRELOAD_MAX_FILE_BYTES, PRELOAD_BUDGET_MS,
     HOOK_DEBUG.
Files: ${TMPDIR:-/tmp}/claude-preload-<uid>/{handler,loop,compaction}-<session_id> (mode 0700
       directory); legacy /tmp/claude-handler-<sid>, claude-loop-<sid>, claude-handler-active
       (read only, own files only, never through links); handler-state.md,
       handler-dispatches/*.md, docs/loops/*.loop.md, the worker's dispatch file (read only).";

/// Entry point of the binary: the subcommand names the event.
pub fn main() -> ExitCode {
    let args = crate::primitives::system::entry::args();
    if runner::answer_meta_flag(BINARY, HELP, args) {
        return ExitCode::SUCCESS;
    }
    if let Some((event, handler)) = args.first().and_then(|name| subcommand(name)) {
        runner::run(event, &[runner::Policy::only(NAME, event, handler)])
    } else {
        // A wiring mistake: show the usage; exit 1 never blocks anything in Claude Code.
        runner::print_text(HELP);
        ExitCode::from(1)
    }
}

/// A subcommand's handler.
pub type Subcommand = fn(&HookInput, &Context) -> Result<HookOutput, HookError>;

/// The policy of a wiring row: its one argument names the subcommand.
pub fn policy(args: &[&str], _: Option<Chunk>) -> Option<runner::Policy> {
    let [name] = args else { return None };
    let (event, handler) = subcommand(name)?;
    Some(runner::Policy::only(NAME, event, handler))
}

/// The event and handler of subcommand `name`.
pub fn subcommand(name: &str) -> Option<(HookEvent, Subcommand)> {
    let found: (HookEvent, Subcommand) = match name {
        "register" => (HookEvent::PostToolUse, register),
        "precompact" => (HookEvent::PreCompact, precompact),
        "sessionstart" => (HookEvent::SessionStart, session_start),
        "pretooluse" => (HookEvent::PreToolUse, pretooluse),
        "stop" => (HookEvent::Stop, stop),
        _ => return None,
    };
    Some(found)
}

#[allow(clippy::needless_pass_by_value)] // used as `map_err(marker_failure)`
fn marker_failure(err: RereadError) -> HookError {
    HookError::Other(err.to_string())
}

/// `PostToolUse` (`Skill`): `/handler` and `/loop` register this session. A sub-agent's call
/// (`agent_id`) registers nothing: it carries the main conversation's `session_id`, and the
/// skill runs in the sub-agent's conversation, not in the one that would be re-read.
pub fn register(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    if input.agent_id().is_some() || input.tool_name().is_some_and(|tool| tool != "Skill") {
        return Ok(HookOutput::Silent);
    }
    let Some(skill) = input.tool_input_str("skill") else {
        return Ok(HookOutput::Silent);
    };
    let skill = skill.trim().trim_start_matches('/');
    let prefix = match skill.rsplit(':').next().unwrap_or(skill) {
        "handler" => HANDLER_PREFIX,
        "loop" => LOOP_PREFIX,
        _ => return Ok(HookOutput::Silent),
    };
    if let Some(sid) = input.session_id() {
        reread::register(ctx, prefix, sid).map_err(marker_failure)?;
    }
    Ok(HookOutput::Silent)
}

/// `PreCompact`: leave the one-shot compaction marker of this session's type (none for a
/// regular session). A sub-agent's compaction leaves none: the marker is the main
/// conversation's.
pub fn precompact(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    if input.agent_id().is_some() {
        return Ok(HookOutput::Silent);
    }
    if let Some(sid) = input.session_id() {
        reread::leave_marker(ctx, sid).map_err(marker_failure)?;
    }
    Ok(HookOutput::Silent)
}

/// Consume this session's compaction marker: of concurrent calls exactly one gets it. A
/// sub-agent's call never does: the marker is for the main conversation, which was compacted.
fn consume(input: &HookInput, ctx: &Context) -> Result<Option<Reread>, HookError> {
    if input.agent_id().is_some() {
        return Ok(None);
    }
    match input.session_id() {
        Some(sid) => reread::take_marker(ctx, sid).map_err(marker_failure),
        None => Ok(None),
    }
}

fn display(ctx: &Context, path: &Path) -> String {
    ctx.normalize(&path.to_string_lossy())
}

/// What the files are, per type (shared by the reason and the injection).
fn guidance(reread: &Reread) -> &'static str {
    match reread {
        Reread::Handler { .. } => {
            "handler-state.md is your persistent handler state (active dispatches, pending decisions, check-in log); the active dispatch files hold each worker's contract and progress. Continue from where the state says you are."
        }
        Reread::Worker { .. } => {
            "Your dispatch file holds your contract and, under ## Progress, the updates you recorded so far. Continue from the last Progress entry and keep updating ## Progress after each milestone."
        }
        Reread::Loop { .. } => {
            "In the loop document, find the [CURRENT] step and continue executing it. Do NOT pause or ask for confirmation: the loop keeps running."
        }
    }
}

/// When no file is known, what to look for instead.
fn unknown_targets(reread: &Reread) -> Vec<String> {
    match reread {
        Reread::Handler { dir } => {
            let base = dir
                .as_ref()
                .map_or_else(String::new, |d| format!("{}/", d.to_string_lossy()));
            vec![
                format!("{base}{HANDLER_STATE} (your handler state; its directory was not found)"),
                format!("the active dispatch files under {base}{HANDLER_DISPATCHES}/"),
            ]
        }
        Reread::Loop { loops_dir, .. } => vec![format!(
            "the active loop document: no non-archived *.loop.md was found in {}/ (look there, or where your loop document lives)",
            loops_dir.to_string_lossy()
        )],
        Reread::Worker { dispatch_file } => vec![dispatch_file.to_string_lossy().into_owned()],
    }
}

/// The deny (`PreToolUse`) or block (`Stop`) reason: the files to re-read, within `budget`.
pub fn reason(ctx: &Context, reread: &Reread, files: &[PathBuf], held: &str) -> String {
    let items: Vec<String> = if files.is_empty() {
        unknown_targets(reread)
    } else {
        files.iter().map(|f| display(ctx, f)).collect()
    };
    let intro = format!(
        "{TAG} Your context was just compacted; this {} session's working state lives on disk, not in the summary. Before anything else, re-read with the Read tool:\n",
        reread.kind()
    );
    let tail = format!("{}\n{held}", guidance(reread));
    let room = ctx.budget.saturating_sub(chars(&intro) + chars(&tail));
    let dir_hint = match reread {
        Reread::Handler { dir: Some(d) } => {
            format!(" in {}", d.join(HANDLER_DISPATCHES).to_string_lossy())
        }
        _ => String::new(),
    };
    let list = layout::bullet_list(&items, room, |n| format!("… and {n} more{dir_hint}"));
    shorten(format!("{intro}{list}{tail}").trim_end(), ctx.budget)
}

/// The `SessionStart` injection: the files' content within the budget, with a final line naming
/// what did not fit or could not be read.
pub fn injection(ctx: &Context, reread: &Reread, files: &[PathBuf]) -> String {
    if files.is_empty() {
        return reason(ctx, reread, files, "");
    }
    let head = format!(
        "{TAG} Your context was just compacted. The files this {} session works from were re-read from disk and are below, current as of now; no Read calls are needed for them. {}",
        reread.kind(),
        guidance(reread)
    );
    let shown: Vec<(PathBuf, String)> = files
        .iter()
        .map(|file| (file.clone(), display(ctx, file)))
        .collect();
    layout::files_within(&head, &shown, ctx.budget, ctx.max_file_bytes())
}

/// `PreToolUse`: deny the first tool call after a compaction once, naming the files.
pub fn pretooluse(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    Ok(match consume(input, ctx)? {
        Some(reread) => {
            let files = reread::targets(ctx, &reread);
            HookOutput::Deny(reason(
                ctx,
                &reread,
                &files,
                "This tool call was held back once for the re-read; run it again afterwards.",
            ))
        }
        None => HookOutput::Allow(None),
    })
}

/// `Stop`: block the first stop after a compaction once (never when `stop_hook_active`).
pub fn stop(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    if input.stop_hook_active() {
        return Ok(HookOutput::Silent);
    }
    Ok(match consume(input, ctx)? {
        Some(reread) => {
            let files = reread::targets(ctx, &reread);
            HookOutput::Block(reason(
                ctx,
                &reread,
                &files,
                "Stopping was held back once for the re-read.",
            ))
        }
        None => HookOutput::Silent,
    })
}

/// `SessionStart` (`compact`): consume the marker and inject the files themselves.
pub fn session_start(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    if input.source().is_some_and(|source| source != "compact") {
        return Ok(HookOutput::Silent);
    }
    Ok(match consume(input, ctx)? {
        Some(reread) => {
            let files = reread::targets(ctx, &reread);
            HookOutput::Context(injection(ctx, &reread, &files))
        }
        None => HookOutput::Silent,
    })
}

#[cfg(test)]
mod tests;
