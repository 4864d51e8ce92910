//! The preload rule's claim: the due files a call's PreToolUse answer carries, and those
//! stashed for its PostToolUse.

use super::{Call, Plan, Writes};
use crate::Context;
use crate::mechanisms::ledger;
use crate::pipeline::preload::{self, Audience, Batch, Outcome, Request};
use crate::pipeline::rules::Matched;
use crate::primitives::delivery::{self, MIN_BUDGET, Packer};
use crate::primitives::env;
use crate::state::State;
use crate::state::dedup::InContext;

/// Claim a preload rule's due files twice over: first into this answer (Claude Code since
/// 2.1.9, and Codex, place a PreToolUse context with the tool's result, as they do
/// PostToolUse's), then what did not fit within `room` characters of the stash for
/// PostToolUse; the blocks stashed. A file going out in parts sends one part per call on one
/// channel: its parts waiting in the stash go first, and a part this answer carries is
/// followed by the next on the next call, never by a stashed one that PostToolUse might not
/// have room for while another hook sends the part after it. A main-agent call's
/// record notes what its answer carried, as PostToolUse notes what it drains.
pub(super) fn claim_twice(
    ctx: &Context,
    call: &Call,
    s: &mut State,
    rule: &Matched,
    room: usize,
    writes: Writes,
    plan: &mut Plan,
) -> Vec<String> {
    if writes == Writes::Impossible {
        return Vec::new();
    }
    let mut requests = requests_of(ctx, s, rule);
    if ctx.env.get(env::PRELOAD_PRETOOLUSE_CONTEXT) != Some("0") {
        // A file with parts waiting in the stash waits for them (every pass defers it).
        // The answer's text ends with a newline, as PostToolUse's does.
        let room = ctx.budget.saturating_sub(1);
        let carried = claim(ctx, call, s, &requests, room, &mut plan.index);
        if !carried.blocks.is_empty() && !call.is_sub() {
            let text = carried.text();
            let files = delivery::block_paths(&text);
            ledger::note_call_deliveries(s, call.input.tool_use_id(), &files, &text);
        }
        requests.retain(|r| {
            let path = ctx.normalize(&r.path);
            carried
                .outcomes
                .iter()
                .all(|(p, o)| *p != path || *o == Outcome::Queued)
        });
        plan.carried.extend(carried.blocks.iter().cloned());
        plan.batch.extend(carried);
    }
    let stashed = claim(ctx, call, s, &requests, room, &mut plan.index);
    let blocks = stashed.blocks.clone();
    plan.batch.extend(stashed);
    blocks
}

/// A preload rule's files, by priority.
pub(super) fn requests_of(ctx: &Context, s: &State, rule: &Matched) -> Vec<Request> {
    let source = format!("guards({})", rule.id);
    let requests = rule
        .payload
        .preload_files()
        .iter()
        .map(|f| Request::new(f.as_str(), source.as_str()))
        .collect();
    preload::by_priority(ctx, s, requests)
}

/// Claim `requests` for the call's agent within `room` characters, with the decision's shared
/// `index` ([`preload::apply_in`]): nothing when there is no room or nothing to claim (the
/// files stay queued).
pub(super) fn claim(
    ctx: &Context,
    call: &Call,
    s: &mut State,
    requests: &[Request],
    room: usize,
    index: &mut Option<InContext>,
) -> Batch {
    if room < MIN_BUDGET || requests.is_empty() {
        return Batch::default();
    }
    let mut packer = Packer::new(room);
    let audience = call.agent.map_or(Audience::Main, Audience::SubAgent);
    preload::apply_in(
        ctx,
        s,
        requests,
        preload::Mode::Claim,
        &mut packer,
        audience,
        index,
    )
}
