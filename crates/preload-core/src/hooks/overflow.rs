//! `preload-overflow` (`PreToolUse` `*`): the guard engine of `guards.json`.
//!
//! One call: the `engine log` / `engine session` bypasses, then ONE locked update of the state
//! that does the lifecycle bypasses, the per-agent tool-call counter, directive discovery, rule
//! evaluation, the preload rule's claim and the stash of allow-rule content. Events are logged
//! and tmux pastes sent only after that write.
//!
//! Which state: the owner's session; else, before activation, its seed (discovery and the preload
//! rule work on the seed, and rules see `lifecycle: "none"`, so the session gate applies); else a
//! `{(fields::LIFECYCLE): "none", (fields::CONTEXT_USAGE): 0}` stand-in that is never written. A project without a
//! `sessions/` directory has no engine: the hook prints nothing.

use std::borrow::Cow;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

use crate::activation;
use crate::clock;
use crate::counters;
use crate::delivery::{self, Event, MIN_BUDGET, Packer, chars};
use crate::discovery::{self, Accept, Scope};
use crate::env;
use crate::file;

use crate::fields;
use crate::ledger;
use crate::preload::{self, Audience, Batch, Request};
use crate::rules::{self, Facts, Matched, Mode, Rule, Urgency};
use crate::runner::{self, HookEvent, HookSpec};
use crate::session::{self, PreloadState, STATE_FILE};
use crate::state::{self, State};
use crate::{Context, HookError, HookInput, HookOutput};

/// The binary.
pub const SPEC: HookSpec = HookSpec {
    name: "overflow",
    event: HookEvent::PreToolUse,
    help: "preload-overflow: PreToolUse hook (matcher *), the guard engine.

Counts tool calls per agent, discovers directives for Read/Edit/Write/Glob/Grep, evaluates
~/.claude/engine/guards.json (overflow, session gate, heartbeat, preload, ...) and allows or
denies the call. Allow-rule content (preloaded files, warnings) is stashed for preload-injections.

Reads stdin: tool_name, tool_input, transcript_path, agent_id, cwd.
Env: HOME, CLAUDE_SUPERVISOR_PID/CLAUDE_PID, CLAUDE_SESSION_CACHE_DIR, WORKSPACE,
     DISABLE_AUTO_COMPACT=1 (overflow threshold 0.95), TMUX/TMUX_PANE (paste rules),
     PRELOAD_AUTO_ACTIVATE=1 (create an ad-hoc /do session when none exists),
     PRELOAD_OUTPUT_BUDGET, PRELOAD_BUDGET_MS, PRELOAD_LOCK_TIMEOUT_MS, PRELOAD_TEST_LOG,
     HOOK_DEBUG.
Files: guards.json, engine/config.sh (OVERFLOW_THRESHOLD), the session .state.json or
       sessions/.seeds/<pid>.json and its .lock directory.",
};

/// Tools that never count toward the heartbeat.
pub const UNCOUNTED_TOOLS: [&str; 3] = ["Task", "TaskOutput", "Agent"];
/// Tools whose path triggers directive discovery.
pub const DISCOVERY_TOOLS: [&str; 5] = ["Read", "Edit", "Write", "Glob", "Grep"];
/// Lifecycles in which nothing is counted and nothing discovered.
pub const QUIET_LIFECYCLES: [&str; 4] = ["completed", "idle", "restarting", "resuming"];

/// Entry point of the binary.
pub fn main() -> ExitCode {
    runner::main(&SPEC, handle)
}

/// The facts of one tool call.
#[derive(Debug)]
struct Call<'a> {
    input: &'a HookInput,
    tool: &'a str,
    command: &'a str,
    agent: Option<&'a str>,
    /// `toolCallsByTranscript` key: the transcript basename, or `sub:<agent_id>`.
    key: String,
}

