//! `preload-overflow` (`PreToolUse` `*`): the guard engine of `guards.json`.
//!
//! One call: the `engine log` / `engine session` bypasses, then ONE locked update of the state
//! that does the lifecycle bypasses, the per-agent tool-call counter, directive discovery, rule
//! evaluation, the preload rule's claim and the stash of allow-rule content. Events are logged
//! and tmux pastes sent only after that write.
//!
//! Which state: the owner's session; else, before activation, its seed (discovery and the preload
//! rule work on the seed, and rules see `lifecycle: "none"`, so the session gate applies); else a
//! stand-in with `lifecycle: "none"` and `contextUsage: 0` that is never written. A project
//! without a `sessions/` directory has no engine: the hook prints nothing.
//!
//! This module finds the state and runs the call on it; what the rules decide on that state,
//! and what goes into the answer and the stash, is in its `decision` module.

mod call;
mod decision;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use self::call::{Call, EngineCommand, UNCOUNTED_TOOLS, Writes, is_quiet};
use self::decision::{Decision, Plan};
use crate::mechanisms::counters;
use crate::mechanisms::ledger;
use crate::mechanisms::session::{self, PreloadState, STATE_FILE};
use crate::pipeline::activation;
use crate::pipeline::rules::{self, Rule};
use crate::pipeline::runner;
use crate::primitives::clock;
use crate::primitives::delivery::Event;
use crate::primitives::env;
use crate::primitives::file;
use crate::primitives::hook::{HookEvent, HookSpec};
use crate::primitives::tmux;
use crate::state::fields;
use crate::state::{self, Lifecycle, Records, State, Tried, Write};
use crate::{Context, HookError, HookInput, HookOutput};

/// The binary.
pub const SPEC: HookSpec = HookSpec {
    name: "guards",
    binary: "preload-overflow",
    event: HookEvent::PreToolUse,
    help: "preload-overflow: PreToolUse hook (matcher *), the guard engine.

Counts tool calls per agent, discovers directives for Read/Edit/Write/Glob/Grep, evaluates
~/.claude/engine/guards.json (overflow, session gate, heartbeat, preload, ...) and allows or
denies the call. Allow-rule content (preloaded files, warnings) is stashed for preload-injections.

Reads stdin: tool_name, tool_input, transcript_path, agent_id, cwd.
Env: HOME, CLAUDE_SUPERVISOR_PID/CLAUDE_PID, CLAUDE_SESSION_CACHE_DIR, WORKSPACE,
     DISABLE_AUTO_COMPACT=1 (overflow threshold 0.95), TMUX/TMUX_PANE (paste rules),
     PRELOAD_AUTO_ACTIVATE=1 (create an ad-hoc /do session when none exists),
     PRELOAD_OUTPUT_BUDGET, PRELOAD_BUDGET_MS, PRELOAD_LOCK_TIMEOUT_MS, PRELOAD_TEST_LOG,
     HOOK_DEBUG.
Files: guards.json, engine/config.sh (OVERFLOW_THRESHOLD), the session .state.json or
       sessions/.seeds/<pid>.json and its .lock directory.",
};

/// Entry point of the binary.
pub fn main() -> ExitCode {
    runner::main(&SPEC, handle)
}

