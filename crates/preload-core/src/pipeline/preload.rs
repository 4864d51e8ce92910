//! `preload_ensure`: the single way a file enters the agent's context or the queue.
//!
//! Every operation works on a [`State`] inside the caller's locked update, so counting,
//! discovery, claiming and stashing can share one read-modify-write. Events are collected in the
//! [`Batch`] and written to the delivery log only after the update was saved.

use std::path::Path;

use crate::mechanisms::context::Context;
use crate::mechanisms::session::PreloadState;
use crate::pipeline::runner::HookError;
use crate::primitives::delivery::{self, Event, Packer};
use crate::state::State;
use crate::state::dedup::{Hit, InContext};
use crate::state::refs::Resolver;
use crate::state::{IN_CONTEXT, Paths};

pub use crate::state::Audience;

mod priority;
pub use priority::{Priority, by_priority};

mod pass;
use pass::Pass;

mod source;

mod changed;
pub use changed::{CHANGED_SOURCE, requeue_changed};

mod rewound;
pub use rewound::{REWIND_SOURCE, record_expanded, requeue_rewound};

mod touched;
pub use touched::queue_touched;

mod due;
pub use due::pack_requests;

/// How requested files are handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Deliver now in this hook's output (`direct-deliver`).
    Direct,
    /// Deliver now from the queue (`claim-deliver`).
    Claim,
    /// Queue in `pendingPreloads` for the next tool call (`queue-pending`).
    Queue,
}

/// One file to ensure, and why it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The path (normalised inside).
    pub path: String,
    /// Why (`templates(implement)`, `phase-cmds(1)`, …).
    pub source: String,
}

impl Request {
    /// A request.
    pub fn new(path: impl Into<String>, source: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            source: source.into(),
        }
    }
}

/// What happened to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Its content (or its last part) is in the batch text.
    Delivered,
    /// Some parts went out; the rest stays queued.
    Partial,
    /// In `pendingPreloads` (queued now, or did not fit the budget).
    Queued,
    /// Already in context.
    InContext(Hit),
    /// Already queued.
    AlreadyQueued,
    /// Missing, not a regular file, or empty: dropped from the queue.
    Unavailable,
}

/// One event waiting for the delivery log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedEvent {
    /// The event.
    pub event: Event,
    /// The file.
    pub file: String,
    /// Why.
    pub source: String,
    /// `dedupResult`.
    pub dedup: String,
}

/// The result of one ensure pass.
#[derive(Debug, Default)]
pub struct Batch {
    /// Blocks for the output, in delivery order.
    pub blocks: Vec<String>,
    /// Outcome per request (normalised path, outcome).
    pub outcomes: Vec<(String, Outcome)>,
    /// Log events.
    pub events: Vec<LoggedEvent>,
}

impl Batch {
    /// The blocks joined.
    pub fn text(&self) -> String {
        delivery::join_blocks(&self.blocks)
    }

    /// Paths fully delivered.
    pub fn delivered(&self) -> impl Iterator<Item = &str> {
        self.outcomes
            .iter()
            .filter(|(_, o)| *o == Outcome::Delivered)
            .map(|(p, _)| p.as_str())
    }

    fn note(&mut self, event: Event, file: &str, source: &str, dedup: &str) {
        self.events.push(LoggedEvent {
            event,
            file: file.into(),
            source: source.into(),
            dedup: dedup.into(),
        });
    }

    /// Write the collected events to the delivery log.
    pub fn log(&self, ctx: &Context, session_exists: bool) {
        for e in &self.events {
            ctx.log
                .record(e.event, &e.file, &e.source, session_exists, &e.dedup);
        }
    }

    /// Append another batch.
    pub fn extend(&mut self, other: Batch) {
        self.blocks.extend(other.blocks);
        self.outcomes.extend(other.outcomes);
        self.events.extend(other.events);
    }
}

/// The reference resolver for this call.
pub fn resolver(ctx: &Context) -> Resolver {
    Resolver {
        project_root: Some(ctx.project_root.clone()),
        claude_dir: ctx.paths.claude.clone(),
        engine_directives: ctx.paths.engine_directives.clone(),
        seen: ctx.physical_dirs.clone(),
    }
}

const ENGINE_COMMANDS: &str = "/engine/.directives/commands/";

/// `[Override: shadows <global>]` when a local CMD file shadows a preloaded engine one.
fn override_of(state: &State, normalized: &str) -> Option<String> {
    let name = Path::new(normalized).file_name()?.to_str()?;
    let is_md = Path::new(name).extension().is_some_and(|e| e == "md");
    if !(name.starts_with("CMD_") && is_md) || normalized.contains(ENGINE_COMMANDS) {
        return None;
    }
    let suffix = format!("{ENGINE_COMMANDS}{name}");
    state
        .path_list(IN_CONTEXT)
        .into_iter()
        .find(|p| p.ends_with(&suffix))
}

/// How many parts of `path` are out to `who`'s window (0 when none).
fn parts_done(state: &State, who: Audience<'_>, path: &str) -> usize {
    state
        .parts_done(who, path)
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0)
}

/// The parts of `path` (0-based, `start..end`) the main agent's window already holds without
/// the earlier ones, when the file is cut into the same `total` parts as then.
fn parts_held(state: &State, path: &str, total: usize) -> Option<(usize, usize)> {
    let run = state.parts_held(path)?;
    let [first, last, n] = run.map(|v| usize::try_from(v).unwrap_or(usize::MAX));
    (n == total && first > 1 && first <= last && last <= n).then_some((first - 1, last))
}