impl<'a> Call<'a> {
    fn new(input: &'a HookInput) -> Self {
        let agent = input.agent_id();
        let key = match agent {
            Some(id) => format!("sub:{id}"),
            None => input.transcript_key().unwrap_or("unknown").to_owned(),
        };
        Self {
            input,
            tool: input.tool_name().unwrap_or(""),
            command: input.tool_input_str("command").unwrap_or(""),
            agent,
            key,
        }
    }

    fn is_sub(&self) -> bool {
        self.agent.is_some()
    }
}

/// Which state file the call works on.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// The session in this directory.
    Session(PathBuf),
    /// The owner's seed file (no session yet).
    Seed(PathBuf),
    /// Nothing to write to.
    Nowhere,
}

/// A tmux paste to send after the write.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Paste {
    text: String,
    interrupt: bool,
}

/// What one decision produced.
#[derive(Debug, Default)]
struct Plan {
    deny: Option<String>,
    batch: Batch,
    stashed: Vec<(String, String)>,
    pastes: Vec<Paste>,
    /// Allow-rule text handed out in this answer (when the state could not be written).
    direct: Vec<String>,
}

/// An `engine log` / `engine session` call: allowed without rules, never counted, yet what is
/// queued still rides along (except on `engine session dehydrate`, the context's last call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EngineCommand {
    /// `engine log …`: the agent's counter starts over.
    Log,
    /// `engine session …`.
    Session,
    /// `engine session dehydrate …`.
    Dehydrate,
}

fn engine_command(call: &Call) -> Option<EngineCommand> {
    if call.tool != "Bash" {
        return None;
    }
    if rules::is_engine_cmd(call.command, "log") {
        Some(EngineCommand::Log)
    } else if call.command.contains("engine session dehydrate") {
        Some(EngineCommand::Dehydrate)
    } else if rules::is_engine_cmd(call.command, "session") {
        Some(EngineCommand::Session)
    } else {
        None
    }
}

/// Whether claims may be made and stashed (false when the state cannot be written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Writes {
    Allowed,
    Impossible,
}

/// Decide on one tool call.
pub fn handle(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    let Some(sessions) = ctx.sessions_dir() else {
        return Ok(HookOutput::Silent);
    };
    let call = Call::new(input);
    let engine = engine_command(&call);
    let rules = load_rules(ctx);
    let target = locate(ctx, &sessions)?;
    let plan = match &target {
        Target::Session(dir) => session_call(ctx, &call, &rules, &dir.join(STATE_FILE), engine)?,
        Target::Seed(path) => {
            let record = PreloadState {
                path: path.clone(),
                is_session: false,
            };
            ledger::update(ctx, &record, |s| {
                decide(ctx, &call, &rules, s, &target, engine, Writes::Allowed)
            })?
        }
        Target::Nowhere => {
            let mut stand_in = State::default();
            stand_in.set(fields::LIFECYCLE, json!("none"));
            stand_in.set(fields::CONTEXT_USAGE, json!(0));
            decide(
                ctx,
                &call,
                &rules,
                &mut stand_in,
                &target,
                engine,
                Writes::Impossible,
            )
        }
    };
    let is_session = matches!(target, Target::Session(_));
    plan.batch.log(ctx, is_session);
    for (file, source) in &plan.stashed {
        ctx.log
            .record(Event::StashInject, file, source, is_session, "new");
    }
    for paste in &plan.pastes {
        tmux_paste(ctx, paste);
    }
    Ok(match plan.deny {
        Some(reason) => HookOutput::Deny(reason),
        None if plan.direct.is_empty() => HookOutput::Allow(None),
        None => HookOutput::Allow(Some(plan.direct.join("\n\n"))),
    })
}

/// The rules of `guards.json`; missing, empty or malformed means none.
fn load_rules(ctx: &Context) -> Vec<Rule> {
    file::read_text(&ctx.paths.guards, state::MAX_STATE_BYTES)
        .and_then(|text| rules::parse(&text).ok())
        .unwrap_or_default()
}