/// Decide on one tool call.
pub fn handle(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    let Some(sessions) = ctx.sessions_dir() else {
        return Ok(HookOutput::Silent);
    };
    let call = Call::new(input);
    let continued = call.continues.and_then(|dir| continued_session(ctx, dir));
    if let Some(dir) = &continued {
        keep_continued_window(dir);
    }
    let rules = load_rules(ctx);
    let (target, read) = locate(ctx, &sessions)?;
    let decision = Decision {
        ctx,
        call: &call,
        rules: &rules,
        target: target.as_ref(),
    };
    let plan = match &target {
        Some(record) if record.is_session => {
            let read = match read {
                Some(read) => read,
                None => state::load_read(&record.path)?,
            };
            session_call(decision, record, read)?
        }
        Some(seed) => ledger::update(ctx, seed, ctx.per_call(), |s| {
            decision.on(s, Writes::Allowed)
        })?,
        None => {
            let mut stand_in = State::default();
            stand_in.set_lifecycle(&Lifecycle::None);
            stand_in.set_count(fields::CONTEXT_USAGE, 0);
            decision.on(&mut stand_in, Writes::Impossible)
        }
    };
    if let (Some(dir), Some(own)) = (
        &continued,
        target.as_ref().and_then(PreloadState::session_dir),
    ) {
        if plan.deny.is_none() {
            seed_continuing_window(ctx, dir, own);
        }
    }
    let is_session = target.as_ref().is_some_and(|t| t.is_session);
    plan.batch.log(ctx, is_session);
    for (file, source) in &plan.stashed {
        ctx.log
            .record(Event::StashInject, file, source, is_session, "new");
    }
    for paste in &plan.pastes {
        tmux::paste(&ctx.env, &paste.text, paste.interrupt);
    }
    Ok(match plan.deny {
        Some(reason) => HookOutput::Deny(reason),
        None => HookOutput::Allow(plan.context()),
    })
}

/// The session directory an `engine session continue` names (`dir`; the owner's own without
/// one, as the engine's `find` answers).
fn continued_session(ctx: &Context, dir: &str) -> Option<PathBuf> {
    match dir {
        "" => session::cached_session(ctx),
        dir => Some(ctx.cwd.join(dir)),
    }
}

/// The session an `engine session continue` is about to take over, when a restart of it is
/// under way: its window is kept before the engine replaces its lists with this process's
/// (the process that ended with the restart may have run no `SessionEnd`, and no start-up
/// came between; see [`ledger::keep_restarting_window`]).
fn keep_continued_window(dir: &Path) {
    if let (Ok(s), Some(sessions)) = (state::load(&dir.join(STATE_FILE)), dir.parent()) {
        ledger::keep_restarting_window(sessions, &s, ledger::KeptBy::Successor);
    }
}

/// This process's own context window, when the session this call recorded its deliveries in
/// (`own`) is not the one an `engine session continue` takes over (`dir`): written as the
/// process's seed once this call's own deliveries are in it, for the engine's `continue` to
/// replace the taken session's lists with (see [`ledger::seed_from_window`]).
fn seed_continuing_window(ctx: &Context, dir: &Path, own: &Path) {
    if fs::canonicalize(own).ok() == fs::canonicalize(dir).ok() {
        return;
    }
    let window = state::load(&own.join(STATE_FILE)).ok().filter(|w| {
        w.pid(fields::PID) == Some(ctx.owner_pid)
            && ctx.conversation.is_some()
            && w.window_conversation() == ctx.conversation.as_deref()
    });
    if let (Some(window), Some(sessions)) = (window, dir.parent()) {
        ledger::seed_from_window(ctx, sessions, &window);
    }
}

/// The rules of `guards.json`; missing, empty or malformed means none.
fn load_rules(ctx: &Context) -> Vec<Rule> {
    file::read_text(&ctx.paths.guards, state::MAX_STATE_BYTES)
        .and_then(|text| rules::parse(&text).ok())
        .unwrap_or_default()
}

