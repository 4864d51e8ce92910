//! Files a rewind took out of the context window: the client's transcript shows the newest
//! prompt hung off an earlier entry, and the calls written since are off the active branch, so
//! what they carried is queued once more, to go out with this call.
//!
//! Read once per prompt, and only by a window whose calls carried something: the first tool call
//! of a prompt reads the end of the transcript (and the rest of it only when the prompt does not
//! follow on from the entry before it); later calls see the prompt already checked. Without a readable transcript nothing changes, and the
//! delivery log says so (`no-transcript`).

use super::{Batch, Request};
use crate::mechanisms::context::Context;
use crate::mechanisms::ledger;
use crate::primitives::delivery::Event;
use crate::state::{QUEUED, Records, State};

/// The `source` of the queue events of rewound files.
pub const REWIND_SOURCE: &str = "rewind";

/// Queue again, inside the caller's locked update, what the calls a rewind abandoned carried,
/// once per prompt.
pub fn requeue_rewound(ctx: &Context, state: &mut State) -> Batch {
    let mut batch = Batch::default();
    // Nothing a call carried: nothing a rewind could take out, and nothing to read.
    if !state.has_call_records(Records::Carriers) {
        return batch;
    }
    let Some(turn) = ctx.latest_turn() else {
        if let Some(path) = ctx.transcript().filter(|p| !p.is_file()) {
            batch.note(
                Event::NoTranscript,
                &path.to_string_lossy(),
                REWIND_SOURCE,
                "unreadable",
            );
        }
        return batch;
    };
    if !ledger::check_branch_at(state, &turn.prompt) {
        return batch;
    }
    let mut abandoned = turn.abandoned.clone();
    abandoned.extend(
        turn.abandoned_prompts
            .iter()
            .map(|p| ledger::prompt_carrier(p)),
    );
    abandoned.extend(
        turn.abandoned_starts
            .iter()
            .map(|at| ledger::start_carrier(at)),
    );
    for file in ledger::take_back(state, &abandoned) {
        batch.note(Event::QueuePending, &file, REWIND_SOURCE, "rewound");
    }
    batch
}

/// A `Skill` call expands its skill's SKILL.md itself: one waiting in the main agent's queue
/// (a rewind took it back) is in the context with the call (`call`: its `tool_use_id`),
/// recorded now, so that no hook of the call sends it beside the client's copy.
pub fn record_expanded(ctx: &Context, state: &mut State, skill: &str, call: Option<&str>) -> Batch {
    let file = ctx.paths.skill_file(skill).to_string_lossy().into_owned();
    let path = ctx.normalize(&file);
    if !state.has_path(QUEUED, &path) {
        return Batch::default();
    }
    let batch = super::record(
        ctx,
        state,
        &[Request::new(file, format!("skill-call({skill})"))],
    );
    if let Some(id) = call {
        ledger::note_carried(state, id, &[path], "");
    }
    batch
}
