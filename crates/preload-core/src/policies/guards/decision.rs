//! What the guard engine decides on one state ([`Decision::on`], step by step): the call's
//! bookkeeping, what the paths it touches queue, the rules' verdict ([`verdict`]), and what the
//! verdict puts in the answer and the stash ([`answer`], with the preload rule's [`claim`]).

use super::call::{Call, Writes, is_quiet};
use crate::Context;
use crate::mechanisms::discovery;
use crate::mechanisms::ledger;
use crate::mechanisms::session::PreloadState;
use crate::pipeline::preload::{self, Batch};
use crate::pipeline::rules::Rule;
use crate::pipeline::runner::answer::SEPARATOR;
use crate::primitives::delivery;
use crate::state::State;
use crate::state::dedup::InContext;

mod answer;
mod claim;
mod verdict;

/// A tmux paste to send after the write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Paste {
    /// The text typed.
    pub(super) text: String,
    /// Clear what the pane is doing first.
    pub(super) interrupt: bool,
}

/// What one decision produced.
#[derive(Debug, Default)]
pub(super) struct Plan {
    /// The deny reason, when the call is denied.
    pub(super) deny: Option<String>,
    /// The files discovered, claimed or queued.
    pub(super) batch: Batch,
    /// `(file, source)` of every file stashed.
    pub(super) stashed: Vec<(String, String)>,
    /// Pastes to send after the write.
    pub(super) pastes: Vec<Paste>,
    /// Allow-rule text handed out in this answer (when the state could not be written).
    pub(super) direct: Vec<String>,
    /// Blocks of the due files this answer carries (the PreToolUse channel).
    pub(super) carried: Vec<String>,
    /// The index of the files in context the decision's passes share (see
    /// [`preload::apply_in`]): discovery and the claims on a large state build it once.
    pub(super) index: Option<InContext>,
}

impl Plan {
    /// The context of this call's PreToolUse answer: what it carries, or the allow rules' text
    /// when the state could not be written; `None` when it says nothing.
    pub(super) fn context(&self) -> Option<String> {
        let mut parts = self.direct.clone();
        if !self.carried.is_empty() {
            parts.push(delivery::join_blocks(&self.carried));
        }
        (!parts.is_empty()).then(|| parts.join(SEPARATOR))
    }
}

/// What a decision on one call needs: the call, the rules, the state file it works on (`None`:
/// no session and no seed, nothing to write to). Made once per call; [`Self::on`] decides on a
/// state.
#[derive(Clone, Copy)]
pub(super) struct Decision<'a> {
    pub(super) ctx: &'a Context,
    pub(super) call: &'a Call<'a>,
    pub(super) rules: &'a [Rule],
    pub(super) target: Option<&'a PreloadState>,
}

impl Decision<'_> {
    /// The rules on `s`, step by step: the call's bookkeeping as the window's latest, what the
    /// paths it touches queue, the rules' verdict, the deny reason, the allow rules' content
    /// stashed, the rules marked delivered. What changes `s` only when `writes` allows it.
    /// Counting is done before (see [`super::session_call`]).
    pub(super) fn on(&self, s: &mut State, writes: Writes) -> Plan {
        let Self {
            ctx, call, target, ..
        } = *self;
        let mut plan = Plan::default();
        let writable = writes == Writes::Allowed && target.is_some();
        if writable && !call.is_sub() {
            // This call is the latest now: what an earlier one carried is not what a
            // compaction keeps, even when no hook of this call gets to add to the record (one
            // killed).
            ledger::note_call_deliveries(s, call.input.tool_use_id(), &[], "");
            // A file in context that changed on disk goes out again, with this call, and so
            // does one a rewind took out of the context, unless the call expands it itself.
            plan.batch.extend(preload::requeue_changed(ctx, s));
            plan.batch.extend(preload::requeue_rewound(ctx, s));
            if let Some(skill) = call.skill() {
                let id = call.input.tool_use_id();
                plan.batch
                    .extend(preload::record_expanded(ctx, s, skill, id));
            }
        }
        if writable && call.engine.is_none() && !is_quiet(s) && !call.is_sub() {
            // The paths the call touches: a file tool's own, or (Codex) what its shell reads
            // and its patch names.
            let touched = discovery::touched(ctx.env.agent(), call.input);
            for raw in &touched.paths {
                let queued = preload::queue_touched(ctx, s, raw, touched.edits, &mut plan.index);
                plan.batch.extend(queued);
            }
        }
        let verdict = verdict::of(self, s);
        answer::give(self, s, &verdict, writes, &mut plan);
        plan
    }
}
