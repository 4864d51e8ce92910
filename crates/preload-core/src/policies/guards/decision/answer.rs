//! What the verdict puts in the answer and the stash: the deny reason (a blocking preload
//! rule's files claimed into it), the allow rules' content stashed for the agent's
//! `PostToolUse` (or handed out at once when the state cannot be written), and the rules
//! marked delivered.

use std::path::Path;

use super::claim::{claim, claim_twice, requests_of};
use super::{Call, Decision, Paste, Plan, Writes};
use crate::Context;
use crate::mechanisms::heartbeat;
use crate::mechanisms::session::PreloadState;
use crate::mechanisms::stash;
use crate::pipeline::rules::{self, Matched, Mode, Urgency, Verdict};
use crate::primitives::clock;
use crate::primitives::delivery::{self, chars};
use crate::state::fields;
use crate::state::{self, StashEntry, State};

/// Give the verdict: the deny reason into `plan`, the allow rules' content into the stash
/// (only with a state to keep it in), and the rules delivered marked in `s`.
pub(super) fn give(
    d: &Decision<'_>,
    s: &mut State,
    verdict: &Verdict,
    writes: Writes,
    plan: &mut Plan,
) {
    let (ctx, call) = (d.ctx, d.call);
    let session_dir = d.target.and_then(PreloadState::session_dir);
    let mut delivered: Vec<String> = Vec::new();
    if !verdict.deny.is_empty() {
        plan.deny = Some(deny_reason(
            ctx,
            call,
            s,
            session_dir,
            &verdict.deny,
            writes,
            plan,
        ));
        delivered.extend(verdict.deny.iter().map(|m| m.id.clone()));
    }
    if d.target.is_none() {
        return;
    }
    delivered.extend(stash_allow(
        ctx,
        call,
        s,
        session_dir,
        &verdict.allow,
        writes,
        plan,
    ));
    if !delivered.is_empty() && writes == Writes::Allowed {
        s.mark_injected(&delivered);
        s.set_heartbeat(&clock::iso_utc(ctx.now));
    }
}

/// The text of an inline, read or paste rule, heartbeat rules enriched.
fn text_of(
    ctx: &Context,
    call: &Call,
    s: &State,
    session_dir: Option<&Path>,
    rule: &Matched,
    blocking: bool,
) -> Option<String> {
    let text = rules::rule_text(rule, blocking)?;
    match session_dir {
        Some(dir) if rule.mode == Mode::Inline && rule.id.starts_with("heartbeat-") => {
            let count = if call.is_sub() {
                s.calls_of(&call.key)
            } else {
                s.number(fields::TOOL_CALLS_SINCE_LAST_LOG)
                    .map_or(0, state::whole)
            };
            Some(heartbeat::enrich(&text, s, dir, &ctx.cwd, ctx.now, count))
        }
        _ => Some(text),
    }
}

fn deny_reason(
    ctx: &Context,
    call: &Call,
    s: &mut State,
    session_dir: Option<&Path>,
    deny: &[Matched],
    writes: Writes,
    plan: &mut Plan,
) -> String {
    let ids: Vec<&str> = deny.iter().map(|m| m.id.as_str()).collect();
    let header = format!("[block: {}]", ids.join(", "));
    let texts: Vec<Option<String>> = deny
        .iter()
        .map(|m| text_of(ctx, call, s, session_dir, m, true))
        .collect();
    let fixed: usize = chars(&header) + texts.iter().flatten().map(|t| chars(t) + 1).sum::<usize>();
    let mut parts = Vec::with_capacity(deny.len());
    for (rule, text) in deny.iter().zip(texts) {
        if rule.urgency.is_blocking() && rule.mode == Mode::Paste {
            plan.pastes.push(Paste {
                text: text.clone().unwrap_or_default(),
                interrupt: rule.urgency == Urgency::Interrupt,
            });
        }
        if let Some(t) = text {
            parts.push(t);
        } else {
            let room = ctx.budget.saturating_sub(fixed + 1);
            if writes == Writes::Allowed {
                let requests = requests_of(ctx, s, rule);
                let claimed = claim(ctx, call, s, &requests, room, &mut plan.index);
                if !claimed.blocks.is_empty() {
                    parts.push(claimed.text());
                }
                plan.batch.extend(claimed);
            }
        }
    }
    let mut reason = header;
    for part in parts.iter().filter(|p| !p.is_empty()) {
        reason.push('\n');
        reason.push_str(part);
    }
    reason
}

/// Stash the allow rules' content for this agent; returns the ids of the rules delivered.
///
/// A denied call gets no `PostToolUse`, so nothing is claimed for it: queued files stay queued
/// for the next call that runs. When the state cannot be written, rule text goes out in this
/// answer instead of the stash, and nothing is claimed.
fn stash_allow(
    ctx: &Context,
    call: &Call,
    s: &mut State,
    session_dir: Option<&Path>,
    allow: &[Matched],
    writes: Writes,
    plan: &mut Plan,
) -> Vec<String> {
    let denied = plan.deny.is_some();
    let allow: Vec<&Matched> = allow
        .iter()
        .filter(|m| !(denied && m.mode == Mode::Preload))
        .collect();
    let agent = call.agent.unwrap_or("");
    let texts: Vec<Option<String>> = allow
        .iter()
        .map(|m| text_of(ctx, call, s, session_dir, m, false))
        .collect();
    if writes == Writes::Impossible {
        plan.direct.extend(texts.into_iter().flatten());
        return Vec::new();
    }
    let waiting = stash::waiting(s, agent);
    let fresh: usize = texts.iter().flatten().map(|t| chars(t) + 2).sum();
    let mut delivered = Vec::new();
    let mut entries = Vec::new();
    for (rule, text) in allow.iter().zip(texts) {
        let content = if let Some(t) = text {
            if rule.mode == Mode::Paste {
                plan.pastes.push(Paste {
                    text: t.clone(),
                    interrupt: false,
                });
            }
            t
        } else {
            let room = ctx.budget.saturating_sub(waiting + fresh);
            let carried_before = plan.carried.len();
            let blocks = claim_twice(ctx, call, s, rule, room, writes, plan);
            for path in blocks.iter().flat_map(|b| delivery::block_paths(b)) {
                plan.stashed.push((path, format!("guards({})", rule.id)));
            }
            if plan.carried.len() > carried_before && blocks.is_empty() {
                // All of it went out with this answer.
                delivered.push(rule.id.clone());
                continue;
            }
            delivery::join_blocks(&blocks)
        };
        if content.is_empty() {
            continue;
        }
        delivered.push(rule.id.clone());
        entries.push(StashEntry::new(&rule.id, &content, agent));
    }
    stash::push(s, &entries);
    delivered
}
