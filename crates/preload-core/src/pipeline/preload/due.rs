//! The requests of the context packs due at a moment, for one audience: the packs module says
//! which packs, this says which of them still have to go out.

use super::{Audience, Request};
use crate::mechanisms::context::Context;
use crate::mechanisms::packs::Moment;
use crate::state::{Paths, State};

/// One request per pack due at `moment` that `audience` has neither in context nor queued.
pub fn pack_requests(
    ctx: &Context,
    state: &State,
    audience: Audience<'_>,
    moment: Moment<'_>,
    source: &str,
) -> Vec<Request> {
    let due = ctx.packs().due(moment);
    if due.is_empty() {
        return Vec::new();
    }
    due.into_iter()
        .filter(|p| {
            !state.has_path(Paths::InContext(audience), &p.key)
                && !state.has_path(Paths::Queued(audience), &p.key)
        })
        .map(|p| Request::new(p.key.clone(), source))
        .collect()
}