fn locate(ctx: &Context, sessions: &Path) -> Result<Target, HookError> {
    if let Some(dir) = session::find_session(ctx) {
        if dir.join(STATE_FILE).is_file() {
            return Ok(Target::Session(dir));
        }
    }
    // The session this process last used, now unreadable: fail open rather than gate.
    if let Some(text) = file::read_text(&session::cache_file(ctx), state::MAX_STATE_BYTES) {
        let cached = Path::new(text.trim()).join(STATE_FILE);
        if let Err(err @ state::StateError::Corrupt { .. }) = state::load(&cached) {
            return Err(err.into());
        }
    }
    if ctx.env.is_one(env::PRELOAD_AUTO_ACTIVATE) {
        if let Some(dir) = auto_activate(ctx, sessions)? {
            return Ok(Target::Session(dir));
        }
    }
    let seed = session::seed_path(sessions, ctx.owner_pid);
    Ok(if seed.is_file() {
        Target::Seed(seed)
    } else {
        Target::Nowhere
    })
}

/// Opt-in (`PRELOAD_AUTO_ACTIVATE=1`): activate `sessions/YYYY_MM_DD_ADHOC` as a `/do` session
/// owned by this process, taking over the seed's tracking (the shared activation). `None` when
/// that directory already has a state (someone else's).
fn auto_activate(ctx: &Context, sessions: &Path) -> Result<Option<PathBuf>, HookError> {
    let (y, m, d, ..) = clock::utc_parts(ctx.now);
    let dir = sessions.join(format!("{y:04}_{m:02}_{d:02}_ADHOC"));
    let path = dir.join(STATE_FILE);
    if fs::symlink_metadata(&path).is_ok() {
        return Ok(None);
    }
    activation::activate(ctx, &dir, Some("do")).map_err(|f| HookError::Other(f.to_string()))?;
    // An ad-hoc session has no phases to load: count and discover from the first call.
    state::update(&path, ctx.lock_deadline(), |s| {
        s.remove(fields::LOADING);
    })?;
    Ok(Some(dir))
}

/// A call in the owner's session. The state is read without the lock and the call decided on
/// that read; the counters go to their own file (see [`counters`]). The lock is taken only
/// when the decision changes the state (discovery, a claim, a stash, a delivered rule, the
/// conversation's records), and then the decision is made again on what the locked read finds.
/// When the lock cannot be had in time, the answer still stands on the unlocked read: the
/// rules' verdict, allow-rule text in the answer itself, queued files left queued.
fn session_call(
    ctx: &Context,
    call: &Call,
    rules: &[Rule],
    path: &Path,
    engine: Option<EngineCommand>,
) -> Result<Plan, HookError> {
    let record = PreloadState {
        path: path.to_path_buf(),
        is_session: true,
    };
    let read = state::load(path)?;
    if let Some(pass) = pass_through(call, &read, engine) {
        if pass == Pass::Dehydrating {
            let _ = state::update(path, ctx.lock_deadline(), |s| {
                s.set(fields::LIFECYCLE, json!("dehydrating"));
            });
        }
        return Ok(Plan::default());
    }
    let quiet = is_quiet(&read);
    let counted = !quiet && engine.is_none() && !UNCOUNTED_TOOLS.contains(&call.tool);
    let view = if engine == Some(EngineCommand::Log) {
        Some(counters::update(path, &read, ctx.lock_deadline(), |c| {
            c.reset(&call.key, !call.is_sub());
        })?)
    } else if counted {
        let edited = call.input.tool_input_str("file_path");
        Some(counters::update(path, &read, ctx.lock_deadline(), |c| {
            c.count(&call.key, !call.is_sub(), call.tool, edited);
        })?)
    } else {
        None
    };
    let mut base = read.clone();
    if let Some(view) = &view {
        view.mirror(&mut base);
    }
    let target = Target::Session(path.parent().map(Path::to_path_buf).unwrap_or_default());
    let mut trial = base.clone();
    let plan = decide(
        ctx,
        call,
        rules,
        &mut trial,
        &target,
        engine,
        Writes::Allowed,
    );
    if trial == base && !ledger::is_due(ctx, &record, &read) {
        if base != read {
            // Only the counters' mirror for the engine's readers: never worth a wait.
            let _ = state::update(path, Instant::now(), |s| {
                if let Some(view) = &view {
                    view.mirror(s);
                }
            });
        }
        return Ok(plan);
    }
    let locked = ledger::update(ctx, &record, |s| {
        if let Some(view) = &view {
            view.mirror(s);
        }
        decide(ctx, call, rules, s, &target, engine, Writes::Allowed)
    });
    match locked {
        Ok(plan) => Ok(plan),
        Err(state::StateError::Lock(_) | state::StateError::Late { .. }) => {
            let mut unlocked = base;
            Ok(decide(
                ctx,
                call,
                rules,
                &mut unlocked,
                &target,
                engine,
                Writes::Impossible,
            ))
        }
        Err(err) => Err(err.into()),
    }
}

