//! `preload-session-start` (`SessionStart`, every `source`): the session context line, the core
//! standards, the owner's active skill (SKILL.md, its FMT/INV references, the current phase's
//! commands and templates), the session artifacts and, on `startup`, the dehydrated-context
//! recovery, all delivered as `[Preloaded: …]` blocks and recorded as in context.
//!
//! A new Claude process is a new context window: the owner's active session (only the owner's)
//! gets `preloadedFiles` re-seeded and `touchedDirs`, `pendingPreloads`,
//! `pendingAllowInjections` cleared, and `sessions/.seeds/<owner-pid>.json` is written fresh.
//! What does not fit the output stays queued (files in `pendingPreloads`, text in
//! `pendingAllowInjections`), so nothing is silently cut.
//!
//! With `--chunk I/N` the text is generated once per `session_id` + `source` (a cache file and a
//! lock shared by the N registrations, [`crate::mechanisms::start_text`]) and slice I is printed; slices
//! hold whole blocks. What the text holds is planned in its `contents` module.

mod contents;
mod fork;
mod window;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use self::contents::{Fill, Plan};
use self::fork::fork_parent;
use self::window::{Window, choose_window, fork_of_unwritten, goes_on_from_history};
use crate::mechanisms::dehydrated;
use crate::mechanisms::ledger;
use crate::mechanisms::packs;
use crate::mechanisms::session::{self, STATE_FILE};
use crate::mechanisms::start_text::{self, Chunk, Lookup, Slots, StartText, StartTextError};
use crate::pipeline::preload;
use crate::pipeline::runner;
use crate::primitives::delivery::{self, Event, Packer};
use crate::primitives::hook::{HookEvent, HookSpec};
use crate::primitives::lock::StateLock;
use crate::primitives::transcript;
use crate::state::fields;
use crate::state::stamps;
use crate::state::{self, IN_CONTEXT, QUEUED, State, StateError};
use crate::{Context, HookError, HookInput, HookOutput};

/// Characters kept free in the last slot for the overflow pointer.
const POINTER_RESERVE: usize = 300;

