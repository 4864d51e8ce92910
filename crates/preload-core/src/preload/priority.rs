//! The order queued files go out in: begun parts, standards, the current phase, directives and
//! packs, the rest.

use serde_json::Value;

use super::{Request, parts_done};
use crate::context::Context;
use crate::fields;
use crate::skill;
use crate::state::State;

/// Why a queued file matters now, most urgent first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    /// Partly delivered: the rest of what the model has begun to read.
    Begun,
    /// A core standard (owed to the context window since SessionStart).
    Standard,
    /// A command or template of the current phase.
    CurrentPhase,
    /// A directive of a directory the agent works in, or a context pack.
    Directive,
    /// Anything else: reached through a `§` reference, a past phase's command, ….
    Reference,
}

/// The priority of the queued file `path` (normalised) in `state`.
fn priority_of(
    path: &str,
    state: &State,
    standards: &[String],
    phase_files: &[String],
    directives: &[String],
) -> Priority {
    if parts_done(state, fields::PRELOAD_PARTS, path) > 0 {
        Priority::Begun
    } else if standards.iter().any(|s| s == path) {
        Priority::Standard
    } else if phase_files.iter().any(|p| p == path) {
        Priority::CurrentPhase
    } else if directives.iter().any(|d| d == path) || crate::packs::is_key(path) {
        Priority::Directive
    } else {
        Priority::Reference
    }
}

/// Order `requests` for delivery: partly delivered files, core standards, the current phase's
/// commands and templates, directives of touched directories and context packs, then the rest;
/// the queue's order
/// within each. A file that no longer matters (a past phase's command) never goes ahead of one
/// that does.
pub fn by_priority(ctx: &Context, state: &State, requests: Vec<Request>) -> Vec<Request> {
    if requests.len() < 2 {
        return requests;
    }
    let standards = crate::session::core_seeds(ctx);
    let label = skill::label_of(state.str(fields::CURRENT_PHASE).unwrap_or(""));
    let phase_files: Vec<String> = skill::session_phase_cmds(&ctx.paths, &state.0, &label)
        .iter()
        .map(|p| ctx.normalize(&p.to_string_lossy()))
        .collect();
    let directives: Vec<String> = match state.get(fields::TOUCHED_DIRS) {
        Some(Value::Object(map)) => map
            .values()
            .flat_map(|v| crate::state::strings_of(Some(v)))
            .collect(),
        _ => Vec::new(),
    };
    let mut ranked: Vec<(Priority, usize, Request)> = requests
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let path = ctx.normalize(&r.path);
            let p = priority_of(&path, state, &standards, &phase_files, &directives);
            (p, i, r)
        })
        .collect();
    ranked.sort_by_key(|(p, i, _)| (*p, *i));
    ranked.into_iter().map(|(_, _, r)| r).collect()
}