/// Lifecycle bypasses: the call is allowed with no rule evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Allowed as it is.
    Allow,
    /// `engine session dehydrate` not recognised as an engine command (a prefix before it):
    /// the session is marked dehydrating.
    Dehydrating,
}

fn pass_through(call: &Call, s: &State, engine: Option<EngineCommand>) -> Option<Pass> {
    if engine == Some(EngineCommand::Dehydrate) {
        return Some(Pass::Dehydrating);
    }
    if call.tool == "Skill"
        && call.input.tool_input_str("skill") == Some("session")
        && call
            .input
            .tool_input_str("args")
            .is_some_and(|a| a.contains("continue"))
    {
        return Some(Pass::Allow);
    }
    let lifecycle = s.str(fields::LIFECYCLE).unwrap_or("active");
    (lifecycle == "dehydrating" || s.flag(fields::KILL_REQUESTED)).then_some(Pass::Allow)
}

/// No counting and no discovery while loading, overflowed or not at work.
fn is_quiet(s: &State) -> bool {
    s.flag(fields::LOADING)
        || s.flag(fields::OVERFLOWED)
        || QUIET_LIFECYCLES.contains(&s.str(fields::LIFECYCLE).unwrap_or("active"))
}

/// The rules on one state: discovery, evaluation, the preload claim and the stash. Counting is
/// done before (see [`session_call`]).
fn decide(
    ctx: &Context,
    call: &Call,
    rules: &[Rule],
    s: &mut State,
    target: &Target,
    engine: Option<EngineCommand>,
    writes: Writes,
) -> Plan {
    let mut plan = Plan::default();
    if writes == Writes::Allowed
        && engine.is_none()
        && !matches!(target, Target::Nowhere)
        && !is_quiet(s)
        && !call.is_sub()
        && DISCOVERY_TOOLS.contains(&call.tool)
    {
        discover(ctx, call, s, &mut plan);
    }
    // Rules see the session, or (before activation) the seed as "no session".
    let view: Cow<State> = if matches!(target, Target::Seed(_)) {
        let mut v = s.clone();
        v.set(fields::LIFECYCLE, json!("none"));
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
    let session_dir = match target {
        Target::Session(dir) => Some(dir.as_path()),
        _ => None,
    };
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
    if !matches!(target, Target::Nowhere) {
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
            let injected = s.object_mut(fields::INJECTED_RULES);
            for id in &delivered {
                injected.insert(id.clone(), json!(true));
            }
            s.set(fields::LAST_HEARTBEAT, json!(clock::iso_utc(ctx.now)));
        }
    }
    plan
}

