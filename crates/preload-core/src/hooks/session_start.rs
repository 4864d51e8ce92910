//! `preload-session-start` (`SessionStart`, every `source`): the session context line, the core
//! standards, the owner's active skill (SKILL.md, its FMT/INV references, the current phase's
//! commands and templates), the session artifacts and, on `startup`, the dehydrated-context
//! recovery, all delivered as `[Preloaded: …]` blocks and recorded as in context.
//!
//! A new Claude process is a new context window: the owner's active session (only the owner's)
//! gets `preloadedFiles` re-seeded and `touchedDirs`, `pendingPreloads`,
//! `pendingAllowInjections` cleared, and `sessions/.seeds/<owner-pid>.json` is written fresh.
//! What does not fit the output stays queued (files in `pendingPreloads`, text in
//! `pendingAllowInjections`), so nothing is silently cut.
//!
//! With `--chunk I/N` the text is generated once per `session_id` + `source` (a cache file and a
//! lock shared by the N registrations) and slice I is printed; slices hold whole blocks.

use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::clock;
use crate::delivery::{self, Event, Packer};
use crate::env;
use crate::fields;
use crate::ledger;
use crate::lock::StateLock;
use crate::markers;
use crate::preload::{self, Batch, Mode, Outcome, Request};
use crate::runner::{self, HookEvent, HookSpec};
use crate::session::{self, STATE_FILE};
use crate::skill;
use crate::state::{self, State, StateError};
use crate::{Context, HookError, HookInput, HookOutput};

/// `ruleId` of text stashed because it did not fit.
const STASH_RULE: &str = "session-start";
/// A cache older than this is generated again: the N registrations of one event start within
/// moments of each other, and a later event of the same conversation, source and client process
/// (a second compaction) must not reuse it.
const CACHE_FRESH: Duration = Duration::from_secs(10);
/// Characters kept free in the last slot for the overflow pointer.
const POINTER_RESERVE: usize = 300;

