//! One pass over a list of requests: dedup against the context, parts, packing into the budget, recording.

use std::path::Path;

use super::source::{self, Source};
use super::{
    Audience, Batch, Mode, Outcome, Request, clear_parts_held, override_of, parts_done, parts_held,
    resolver,
};
use crate::mechanisms::context::Context;
use crate::mechanisms::stash;
use crate::primitives::delivery::{self, Event, FileBody, Packer};
use crate::state::dedup::{Hit, InContext};
use crate::state::refs::Resolver;
use crate::state::stamps;
use crate::state::{PartsCut, Paths, State};

/// One ensure pass over a state.
pub(super) struct Pass<'a, 'w> {
    ctx: &'a Context,
    pub(super) in_context: InContext,
    resolver: Resolver,
    pub(super) max_bytes: u64,
    pub(super) batch: Batch,
    /// Whose context window the pass fills.
    audience: Audience<'w>,
    /// True for the main agent, whose deliveries are stamped for change detection.
    stamps: bool,
}

impl<'a, 'w> Pass<'a, 'w> {
    pub(super) fn new(ctx: &'a Context, audience: Audience<'w>, in_context: InContext) -> Self {
        Self {
            ctx,
            in_context,
            resolver: resolver(ctx),
            max_bytes: ctx.max_file_bytes(),
            batch: Batch::default(),
            audience,
            stamps: audience == Audience::Main,
        }
    }

    /// Forget the file's progress in parts (it is whole in the window, or gone).
    fn forget_parts(&self, state: &mut State, path: &str) {
        state.set_parts_done(self.audience, path, None);
        clear_parts_held(state, self.audience, path);
    }

    /// Take a file out of the audience's queue.
    fn unqueue(&self, state: &mut State, path: &str, requested: &str) {
        state.remove_path(Paths::Queued(self.audience), path);
        state.remove_path(Paths::Queued(self.audience), requested);
    }

    /// Already in context: note it, and drop a stale queue entry.
    pub(super) fn skip(
        &mut self,
        state: &mut State,
        request: &Request,
        path: &str,
        hit: Hit,
    ) -> Outcome {
        let event = if hit == Hit::Inode {
            Event::SkipInode
        } else {
            Event::SkipDedup
        };
        self.batch.note(event, path, &request.source, hit.as_str());
        self.unqueue(state, path, &request.path);
        Outcome::InContext(hit)
    }

    /// Queue for the next tool call.
    pub(super) fn queue(&mut self, state: &mut State, request: &Request, path: &str) -> Outcome {
        if state.add_path(Paths::Queued(self.audience), path) {
            self.batch
                .note(Event::QueuePending, path, &request.source, "new");
            Outcome::Queued
        } else {
            Outcome::AlreadyQueued
        }
    }

    /// Record as in context a file the client delivered itself.
    pub(super) fn record(&mut self, state: &mut State, request: &Request, path: &str) -> Outcome {
        let found = source::read(self.ctx, path, self.max_bytes);
        if found.body == FileBody::Unavailable {
            return Outcome::Unavailable;
        }
        self.forget_parts(state, path);
        self.in_context.append(state, path, &self.ctx.file_ids);
        self.unqueue(state, path, &request.path);
        self.stamp(state, path, &found);
        self.batch
            .note(Event::DirectDeliver, path, &request.source, "new");
        if let FileBody::Text(text) = &found.body {
            self.queue_references(state, path, text);
        }
        Outcome::Delivered
    }

    /// Record (or forget) what a delivery of `path` sent, for the main agent.
    fn stamp(&self, state: &mut State, path: &str, found: &Source) {
        if !self.stamps {
            return;
        }
        match &found.stamp {
            Some(stamp) => stamps::set(state, path, stamp),
            None => stamps::remove(state, path),
        }
    }

    /// The header notes of a delivery of `path`: the source's own, and `updated` when what the
    /// main agent was sent before differs.
    fn labels_of(&self, state: &State, path: &str, found: &Source) -> Vec<String> {
        let mut labels = found.labels.clone();
        if self.stamps {
            if let (Some(before), Some(now), FileBody::Text(text)) =
                (stamps::get(state, path), &found.stamp, &found.body)
            {
                if !before.matches(now, text) {
                    labels.insert(0, delivery::LABEL_UPDATED.to_owned());
                }
            }
        }
        labels
    }

    /// The blocks `path` goes out in, its labels in their headers, whether it starts again, and
    /// whether it is marked updated; `None` when there is nothing to send. A file that changed
    /// while it went out in parts is cut another way now: it starts again from its first part,
    /// marked updated (the parts out are of the old text), and so are its later parts.
    fn parts_of(
        &self,
        state: &State,
        path: &str,
        found: &Source,
    ) -> Option<(Vec<String>, bool, bool)> {
        let cut = |labels: &[String]| {
            let shown = delivery::labelled(path, labels);
            match &found.body {
                FileBody::Text(text) => {
                    delivery::file_parts(&shown, text, delivery::part_size(self.ctx.part_budget))
                }
                FileBody::TooLarge(size) => {
                    vec![delivery::pointer_block(&shown, *size, self.max_bytes)]
                }
                FileBody::Unavailable | FileBody::Empty => Vec::new(),
            }
        };
        let mut labels = self.labels_of(state, path, found);
        let mut parts = cut(&labels);
        if parts.is_empty() {
            return None;
        }
        let before = state.parts_cut(self.audience, path);
        let n = parts.len() as u64;
        let again = before.is_some_and(|cut| cut.parts != n);
        let marked = before.is_some_and(|cut| cut.updated && cut.parts == n);
        let updated = labels.iter().any(|l| l == delivery::LABEL_UPDATED);
        if (again || marked) && !updated {
            labels.insert(0, delivery::LABEL_UPDATED.to_owned());
            parts = cut(&labels);
        }
        Some((parts, again, again || marked || updated))
    }

