//! `preload-compaction-reread`: after a compaction, hands handler, worker and loop sessions
//! the files their work lives in.
//!
//! One binary, five subcommands sharing one marker directory ([`crate::markers`]):
//! - `register` (`PostToolUse`, `Skill`): `/handler` or `/loop` leaves a registration marker for
//!   the `session_id` (holding `cwd`);
//! - `precompact` (`PreCompact`): detects the session type (handler, worker, loop, regular) and
//!   leaves a one-shot compaction marker `{type, handler_dir | dispatch_file | loop_file}`;
//! - `sessionstart` (`SessionStart`, `compact`): consumes the marker and injects the files
//!   themselves as `[Preloaded: …]` blocks, so the agent has them without choosing to read;
//! - `pretooluse` (`PreToolUse`) and `stop` (`Stop`): the fallback for clients without the
//!   `SessionStart` path: consume the marker and deny the first tool call (or block the first
//!   stop) once, naming the files to re-read.
//!
//! Every failure fails open: nothing printed (`PreToolUse`: the allow decision).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Value, json};

use crate::clock;
use crate::delivery::{self, FileBody, chars, shorten};
use crate::env;
use crate::markers::{self, MarkerDir, MarkerError};
use crate::runner::{self, HookEvent};
use crate::{Context, HookError, HookInput, HookOutput};

/// Binary name without `preload-` (the delivery log's `hook`).
pub const NAME: &str = "compaction-reread";
/// Prefix of the handler registration marker.
pub const HANDLER_PREFIX: &str = "handler";
/// Prefix of the loop registration marker.
pub const LOOP_PREFIX: &str = "loop";
/// Prefix of the one-shot compaction marker.
pub const COMPACTION_PREFIX: &str = "compaction";
/// Prefix of the legacy handler marker in the legacy directory.
pub const LEGACY_HANDLER_PREFIX: &str = "claude-handler";
/// Prefix of the legacy loop marker in the legacy directory.
pub const LEGACY_LOOP_PREFIX: &str = "claude-loop";
/// The legacy global handler marker written by the handler skill.
pub const LEGACY_HANDLER_ACTIVE: &str = "claude-handler-active";
/// The worker's dispatch-path file under `$HOME/.claude`.
pub const WORKER_DISPATCH_FILE: &str = "worker-dispatch-path";
/// The handler's state file in its docs directory.
pub const HANDLER_STATE: &str = "handler-state.md";
/// The handler's dispatch directory in its docs directory.
pub const HANDLER_DISPATCHES: &str = "handler-dispatches";
/// Dispatch statuses that count as active.
pub const ACTIVE_STATUSES: &[&str] = &["active", "in-progress", "in progress", "running"];
/// Leftovers of crashed marker writers older than this are swept at `PreCompact`.
const SWEEP_AGE: Duration = Duration::from_secs(600);
/// Most dispatch files looked at in one call.
const MAX_DISPATCH_SCAN: usize = 500;
/// Room kept for the final line that names what did not fit.
const TRAILER_RESERVE: usize = 400;
/// Every message starts with this tag.
const TAG: &str = "[Compaction re-read]";

/// `--help`.
pub const HELP: &str =
    "preload-compaction-reread: after a compaction, hands handler, worker and loop sessions
the files their work lives in.

