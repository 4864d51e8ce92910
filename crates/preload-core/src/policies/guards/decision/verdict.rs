//! The rules' verdict on one call: which rules of `guards.json` match the state, as the call's
//! agent sees it, and which of them deny the call.

use std::borrow::Cow;

use super::Decision;
use crate::pipeline::rules::{self, Facts, Mode, Verdict};
use crate::primitives::env;
use crate::state::{Audience, Lifecycle, Paths, QUEUED, State};

/// The verdict of the decision's rules on `s`. Rules see the session, or (before activation)
/// the seed as "no session"; a sub-agent's preload rule sees its own queue beside the main
/// agent's. Sub-agents keep their own heartbeat only; an engine command is never held up.
pub(super) fn of(d: &Decision<'_>, s: &State) -> Verdict {
    let (ctx, call) = (d.ctx, d.call);
    let own_queue = call
        .agent
        .map(|id| s.path_list(Paths::Queued(Audience::SubAgent(id))))
        .unwrap_or_default();
    let is_seed = d.target.is_some_and(|t| !t.is_session);
    let view: Cow<State> = if is_seed || !own_queue.is_empty() {
        let mut v = s.clone();
        if is_seed {
            v.set_lifecycle(&Lifecycle::None);
        }
        for path in &own_queue {
            v.add_path(QUEUED, path);
        }
        Cow::Owned(v)
    } else {
        Cow::Borrowed(s)
    };
    let facts = Facts {
        state: &view,
        counter_key: Some(&call.key),
        tool: Some(call.tool),
        overflow_threshold: rules::overflow_threshold(
            ctx.env.is_one(env::DISABLE_AUTO_COMPACT),
            ctx.config().get("OVERFLOW_THRESHOLD"),
        ),
    };
    let mut matched = rules::evaluate(d.rules, &facts);
    if call.is_sub() {
        // No overflow or read throttle for a sub-agent. Its preload claims fill its own
        // context and leave the queue to the main agent.
        matched.retain(|m| m.id != rules::OVERFLOW_RULE && m.id != rules::READ_THROTTLE_RULE);
    }
    if call.engine.is_some() {
        // Only what is queued rides along.
        matched.retain(|m| m.mode == Mode::Preload);
    }
    let mut verdict = rules::compose(matched, call.tool, call.input.tool_input());
    if call.engine.is_some() {
        verdict.allow.extend(std::mem::take(&mut verdict.deny));
    }
    verdict
}