    /// Nothing of the file goes out now: it stays queued for the next call, and the log says
    /// why.
    fn defer(&mut self, state: &mut State, request: &Request, path: &str) -> Outcome {
        if state.add_path(Paths::Queued(self.audience), path) {
            self.batch
                .note(Event::QueuePending, path, &request.source, "deferred");
        }
        self.batch.note(
            Event::OverBudget,
            path,
            &request.source,
            delivery::CARRIED_OVER,
        );
        Outcome::Queued
    }

    /// Deliver as much of the file as the budget holds; track it in the same state.
    pub(super) fn deliver(
        &mut self,
        state: &mut State,
        request: &Request,
        path: &str,
        mode: Mode,
        packer: &mut Packer,
    ) -> Outcome {
        // Some of it waits in the stash: the rest waits too, so that its parts go out in order
        // and the call that carries the waiting part is told what it holds.
        if stash::holds_block_of(state, self.audience.agent_id(), path) {
            return self.defer(state, request, path);
        }
        let found = source::read(self.ctx, path, self.max_bytes);
        let Some((mut parts, again, updated)) = self.parts_of(state, path, &found) else {
            self.unqueue(state, path, &request.path);
            self.forget_parts(state, path);
            return Outcome::Unavailable;
        };
        let content = match &found.body {
            FileBody::Text(text) => Some(text.as_str()),
            _ => None,
        };
        let total = parts.len();
        // Parts the window already holds (kept by a compaction) are passed over.
        let held = if self.stamps && !again {
            parts_held(state, path, total)
        } else {
            None
        };
        let past_held = |i: usize| match held {
            Some((start, end)) if (start..end).contains(&i) => end,
            _ => i,
        };
        // Starting again, the old progress stays until a part of the new cut is out (so the next
        // call starts again too, marked updated, when none fits now).
        let first = if again {
            0
        } else {
            parts_done(state, self.audience, path).min(total.saturating_sub(1))
        };
        let shadow = if first == 0 {
            override_of(state, path)
        } else {
            None
        };
        if let Some(global) = &shadow {
            parts[0] = format!("[Override: shadows {global}]\n{}", parts[0]);
        }
        let mut next = past_held(first);
        let mut sent = Vec::new();
        while next < total && packer.try_add(parts[next].clone()) {
            sent.push(next);
            next = past_held(next + 1);
        }
        if sent.is_empty() && next < total {
            // Nothing fit.
            return self.defer(state, request, path);
        }
        if again {
            // The parts the window held were of the old text.
            clear_parts_held(state, self.audience, path);
        }
        if let (true, Some(&from), Some(&to)) = (total > 1, sent.first(), sent.last()) {
            let note = delivery::split_note(from + 1, to + 1, total);
            self.batch
                .note(Event::OverBudget, path, &request.source, &note);
        }
        if let Some(global) = &shadow {
            self.batch.note(Event::OverrideDetect, path, global, "new");
        }
        for i in sent {
            self.batch.blocks.push(std::mem::take(&mut parts[i]));
        }
        if next < total {
            state.set_parts_done(self.audience, path, Some(next as u64));
            let cut = PartsCut {
                parts: total as u64,
                updated,
            };
            state.set_parts_cut(self.audience, path, Some(cut));
            state.add_path(Paths::Queued(self.audience), path);
            return Outcome::Partial;
        }
        // Fully out: into the audience's files in context, out of the queue, in the same write.
        self.forget_parts(state, path);
        self.in_context.append(state, path, &self.ctx.file_ids);
        self.unqueue(state, path, &request.path);
        self.stamp(state, path, &found);
        let event = if mode == Mode::Direct {
            Event::DirectDeliver
        } else {
            Event::ClaimDeliver
        };
        self.batch.note(event, path, &request.source, "new");
        // The pipeline is the recursion: a delivered file's references are queued once.
        if let Some(text) = content {
            self.queue_references(state, path, text);
        }
        Outcome::Delivered
    }

    /// Queue the resolved references of a delivered file that are neither in context nor
    /// queued, in the audience's own queue.
    pub(super) fn queue_references(&mut self, state: &mut State, path: &str, text: &str) {
        let source = format!("resolve_refs({})", file_name(path));
        for found in self.resolver.references_of(Path::new(path), text) {
            let found = self.ctx.normalize(&found.to_string_lossy());
            if self
                .in_context
                .check(state, &found, &self.ctx.file_ids)
                .is_none()
                && state.add_path(Paths::Queued(self.audience), &found)
            {
                self.batch.note(Event::ResolveRef, &found, &source, "new");
                self.batch.note(Event::QueuePending, &found, &source, "new");
            }
        }
    }
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
