//! The order queued files go out in: standards, the current phase, directives and packs, the
//! rest; within each, a file already begun first.

use super::{Audience, Request, parts_done};
use crate::mechanisms::context::Context;
use crate::mechanisms::skill;
use crate::state::{Phase, State};

/// Why a queued file matters now, most urgent first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    /// A core standard (owed to the context window since SessionStart).
    Standard,
    /// A command or template of the current phase.
    CurrentPhase,
    /// A directive of a directory the agent works in, or a context pack.
    Directive,
    /// Anything else: reached through a `§` reference, a past phase's command, ….
    Reference,
}

/// The priority of the queued file `path` (normalised).
fn priority_of(
    path: &str,
    standards: &[String],
    phase_files: &[String],
    directives: &[String],
) -> Priority {
    if standards.iter().any(|s| s == path) {
        Priority::Standard
    } else if phase_files.iter().any(|p| p == path) {
        Priority::CurrentPhase
    } else if directives.iter().any(|d| d == path) || crate::mechanisms::packs::is_key(path) {
        Priority::Directive
    } else {
        Priority::Reference
    }
}

/// Order `requests` for delivery: core standards, the current phase's commands and templates,
/// directives of touched directories and context packs, then the rest; within each, partly
/// delivered files first (the rest of what the model has begun to read), then the queue's
/// order. A file that no longer matters (a past phase's command, a begun reference) never goes
/// ahead of one that does.
pub fn by_priority(ctx: &Context, state: &State, requests: Vec<Request>) -> Vec<Request> {
    if requests.len() < 2 {
        return requests;
    }
    let standards = crate::mechanisms::session::core_seeds(ctx);
    let label = state.current_phase().map_or("", Phase::label);
    let phase_files: Vec<String> = skill::session_phase_cmds(&ctx.paths, &ctx.skills, state, label)
        .iter()
        .map(|p| ctx.normalize(&p.to_string_lossy()))
        .collect();
    let directives = state.touched_files();
    let mut ranked: Vec<(Priority, bool, usize, Request)> = requests
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let path = ctx.normalize(&r.path);
            let p = priority_of(&path, &standards, &phase_files, &directives);
            let fresh = parts_done(state, Audience::Main, &path) == 0;
            (p, fresh, i, r)
        })
        .collect();
    ranked.sort_by_key(|(p, fresh, i, _)| (*p, *fresh, *i));
    ranked.into_iter().map(|(.., r)| r).collect()
}
