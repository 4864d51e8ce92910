//! What `preload-session-start`'s text holds, in order: the banner and the session context
//! line, the core standards (and `docs/TOC.md`), the context packs (those due at SessionStart,
//! and after a compaction every pack the old window held), the live session's skill (SKILL.md,
//! its references, the current phase's commands and packs) and artifacts, the session's files
//! and, on `startup`, the dehydrated-context recovery; what does not fit is queued or stashed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::Context;
use crate::mechanisms::dehydrated::Recovery;
use crate::mechanisms::heartbeat;
use crate::mechanisms::ledger;
use crate::mechanisms::packs::Moment;
use crate::mechanisms::session;
use crate::mechanisms::skill;
use crate::mechanisms::stash;
use crate::pipeline::preload::{self, Audience, Batch, Mode, Outcome, Request};
use crate::primitives::artifacts;
use crate::primitives::clock;
use crate::primitives::delivery::{self, Packer};
use crate::primitives::env;
use crate::primitives::file;
use crate::primitives::transcript;
use crate::state::fields;
use crate::state::{self, Phase, StashEntry, State};

/// `ruleId` of text stashed because it did not fit.
const STASH_RULE: &str = "session-start";

/// What one fill produced besides the packed blocks.
#[derive(Debug, Default)]
pub(super) struct Fill {
    /// What was delivered, queued or recorded.
    pub(super) batch: Batch,
    /// Items that did not fit (queued files and stashed texts).
    pub(super) overflow: usize,
}

/// What one event's text is made of.
pub(super) struct Plan<'a> {
    /// The call's context.
    pub(super) ctx: &'a Context,
    /// The event's `source` (`startup`, `resume`, `clear`, `compact`).
    pub(super) source: &'a str,
    /// The dehydrated session restored on `startup`.
    pub(super) recovery: Option<&'a Recovery>,
    /// On `compact`: the calls of the client's latest response, as its transcript names them
    /// (what the compaction keeps; see [`ledger::KeptCall::of`]).
    pub(super) in_flight: Option<transcript::Calls>,
}

impl Plan<'_> {
    /// Pack everything into `packer` and record it in `state` (a session or a fresh seed).
    pub(super) fn fill(
        &self,
        state: &mut State,
        session_dir: Option<&PathBuf>,
        carried_packs: &[String],
        packer: &mut Packer,
    ) -> Fill {
        let ctx = self.ctx;
        let source = format!("session-start({})", self.source);
        let mut fill = Fill::default();
        let mut texts_left = Vec::new();
        let add_text = |packer: &mut Packer, text: String, left: &mut Vec<String>| {
            if !packer.try_add(text.clone()) {
                left.push(text);
            }
        };

        add_text(packer, self.head(state, session_dir), &mut texts_left);

        let mut requests: Vec<Request> = session::core_seeds(ctx)
            .into_iter()
            .map(|p| Request::new(p, source.clone()))
            .collect();
        let toc = ctx.cwd.join("docs/TOC.md");
        if toc.is_file() {
            requests.push(Request::new(toc.to_string_lossy(), source.clone()));
        }
        requests.extend(preload::pack_requests(
            ctx,
            state,
            Audience::Main,
            Moment::SessionStart,
            &source,
        ));
        for key in carried_packs {
            if !requests.iter().any(|r| r.path == *key) {
                requests.push(Request::new(key.as_str(), source.as_str()));
            }
        }
        // The client puts back the skills it holds after a compaction, with a session or not.
        if self.source == "compact" {
            fill.batch = reinjected_by_client(ctx, state);
        }
        let active = session_dir.filter(|_| state.lifecycle_or_active().is_live());
        if let Some(dir) = active {
            requests.extend(skill_requests(ctx, state));
            requests.extend(artifact_requests(ctx, state, dir));
        }
        // A fork's client keeps at most the first registration's context (some clients drop it
        // altogether): what the fork's window lacks waits in the queue for its first call.
        let mode = if self.source == "fork" {
            Mode::Queue
        } else {
            Mode::Direct
        };
        fill.batch
            .extend(preload::apply(ctx, state, &requests, mode, packer));

        if let Some(dir) = active {
            add_text(packer, artifacts::listing(dir), &mut texts_left);
        }
        if let Some(recovery) = self.recovery {
            add_text(packer, recovery.header(ctx), &mut texts_left);
            let files: Vec<Request> = recovery
                .files(ctx)
                .into_iter()
                .filter_map(|(_, found)| found)
                .map(|p| Request::new(p.to_string_lossy(), "dehydrated-context"))
                .collect();
            fill.batch
                .extend(preload::apply(ctx, state, &files, mode, packer));
        }

        let deferred = fill
            .batch
            .outcomes
            .iter()
            .filter(|(_, o)| matches!(o, Outcome::Queued | Outcome::Partial))
            .count();
        fill.overflow = deferred + texts_left.len();
        let left: Vec<StashEntry> = texts_left
            .iter()
            .map(|text| StashEntry::new(STASH_RULE, text, ""))
            .collect();
        stash::push(state, &left);
        fill
    }

    /// The banner and the session context line.
    fn head(&self, state: &State, session_dir: Option<&PathBuf>) -> String {
        let ctx = self.ctx;
        let rule = "═".repeat(60);
        let mut line = format!("[Session Context] Time: {}", clock::human_utc(ctx.now));
        if let Some(ws) = ctx.env.get(env::WORKSPACE) {
            let _ = write!(line, " | Workspace: {ws}");
        }
        match session_dir {
            Some(dir) => {
                let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
                let count =
                    |key: &str, default: u64| state.count(key).unwrap_or(default).to_string();
                let _ = write!(
                    line,
                    " | Session: {} | Skill: {} | Phase: {} | Heartbeat: {}/{}",
                    name.unwrap_or_default(),
                    state.str(fields::SKILL).unwrap_or("(none)"),
                    state.current_phase().map_or("(none)", Phase::as_str),
                    count(fields::TOOL_CALLS_SINCE_LAST_LOG, 0),
                    count(fields::BLOCK_AFTER, heartbeat::DEFAULT_BLOCK_AFTER),
                );
            }
            None => line.push_str(" | Session: (none)"),
        }
        format!(
            "{rule}\nMANDATORY PRELOAD: the [Preloaded: …] blocks below are already in your \
             context.\nUse them as reference; Read a preloaded file again only to Edit it.\n\
             {rule}\n{line}\n"
        )
    }
}

