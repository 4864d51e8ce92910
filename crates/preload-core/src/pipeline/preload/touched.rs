//! What a path a tool call touches queues: its context packs (`path:GLOB`, once per context
//! window) and the directives [`discovery::discover`] finds for it.

use super::{Audience, Batch, Mode, Request, apply_in, pack_requests};
use crate::mechanisms::context::Context;
use crate::mechanisms::discovery::{self, Accept, Scope};
use crate::mechanisms::packs::Moment;
use crate::primitives::delivery::Packer;
use crate::primitives::paths;
use crate::state::State;
use crate::state::dedup::InContext;
use crate::state::fields;

/// Queue, for the main agent, what the path `raw` (as the call spells it) brings: its packs
/// and the directives found for it. `edits`: the call changes the path, which alone arms a
/// checklist. `index` is the caller's shared index of what is in context (see [`apply_in`]).
pub fn queue_touched(
    ctx: &Context,
    s: &mut State,
    raw: &str,
    edits: bool,
    index: &mut Option<InContext>,
) -> Batch {
    let mut batch = Batch::default();
    let touched = paths::lexical_clean(&ctx.cwd.join(paths::expand_tilde(raw, &ctx.paths.home)));
    let packs = pack_requests(
        ctx,
        s,
        Audience::Main,
        Moment::Path(&touched),
        "context-pack(path)",
    );
    if !packs.is_empty() {
        batch.extend(queue(ctx, s, &packs, index));
    }
    let scope = Scope {
        claude_dir: ctx.paths.claude.clone(),
        project_root: Some(ctx.project_root.clone()),
        home: ctx.paths.home.clone(),
        cwd: ctx.cwd.clone(),
        physical_dirs: ctx.physical_dirs.clone(),
    };
    // The skill's declared directives surface with the core ones (seed case 4.1: a read of a
    // file finds the package's PITFALLS.md). A checklist is a gate on changing code: it is
    // armed by an edit only (Edit or Write; Codex's apply_patch), as in the engine.
    let mut declared = s.strings(fields::DIRECTIVES);
    if !edits {
        declared.retain(|d| d != discovery::CHECKLIST);
    }
    let Some(found) = discovery::discover(s, &scope, raw, &Accept { declared }) else {
        return batch;
    };
    let source = format!("directive_discovery({})", found.dir);
    let requests: Vec<Request> = found
        .files
        .iter()
        .map(|f| Request::new(f.as_str(), source.as_str()))
        .collect();
    batch.extend(queue(ctx, s, &requests, index));
    batch
}

/// Queue `requests` for the main agent within one output budget.
fn queue(
    ctx: &Context,
    s: &mut State,
    requests: &[Request],
    index: &mut Option<InContext>,
) -> Batch {
    let mut packer = Packer::new(ctx.budget);
    apply_in(
        ctx,
        s,
        requests,
        Mode::Queue,
        &mut packer,
        Audience::Main,
        index,
    )
}
