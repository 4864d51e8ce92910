//! What the guard engine decides on one state: directive discovery for the call's path, the
//! rules' verdict, the deny reason, the preload rule's claim, and the allow rules' content
//! stashed for the agent's `PostToolUse` (or handed out at once when the state cannot be
//! written).

use std::borrow::Cow;
use std::path::Path;

use super::call::{Call, EngineCommand, Writes, is_quiet};
use crate::Context;
use crate::mechanisms::discovery::{self, Accept, Scope};
use crate::mechanisms::heartbeat;
use crate::mechanisms::ledger;
use crate::mechanisms::packs::Moment;
use crate::mechanisms::session::PreloadState;
use crate::mechanisms::stash;
use crate::pipeline::preload::{self, Audience, Batch, Request};
use crate::pipeline::rules::{self, Facts, Matched, Mode, Rule, Urgency};
use crate::pipeline::runner::answer::SEPARATOR;
use crate::primitives::clock;
use crate::primitives::delivery::{self, Packer, chars};
use crate::primitives::env;
use crate::primitives::paths;
use crate::state::dedup::InContext;
use crate::state::fields;
use crate::state::{self, Lifecycle, Paths, QUEUED, StashEntry, State};

mod claim;
use claim::{claim, claim_twice, requests_of};

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

/// A `Skill` call expands its skill's SKILL.md itself: one queued for the main agent (a rewind
/// took it back) is in the context with this call, recorded now, so that no hook of the call
/// sends it beside the client's copy.
fn expanded_by_the_call(ctx: &Context, call: &Call, s: &mut State) -> Batch {
    let name = call
        .input
        .tool_input_str("skill")
        .map(|n| n.trim().trim_start_matches('/'))
        .filter(|n| call.tool == "Skill" && crate::mechanisms::skill::is_valid_name(n));
    let Some(name) = name else {
        return Batch::default();
    };
    let file = ctx.paths.skill_file(name).to_string_lossy().into_owned();
    let path = ctx.normalize(&file);
    if !s.has_path(QUEUED, &path) {
        return Batch::default();
    }
    let batch = preload::record(ctx, s, &[Request::new(file, format!("skill-call({name})"))]);
    if let Some(id) = call.input.tool_use_id() {
        ledger::note_carried(s, id, &[path], "");
    }
    batch
}

/// What a decision on one call needs: the call, the rules, the state file it works on (`None`:
/// no session and no seed, nothing to write to) and the engine command the call runs. Made
/// once per call; [`Self::on`] decides on a state.
#[derive(Clone, Copy)]
pub(super) struct Decision<'a> {
    pub(super) ctx: &'a Context,
    pub(super) call: &'a Call<'a>,
    pub(super) rules: &'a [Rule],
    pub(super) target: Option<&'a PreloadState>,
    pub(super) engine: Option<EngineCommand>,
}

impl Decision<'_> {
    /// The rules on `s`: discovery, evaluation, the preload claim and the stash; what changes
    /// `s` only when `writes` allows it. Counting is done before (see
    /// [`super::session_call`]).
    pub(super) fn on(&self, s: &mut State, writes: Writes) -> Plan {
        decide(*self, s, writes)
    }

    /// The decision tried on an unlocked read itself, marked unchanged first: the mark then
    /// tells whether the decision changed anything (a copy to compare with was, on a large
    /// state, a tenth of the call). Debug builds check the mark against such a copy.
    pub(super) fn trial(&self, base: State) -> (State, Plan) {
        #[cfg(debug_assertions)]
        let before = base.clone();
        let mut trial = base;
        trial.mark_unchanged();
        let plan = self.on(&mut trial, Writes::Allowed);
        #[cfg(debug_assertions)]
        assert!(
            trial.changed() || trial == before,
            "the decision changed the state without marking it"
        );
        (trial, plan)
    }
}