/// The binary.
pub const SPEC: HookSpec = HookSpec {
    name: "session-start",
    binary: "preload-session-start",
    event: HookEvent::SessionStart,
    help: "preload-session-start: SessionStart hook (every source). Usage: [--chunk I/N]

Prints the session context line, the six core standards (+ docs/TOC.md), the owner's active
skill (SKILL.md, FMT/INV references, current-phase commands, templates), the session
artifacts and, on startup, the dehydrated-context recovery, as additionalContext JSON.
Re-seeds the owner's active session and writes sessions/.seeds/<owner-pid>.json; removes
seeds of dead processes. What does not fit stays queued for the next tool calls.
With --chunk I/N (one registration per I in 0..N-1) the text is generated once per
session_id+source and slice I is printed.

Reads stdin: source, session_id, cwd.
Env: HOME, CLAUDE_SUPERVISOR_PID/CLAUDE_PID, CLAUDE_SESSION_CACHE_DIR, WORKSPACE,
     PRELOAD_CACHE_DIR (default ${TMPDIR:-/tmp}/claude-preload-<uid>), PRELOAD_OUTPUT_BUDGET,
     PRELOAD_BUDGET_MS, PRELOAD_LOCK_TIMEOUT_MS, PRELOAD_TEST_LOG, HOOK_DEBUG.
Files: sessions/*/.state.json (the owner's; dehydratedContext of a restored one),
       sessions/.seeds/*.json, the cache directory.",
};

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let args = crate::primitives::system::entry::args();
    let chunk = start_text::parse_chunk(args);
    runner::main(&SPEC, move |input, ctx| match chunk {
        Ok(chunk) => handle_chunk(input, ctx, chunk),
        Err(_) => Ok(HookOutput::Silent),
    })
}

/// The policy of a wiring row (no arguments): registration `chunk`, as [`handle_chunk`].
pub fn policy(args: &[&str], chunk: Option<Chunk>) -> Option<runner::Policy> {
    let handler = move |input: &HookInput, ctx: &Context| handle_chunk(input, ctx, chunk);
    args.is_empty()
        .then(|| runner::Policy::only(SPEC.name, SPEC.event, handler))
}

/// One registration: the whole text (`None`) or slice I of N.
pub fn handle_chunk(
    input: &HookInput,
    ctx: &Context,
    chunk: Option<Chunk>,
) -> Result<HookOutput, HookError> {
    let Some(chunk) = chunk else {
        let slots = generate(input, ctx, 1)?;
        return Ok(output_of(slots.first().map_or(&[], Vec::as_slice)));
    };
    let blocks = cached_slot(input, ctx, chunk)?;
    Ok(output_of(&blocks))
}

fn output_of(blocks: &[String]) -> HookOutput {
    if blocks.is_empty() {
        HookOutput::Silent
    } else {
        HookOutput::Context(delivery::join_blocks(blocks))
    }
}

/// The blocks of this registration's slot: from the cache, or generated once under its lock.
fn cached_slot(input: &HookInput, ctx: &Context, chunk: Chunk) -> Result<Vec<String>, HookError> {
    let cache = StartText::open(&ctx.env, input, ctx.owner_pid).map_err(cache_failure)?;
    match cache.lookup(chunk, ctx.budget).map_err(cache_failure)? {
        Lookup::Found(blocks) => Ok(blocks),
        Lookup::Missing(writer) => {
            let mut slots = generate(input, ctx, chunk.total)?;
            // The text is recorded as delivered by now: it goes out even when the cache cannot
            // be written (a full disk), and the other registrations make it again.
            if let Err(err) = writer.write(&slots) {
                if ctx.debug() {
                    runner_note(ctx, &err.to_string());
                }
            }
            Ok(slots
                .get_mut(chunk.index)
                .map(std::mem::take)
                .unwrap_or_default())
        }
    }
}

#[allow(clippy::needless_pass_by_value)] // used as `map_err(cache_failure)`
fn cache_failure(err: StartTextError) -> HookError {
    match err {
        StartTextError::Lock { source, .. } => HookError::Lock(source),
        other => HookError::Other(other.to_string()),
    }
}

// ---------------------------------------------------------------------------------------------
// Generation.

/// On a compaction, the calls of the client's latest response (what it keeps), from its
/// transcript. A response a rewind abandoned is not on the branch the client compacts: it
/// keeps none of its calls.
fn in_flight(ctx: &Context, input: &HookInput, source: &str) -> Option<transcript::Calls> {
    if source != "compact" {
        return None;
    }
    let mut calls = transcript::calls(Path::new(input.transcript_path()?))?;
    let abandoned = ctx
        .latest_turn()
        .map_or(&[][..], |t| t.abandoned.as_slice());
    if calls.latest.iter().any(|c| abandoned.contains(c)) {
        calls.latest.clear();
    }
    Some(calls)
}

/// Generate the text for `slots` outputs, write the state, and return the blocks per slot.
/// Empty when the project has no sessions directory.
pub fn generate(input: &HookInput, ctx: &Context, slots: usize) -> Result<Slots, HookError> {
    let Some(sessions) = ctx.sessions_dir() else {
        return Ok(Vec::new());
    };
    let source = input.source().unwrap_or("startup").to_owned();
    let recovery = if source == "startup" {
        dehydrated::find(ctx)
    } else {
        None
    };
    let mut packer = slot_packer(ctx, slots);
    let plan = Plan {
        ctx,
        source: &source,
        recovery: recovery.as_ref(),
        in_flight: in_flight(ctx, input, &source),
    };

    let conversation = input.session_id().unwrap_or("").to_owned();
    let parent = fork_parent(ctx, &source, &conversation);
    let Window {
        session_dir,
        goes_on,
        resumed_seed,
    } = choose_window(ctx, &source, &conversation, parent.as_deref());
    // Only now: the seed of a resumed conversation belongs to a process that is gone.
    ledger::sweep_seeds(&sessions, ctx.lock_deadline());
    let from_session = session_dir.as_deref().and_then(|dir| {
        let mut attempt = packer.clone();
        let record = resumed_seed.as_ref().map(|(_, record)| record);
        let filled = fill_session(
            ctx,
            &plan,
            dir,
            (goes_on, record),
            &conversation,
            &mut attempt,
        )?;
        packer = attempt;
        Some(filled)
    });
    let (fill, mut seed, is_session) = if let Some((fill, preloaded)) = from_session {
        (fill, session::new_seed(ctx.owner_pid, &preloaded), true)
    } else {
        let fork = parent
            .as_deref()
            .zip(session_dir.as_deref())
            .filter(|_| resumed_seed.is_none())
            .and_then(|(parent, dir)| fork_of_unwritten(ctx, parent, dir));
        let resumed = fork.as_ref().or(resumed_seed.as_ref());
        let (fill, seed) = fill_seed(&plan, &sessions, resumed, &mut packer);
        (fill, seed, false)
    };
    if !conversation.is_empty() {
        seed.set_conversation(&conversation);
    }
    fill.batch.log(ctx, is_session);
    let seed_path = session::seed_path(&sessions, ctx.owner_pid);
    if write_seed(ctx, &seed_path, &seed) {
        // The seed of a resumed conversation was its dead process's; a fork's parent keeps its.
        let taken = resumed_seed.as_ref().filter(|_| parent.is_none());
        if let Some((old, _)) = taken.filter(|(old, _)| *old != seed_path) {
            let _ = fs::remove_file(old);
            let _ = fs::remove_file(ledger::carry_path(old));
        }
        let why = format!("session-start({source})");
        for file in seed.path_list(IN_CONTEXT) {
            ctx.log.record(Event::Seed, &file, &why, is_session, "new");
        }
    }
    if let Some(r) = &recovery {
        if !(is_session
            && session_dir
                .as_ref()
                .is_some_and(|d| d.join(STATE_FILE) == r.state))
        {
            let _ = state::update(&r.state, state::Write::durable(ctx.lock_deadline()), |s| {
                s.remove(fields::DEHYDRATED_CONTEXT);
            });
        }
    }

    let mut out = packer.into_slot_blocks();
    if fill.overflow > 0 {
        let pointer = format!(
            "[preload overflow: {} more item(s) did not fit the SessionStart output; they are \
             queued and arrive with the next tool calls]",
            fill.overflow
        );
        if let Some(last) = out.last_mut() {
            last.push(pointer);
        }
    }
    Ok(out)
}

/// The seed of a context window no session holds (a new one, or a resumed conversation's
/// record, `resumed`), filled into `packer`.
fn fill_seed(
    plan: &Plan<'_>,
    sessions: &Path,
    resumed: Option<&(PathBuf, State)>,
    packer: &mut Packer,
) -> (Fill, State) {
    let ctx = plan.ctx;
    let source = plan.source;
    let mut seed = contents::window_seed(ctx, sessions, source, resumed, plan.in_flight.as_ref());
    // A window that goes on holds what its branch holds: what a rewind took out comes again.
    let rewound = if resumed.is_some() {
        preload::requeue_rewound(ctx, &mut seed)
    } else {
        preload::Batch::default()
    };
    let mut fill = plan.fill(&mut seed, None, &[], packer);
    fill.batch.extend(rewound);
    if goes_on_from_history(source) {
        let delivered: Vec<String> = fill.batch.delivered().map(str::to_owned).collect();
        let at = ctx.transcript().and_then(transcript::branch::newest_entry);
        ledger::note_start_deliveries(
            &mut seed,
            source,
            at.as_deref(),
            &delivered,
            &fill.batch.text(),
        );
    }
    (fill, seed)
}

/// The packer of `slots` outputs, each within the budget, the last one keeping room for the
/// pointer to what did not fit.
fn slot_packer(ctx: &Context, slots: usize) -> Packer {
    let reserve = POINTER_RESERVE.min(ctx.budget / 4);
    let mut budgets = vec![ctx.budget; slots.max(1)];
    if let Some(last) = budgets.last_mut() {
        *last = last.saturating_sub(reserve);
    }
    Packer::slots(&budgets)
}

/// Re-seed (or, on resume, go on with) the session in `dir` and fill `packer`, in one locked
/// write; a window that goes on from a `record` (one it left elsewhere) takes its lists first.
/// `None` when the state is corrupt or locked: it is left as it is, and the seed carries this
/// context window.
fn fill_session(
    ctx: &Context,
    plan: &Plan<'_>,
    dir: &Path,
    (goes_on, record): (bool, Option<&State>),
    conversation: &str,
    packer: &mut Packer,
) -> Option<(Fill, Vec<String>)> {
    let path = dir.join(STATE_FILE);
    let dir = dir.to_path_buf();
    let mut carried: Vec<String> = Vec::new();
    // A new context window (or a resumed one with this process as its owner): the state is
    // written whatever the change, without a copy taken to tell.
    let write = state::Write::durable(ctx.lock_deadline()).every_time();
    let result = state::update(&path, write, |s| {
        // Another conversation's window, replaced here (or forked from here), stays resumable:
        // recorded as it was, with the skills its client holds (a fork leaves a record of it
        // already there as it is).
        if let Some(sessions) = dir.parent() {
            if plan.source == "fork" && record.is_none() {
                ledger::keep_window(sessions, s, conversation);
            } else {
                ledger::archive_window(sessions, s, conversation);
            }
        }
        // A conversation that goes on here from the record its window left elsewhere.
        if let Some(record) = record {
            ledger::restore_window(s, record);
        }
        // Which skills the client process holds, to put back after its next compaction.
        ledger::skills_held_at_start(s, plan.source);
        // A window that goes on holds what its branch holds: what a rewind took out comes again.
        let mut rewound = preload::Batch::default();
        if goes_on {
            s.set_pid(ctx.owner_pid);
            rewound = preload::requeue_rewound(ctx, s);
        } else {
            // The client keeps the calls a compaction happened after, with what the hooks added
            // to them: those files are in the new context window from its start.
            let kept = ledger::KeptCall::of(s, plan.in_flight.as_ref(), ctx.env.agent());
            // The packs the compacted window held come again (the summary does not keep them).
            carried = s
                .paths(IN_CONTEXT)
                .filter(|p| packs::is_key(p))
                .map(str::to_owned)
                .collect();
            reset(s);
            if plan.source == "compact" {
                kept.carry_into(s);
                stamps::retain(s, &kept.files);
            } else {
                // A new conversation, or one that does not go on: no call of it is kept.
                stamps::retain(s, &[]);
                s.remove(fields::CALL_DELIVERIES);
            }
        }
        if !conversation.is_empty() {
            s.set_conversation(conversation);
        }
        let mut fill = plan.fill(s, Some(&dir), &carried, packer);
        if goes_on_from_history(plan.source) {
            let delivered: Vec<String> = fill.batch.delivered().map(str::to_owned).collect();
            let at = ctx.transcript().and_then(transcript::branch::newest_entry);
            ledger::note_start_deliveries(
                s,
                plan.source,
                at.as_deref(),
                &delivered,
                &fill.batch.text(),
            );
        }
        fill.batch.extend(rewound);
        if plan.recovery.is_some_and(|r| r.state == path) {
            s.remove(fields::DEHYDRATED_CONTEXT);
        }
        (fill, s.path_list(IN_CONTEXT))
    });
    match result {
        Ok(filled) => {
            if !conversation.is_empty() {
                session::note(&dir, &[session::Key::Conversation(conversation)]);
            }
            if goes_on {
                session::remember(ctx, &dir);
                // The session is the conversation's record: no ended one of it stays behind.
                if let Some(root) = dir.parent() {
                    session::forget_window_records(root, conversation);
                }
            }
            Some(filled)
        }
        Err(err) => {
            if ctx.debug() {
                runner_note(ctx, &err.to_string());
            }
            None
        }
    }
}

#[allow(clippy::print_stderr)]
fn runner_note(ctx: &Context, message: &str) {
    eprintln!("preload-{}: {message}", ctx.hook);
}

/// The fields a new context window clears.
fn reset(state: &mut State) {
    state.clear_paths(IN_CONTEXT);
    state.clear_touched_dirs();
    state.clear_paths(QUEUED);
    state.clear_stash();
    state.remove(fields::PRELOAD_PARTS);
    state.remove(fields::PRELOAD_PARTS_HELD);
    state.remove(fields::PRELOAD_PARTS_CUT);
    // The new window's branch starts with it.
    state.remove(fields::CARRIERS);
    state.remove(fields::BRANCH_AT);
}

/// Write the fresh seed under its lock; an unparsable seed is left untouched.
fn write_seed(ctx: &Context, path: &Path, seed: &State) -> bool {
    let Some(dir) = path.parent() else {
        return false;
    };
    if fs::create_dir_all(dir).is_err() {
        return false;
    }
    let Ok(lock) = StateLock::acquire(path, ctx.lock_deadline()) else {
        return false;
    };
    let old_seed = state::load(path);
    let old_carry = state::load(&ledger::carry_path(path));
    let corrupt = |old: &Result<State, StateError>| matches!(old, Err(StateError::Corrupt { .. }));
    let saved = !corrupt(&old_seed)
        && !corrupt(&old_carry)
        && ledger::write_seed(
            &lock,
            path,
            seed,
            old_seed.as_ref().ok(),
            old_carry.as_ref().ok(),
            state::Durability::Durable,
        )
        .is_ok();
    lock.release();
    saved
}