/// Forget which parts of `path` the window held (the file is whole in it, or gone), and how
/// many parts `who`'s file was cut into.
fn clear_parts_held(state: &mut State, who: Audience<'_>, path: &str) {
    state.set_parts_held(path, None);
    state.set_parts_cut(who, path, None);
}

/// The core of `preload_ensure` on a state inside the caller's locked update, for the main
/// agent.
pub fn apply(
    ctx: &Context,
    state: &mut State,
    requests: &[Request],
    mode: Mode,
    packer: &mut Packer,
) -> Batch {
    apply_for(ctx, state, requests, mode, packer, Audience::Main)
}

/// [`apply`] for a given audience.
pub fn apply_for(
    ctx: &Context,
    state: &mut State,
    requests: &[Request],
    mode: Mode,
    packer: &mut Packer,
    audience: Audience<'_>,
) -> Batch {
    let mut index = None;
    apply_in(ctx, state, requests, mode, packer, audience, &mut index)
}

/// [`apply_for`] with the index of what the audience holds that passes before this one, on the
/// same state, built and followed (`index`; `None`, or another audience's: this pass starts
/// one): a call that discovers and then claims on a session of thousands of files builds it
/// once. The index follows only what passes add, so nothing but passes may change the
/// audience's files in context between them.
pub fn apply_in(
    ctx: &Context,
    state: &mut State,
    requests: &[Request],
    mode: Mode,
    packer: &mut Packer,
    audience: Audience<'_>,
    index: &mut Option<InContext>,
) -> Batch {
    let list = Paths::InContext(audience);
    let own = index.take().filter(|i| i.is_for(list));
    let mut pass = Pass::new(ctx, audience, own.unwrap_or_else(|| InContext::new(list)));
    pass.in_context.expect(requests.len());
    for request in requests {
        let path = ctx.normalize(&request.path);
        let outcome = if let Some(hit) = pass.in_context.check(state, &path, &ctx.file_ids) {
            pass.skip(state, request, &path, hit)
        } else if mode == Mode::Queue {
            pass.queue(state, request, &path)
        } else {
            pass.deliver(state, request, &path, mode, packer)
        };
        pass.batch.outcomes.push((path, outcome));
    }
    sub_agent_sources(&mut pass.batch, audience);
    *index = Some(pass.in_context);
    pass.batch
}

/// Record files that reached the context some other way (Claude Code's own skill expansion) as
/// in context, inside the caller's locked update: each new one goes into `preloadedFiles`
/// (logged `direct-deliver` with its source, since it did enter the context), leaves the queue,
/// and has its references queued like a delivered file. Files already in context log a skip.
pub fn record(ctx: &Context, state: &mut State, requests: &[Request]) -> Batch {
    record_for(ctx, state, requests, Audience::Main)
}

/// [`record`] for a given audience (a sub-agent's own `Skill` call loaded the file into its own
/// conversation): its record, its queue.
pub fn record_for(
    ctx: &Context,
    state: &mut State,
    requests: &[Request],
    audience: Audience<'_>,
) -> Batch {
    let mut pass = Pass::new(ctx, audience, InContext::new(Paths::InContext(audience)));
    pass.in_context.expect(requests.len());
    for request in requests {
        let path = ctx.normalize(&request.path);
        let outcome = if let Some(hit) = pass.in_context.check(state, &path, &ctx.file_ids) {
            pass.skip(state, request, &path, hit)
        } else {
            pass.record(state, request, &path)
        };
        pass.batch.outcomes.push((path, outcome));
    }
    sub_agent_sources(&mut pass.batch, audience);
    pass.batch
}

/// A sub-agent's events name it in their source.
fn sub_agent_sources(batch: &mut Batch, audience: Audience<'_>) {
    if let Audience::SubAgent(agent) = audience {
        for event in &mut batch.events {
            event.source = delivery::sub_agent_source(&event.source, agent);
        }
    }
}

/// The queued files as claim requests (the preload rule's `$pendingPreloads`), in the order
/// they go out ([`by_priority`]).
pub fn pending_requests(ctx: &Context, state: &State, source: &str) -> Vec<Request> {
    pending_requests_for(ctx, state, source, Audience::Main)
}

/// [`pending_requests`] of one audience's own queue.
pub fn pending_requests_for(
    ctx: &Context,
    state: &State,
    source: &str,
    audience: Audience<'_>,
) -> Vec<Request> {
    let requests = state
        .path_list(Paths::Queued(audience))
        .into_iter()
        .map(|p| Request::new(p, source))
        .collect();
    by_priority(ctx, state, requests)
}

/// `preload_ensure` as one locked update of `target`; events are logged after the save.
pub fn ensure(
    ctx: &Context,
    target: &PreloadState,
    requests: &[Request],
    mode: Mode,
    packer: &mut Packer,
) -> Result<Batch, HookError> {
    let batch = crate::mechanisms::ledger::update(ctx, target, ctx.per_call(), |s| {
        apply(ctx, s, requests, mode, packer)
    })?;
    batch.log(ctx, target.is_session);
    Ok(batch)
}

#[cfg(test)]
mod tests;
