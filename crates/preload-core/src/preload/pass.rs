//! One pass over a list of requests: dedup against the context, parts, packing into the budget, recording.

use std::path::Path;

use super::{
    Audience, Batch, Mode, Outcome, Request, override_of, parts_done, resolver, set_parts_done,
};
use crate::context::Context;
use crate::dedup::{Hit, InContext};
use crate::delivery::{self, Event, FileBody, Packer};
use crate::fields;
use crate::refs::Resolver;
use crate::state::State;

/// One ensure pass over a state.
pub(super) struct Pass<'a> {
    ctx: &'a Context,
    pub(super) in_context: InContext,
    resolver: Resolver,
    pub(super) max_bytes: u64,
    pub(super) batch: Batch,
    /// Field of the audience's files in context.
    preloaded_key: String,
    /// Field of the audience's part progress.
    parts_key: String,
    /// True when delivery takes files out of `pendingPreloads` (the main agent).
    owns_queue: bool,
}

impl<'a> Pass<'a> {
    pub(super) fn new(ctx: &'a Context, audience: Audience<'_>) -> Self {
        let preloaded_key = audience.preloaded_key();
        Self {
            ctx,
            in_context: InContext::new(&preloaded_key),
            resolver: resolver(ctx),
            max_bytes: ctx.max_file_bytes(),
            batch: Batch::default(),
            preloaded_key,
            parts_key: audience.parts_key(),
            owns_queue: audience == Audience::Main,
        }
    }

    /// Take a file out of the queue, when this audience owns it.
    fn unqueue(&self, state: &mut State, path: &str, requested: &str) {
        if self.owns_queue {
            state.remove_item(fields::PENDING_PRELOADS, path);
            state.remove_item(fields::PENDING_PRELOADS, requested);
        }
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
        if state.push_unique(fields::PENDING_PRELOADS, path) {
            self.batch
                .note(Event::QueuePending, path, &request.source, "new");
            Outcome::Queued
        } else {
            Outcome::AlreadyQueued
        }
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
        let (mut parts, content) =
            match delivery::read_for_delivery(Path::new(path), self.max_bytes) {
                FileBody::Text(text) => (
                    delivery::file_parts(path, &text, delivery::part_size(self.ctx.budget)),
                    Some(text),
                ),
                FileBody::TooLarge(size) => (
                    vec![delivery::pointer_block(path, size, self.max_bytes)],
                    None,
                ),
                FileBody::Unavailable | FileBody::Empty => {
                    self.unqueue(state, path, &request.path);
                    set_parts_done(state, &self.parts_key, path, None);
                    return Outcome::Unavailable;
                }
            };
        let first = parts_done(state, &self.parts_key, path).min(parts.len().saturating_sub(1));
        let shadow = if first == 0 {
            override_of(state, path)
        } else {
            None
        };
        if let Some(global) = &shadow {
            parts[0] = format!("[Override: shadows {global}]\n{}", parts[0]);
        }
        let mut next = first;
        while next < parts.len() && packer.try_add(parts[next].clone()) {
            next += 1;
        }
        if next == first {
            // Nothing fit: stays queued for the next call, and the log says why.
            if self.owns_queue && state.push_unique(fields::PENDING_PRELOADS, path) {
                self.batch
                    .note(Event::QueuePending, path, &request.source, "deferred");
            }
            self.batch.note(
                Event::OverBudget,
                path,
                &request.source,
                delivery::CARRIED_OVER,
            );
            return Outcome::Queued;
        }
        if parts.len() > 1 {
            let note = delivery::split_note(first + 1, next, parts.len());
            self.batch
                .note(Event::OverBudget, path, &request.source, &note);
        }
        if let Some(global) = &shadow {
            self.batch.note(Event::OverrideDetect, path, global, "new");
        }
        self.batch.blocks.extend(parts[first..next].iter().cloned());
        if next < parts.len() {
            set_parts_done(state, &self.parts_key, path, Some(next));
            if self.owns_queue {
                state.push_unique(fields::PENDING_PRELOADS, path);
            }
            return Outcome::Partial;
        }
        // Fully out: into the audience's files in context, out of the queue, in the same write.
        set_parts_done(state, &self.parts_key, path, None);
        state.push_unique(&self.preloaded_key, path);
        self.unqueue(state, path, &request.path);
        self.in_context.add(path, &self.ctx.file_ids);
        let event = if mode == Mode::Direct {
            Event::DirectDeliver
        } else {
            Event::ClaimDeliver
        };
        self.batch.note(event, path, &request.source, "new");
        // The pipeline is the recursion: a delivered file's references are queued once.
        if let Some(text) = content {
            self.queue_references(state, path, &text);
        }
        Outcome::Delivered
    }

    /// Queue the resolved references of a delivered file that are neither in context nor queued.
    pub(super) fn queue_references(&mut self, state: &mut State, path: &str, text: &str) {
        let source = format!("resolve_refs({})", file_name(path));
        for found in self.resolver.references_of(Path::new(path), text) {
            let found = self.ctx.normalize(&found.to_string_lossy());
            if self
                .in_context
                .check(state, &found, &self.ctx.file_ids)
                .is_none()
                && state.push_unique(fields::PENDING_PRELOADS, &found)
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