/// The most of a skill's SKILL.md the client puts back after a compaction (5,000 tokens).
const CLIENT_REINJECT_CHARS: usize = 20_000;

/// After a compaction the client itself puts the SKILL.md of every skill its process holds
/// (loaded in this process, or recalled from an earlier compaction's re-injection when it
/// resumed the conversation) back into the context (up to [`CLIENT_REINJECT_CHARS`]): those are
/// recorded as in context, not delivered a second time. A longer one is delivered whole by us.
fn reinjected_by_client(ctx: &Context, state: &mut State) -> Batch {
    let reloaded: Vec<String> = state
        .strings(fields::INVOKED_SKILLS)
        .into_iter()
        .filter(|name| skill::is_valid_name(name))
        .filter(|name| {
            file::read_text(&ctx.paths.skill_file(name), state::MAX_STATE_BYTES)
                .is_some_and(|text| delivery::chars(&text) <= CLIENT_REINJECT_CHARS)
        })
        .collect();
    let requests: Vec<Request> = reloaded
        .iter()
        .map(|name| {
            Request::new(
                ctx.paths.skill_file(name).to_string_lossy(),
                "client-skill-reload(compact)",
            )
        })
        .collect();
    // The transcript now records the re-injection: a client that resumes the conversation
    // recalls these.
    if reloaded.is_empty() {
        state.remove(fields::RELOADED_SKILLS);
    } else {
        state.set_strings(fields::RELOADED_SKILLS, &reloaded);
    }
    preload::record(ctx, state, &requests)
}

