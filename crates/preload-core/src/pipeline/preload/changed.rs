//! Delivered files that changed on disk since they went out: queued once more, to go out with
//! their header marked `(updated)`; never while unchanged.
//!
//! Only the main agent's deliveries are stamped. Each stamp's files are compared by identity,
//! size and modification time first; only a file whose metadata moved is read and hashed, and
//! a touched file with the same content just gets its stamp refreshed.

use super::Batch;
use super::source;
use crate::mechanisms::context::Context;
use crate::primitives::delivery::{Event, FileBody};
use crate::state::State;
use crate::state::stamps;
use crate::state::{Audience, IN_CONTEXT, QUEUED};

/// The `source` of the queue events of changed files.
pub const CHANGED_SOURCE: &str = "changed-on-disk";

/// Queue again, inside the caller's locked update, every file in the main agent's context whose
/// content changed since it was delivered; forget the stamps of files no longer in context or
/// queued.
pub fn requeue_changed(ctx: &Context, state: &mut State) -> Batch {
    let mut batch = Batch::default();
    let keys = stamps::keys(state);
    if keys.is_empty() {
        return batch;
    }
    let preloaded = state.path_list(IN_CONTEXT);
    let pending = state.path_list(QUEUED);
    for key in keys {
        if !preloaded.contains(&key) {
            if !pending.contains(&key) {
                stamps::remove(state, &key);
            }
            continue;
        }
        let Some(stamp) = stamps::get(state, &key) else {
            stamps::remove(state, &key);
            continue;
        };
        if stamp.unmoved() {
            continue;
        }
        let found = source::read(ctx, &key, ctx.max_file_bytes());
        match (found.stamp, &found.body) {
            (Some(now), FileBody::Text(text)) if stamp.matches(&now, text) => {
                stamps::set(state, &key, &now);
            }
            (Some(_), _) => {
                // The old stamp stays: the delivery compares against it to say `updated`.
                state.owe(Audience::Main, &key);
                batch.note(Event::QueuePending, &key, CHANGED_SOURCE, "updated");
            }
            // Gone, or no longer followed: nothing to send.
            (None, _) => stamps::remove(state, &key),
        }
    }
    batch
}