/// The state file of the call, with the session's state when finding it read it already.
fn locate(
    ctx: &Context,
    sessions: &Path,
) -> Result<(Option<PreloadState>, Option<state::Read>), HookError> {
    if let Some((dir, read)) = session::find_session_state(ctx) {
        let record = PreloadState::session(&dir);
        if read.is_some() || record.path.is_file() {
            return Ok((Some(record), read));
        }
    }
    // The session this process last used, now unreadable: fail open rather than gate.
    if let Some(text) = file::read_text(&session::cache_file(ctx), state::MAX_STATE_BYTES) {
        let cached = Path::new(text.trim()).join(STATE_FILE);
        if let Err(err @ state::StateError::Corrupt { .. }) = state::load(&cached) {
            return Err(err.into());
        }
    }
    if ctx.env.is_one(env::PRELOAD_AUTO_ACTIVATE) {
        if let Some(dir) = auto_activate(ctx, sessions)? {
            return Ok((Some(PreloadState::session(&dir)), None));
        }
    }
    let seed = session::seed_path(sessions, ctx.owner_pid);
    Ok((seed.is_file().then(|| PreloadState::seed(seed)), None))
}

/// Opt-in (`PRELOAD_AUTO_ACTIVATE=1`): activate `sessions/YYYY_MM_DD_ADHOC` as a `/do` session
/// owned by this process, taking over the seed's tracking (the shared activation). `None` when
/// that directory already has a state (someone else's).
fn auto_activate(ctx: &Context, sessions: &Path) -> Result<Option<PathBuf>, HookError> {
    let (y, m, d, ..) = clock::utc_parts(ctx.now);
    let dir = sessions.join(format!("{y:04}_{m:02}_{d:02}_ADHOC"));
    let path = dir.join(STATE_FILE);
    if fs::symlink_metadata(&path).is_ok() {
        return Ok(None);
    }
    activation::activate(ctx, &dir, Some("do")).map_err(|f| HookError::Other(f.to_string()))?;
    // An ad-hoc session has no phases to load: count and discover from the first call.
    state::update(&path, Write::durable(ctx.lock_deadline()), |s| {
        s.remove(fields::LOADING);
    })?;
    Ok(Some(dir))
}

/// The session at `path` hands over: its lifecycle says so (durably: the next start reads it).
fn mark_dehydrating(ctx: &Context, path: &Path) {
    let _ = state::update(path, Write::durable(ctx.lock_deadline()), |s| {
        s.set_lifecycle(&Lifecycle::Dehydrating);
    });
}

/// A call in the owner's session, whose state `read` was read once, without the lock, and the
/// call decided on that read; the counters go to their own file (see [`counters`]). The lock
/// is taken only when the decision changes the state (discovery, a claim, a stash, a delivered
/// rule, the conversation's records), and then the decision is made again on what the locked
/// read finds unless that is what was decided on. A call with a seed to adopt or a
/// conversation to tag ([`ledger::is_due`]) decides once, under the lock.
/// When the lock cannot be had in time, the answer still stands on the unlocked read: the
/// rules' verdict, allow-rule text in the answer itself, queued files left queued.
fn session_call(
    decision: Decision<'_>,
    record: &PreloadState,
    read: state::Read,
) -> Result<Plan, HookError> {
    let Decision { ctx, call, .. } = decision;
    let state::Read { state: read, text } = read;
    let path = record.path.as_path();
    if let Some(pass) = pass_through(call, &read) {
        if pass == Pass::Dehydrating {
            mark_dehydrating(ctx, path);
        }
        return Ok(rewound_only(ctx, call, record, &read));
    }
    let view = match &count_of(call, &read) {
        Some(delta) => Some(counters::update(
            path,
            &read,
            ctx.lock_deadline(),
            ctx.deadline,
            delta,
        )?),
        None => None,
    };
    let mut base = read;
    let mirrored = view.as_ref().is_some_and(|view| view.mirror(&mut base));
    if view.as_ref().is_some_and(counters::Counters::pending) {
        // The count went to the journal: the latch, which the lock needs too, is busy past
        // the deadline. Decide on what was read, write nothing.
        return Ok(decision.on(&mut base, Writes::Impossible));
    }
    // Under the lock: the counters as they are then, not this call's view of them.
    let settle = |s: &mut State| {
        if view.is_some() {
            counters::mirror_latest(path, s);
        }
    };
    let change = |s: &mut State| decision.on(s, Writes::Allowed);
    let locked = if ledger::is_due(ctx, record, &base) {
        // A seed to adopt or a conversation to tag: the decision is made once, under the lock,
        // on what the adoption makes of the state (a trial on the unlocked read would be thrown
        // away).
        ledger::update(ctx, record, ctx.per_call(), |s| {
            settle(s);
            change(s)
        })
    } else {
        let commit =
            |write, change: &dyn Fn(&mut State) -> Plan| ledger::update(ctx, record, write, change);
        match state::optimistic(base, &text, ctx.per_call(), &change, &settle, commit) {
            Tried::Changed(locked) => locked,
            Tried::Unchanged(trial, plan) => {
                if mirrored {
                    // Only the counters' mirror for the engine's readers: never worth a wait (a
                    // native holder of the lock took it after this count, and mirrors it).
                    let known = || {
                        let mut s = trial;
                        settle(&mut s);
                        Some((s, ()))
                    };
                    let write = Write::per_call(Instant::now()).from_read(&text, known);
                    let _ = state::update(path, write, settle);
                }
                return Ok(plan);
            }
        }
    };
    match locked {
        Err(err) if err.is_late() => {
            // The read again, as it was before any decision (it parsed once, so it parses).
            let mut unlocked = State::parse(&text).unwrap_or_default();
            if let Some(view) = &view {
                view.mirror(&mut unlocked);
            }
            Ok(decision.on(&mut unlocked, Writes::Impossible))
        }
        locked => Ok(locked?),
    }
}