fn discover(ctx: &Context, call: &Call, s: &mut State, plan: &mut Plan) {
    let Some(raw) = call
        .input
        .tool_input_str("file_path")
        .or_else(|| call.input.tool_input_str("path"))
    else {
        return;
    };
    let scope = Scope {
        claude_dir: ctx.paths.claude.clone(),
        project_root: Some(ctx.project_root.clone()),
        home: ctx.paths.home.clone(),
        cwd: ctx.cwd.clone(),
    };
    // The skill's declared directives surface with the core ones (seed case 4.1: a read of a
    // file finds the package's PITFALLS.md). A checklist is a gate on changing code: it is
    // armed by an Edit or Write only, as in the engine.
    let declared = s.strings(fields::DIRECTIVES);
    let accept = Accept {
        declared: if matches!(call.tool, "Edit" | "Write") {
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
    plan.batch.extend(preload::apply(
        ctx,
        s,
        &requests,
        preload::Mode::Queue,
        &mut packer,
    ));
}

/// Claim a preload rule's files within `room` characters; the blocks, or none when there is no
/// room (the files stay queued).
fn claim(
    ctx: &Context,
    call: &Call,
    s: &mut State,
    rule: &Matched,
    room: usize,
    writes: Writes,
    plan: &mut Plan,
) -> Vec<String> {
    if room < MIN_BUDGET || writes == Writes::Impossible {
        return Vec::new();
    }
    let source = format!("overflow({})", rule.id);
    let requests: Vec<Request> = rule
        .preload_files()
        .iter()
        .map(|f| Request::new(f.as_str(), source.as_str()))
        .collect();
    let requests = preload::by_priority(ctx, s, requests);
    let mut packer = Packer::new(room);
    let audience = call.agent.map_or(Audience::Main, Audience::SubAgent);
    let batch = preload::apply_for(
        ctx,
        s,
        &requests,
        preload::Mode::Claim,
        &mut packer,
        audience,
    );
    let blocks = batch.blocks.clone();
    plan.batch.extend(batch);
    blocks
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
    if rule.mode == Mode::Inline && rule.id.starts_with("heartbeat-") {
        return Some(enrich_heartbeat(ctx, call, s, session_dir, &text));
    }
    Some(text)
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
            let blocks = claim(ctx, call, s, rule, room, writes, plan);
            if !blocks.is_empty() {
                parts.push(delivery::join_blocks(&blocks));
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
    let waiting: usize = match s.get(fields::STASH) {
        Some(Value::Array(entries)) => entries
            .iter()
            .filter(|e| e.get("agentId").and_then(Value::as_str).unwrap_or("") == agent)
            .map(|e| chars(e.get("content").and_then(Value::as_str).unwrap_or("")) + 2)
            .sum(),
        _ => 0,
    };
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
            let blocks = claim(ctx, call, s, rule, room, writes, plan);
            for path in blocks.iter().flat_map(|b| delivery::block_paths(b)) {
                plan.stashed.push((path, format!("overflow({})", rule.id)));
            }
            delivery::join_blocks(&blocks)
        };
        if content.is_empty() {
            continue;
        }
        delivered.push(rule.id.clone());
        entries.push(json!({"ruleId": rule.id, "content": content, "agentId": agent}));
    }
    if !entries.is_empty() {
        s.array_mut(fields::STASH).extend(entries);
    }
    delivered
}

/// `<text> (N/M) [HH:MM | Context: P%]` and the `engine log` command for the session log.
fn enrich_heartbeat(
    ctx: &Context,
    call: &Call,
    s: &State,
    session_dir: Option<&Path>,
    text: &str,
) -> String {
    let Some(dir) = session_dir else {
        return text.to_owned();
    };
    let template = s
        .str(fields::LOG_TEMPLATE)
        .filter(|t| !t.is_empty())
        .and_then(|t| Path::new(t).file_name())
        .map(|n| n.to_string_lossy().into_owned());
    let log_file = match (&template, s.str(fields::SKILL).filter(|k| !k.is_empty())) {
        (Some(t), _) => t.strip_prefix("TEMPLATE_").unwrap_or(t).to_owned(),
        (None, Some(skill)) => {
            let upper: String = skill
                .chars()
                .map(|c| {
                    if c.is_ascii_alphabetic() {
                        c.to_ascii_uppercase()
                    } else {
                        '_'
                    }
                })
                .collect();
            format!("{upper}_LOG.md")
        }
        (None, None) => return text.to_owned(),
    };
    let log_path = dir.join(log_file);
    let shown = log_path
        .strip_prefix(&ctx.cwd)
        .unwrap_or(&log_path)
        .to_string_lossy()
        .into_owned();
    let count = if call.is_sub() {
        rules::counter(s, &call.key)
    } else {
        s.number(fields::TOOL_CALLS_SINCE_LAST_LOG)
            .map_or(0, state::whole)
    };
    let limit = s.number(fields::BLOCK_AFTER).map_or(10, state::whole);
    let percent = (s.number(fields::CONTEXT_USAGE).unwrap_or(0.0) * 100.0).round();
    let (_, _, _, hh, mm, _) = clock::utc_parts(ctx.now);
    let head = format!("{text} ({count}/{limit}) [{hh:02}:{mm:02} | Context: {percent}%]");
    match template {
        Some(t) => format!("{head}\n    $ engine log {shown} <<'EOF' [Template: {t}] ... EOF"),
        None => format!("{head}\n    $ engine log {shown}"),
    }
}

/// The paste script: `$1` pane (may be empty), `$2` text, `$3` 1 to interrupt first.
const PASTE_SCRIPT: &str = r#"k() { if [ -n "$P" ]; then tmux send-keys -t "$P" "$@"; else tmux send-keys "$@"; fi; }
P=$1
if [ "$3" = 1 ]; then k Escape; sleep 0.3; k Escape; sleep 0.3; k C-u; sleep 0.3; fi
k -l "$2" && k Enter"#;

/// Type a paste rule's command into the tmux pane, in the background (never waited for).
fn tmux_paste(ctx: &Context, paste: &Paste) {
    if ctx.env.get(env::TMUX).is_none() || paste.text.is_empty() {
        return;
    }
    let _ = Command::new("sh")
        .arg("-c")
        .arg(PASTE_SCRIPT)
        .arg("preload-paste")
        .arg(ctx.env.get(env::TMUX_PANE).unwrap_or(""))
        .arg(&paste.text)
        .arg(if paste.interrupt { "1" } else { "0" })
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::env::Env;
    use std::time::Duration;

    struct Fixture {
        _tmp: tempfile::TempDir,
        home: PathBuf,
        project: PathBuf,
    }

    fn fixture(guards: &Value) -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let home = root.join("home");
        let project = root.join("project");
        fs::create_dir_all(home.join(".claude/engine/.directives")).unwrap();
        fs::create_dir_all(project.join(".claude")).unwrap();
        fs::create_dir_all(project.join("sessions")).unwrap();
        fs::write(home.join(".claude/engine/guards.json"), guards.to_string()).unwrap();
        Fixture {
            _tmp: tmp,
            home,
            project,
        }
    }

    impl Fixture {
        fn ctx(&self, extra: &[(&str, &str)]) -> Context {
            let mut env = Env::from_pairs([
                (env::HOME, self.home.to_string_lossy().into_owned()),
                (env::CLAUDE_SUPERVISOR_PID, std::process::id().to_string()),
                (
                    env::CLAUDE_SESSION_CACHE_DIR,
                    self.project.to_string_lossy().into_owned(),
                ),
            ]);
            for (k, v) in extra {
                env.set(k, *v);
            }
            let input = HookInput::from_value(json!({"cwd": self.project}));
            Context::new(env, "overflow", &input, Duration::from_secs(5))
        }

        fn session(&self, state: &Value) -> PathBuf {
            let dir = self.project.join("sessions/s");
            fs::create_dir_all(&dir).unwrap();
            let mut st = json!({"pid": std::process::id(), "lifecycle": "active"});
            st.as_object_mut()
                .unwrap()
                .extend(state.as_object().unwrap().clone());
            fs::write(dir.join(STATE_FILE), st.to_string()).unwrap();
            dir.join(STATE_FILE)
        }
    }

    fn input(v: Value) -> HookInput {
        let mut v = v;
        v.as_object_mut()
            .unwrap()
            .entry("transcript_path")
            .or_insert(json!("/t/main.jsonl"));
        HookInput::from_value(v)
    }

    fn heartbeat_rules() -> Value {
        json!([
            {"id": "heartbeat-warn", "trigger": {"type": "perTranscriptToolCount", "condition": {"eq": 3}},
             "payload": {"text": "[warn: heartbeat] §CMD_APPEND_LOG"}, "mode": "inline", "urgency": "allow", "priority": 50},
            {"id": "heartbeat-block", "trigger": {"type": "perTranscriptToolCount", "condition": {"gte": 10}},
             "payload": {"text": "[warn: heartbeat] §CMD_APPEND_LOG"}, "mode": "inline", "urgency": "block", "priority": 5,
             "whitelist": ["Bash(engine log *)", "Task"]}
        ])
    }

    #[test]
    fn no_sessions_dir_is_silent() {
        let f = fixture(&json!([]));
        fs::remove_dir(f.project.join("sessions")).unwrap();
        let out = handle(&input(json!({"tool_name": "Read"})), &f.ctx(&[])).unwrap();
        assert_eq!(out, HookOutput::Silent);
    }

    #[test]
    fn counting_warns_then_blocks_with_enrichment() {
        let f = fixture(&heartbeat_rules());
        let path = f.session(&json!({"skill": "implement", "contextUsage": 0.42,
            "logTemplate": "/h/assets/TEMPLATE_IMPLEMENTATION_LOG.md"}));
        let ctx = f.ctx(&[]);
        let read = input(json!({"tool_name": "Read", "tool_input": {"file_path": "/elsewhere/x"}}));
        for _ in 0..3 {
            assert_eq!(handle(&read, &ctx).unwrap(), HookOutput::Allow(None));
        }
        let s = state::load(&path).unwrap();
        assert_eq!(rules::counter(&s, "main.jsonl"), 3);
        assert_eq!(s.number(fields::TOOL_CALLS_SINCE_LAST_LOG), Some(3.0));
        assert_eq!(s.str("primaryTranscriptKey"), Some("main.jsonl"));
        let stash = s.get(fields::STASH).unwrap().as_array().unwrap();
        assert_eq!(stash.len(), 1);
        let content = stash[0]["content"].as_str().unwrap();
        assert!(
            content.starts_with("[warn: heartbeat] §CMD_APPEND_LOG (3/10) ["),
            "{content}"
        );
        assert!(content.contains("| Context: 42%]\n    $ engine log sessions/s/IMPLEMENTATION_LOG.md <<'EOF' [Template: TEMPLATE_IMPLEMENTATION_LOG.md] ... EOF"), "{content}");
        for _ in 3..9 {
            handle(&read, &ctx).unwrap();
        }
        let HookOutput::Deny(reason) = handle(&read, &ctx).unwrap() else {
            panic!("tenth call is denied")
        };
        assert!(
            reason
                .starts_with("[block: heartbeat-block]\n[warn: heartbeat] §CMD_APPEND_LOG (10/10)")
        );
        let task = input(json!({"tool_name": "Task", "tool_input": {}}));
        assert_eq!(handle(&task, &ctx).unwrap(), HookOutput::Allow(None));
        let log =
            input(json!({"tool_name": "Bash", "tool_input": {"command": "engine log x <<'EOF'"}}));
        assert_eq!(handle(&log, &ctx).unwrap(), HookOutput::Allow(None));
        let s = state::load(&path).unwrap();
        assert_eq!(rules::counter(&s, "main.jsonl"), 0);
        assert_eq!(s.number(fields::TOOL_CALLS_SINCE_LAST_LOG), Some(0.0));
    }

    #[test]
    fn same_file_edits_count_once_and_sub_agents_count_apart() {
        let f = fixture(&json!([]));
        let path = f.session(&json!({}));
        let ctx = f.ctx(&[]);
        let edit = input(json!({"tool_name": "Edit", "tool_input": {"file_path": "/x/a.rs"}}));
        handle(&edit, &ctx).unwrap();
        handle(&edit, &ctx).unwrap();
        let s = state::load(&path).unwrap();
        assert_eq!(rules::counter(&s, "main.jsonl"), 1);
        assert_eq!(s.str("lastEditFile_main.jsonl"), Some("/x/a.rs"));
        let sub = input(
            json!({"tool_name": "Edit", "agent_id": "a1", "tool_input": {"file_path": "/x/a.rs"}}),
        );
        handle(&sub, &ctx).unwrap();
        handle(&sub, &ctx).unwrap();
        let s = state::load(&path).unwrap();
        assert_eq!(rules::counter(&s, "sub:a1"), 1);
        assert_eq!(s.str("lastEditFile_sub:a1"), Some("/x/a.rs"));
        assert_eq!(
            s.number(fields::TOOL_CALLS_SINCE_LAST_LOG),
            Some(1.0),
            "parent's copy untouched"
        );
        let other = input(json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}));
        handle(&other, &ctx).unwrap();
        let s = state::load(&path).unwrap();
        assert!(s.get("lastEditFile_main.jsonl").is_none());
        assert_eq!(rules::counter(&s, "main.jsonl"), 2);
    }

    #[test]
    fn no_session_uses_a_none_lifecycle_and_writes_nothing() {
        let gate = json!([{"id": "session-gate", "trigger": {"type": "lifecycle", "condition": {"noActiveSession": true}},
            "payload": {"text": "[block: session] no active session (lifecycle: $lifecycle)."},
            "mode": "inline", "urgency": "block", "priority": 2, "whitelist": ["AskUserQuestion"]}]);
        let f = fixture(&gate);
        let ctx = f.ctx(&[]);
        let out = handle(
            &input(json!({"tool_name": "Grep", "tool_input": {"pattern": "x"}})),
            &ctx,
        )
        .unwrap();
        assert_eq!(
            out,
            HookOutput::Deny(
                "[block: session-gate]\n[block: session] no active session (lifecycle: none)."
                    .into()
            )
        );
        let ask = handle(&input(json!({"tool_name": "AskUserQuestion"})), &ctx).unwrap();
        assert_eq!(ask, HookOutput::Allow(None));
        let entries: Vec<_> = fs::read_dir(f.project.join("sessions")).unwrap().collect();
        assert!(entries.is_empty(), "nothing created");
    }

    #[test]
    fn auto_activation_is_opt_in() {
        let f = fixture(&json!([]));
        let ctx = f.ctx(&[(env::PRELOAD_AUTO_ACTIVATE, "1")]);
        handle(
            &input(json!({"tool_name": "Bash", "tool_input": {"command": "ls"}})),
            &ctx,
        )
        .unwrap();
        let made: Vec<_> = fs::read_dir(f.project.join("sessions"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(made.len(), 1);
        assert!(made[0].ends_with("_ADHOC"));
        let s = state::load(&f.project.join("sessions").join(&made[0]).join(STATE_FILE)).unwrap();
        assert_eq!(s.str("skill"), Some("do"));
        assert_eq!(s.str("lifecycle"), Some("active"));
        assert_eq!(
            rules::counter(&s, "main.jsonl"),
            1,
            "the call that created it counts"
        );
    }
}