/// The binary.
pub const SPEC: HookSpec = HookSpec {
    name: "session-start",
    event: HookEvent::SessionStart,
    help: "preload-session-start: SessionStart hook (every source). Usage: [--chunk I/N]

Prints the session context line, the six core standards (+ docs/TOC.md), the owner's active
skill (SKILL.md, FMT/INV references, current-phase commands, templates), the session
artifacts and, on startup, the dehydrated-context recovery, as additionalContext JSON.
Re-seeds the owner's active session and writes sessions/.seeds/<owner-pid>.json; removes
seeds of dead processes. What does not fit stays queued for the next tool calls.
With --chunk I/N (one registration per I in 0..N-1) the text is generated once per
session_id+source and slice I is printed.

Reads stdin: source, session_id, cwd.
Env: HOME, CLAUDE_SUPERVISOR_PID/CLAUDE_PID, CLAUDE_SESSION_CACHE_DIR, WORKSPACE,
     PRELOAD_CACHE_DIR (default ${TMPDIR:-/tmp}/claude-preload-<uid>), PRELOAD_OUTPUT_BUDGET,
     PRELOAD_BUDGET_MS, PRELOAD_LOCK_TIMEOUT_MS, PRELOAD_TEST_LOG, HOOK_DEBUG.
Files: sessions/*/.state.json (the owner's; dehydratedContext of a restored one),
       sessions/.seeds/*.json, the cache directory.",
};

/// `--chunk I/N`: print slice `index` of `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// Which slice (0-based).
    pub index: usize,
    /// How many registrations share the text.
    pub total: usize,
}

/// Parse `--chunk I/N` (or `--chunk=I/N`); `Err` for a malformed or out-of-range value.
pub fn parse_chunk(args: &[String]) -> Result<Option<Chunk>, String> {
    let mut value = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "--chunk" {
            value = Some(iter.next().cloned().unwrap_or_default());
        } else if let Some(v) = arg.strip_prefix("--chunk=") {
            value = Some(v.to_owned());
        }
    }
    let Some(value) = value else { return Ok(None) };
    let parsed = value
        .split_once('/')
        .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)));
    match parsed {
        Some((index, total)) if total > 0 && index < total && total <= 1_000 => {
            Ok(Some(Chunk { index, total }))
        }
        _ => Err(format!("bad --chunk value {value:?}")),
    }
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let chunk = parse_chunk(&args);
    runner::main(&SPEC, move |input, ctx| match chunk {
        Ok(chunk) => handle_chunk(input, ctx, chunk),
        Err(_) => Ok(HookOutput::Silent),
    })
}

/// The whole text within one output budget.
pub fn handle(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    handle_chunk(input, ctx, None)
}

/// One registration: the whole text (`None`) or slice I of N.
pub fn handle_chunk(
    input: &HookInput,
    ctx: &Context,
    chunk: Option<Chunk>,
) -> Result<HookOutput, HookError> {
    let Some(chunk) = chunk else {
        let slots = generate(input, ctx, 1)?;
        return Ok(output_of(slots.first()));
    };
    let slots = cached_slots(input, ctx, chunk.total)?;
    Ok(output_of(slots.get(chunk.index)))
}

fn output_of(blocks: Option<&Vec<String>>) -> HookOutput {
    match blocks {
        Some(blocks) if !blocks.is_empty() => HookOutput::Context(delivery::join_blocks(blocks)),
        _ => HookOutput::Silent,
    }
}

// ---------------------------------------------------------------------------------------------
// Generation.

/// Generate the text for `slots` outputs, write the state, and return the blocks per slot.
/// Empty when the project has no sessions directory.
pub fn generate(
    input: &HookInput,
    ctx: &Context,
    slots: usize,
) -> Result<Vec<Vec<String>>, HookError> {
    let Some(sessions) = ctx.sessions_dir() else {
        return Ok(Vec::new());
    };
    let source = input.source().unwrap_or("startup").to_owned();
    let recovery = if source == "startup" {
        find_dehydrated(ctx)
    } else {
        None
    };
    let slots = slots.max(1);
    let reserve = POINTER_RESERVE.min(ctx.budget / 4);
    let mut budgets = vec![ctx.budget; slots];
    if let Some(last) = budgets.last_mut() {
        *last = last.saturating_sub(reserve);
    }
    let mut packer = Packer::slots(&budgets);
    let plan = Plan {
        ctx,
        source: &source,
        recovery: recovery.as_ref(),
    };

    let conversation = input.session_id().unwrap_or("").to_owned();
    let Window {
        session_dir,
        goes_on,
        resumed_seed,
    } = choose_window(ctx, &source, &conversation);
    // Only now: the seed of a resumed conversation belongs to a process that is gone.
    session::remove_stale_seeds(&sessions);
    let from_session = session_dir.as_deref().and_then(|dir| {
        let mut attempt = packer.clone();
        let filled = fill_session(ctx, &plan, dir, goes_on, &conversation, &mut attempt)?;
        packer = attempt;
        Some(filled)
    });
    if goes_on && from_session.is_some() {
        if let Some(dir) = &session_dir {
            let cache = session::cache_file(ctx);
            let _ = state::write_atomic(&cache, format!("{}\n", dir.display()).as_bytes());
        }
    }
    let (fill, mut seed, is_session) = if let Some((fill, preloaded)) = from_session {
        (fill, session::new_seed(ctx.owner_pid, &preloaded), true)
    } else {
        let mut seed = match &resumed_seed {
            Some((_, old)) => {
                let mut seed = old.clone();
                session::own_seed(&mut seed, ctx.owner_pid);
                ledger::skills_held_at_start(&mut seed, &source);
                seed
            }
            None => session::new_seed(ctx.owner_pid, &[]),
        };
        let fill = plan.fill(&mut seed, None, &mut packer);
        if source == "resume" {
            let delivered: Vec<String> = fill.batch.delivered().map(str::to_owned).collect();
            ledger::note_start_deliveries(&mut seed, &source, &delivered);
        }
        (fill, seed, false)
    };
    if !conversation.is_empty() {
        seed.set(fields::SESSION_ID, json!(conversation));
    }
    fill.batch.log(ctx, is_session);
    let seed_path = session::seed_path(&sessions, ctx.owner_pid);
    if write_seed(ctx, &seed_path, &seed) {
        if let Some((old, _)) = resumed_seed.as_ref().filter(|(old, _)| *old != seed_path) {
            let _ = fs::remove_file(old);
            let _ = fs::remove_file(ledger::carry_path(old));
        }
        let why = format!("session-start({source})");
        for file in seed.strings(fields::PRELOADED_FILES) {
            ctx.log.record(Event::Seed, &file, &why, is_session, "new");
        }
    }
    if let Some(r) = &recovery {
        if !(is_session
            && session_dir
                .as_ref()
                .is_some_and(|d| d.join(STATE_FILE) == r.state))
        {
            let _ = state::update(&r.state, ctx.lock_deadline(), |s| {
                s.remove(fields::DEHYDRATED_CONTEXT);
            });
        }
    }

    let mut out = packer.slot_blocks();
    if fill.overflow > 0 {
        let pointer = format!(
            "[preload overflow: {} more item(s) did not fit the SessionStart output; they are \
             queued and arrive with the next tool calls]",
            fill.overflow
        );
        if let Some(last) = out.last_mut() {
            last.push(pointer);
        }
    }
    Ok(out)
}

/// Re-seed (or, on resume, go on with) the session in `dir` and fill `packer`, in one locked
/// write. `None` when the state is corrupt or locked: it is left as it is, and the seed carries
/// this context window.
fn fill_session(
    ctx: &Context,
    plan: &Plan<'_>,
    dir: &Path,
    goes_on: bool,
    conversation: &str,
    packer: &mut Packer,
) -> Option<(Fill, Vec<String>)> {
    let path = dir.join(STATE_FILE);
    let dir = dir.to_path_buf();
    let result = state::update(&path, ctx.lock_deadline(), |s| {
        // Which skills the client process holds, to put back after its next compaction.
        ledger::skills_held_at_start(s, plan.source);
        if goes_on {
            s.set(fields::PID, json!(ctx.owner_pid));
        } else {
            // The client keeps the tool call a compaction happened after, with what the hooks
            // added to it: those files are in the new context window from its start.
            let kept = ledger::take_last_call_deliveries(s);
            reset(s);
            if plan.source == "compact" {
                for file in &kept {
                    s.push_unique(fields::PRELOADED_FILES, file);
                }
            }
        }
        if !conversation.is_empty() {
            s.set(fields::SESSION_ID, json!(conversation));
        }
        let fill = plan.fill(s, Some(&dir), packer);
        if plan.source == "resume" {
            let delivered: Vec<String> = fill.batch.delivered().map(str::to_owned).collect();
            ledger::note_start_deliveries(s, plan.source, &delivered);
        }
        if plan.recovery.is_some_and(|r| r.state == path) {
            s.remove(fields::DEHYDRATED_CONTEXT);
        }
        (fill, s.strings(fields::PRELOADED_FILES))
    });
    match result {
        Ok(filled) => Some(filled),
        Err(err) => {
            if ctx.debug() {
                runner_note(ctx, &err.to_string());
            }
            None
        }
    }
}

/// Which context window a SessionStart fills.
struct Window {
    /// The session to re-seed (the owner's, or a resumed conversation's).
    session_dir: Option<PathBuf>,
    /// True when the window goes on (a resumed conversation) instead of starting over.
    goes_on: bool,
    /// A resumed conversation that never activated a session: its seed, to go on from.
    resumed_seed: Option<(PathBuf, State)>,
}

/// On `resume` the client replays the conversation: what its state recorded as in context is in
/// the transcript again, so that context window goes on instead of starting over. A session the
/// conversation's dead process left is this process's now.
fn choose_window(ctx: &Context, source: &str, conversation: &str) -> Window {
    let resumed = if source == "resume" {
        session::find_conversation(ctx, conversation)
    } else {
        None
    };
    let owned = session::find_session(ctx).filter(|d| d.join(STATE_FILE).is_file());
    match (owned, resumed) {
        (Some(dir), resumed) => Window {
            goes_on: resumed.is_some_and(|r| r.path == dir.join(STATE_FILE)),
            session_dir: Some(dir),
            resumed_seed: None,
        },
        (None, Some(r)) if r.is_session => Window {
            session_dir: r.path.parent().map(Path::to_path_buf),
            goes_on: true,
            resumed_seed: None,
        },
        (None, resumed) => Window {
            session_dir: None,
            goes_on: false,
            resumed_seed: resumed
                .and_then(|r| ledger::read_seed(&r.path).ok().map(|seed| (r.path, seed))),
        },
    }
}

#[allow(clippy::print_stderr)]
fn runner_note(ctx: &Context, message: &str) {
    eprintln!("preload-{}: {message}", ctx.hook);
}

/// The fields a new context window clears.
fn reset(state: &mut State) {
    state.set(fields::PRELOADED_FILES, json!([]));
    state.set(fields::TOUCHED_DIRS, json!({}));
    state.set(fields::PENDING_PRELOADS, json!([]));
    state.set(fields::STASH, json!([]));
    state.remove(fields::PRELOAD_PARTS);
}

/// Write the fresh seed under its lock; an unparsable seed is left untouched.
fn write_seed(ctx: &Context, path: &Path, seed: &State) -> bool {
    let Some(dir) = path.parent() else {
        return false;
    };
    if fs::create_dir_all(dir).is_err() {
        return false;
    }
    let Ok(lock) = StateLock::acquire(path, ctx.lock_deadline()) else {
        return false;
    };
    let corrupt = matches!(state::load(path), Err(StateError::Corrupt { .. }))
        || matches!(
            state::load(&ledger::carry_path(path)),
            Err(StateError::Corrupt { .. })
        );
    let saved = !corrupt && ledger::write_seed(&lock, path, seed).is_ok();
    lock.release();
    saved
}

/// What one fill produced besides the packed blocks.
#[derive(Debug, Default)]
struct Fill {
    batch: Batch,
    /// Items that did not fit (queued files and stashed texts).
    overflow: usize,
}

struct Plan<'a> {
    ctx: &'a Context,
    source: &'a str,
    recovery: Option<&'a Recovery>,
}

impl Plan<'_> {
    /// Pack everything into `packer` and record it in `state` (a session or a fresh seed).
    fn fill(&self, state: &mut State, session_dir: Option<&PathBuf>, packer: &mut Packer) -> Fill {
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
        let active = session_dir.filter(|_| is_live_lifecycle(state));
        if let Some(dir) = active {
            if self.source == "compact" {
                fill.batch = reinjected_by_client(ctx, state);
            }
            requests.extend(skill_requests(ctx, state));
            requests.extend(artifact_requests(ctx, state, dir));
        }
        fill.batch
            .extend(preload::apply(ctx, state, &requests, Mode::Direct, packer));

        if let Some(dir) = active {
            add_text(packer, session_files(dir), &mut texts_left);
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
                .extend(preload::apply(ctx, state, &files, Mode::Direct, packer));
        }

        let deferred = fill
            .batch
            .outcomes
            .iter()
            .filter(|(_, o)| matches!(o, Outcome::Queued | Outcome::Partial))
            .count();
        for text in &texts_left {
            let mut entry = Map::new();
            entry.insert("ruleId".into(), json!(STASH_RULE));
            entry.insert("content".into(), json!(text));
            entry.insert("agentId".into(), json!(""));
            state.array_mut(fields::STASH).push(Value::Object(entry));
        }
        fill.overflow = deferred + texts_left.len();
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
                let count = |key: &str, default: u64| {
                    let n = state.get(key).and_then(Value::as_u64);
                    n.unwrap_or(default).to_string()
                };
                let _ = write!(
                    line,
                    " | Session: {} | Skill: {} | Phase: {} | Heartbeat: {}/{}",
                    name.unwrap_or_default(),
                    state.str(fields::SKILL).unwrap_or("(none)"),
                    state.str(fields::CURRENT_PHASE).unwrap_or("(none)"),
                    count("toolCallsSinceLastLog", 0),
                    count("toolUseWithoutLogsBlockAfter", 10),
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
            crate::file::read_text(&ctx.paths.skill_file(name), state::MAX_STATE_BYTES)
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
        state.set(fields::RELOADED_SKILLS, json!(reloaded));
    }
    preload::record(ctx, state, &requests)
}

/// Lifecycles in which the session's skill is in use.
fn is_live_lifecycle(state: &State) -> bool {
    matches!(
        state.str(fields::LIFECYCLE),
        None | Some("active" | "resuming" | "restarting" | "dehydrating")
    )
}

/// SKILL.md, its FMT/INV references, the current phase's commands and templates.
fn skill_requests(ctx: &Context, state: &State) -> Vec<Request> {
    let Some(name) = state.str(fields::SKILL).filter(|n| skill::is_valid_name(n)) else {
        return Vec::new();
    };
    let source = format!("session-start-skill({name})");
    let mut out = Vec::new();
    let file = ctx.paths.skill_file(name);
    if let Some(text) = crate::file::read_text(&file, state::MAX_STATE_BYTES) {
        out.push(Request::new(file.to_string_lossy(), source.clone()));
        let resolver = preload::resolver(ctx);
        for found in resolver.references_of(&file, &text) {
            out.push(Request::new(found.to_string_lossy(), source.clone()));
        }
    }
    let label = skill::label_of(state.str(fields::CURRENT_PHASE).unwrap_or("0"));
    for path in skill::session_phase_cmds(&ctx.paths, &state.0, &label) {
        out.push(Request::new(
            path.to_string_lossy(),
            format!("phase-cmds({label})"),
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
    let fields = skill::Skill::load(&ctx.paths, name)
        .map(|s| s.definition)
        .unwrap_or_default();
    let artifact_of = |field: &str| {
        let template = state
            .str(field)
            .or_else(|| fields.get(field).and_then(Value::as_str))?;
        let base = Path::new(template).file_name()?.to_str()?;
        let file = dir.join(base.strip_prefix("TEMPLATE_").unwrap_or(base));
        file.is_file().then_some(file)
    };
    let mut out = Vec::new();
    if let Some(file) = artifact_of("debriefTemplate").or_else(|| artifact_of("logTemplate")) {
        out.push(Request::new(file.to_string_lossy(), "session-artifact"));
    }
    let dialogue = dir.join("DIALOGUE.md");
    if dialogue.is_file() {
        out.push(Request::new(dialogue.to_string_lossy(), "session-artifact"));
    }
    out
}

/// `[Session Files: <dir>]` and the names of its non-dot files.
fn session_files(dir: &Path) -> String {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut text = format!("[Session Files: {}]\n", dir.display());
    for name in names {
        text.push_str(&name);
        text.push('\n');
    }
    text
}

// ---------------------------------------------------------------------------------------------
// Dehydrated-context recovery.

/// A state holding `dehydratedContext`, restored on `startup`.
#[derive(Debug, Clone)]
struct Recovery {
    state: PathBuf,
    session: String,
    skill: String,
    phase: String,
    context: Map<String, Value>,
}

/// The first `sessions/*/.state.json` (name order) with a `dehydratedContext` object that no
/// other live agent owns.
fn find_dehydrated(ctx: &Context) -> Option<Recovery> {
    for root in ctx.sessions_dirs() {
        for dir in session::session_dirs(&root) {
            let path = dir.join(STATE_FILE);
            let Some(text) = crate::file::read_text(&path, state::MAX_STATE_BYTES) else {
                continue;
            };
            if !text.contains("dehydratedContext") {
                continue;
            }
            let Ok(state) = State::parse(&text) else {
                continue;
            };
            let Some(Value::Object(context)) = state.get(fields::DEHYDRATED_CONTEXT) else {
                continue;
            };
            if let Some(pid) = state.pid(fields::PID) {
                if pid != ctx.owner_pid && crate::process::is_alive(pid) {
                    continue;
                }
            }
            return Some(Recovery {
                session: dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                skill: state.str(fields::SKILL).unwrap_or("(none)").to_owned(),
                phase: state
                    .str(fields::CURRENT_PHASE)
                    .unwrap_or("(none)")
                    .to_owned(),
                context: context.clone(),
                state: path,
            });
        }
    }
    None
}

impl Recovery {
    fn text(&self, key: &str) -> Option<String> {
        match self.context.get(key)? {
            Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
            Value::String(_) | Value::Null => None,
            other => Some(other.to_string()),
        }
    }

    /// `requiredFiles` entries with the file each resolves to, when it exists.
    fn files(&self, ctx: &Context) -> Vec<(String, Option<PathBuf>)> {
        let Some(Value::Array(items)) = self.context.get("requiredFiles") else {
            return Vec::new();
        };
        items
            .iter()
            .filter_map(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .take(8)
            .map(|entry| {
                let resolved = resolve_required(ctx, entry.trim());
                let found = resolved.is_file().then_some(resolved);
                (entry.to_owned(), found)
            })
            .collect()
    }

    /// The recovery section (the required files follow as their own blocks).
    fn header(&self, ctx: &Context) -> String {
        let mut out = format!(
            "## Session Recovery (Dehydrated Context)\n**Session**: {}\n**Skill**: {}\n**Phase**: {}\n",
            self.session, self.skill, self.phase
        );
        for (title, key) in [("Summary", "summary"), ("Last Action", "lastAction")] {
            if let Some(text) = self.text(key) {
                let _ = writeln!(out, "\n### {title}\n{}", text.trim_end());
            }
        }
        if let Some(Value::Array(steps)) = self.context.get("nextSteps") {
            out.push_str("\n### Next Steps\n");
            for step in steps {
                let step = step
                    .as_str()
                    .map_or_else(|| step.to_string(), str::to_owned);
                let _ = writeln!(out, "- {step}");
            }
        }
        for (title, key) in [
            ("Handover Instructions", "handoverInstructions"),
            ("User Interaction History", "userHistory"),
        ] {
            if let Some(text) = self.text(key) {
                let _ = writeln!(out, "\n### {title}\n{}", text.trim_end());
            }
        }
        let files = self.files(ctx);
        if !files.is_empty() {
            out.push_str("\n### Required Files (Auto-Loaded)\n");
            for (entry, found) in files {
                match found {
                    Some(path) => {
                        let _ = writeln!(
                            out,
                            "- {entry} → [Preloaded: {}]",
                            ctx.normalize(&path.to_string_lossy())
                        );
                    }
                    None => {
                        let _ = writeln!(
                            out,
                            "- {entry} [MISSING — file not found at {}]",
                            resolve_required(ctx, &entry).display()
                        );
                    }
                }
            }
        }
        out
    }
}

/// `~/…` against `HOME`; `sessions/`, `packages/`, `apps/`, `src/`, `.claude/` and other
/// relative paths against `cwd`.
fn resolve_required(ctx: &Context, entry: &str) -> PathBuf {
    if entry.starts_with('~') {
        crate::paths::expand_tilde(entry, &ctx.paths.home)
    } else if entry.starts_with('/') {
        PathBuf::from(entry)
    } else {
        ctx.cwd.join(entry)
    }
}

// ---------------------------------------------------------------------------------------------
// The cache shared by the `--chunk` registrations.

/// The cache directory: `PRELOAD_CACHE_DIR`, else `${TMPDIR:-/tmp}/claude-preload-<uid>`.
pub fn cache_dir(ctx: &Context) -> PathBuf {
    ctx.env
        .get(env::PRELOAD_CACHE_DIR)
        .map_or_else(|| markers::user_dir(&ctx.env), PathBuf::from)
}

/// The cache key: `<session_id>_<source>` with characters outside `[A-Za-z0-9._-]` as `_`.
///
/// The key names the conversation, the source and the client process that runs the N
/// registrations (with its start time), so one run's text is never served to another: a
/// `--resume` of the same conversation is a new client process.
pub fn cache_key(input: &HookInput) -> String {
    let client = crate::process::nearest_non_shell_ancestor();
    let started = crate::process::start_time(client).unwrap_or(0);
    let raw = format!(
        "{}_{}_{client}-{started}",
        input.session_id().unwrap_or("nosession"),
        input.source().unwrap_or("startup")
    );
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Read a cache file without following symlinks; `None` when absent, stale, foreign or bad.
fn read_cache(path: &Path) -> Option<(usize, Vec<Vec<String>>)> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags((nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK).bits())
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.uid() != nix::unistd::geteuid().as_raw() {
        return None;
    }
    let age = meta.modified().ok()?.elapsed().unwrap_or_default();
    if age > CACHE_FRESH {
        return None;
    }
    let mut text = String::new();
    file.take(state::MAX_STATE_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    let value: Value = serde_json::from_str(&text).ok()?;
    let n = usize::try_from(value.get("n")?.as_u64()?).ok()?;
    let slots = value
        .get("slots")?
        .as_array()?
        .iter()
        .map(|slot| {
            slot.as_array()
                .map(|b| {
                    b.iter()
                        .filter_map(|x| x.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect();
    Some((n, slots))
}

/// Remove caches older than the freshness window and leftover temporary files.
fn sweep_cache(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        let age = meta
            .modified()
            .ok()
            .and_then(|m| m.elapsed().ok())
            .unwrap_or_default();
        let old_cache =
            Path::new(&name).extension().is_some_and(|e| e == "json") && age > CACHE_FRESH;
        let old_temp = name.contains(".tmp.") && age > Duration::from_secs(60);
        if meta.is_file() && (old_cache || old_temp) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// The slices for `total` registrations: from the cache, or generated once under its lock.
fn cached_slots(
    input: &HookInput,
    ctx: &Context,
    total: usize,
) -> Result<Vec<Vec<String>>, HookError> {
    let dir = cache_dir(ctx);
    // A real directory of this user's, 0700 (a symlink or another user's is refused).
    markers::MarkerDir::at(&dir, true)
        .map_err(|err| HookError::Other(format!("cache directory: {err}")))?;
    let path = dir.join(format!("{}.json", cache_key(input)));
    if let Some((n, slots)) = read_cache(&path) {
        return Ok(reslice(n, slots, total, ctx.budget));
    }
    let left = ctx.deadline.saturating_duration_since(Instant::now());
    let lock = StateLock::acquire_unlatched(&path, Instant::now() + left * 3 / 4)?;
    if let Some((n, slots)) = read_cache(&path) {
        lock.release();
        return Ok(reslice(n, slots, total, ctx.budget));
    }
    sweep_cache(&dir);
    let slots = generate(input, ctx, total)?;
    let doc = json!({"n": total, "slots": slots});
    let written = state::write_atomic(&path, doc.to_string().as_bytes());
    lock.release();
    written.map_err(|err| HookError::Io {
        action: "write",
        path,
        source: err.source,
    })?;
    Ok(slots)
}

/// Slices cut for `n` registrations, cut again for `total` when the two differ.
fn reslice(n: usize, slots: Vec<Vec<String>>, total: usize, budget: usize) -> Vec<Vec<String>> {
    if n == total {
        return slots;
    }
    let mut packer = Packer::slots(&vec![budget; total]);
    let mut left = 0;
    for block in slots.into_iter().flatten() {
        if !packer.try_add(block) {
            left += 1;
        }
    }
    let mut out = packer.slot_blocks();
    if left > 0 {
        if let Some(last) = out.last_mut() {
            // Make room for the pointer in the last slot.
            while !last.is_empty() && delivery::chars(&delivery::join_blocks(last)) + 200 > budget {
                last.pop();
                left += 1;
            }
            last.push(format!(
                "[preload overflow: {left} more block(s) did not fit {total} SessionStart slots]"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_arguments() {
        let args = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(parse_chunk(&args(&[])), Ok(None));
        assert_eq!(
            parse_chunk(&args(&["--chunk", "3/48"])),
            Ok(Some(Chunk {
                index: 3,
                total: 48
            }))
        );
        assert_eq!(
            parse_chunk(&args(&["--chunk=0/1"])),
            Ok(Some(Chunk { index: 0, total: 1 }))
        );
        assert!(parse_chunk(&args(&["--chunk", "48/48"])).is_err());
        assert!(parse_chunk(&args(&["--chunk", "x"])).is_err());
        assert!(parse_chunk(&args(&["--chunk"])).is_err());
    }

    #[test]
    fn cache_keys_are_safe_file_names() {
        let input = HookInput::from_value(json!({"session_id": "a/../b c", "source": "clear"}));
        let key = cache_key(&input);
        assert!(key.starts_with("a_.._b_c_clear_"), "{key}");
        assert!(
            key.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        );
        // The client process is part of the key: a run in another process never shares it.
        let client = crate::process::nearest_non_shell_ancestor();
        assert!(key.contains(&format!("_{client}-")), "{key}");
    }

    #[test]
    fn reslicing_keeps_every_block_or_points_at_the_rest() {
        let slots = vec![
            vec!["a".repeat(300)],
            vec!["b".repeat(300)],
            vec!["c".repeat(300)],
        ];
        let same = reslice(3, slots.clone(), 3, 400);
        assert_eq!(same, slots);
        let fewer = reslice(3, slots, 2, 400);
        assert_eq!(fewer.len(), 2);
        assert!(fewer[1].last().unwrap().starts_with("[preload overflow:"));
        for slot in &fewer {
            assert!(delivery::chars(&delivery::join_blocks(slot)) <= 400);
        }
    }
}