/// What the call does to the session's counters: `engine log` starts its agent over, a tool
/// call counts unless the session is quiet or the tool is never counted.
fn count_of(call: &Call, s: &State) -> Option<counters::Delta> {
    if call.engine == Some(EngineCommand::Log) {
        return Some(counters::Delta::Reset {
            key: call.key.clone(),
            main: !call.is_sub(),
        });
    }
    let counted = !is_quiet(s) && call.engine.is_none() && !UNCOUNTED_TOOLS.contains(&call.tool);
    counted.then(|| counters::Delta::Count {
        key: call.key.clone(),
        main: !call.is_sub(),
        tool: call.tool.to_owned(),
        edited: call.input.tool_input_str("file_path").map(str::to_owned),
    })
}

/// A call let through untouched (a lifecycle bypass) still takes what a rewind dropped out of
/// the record, which says what the branch holds: nothing goes out now, and the files wait in
/// the queue as every queued file does while the session restarts.
fn rewound_only(ctx: &Context, call: &Call, record: &PreloadState, read: &State) -> Plan {
    let mut plan = Plan::default();
    if call.is_sub() || !read.has_call_records(Records::Carriers) {
        return plan;
    }
    if let Ok(batch) = ledger::update(ctx, record, ctx.per_call(), |s| {
        crate::pipeline::preload::requeue_rewound(ctx, s)
    }) {
        plan.batch = batch;
    }
    plan
}

/// Lifecycle bypasses: the call is allowed with no rule evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Allowed as it is.
    Allow,
    /// `engine session dehydrate` not recognised as an engine command (a prefix before it):
    /// the session is marked dehydrating.
    Dehydrating,
}

fn pass_through(call: &Call, s: &State) -> Option<Pass> {
    if call.engine == Some(EngineCommand::Dehydrate) {
        return Some(Pass::Dehydrating);
    }
    if call.tool == "Skill"
        && call.input.tool_input_str("skill") == Some("session")
        && call
            .input
            .tool_input_str("args")
            .is_some_and(|a| a.contains("continue"))
    {
        return Some(Pass::Allow);
    }
    let dehydrating = s.lifecycle_or_active() == Lifecycle::Dehydrating;
    (dehydrating || s.flag(fields::KILL_REQUESTED)).then_some(Pass::Allow)
}

#[cfg(test)]
mod tests;