Usage: preload-compaction-reread <subcommand>      (stdin: the hook's JSON)
  register      PostToolUse (matcher Skill): /handler or /loop registers this session_id
  precompact    PreCompact: detects the session type and leaves a one-shot compaction marker
  sessionstart  SessionStart (matcher compact): consumes the marker, injects the files
  pretooluse    PreToolUse (matcher *): consumes the marker, denies once naming the files
  stop          Stop: consumes the marker, blocks once (nothing when stop_hook_active)

Session types: handler (registered by /handler), worker ($HOME/.claude/worker-dispatch-path
exists), loop (registered by /loop; newest non-archived docs/loops/*.loop.md), else regular.

Reads stdin: session_id, cwd, tool_name, tool_input.skill, source, stop_hook_active.
Env: HOME, TMPDIR, PRELOAD_MARKER_DIR, PRELOAD_LEGACY_MARKER_DIR (default /tmp),
     PRELOAD_HANDLER_DIR, PRELOAD_OUTPUT_BUDGET, PRELOAD_MAX_FILE_BYTES, PRELOAD_BUDGET_MS,
     HOOK_DEBUG.
Files: ${TMPDIR:-/tmp}/claude-preload-<uid>/{handler,loop,compaction}-<session_id> (mode 0700
       directory); legacy /tmp/claude-handler-<sid>, claude-loop-<sid>, claude-handler-active
       (read only, own files only, never through links); handler-state.md,
       handler-dispatches/*.md, docs/loops/*.loop.md, the worker's dispatch file (read only).";

/// Entry point of the binary: the subcommand names the event.
pub fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if runner::answer_meta_flag("preload-compaction-reread", HELP, &args) {
        return ExitCode::SUCCESS;
    }
    match args.first().map(String::as_str) {
        Some("register") => runner::run(NAME, HookEvent::PostToolUse, register),
        Some("precompact") => runner::run(NAME, HookEvent::PreCompact, precompact),
        Some("sessionstart") => runner::run(NAME, HookEvent::SessionStart, session_start),
        Some("pretooluse") => runner::run(NAME, HookEvent::PreToolUse, pretooluse),
        Some("stop") => runner::run(NAME, HookEvent::Stop, stop),
        _ => {
            // A wiring mistake: show the usage; exit 1 never blocks anything in Claude Code.
            runner::print_text(HELP);
            ExitCode::from(1)
        }
    }
}

#[allow(clippy::needless_pass_by_value)] // used as `map_err(marker_failure)`
fn marker_failure(err: MarkerError) -> HookError {
    HookError::Other(err.to_string())
}

/// What a compacted session must re-read; the content of the compaction marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reread {
    /// A handler: `handler-state.md` and the active dispatch files of `dir` (when known).
    Handler {
        /// The directory holding `handler-state.md` and `handler-dispatches/`.
        dir: Option<PathBuf>,
    },
    /// A worker: its dispatch file (contract plus `## Progress`).
    Worker {
        /// The dispatch file.
        dispatch_file: PathBuf,
    },
    /// A loop: the active loop document (when one was found).
    Loop {
        /// The newest non-archived `*.loop.md`.
        loop_file: Option<PathBuf>,
        /// Where it was looked for.
        loops_dir: PathBuf,
    },
}

fn path_value(path: Option<&Path>) -> Value {
    path.map_or(Value::Null, |p| {
        Value::String(p.to_string_lossy().into_owned())
    })
}

fn path_field(value: &Value, key: &str) -> Option<PathBuf> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| s.starts_with('/'))
        .map(PathBuf::from)
}

impl Reread {
    /// The marker's JSON.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Handler { dir } => {
                json!({"type": "handler", "handler_dir": path_value(dir.as_deref())})
            }
            Self::Worker { dispatch_file } => {
                json!({"type": "worker", "dispatch_file": path_value(Some(dispatch_file))})
            }
            Self::Loop {
                loop_file,
                loops_dir,
            } => json!({
                "type": "loop",
                "loop_file": path_value(loop_file.as_deref()),
                "loops_dir": path_value(Some(loops_dir)),
            }),
        }
    }

    /// Read a marker; `None` when it is not one of ours.
    pub fn from_json(bytes: &[u8]) -> Option<Self> {
        let value: Value = serde_json::from_slice(bytes).ok()?;
        match value.get("type")?.as_str()? {
            "handler" => Some(Self::Handler {
                dir: path_field(&value, "handler_dir"),
            }),
            "worker" => Some(Self::Worker {
                dispatch_file: path_field(&value, "dispatch_file")?,
            }),
            "loop" => {
                let loop_file = path_field(&value, "loop_file");
                let loops_dir = path_field(&value, "loops_dir")
                    .or_else(|| {
                        loop_file
                            .as_deref()
                            .and_then(Path::parent)
                            .map(Path::to_path_buf)
                    })
                    .unwrap_or_else(|| PathBuf::from("docs/loops"));
                Some(Self::Loop {
                    loop_file,
                    loops_dir,
                })
            }
            _ => None,
        }
    }

    /// The type's name.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Handler { .. } => "handler",
            Self::Worker { .. } => "worker",
            Self::Loop { .. } => "loop",
        }
    }
}

/// The compaction marker name of this call's session, when its id is a plain name.
fn compaction_name(input: &HookInput) -> Option<String> {
    markers::marker_name(COMPACTION_PREFIX, input.session_id()?)
}

/// The `cwd` a registration recorded: a JSON object's `cwd`, or an absolute path as text
/// (the legacy hooks' format).
pub fn registered_cwd(bytes: &[u8]) -> Option<PathBuf> {
    if let Ok(value) = serde_json::from_slice::<Value>(bytes) {
        return path_field(&value, "cwd");
    }
    let text = String::from_utf8_lossy(bytes);
    let line = text.lines().next()?.trim();
    line.starts_with('/').then(|| PathBuf::from(line))
}

/// `PostToolUse` (`Skill`): `/handler` and `/loop` register this session.
pub fn register(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    if input.tool_name().is_some_and(|tool| tool != "Skill") {
        return Ok(HookOutput::Silent);
    }
    let Some(skill) = input.tool_input_str("skill") else {
        return Ok(HookOutput::Silent);
    };
    let skill = skill.trim().trim_start_matches('/');
    let prefix = match skill.rsplit(':').next().unwrap_or(skill) {
        "handler" => HANDLER_PREFIX,
        "loop" => LOOP_PREFIX,
        _ => return Ok(HookOutput::Silent),
    };
    let Some(name) = input
        .session_id()
        .and_then(|sid| markers::marker_name(prefix, sid))
    else {
        return Ok(HookOutput::Silent);
    };
    let record = json!({"cwd": ctx.cwd, "registered": clock::iso_utc(ctx.now)});
    let dir = MarkerDir::open(&ctx.env).map_err(marker_failure)?;
    dir.write(&name, record.to_string().as_bytes())
        .map_err(marker_failure)?;
    Ok(HookOutput::Silent)
}

/// A registration of `prefix` for `sid`: ours first, then the legacy one (own regular files
/// only, never through a link).
fn registration(
    ctx: &Context,
    dir: &MarkerDir,
    prefix: &str,
    legacy_prefix: &str,
    sid: &str,
) -> Result<Option<Vec<u8>>, HookError> {
    if let Some(name) = markers::marker_name(prefix, sid) {
        if let Some(bytes) = dir.read(&name).map_err(marker_failure)? {
            return Ok(Some(bytes));
        }
    }
    Ok(markers::marker_name(legacy_prefix, sid).and_then(|name| {
        markers::read_trusted(
            &markers::legacy_dir(&ctx.env).join(name),
            markers::current_uid(),
        )
        .ok()
        .flatten()
    }))
}

/// The account's own home (from the user database): a worker's `HOME` is its config
/// directory, so `~` in its dispatch path means the real home.
fn account_home() -> Option<PathBuf> {
    nix::unistd::User::from_uid(nix::unistd::geteuid())
        .ok()
        .flatten()
        .map(|user| user.dir)
}

/// Expand a dispatch path: `~/` against `home`, relative against `cwd`.
pub fn expand_dispatch_path(text: &str, home: &Path, cwd: &Path) -> PathBuf {
    let path = crate::paths::expand_tilde(text, home);
    crate::paths::lexical_clean(&if path.is_absolute() {
        path
    } else {
        cwd.join(path)
    })
}

/// The worker's dispatch file: the first line of `$HOME/.claude/worker-dispatch-path` (an own
/// regular file, never through a link).
pub fn worker_dispatch_file(ctx: &Context) -> Option<PathBuf> {
    let path = ctx.paths.claude.join(WORKER_DISPATCH_FILE);
    let bytes = markers::read_trusted(&path, markers::current_uid()).ok()??;
    let text = String::from_utf8_lossy(&bytes);
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let home = account_home().unwrap_or_else(|| ctx.paths.home.clone());
    Some(expand_dispatch_path(line, &home, &ctx.cwd))
}

/// The handler's docs directory: `PRELOAD_HANDLER_DIR`, else the nearest `docs/` holding a
/// `handler-state.md` above the registered `cwd`, then above this call's `cwd`.
pub fn handler_dir(ctx: &Context, registered: Option<&Path>) -> Option<PathBuf> {
    if let Some(dir) = ctx.env.get(env::PRELOAD_HANDLER_DIR) {
        return Some(PathBuf::from(dir));
    }
    registered
        .into_iter()
        .chain(std::iter::once(ctx.cwd.as_path()))
        .flat_map(Path::ancestors)
        .map(|dir| dir.join("docs"))
        .find(|docs| docs.join(HANDLER_STATE).is_file())
}

/// The most recently modified `*.loop.md` in `loops_dir` whose name does not end in
/// `-archived` (ties broken by name).
pub fn active_loop_file(loops_dir: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(loops_dir).ok()?;
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let stem = name.strip_suffix(".loop.md")?;
            if stem.is_empty() || stem.ends_with("-archived") {
                return None;
            }
            let meta = std::fs::metadata(entry.path()).ok()?;
            meta.is_file()
                .then(|| (meta.modified().ok(), name, entry.path()))
        })
        .max_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)))
        .map(|(_, _, path)| path)
}

/// Detect the session type for `sid`; `None` for a regular session.
fn detect(ctx: &Context, dir: &MarkerDir, sid: &str) -> Result<Option<Reread>, HookError> {
    let handler = match registration(ctx, dir, HANDLER_PREFIX, LEGACY_HANDLER_PREFIX, sid)? {
        Some(bytes) => Some(bytes),
        None => markers::read_trusted(
            &markers::legacy_dir(&ctx.env).join(LEGACY_HANDLER_ACTIVE),
            markers::current_uid(),
        )
        .ok()
        .flatten(),
    };
    if let Some(bytes) = handler {
        let cwd = registered_cwd(&bytes);
        return Ok(Some(Reread::Handler {
            dir: handler_dir(ctx, cwd.as_deref()),
        }));
    }
    if let Some(dispatch_file) = worker_dispatch_file(ctx) {
        return Ok(Some(Reread::Worker { dispatch_file }));
    }
    if let Some(bytes) = registration(ctx, dir, LOOP_PREFIX, LEGACY_LOOP_PREFIX, sid)? {
        let cwd = registered_cwd(&bytes).unwrap_or_else(|| ctx.cwd.clone());
        let loops_dir = cwd.join("docs").join("loops");
        return Ok(Some(Reread::Loop {
            loop_file: active_loop_file(&loops_dir),
            loops_dir,
        }));
    }
    Ok(None)
}

/// `PreCompact`: leave the one-shot compaction marker of this session's type (none for a
/// regular session).
pub fn precompact(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    let Some(sid) = input
        .session_id()
        .filter(|sid| markers::marker_name(COMPACTION_PREFIX, sid).is_some())
    else {
        return Ok(HookOutput::Silent);
    };
    let dir = MarkerDir::open(&ctx.env).map_err(marker_failure)?;
    dir.sweep(SWEEP_AGE);
    if let Some(reread) = detect(ctx, &dir, sid)? {
        let name = format!("{COMPACTION_PREFIX}-{sid}");
        dir.write(&name, reread.to_json().to_string().as_bytes())
            .map_err(marker_failure)?;
    }
    Ok(HookOutput::Silent)
}

/// Consume this session's compaction marker: of concurrent calls exactly one gets it.
fn consume(input: &HookInput, ctx: &Context) -> Result<Option<Reread>, HookError> {
    let Some(name) = compaction_name(input) else {
        return Ok(None);
    };
    let Some(dir) = MarkerDir::existing(&ctx.env).map_err(marker_failure)? else {
        return Ok(None);
    };
    let Some(bytes) = dir.take(&name).map_err(marker_failure)? else {
        return Ok(None);
    };
    Ok(Reread::from_json(&bytes))
}

/// The status of a dispatch file: its `| **Status** | … |` row or `Status: …` line, lowercased.
pub fn dispatch_status(text: &str) -> Option<String> {
    for line in text.lines() {
        let line = line.trim();
        let (key, value) = if line.starts_with('|') {
            let mut cells = line.trim_matches('|').split('|');
            (cells.next()?, cells.next().unwrap_or(""))
        } else if let Some((key, value)) = line.split_once(':') {
            (key, value)
        } else {
            continue;
        };
        let key = key.trim_matches(|c: char| c == '*' || c == '-' || c.is_whitespace());
        if key.eq_ignore_ascii_case("status") {
            let value = value.trim_matches(|c: char| c == '*' || c == ':' || c.is_whitespace());
            return Some(value.to_ascii_lowercase());
        }
    }
    None
}

/// The active dispatch files of a handler's docs directory, by name.
pub fn active_dispatches(ctx: &Context, dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir.join(HANDLER_DISPATCHES)) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "md"))
        .take(MAX_DISPATCH_SCAN)
        .collect();
    files.sort();
    files.retain(|path| {
        if ctx.expired() {
            return false;
        }
        match delivery::read_for_delivery(path, ctx.max_file_bytes()) {
            FileBody::Text(text) => {
                dispatch_status(&text).is_some_and(|s| ACTIVE_STATUSES.contains(&s.as_str()))
            }
            _ => false,
        }
    });
    files
}

/// The files to re-read, in order.
pub fn targets(ctx: &Context, reread: &Reread) -> Vec<PathBuf> {
    match reread {
        Reread::Handler { dir: Some(dir) } => {
            let mut files = vec![dir.join(HANDLER_STATE)];
            files.extend(active_dispatches(ctx, dir));
            files
        }
        Reread::Handler { dir: None }
        | Reread::Loop {
            loop_file: None, ..
        } => Vec::new(),
        Reread::Worker { dispatch_file } => vec![dispatch_file.clone()],
        Reread::Loop {
            loop_file: Some(file),
            ..
        } => vec![file.clone()],
    }
}

/// `items` as `- item` lines within `room` characters; what does not fit is counted in a
/// last line made by `more`.
fn bullet_list(items: &[String], room: usize, more: impl Fn(usize) -> String) -> String {
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        let line = format!("- {item}\n");
        let rest = items.len() - i - 1;
        let tail = if rest > 0 { chars(&more(rest)) + 3 } else { 0 };
        if chars(&out) + chars(&line) + tail > room {
            out.push_str("- ");
            out.push_str(&more(items.len() - i));
            out.push('\n');
            return out;
        }
        out.push_str(&line);
    }
    out
}

fn display(ctx: &Context, path: &Path) -> String {
    ctx.normalize(&path.to_string_lossy())
}

/// What the files are, per type (shared by the reason and the injection).
fn guidance(reread: &Reread) -> &'static str {
    match reread {
        Reread::Handler { .. } => {
            "handler-state.md is your persistent handler state (active dispatches, pending decisions, check-in log); the active dispatch files hold each worker's contract and progress. Continue from where the state says you are."
        }
        Reread::Worker { .. } => {
            "Your dispatch file holds your contract and, under ## Progress, the updates you recorded so far. Continue from the last Progress entry and keep updating ## Progress after each milestone."
        }
        Reread::Loop { .. } => {
            "In the loop document, find the [CURRENT] step and continue executing it. Do NOT pause or ask for confirmation: the loop keeps running."
        }
    }
}

/// When no file is known, what to look for instead.
fn unknown_targets(reread: &Reread) -> Vec<String> {
    match reread {
        Reread::Handler { dir } => {
            let base = dir
                .as_ref()
                .map_or_else(String::new, |d| format!("{}/", d.to_string_lossy()));
            vec![
                format!("{base}{HANDLER_STATE} (your handler state; its directory was not found)"),
                format!("the active dispatch files under {base}{HANDLER_DISPATCHES}/"),
            ]
        }
        Reread::Loop { loops_dir, .. } => vec![format!(
            "the active loop document: no non-archived *.loop.md was found in {}/ (look there, or where your loop document lives)",
            loops_dir.to_string_lossy()
        )],
        Reread::Worker { dispatch_file } => vec![dispatch_file.to_string_lossy().into_owned()],
    }
}

/// The deny (`PreToolUse`) or block (`Stop`) reason: the files to re-read, within `budget`.
pub fn reason(ctx: &Context, reread: &Reread, files: &[PathBuf], held: &str) -> String {
    let items: Vec<String> = if files.is_empty() {
        unknown_targets(reread)
    } else {
        files.iter().map(|f| display(ctx, f)).collect()
    };
    let intro = format!(
        "{TAG} Your context was just compacted; this {} session's working state lives on disk, not in the summary. Before anything else, re-read with the Read tool:\n",
        reread.kind()
    );
    let tail = format!("{}\n{held}", guidance(reread));
    let room = ctx.budget.saturating_sub(chars(&intro) + chars(&tail));
    let dir_hint = match reread {
        Reread::Handler { dir: Some(d) } => {
            format!(" in {}", d.join(HANDLER_DISPATCHES).to_string_lossy())
        }
        _ => String::new(),
    };
    let list = bullet_list(&items, room, |n| format!("… and {n} more{dir_hint}"));
    shorten(format!("{intro}{list}{tail}").trim_end(), ctx.budget)
}

/// One piece of the injection: a block, the file it belongs to and which part it is.
struct Piece {
    text: String,
    path: String,
    part: usize,
    parts: usize,
}

/// The `SessionStart` injection: the files' content within the budget, with a final line naming
/// what did not fit or could not be read.
pub fn injection(ctx: &Context, reread: &Reread, files: &[PathBuf]) -> String {
    if files.is_empty() {
        return reason(ctx, reread, files, "");
    }
    let head = format!(
        "{TAG} Your context was just compacted. The files this {} session works from were re-read from disk and are below, current as of now; no Read calls are needed for them. {}",
        reread.kind(),
        guidance(reread)
    );
    let budget = ctx.budget;
    let part_limit = budget
        .saturating_sub(chars(&head) + 1 + TRAILER_RESERVE)
        .max(delivery::MIN_BUDGET);
    let max_bytes = ctx.max_file_bytes();
    let mut pieces = Vec::new();
    let mut unread = Vec::new();
    for file in files {
        let path = display(ctx, file);
        let blocks = match delivery::read_for_delivery(file, max_bytes) {
            FileBody::Text(text) => delivery::file_parts(&path, &text, part_limit),
            FileBody::Empty => vec![delivery::block(&path, "(empty)")],
            FileBody::TooLarge(size) => vec![delivery::pointer_block(&path, size, max_bytes)],
            FileBody::Unavailable => {
                unread.push(path);
                continue;
            }
        };
        let parts = blocks.len();
        pieces.extend(blocks.into_iter().enumerate().map(|(i, text)| Piece {
            text,
            path: path.clone(),
            part: i + 1,
            parts,
        }));
    }
    for taken in (0..=pieces.len()).rev() {
        let body: Vec<&str> = std::iter::once(head.as_str())
            .chain(pieces[..taken].iter().map(|p| p.text.as_str()))
            .collect();
        let used = chars(&delivery::join_blocks(&body));
        if used > budget {
            continue;
        }
        let trailer = trailer(&pieces[taken..], &unread, budget.saturating_sub(used + 1));
        if chars(&trailer) + usize::from(!trailer.is_empty()) + used <= budget {
            let mut text = delivery::join_blocks(&body);
            if !trailer.is_empty() {
                text.push('\n');
                text.push_str(&trailer);
            }
            return text;
        }
    }
    shorten(&head, budget)
}

/// The final line: files left out for lack of room and files that could not be read.
fn trailer(left: &[Piece], unread: &[String], room: usize) -> String {
    let mut names: Vec<String> = Vec::new();
    let mut last: Option<&str> = None;
    for piece in left {
        if last == Some(piece.path.as_str()) {
            continue;
        }
        last = Some(piece.path.as_str());
        names.push(if piece.part > 1 {
            format!("{} (from part {}/{})", piece.path, piece.part, piece.parts)
        } else {
            piece.path.clone()
        });
    }
    let mut sentences = Vec::new();
    if !names.is_empty() {
        sentences.push((
            "Not included above for lack of room; read with the Read tool: ",
            names,
        ));
    }
    if !unread.is_empty() {
        sentences.push(("Could not be read by the hook: ", unread.to_vec()));
    }
    if sentences.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    for (lead, names) in sentences {
        let mut line = lead.to_owned();
        for (i, name) in names.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let rest = names.len() - i;
            let more = format!("{sep}and {rest} more");
            if chars(&out) + chars(&line) + chars(sep) + chars(name) + 12 + chars(&more) > room
                && rest > 1
            {
                line.push_str(&more);
                break;
            }
            line.push_str(sep);
            line.push_str(name);
        }
        line.push_str(".\n");
        out.push_str(&line);
    }
    out
}

/// `PreToolUse`: deny the first tool call after a compaction once, naming the files.
pub fn pretooluse(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    Ok(match consume(input, ctx)? {
        Some(reread) => {
            let files = targets(ctx, &reread);
            HookOutput::Deny(reason(
                ctx,
                &reread,
                &files,
                "This tool call was held back once for the re-read; run it again afterwards.",
            ))
        }
        None => HookOutput::Allow(None),
    })
}

/// `Stop`: block the first stop after a compaction once (never when `stop_hook_active`).
pub fn stop(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    if input.stop_hook_active() {
        return Ok(HookOutput::Silent);
    }
    Ok(match consume(input, ctx)? {
        Some(reread) => {
            let files = targets(ctx, &reread);
            HookOutput::Block(reason(
                ctx,
                &reread,
                &files,
                "Stopping was held back once for the re-read.",
            ))
        }
        None => HookOutput::Silent,
    })
}

/// `SessionStart` (`compact`): consume the marker and inject the files themselves.
pub fn session_start(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    if input.source().is_some_and(|source| source != "compact") {
        return Ok(HookOutput::Silent);
    }
    Ok(match consume(input, ctx)? {
        Some(reread) => {
            let files = targets(ctx, &reread);
            HookOutput::Context(injection(ctx, &reread, &files))
        }
        None => HookOutput::Silent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::Env;
    use std::fs;

    fn ctx_with(tmp: &Path, budget: Option<&str>) -> Context {
        let mut env = Env::from_pairs([
            (env::HOME, tmp.join("home").to_string_lossy().into_owned()),
            (
                env::PRELOAD_MARKER_DIR,
                tmp.join("m").to_string_lossy().into_owned(),
            ),
            (
                env::PRELOAD_LEGACY_MARKER_DIR,
                tmp.join("legacy").to_string_lossy().into_owned(),
            ),
            (env::CLAUDE_SUPERVISOR_PID, "1".into()),
        ]);
        if let Some(b) = budget {
            env.set(env::PRELOAD_OUTPUT_BUDGET, b);
        }
        let input = HookInput::from_value(json!({"cwd": tmp}));
        Context::new(env, NAME, &input, Duration::from_secs(5))
    }

    #[test]
    fn marker_json_round_trips() {
        for reread in [
            Reread::Handler {
                dir: Some("/d/docs".into()),
            },
            Reread::Handler { dir: None },
            Reread::Worker {
                dispatch_file: "/x/task.md".into(),
            },
            Reread::Loop {
                loop_file: Some("/p/docs/loops/a.loop.md".into()),
                loops_dir: "/p/docs/loops".into(),
            },
            Reread::Loop {
                loop_file: None,
                loops_dir: "/p/docs/loops".into(),
            },
        ] {
            let bytes = reread.to_json().to_string();
            assert_eq!(Reread::from_json(bytes.as_bytes()), Some(reread));
        }
        assert_eq!(Reread::from_json(b"{\"type\":\"other\"}"), None);
        assert_eq!(Reread::from_json(b"{\"type\":\"worker\"}"), None);
        assert_eq!(Reread::from_json(b"garbage"), None);
    }

    #[test]
    fn registrations_read_json_or_legacy_text() {
        assert_eq!(
            registered_cwd(br#"{"cwd":"/p"}"#),
            Some(PathBuf::from("/p"))
        );
        assert_eq!(
            registered_cwd(b"/legacy/path\n"),
            Some(PathBuf::from("/legacy/path"))
        );
        assert_eq!(registered_cwd(b"relative"), None);
        assert_eq!(registered_cwd(b""), None);
    }

    #[test]
    fn dispatch_status_reads_tables_and_lines() {
        assert_eq!(
            dispatch_status("# T\n| **Status** | Active |\n").as_deref(),
            Some("active")
        );
        assert_eq!(
            dispatch_status("**Status:** completed\n").as_deref(),
            Some("completed")
        );
        assert_eq!(
            dispatch_status("- Status: in-progress").as_deref(),
            Some("in-progress")
        );
        assert_eq!(dispatch_status("no status here"), None);
    }

    #[test]
    fn dispatch_paths_expand_against_the_account_home() {
        let home = Path::new("/home/u");
        assert_eq!(
            expand_dispatch_path("~/dev/d.md", home, Path::new("/c")),
            PathBuf::from("/home/u/dev/d.md")
        );
        assert_eq!(
            expand_dispatch_path("d/../e.md", home, Path::new("/c")),
            PathBuf::from("/c/e.md")
        );
        assert_eq!(
            expand_dispatch_path("/abs.md", home, Path::new("/c")),
            PathBuf::from("/abs.md")
        );
    }

    #[test]
    fn newest_non_archived_loop_document_wins() {
        let tmp = tempfile::tempdir().unwrap();
        let loops = tmp.path().join("docs/loops");
        fs::create_dir_all(&loops).unwrap();
        let set = |name: &str, secs: u64| {
            let p = loops.join(name);
            fs::write(&p, name).unwrap();
            let t = std::time::UNIX_EPOCH + Duration::from_secs(secs);
            fs::File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(t)
                .unwrap();
        };
        set("old.loop.md", 1_000);
        set("new.loop.md", 2_000);
        set("newest-archived.loop.md", 3_000);
        set("notes.md", 4_000);
        assert_eq!(active_loop_file(&loops), Some(loops.join("new.loop.md")));
        assert_eq!(active_loop_file(&tmp.path().join("none")), None);
    }

    #[test]
    fn reason_lists_files_within_a_small_budget() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = ctx_with(tmp.path(), Some("600"));
        let files: Vec<PathBuf> = (0..50)
            .map(|i| PathBuf::from(format!("/d/handler-dispatches/dispatch-{i:03}.md")))
            .collect();
        let reread = Reread::Handler {
            dir: Some("/d".into()),
        };
        let text = reason(&ctx, &reread, &files, "held");
        assert!(chars(&text) <= 600, "{} chars", chars(&text));
        assert!(text.contains("dispatch-000.md"));
        assert!(text.contains("more in /d/handler-dispatches"), "{text}");
        assert!(text.ends_with("held"));
    }

    #[test]
    fn injection_parts_and_names_what_does_not_fit() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = ctx_with(tmp.path(), Some("2000"));
        let big = (0..300)
            .map(|i| format!("progress line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let a = tmp.path().join("a.md");
        let b = tmp.path().join("b.md");
        fs::write(&a, &big).unwrap();
        fs::write(&b, "small").unwrap();
        let missing = tmp.path().join("gone.md");
        let reread = Reread::Worker {
            dispatch_file: a.clone(),
        };
        let text = injection(&ctx, &reread, &[a.clone(), b.clone(), missing.clone()]);
        assert!(chars(&text) <= 2000, "{} chars", chars(&text));
        assert!(
            text.contains(&format!("[Preloaded: {} (part 1/", a.display())),
            "{text}"
        );
        assert!(
            text.contains(&format!("{} (from part 2/", a.display())),
            "{text}"
        );
        assert!(text.contains(&b.display().to_string()));
        assert!(text.contains(&format!(
            "Could not be read by the hook: {}",
            missing.display()
        )));
    }

    #[test]
    fn injection_without_files_says_where_to_look() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = ctx_with(tmp.path(), None);
        let reread = Reread::Loop {
            loop_file: None,
            loops_dir: "/p/docs/loops".into(),
        };
        let text = injection(&ctx, &reread, &[]);
        assert!(text.contains("/p/docs/loops/"));
        assert!(text.contains("Do NOT pause"));
    }
}