/// SKILL.md, its FMT/INV references, the current phase's commands and templates.
fn skill_requests(ctx: &Context, state: &State) -> Vec<Request> {
    let Some(name) = state.str(fields::SKILL).filter(|n| skill::is_valid_name(n)) else {
        return Vec::new();
    };
    let source = format!("session-start-skill({name})");
    let mut out = Vec::new();
    let file = ctx.paths.skill_file(name);
    if let Some(text) = file::read_text(&file, state::MAX_STATE_BYTES) {
        out.push(Request::new(file.to_string_lossy(), source.clone()));
        let resolver = preload::resolver(ctx);
        for found in resolver.references_of(&file, &text) {
            out.push(Request::new(found.to_string_lossy(), source.clone()));
        }
    }
    let phase = state.current_phase().unwrap_or(Phase::new("0"));
    let label = phase.label();
    for path in skill::session_phase_cmds(&ctx.paths, &ctx.skills, state, label) {
        out.push(Request::new(
            path.to_string_lossy(),
            format!("phase-cmds({label})"),
        ));
    }
    // The packs of the skill and of its current phase belong to this context window too.
    for moment in [
        Moment::Skill(name),
        Moment::Phase {
            label,
            name: phase.name(),
        },
    ] {
        out.extend(preload::pack_requests(
            ctx,
            state,
            Audience::Main,
            moment,
            &source,
        ));
    }
    out
}

/// The session's debrief (else its log) and `DIALOGUE.md`.
fn artifact_requests(ctx: &Context, state: &State, dir: &Path) -> Vec<Request> {
    let Some(name) = state.str(fields::SKILL).filter(|n| skill::is_valid_name(n)) else {
        return Vec::new();
    };
    if !ctx.paths.skill_file(name).is_file() {
        return Vec::new();
    }
    // SKILL.md is loaded only for a template the state does not name (an activated one does).
    let skill = std::cell::OnceCell::new();
    let artifact_of = |field: &str| {
        let template = state.str(field).or_else(|| {
            skill
                .get_or_init(|| ctx.skills.load(&ctx.paths, name))
                .as_deref()
                .and_then(|s| s.definition.template(field))
        })?;
        artifacts::document_in(dir, template)
    };
    let mut out = Vec::new();
    if let Some(file) =
        artifact_of(fields::DEBRIEF_TEMPLATE).or_else(|| artifact_of(fields::LOG_TEMPLATE))
    {
        out.push(Request::new(file.to_string_lossy(), "session-artifact"));
    }
    let dialogue = dir.join(artifacts::DIALOGUE);
    if dialogue.is_file() {
        out.push(Request::new(dialogue.to_string_lossy(), "session-artifact"));
    }
    out
}

/// The seed of a new context window with no session: a resumed conversation's seed, owned by
/// this process; after a compaction, the files of the calls the client keeps (`in_flight`:
/// its latest response's, see [`ledger::KeptCall::of`]); else empty.
pub(super) fn window_seed(
    ctx: &Context,
    sessions: &Path,
    source: &str,
    resumed_seed: Option<&(PathBuf, State)>,
    in_flight: Option<&transcript::Calls>,
) -> State {
    let own = session::seed_path(sessions, ctx.owner_pid);
    match resumed_seed {
        Some((from, old)) => {
            // The owner's seed serves another conversation (one supervisor PID, whose client
            // ended without a SessionEnd): that window stays resumable.
            if *from != own {
                if let Ok(replaced) = ledger::read_seed(&own) {
                    let conversation = ctx.conversation.as_deref().unwrap_or("");
                    ledger::archive_window(sessions, &replaced, conversation);
                }
            }
            let mut seed = old.clone();
            session::own_seed(&mut seed, ctx.owner_pid);
            ledger::skills_held_at_start(&mut seed, source);
            seed
        }
        // The client keeps the calls a compaction happened after, with what the hooks added
        // to them (as `fill_session` keeps them for a session): those files are in the new
        // context window from its start.
        None if source == "compact" => {
            let old = ledger::read_seed(&own).ok();
            let mut seed = session::new_seed(ctx.owner_pid, &[]);
            if let Some(old) = &old {
                ledger::KeptCall::of(old, in_flight, ctx.env.agent()).carry_into(&mut seed);
            }
            // The calls the client keeps, and the skills its process holds (put back now).
            let carried = [
                fields::CALL_DELIVERIES,
                fields::INVOKED_SKILLS,
                fields::RELOADED_SKILLS,
                // The conversation it goes on from is still the fork's.
                fields::FORK_OF,
            ];
            for key in carried {
                if let Some(value) = old.as_ref().and_then(|o| o.get(key)) {
                    seed.set(key, value.clone());
                }
            }
            seed
        }
        None => {
            // `/clear` in this process: the window its seed held stays resumable.
            if let Ok(old) = ledger::read_seed(&own) {
                ledger::archive_window(sessions, &old, ctx.conversation.as_deref().unwrap_or(""));
            }
            session::new_seed(ctx.owner_pid, &[])
        }
    }
}