fn decide(d: Decision<'_>, s: &mut State, writes: Writes) -> Plan {
    let (ctx, call, rules, target, engine) = (d.ctx, d.call, d.rules, d.target, d.engine);
    let mut plan = Plan::default();
    if writes == Writes::Allowed && target.is_some() && !call.is_sub() {
        // This call is the latest now: what an earlier one carried is not what a compaction
        // keeps, even when no hook of this call gets to add to the record (one killed).
        ledger::note_call_deliveries(s, call.input.tool_use_id(), &[], "");
        // A file in context that changed on disk goes out again, with this call, and so does
        // one a rewind took out of the context.
        plan.batch.extend(preload::requeue_changed(ctx, s));
        plan.batch.extend(preload::requeue_rewound(ctx, s));
        plan.batch.extend(expanded_by_the_call(ctx, call, s));
    }
    if writes == Writes::Allowed
        && engine.is_none()
        && target.is_some()
        && !is_quiet(s)
        && !call.is_sub()
    {
        // The paths the call touches: a file tool's own, or (Codex) what its shell reads and
        // its patch names.
        let touched = discovery::touched(ctx.env.agent(), call.input);
        for raw in &touched.paths {
            queue_for_touched_path(ctx, raw, touched.edits, s, &mut plan);
        }
    }
    // Rules see the session, or (before activation) the seed as "no session"; a sub-agent's
    // preload rule sees its own queue beside the main agent's.
    let own_queue = call
        .agent
        .map(|id| s.path_list(Paths::Queued(Audience::SubAgent(id))))
        .unwrap_or_default();
    let is_seed = target.is_some_and(|t| !t.is_session);
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
        Cow::Borrowed(&*s)
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
    let mut matched = rules::evaluate(rules, &facts);
    drop(view);
    if call.is_sub() {
        // Sub-agents keep their own heartbeat only: no overflow or read throttle. Their preload
        // claims fill their own context and leave the queue to the main agent.
        matched.retain(|m| m.id != rules::OVERFLOW_RULE && m.id != rules::READ_THROTTLE_RULE);
    }
    if engine.is_some() {
        // An engine command is never held up; only what is queued rides along.
        matched.retain(|m| m.mode == Mode::Preload);
    }
    let mut verdict = rules::compose(matched, call.tool, call.input.tool_input());
    if engine.is_some() {
        verdict.allow.extend(std::mem::take(&mut verdict.deny));
    }
    let session_dir = target.and_then(PreloadState::session_dir);
    let mut delivered: Vec<String> = Vec::new();
    if !verdict.deny.is_empty() {
        plan.deny = Some(deny_reason(
            ctx,
            call,
            s,
            session_dir,
            &verdict.deny,
            writes,
            &mut plan,
        ));
        delivered.extend(verdict.deny.iter().map(|m| m.id.clone()));
    }
    if target.is_some() {
        delivered.extend(stash_allow(
            ctx,
            call,
            s,
            session_dir,
            &verdict.allow,
            writes,
            &mut plan,
        ));
        if !delivered.is_empty() && writes == Writes::Allowed {
            s.mark_injected(&delivered);
            s.set_heartbeat(&clock::iso_utc(ctx.now));
        }
    }
    plan
}

/// What one path the call touches queues (`edits`: the call changes it): its context packs and
/// the directives [`discovery::discover`] finds for it.
fn queue_for_touched_path(ctx: &Context, raw: &str, edits: bool, s: &mut State, plan: &mut Plan) {
    // The context packs of the path (`path:GLOB`), queued once per context window.
    let touched = paths::lexical_clean(&ctx.cwd.join(paths::expand_tilde(raw, &ctx.paths.home)));
    let packs = preload::pack_requests(
        ctx,
        s,
        Audience::Main,
        Moment::Path(&touched),
        "context-pack(path)",
    );
    if !packs.is_empty() {
        let mut packer = Packer::new(ctx.budget);
        plan.batch.extend(preload::apply_in(
            ctx,
            s,
            &packs,
            preload::Mode::Queue,
            &mut packer,
            Audience::Main,
            &mut plan.index,
        ));
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
    let declared = s.strings(fields::DIRECTIVES);
    let accept = Accept {
        declared: if edits {
            declared
        } else {
            declared
                .into_iter()
                .filter(|d| d != discovery::CHECKLIST)
                .collect()
        },
    };
    let Some(found) = discovery::discover(s, &scope, raw, &accept) else {
        return;
    };
    let source = format!("directive_discovery({})", found.dir);
    let requests: Vec<Request> = found
        .files
        .iter()
        .map(|f| Request::new(f.as_str(), source.as_str()))
        .collect();
    let mut packer = Packer::new(ctx.budget);
    plan.batch.extend(preload::apply_in(
        ctx,
        s,
        &requests,
        preload::Mode::Queue,
        &mut packer,
        Audience::Main,
        &mut plan.index,
    ));
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
                rules::counter(s, &call.key)
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
