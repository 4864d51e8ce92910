//! Which state file a hook works on: the owner's active session (`session.sh find`), else the
//! per-process seed `sessions/.seeds/<owner-pid>.json`, created on demand.

use std::fs;
use std::ops::Not;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::mechanisms::context::Context;
use crate::primitives::{file, process};
use crate::state::fields;
use crate::state::{self, State, StateError, Write};

mod index;
mod scan;
mod seeds;
pub use index::{DIR as INDEX_DIR, Key};
use scan::{Scan, Seeker, fingerprint, keys_of, peek, peek_fields, state_pid, survey};
pub use scan::{cache_file, session_dirs, session_names};
pub use seeds::{
    ENDED_RETENTION, ENDED_SUFFIX, ended_path, ended_record_expired, forget_window_records,
    new_seed, own_seed, seed_is_stale, seed_path, window_record_path,
};

/// Directory of seed files inside a sessions directory.
pub const SEEDS_DIR: &str = ".seeds";
/// The session state file name.
pub const STATE_FILE: &str = ".state.json";

/// Largest PID cache file read (it holds one path).
const CACHE_MAX_BYTES: u64 = 64 * 1024;

/// The six core standards, relative to `~/.claude/.directives`.
pub const CORE_STANDARDS: [&str; 6] = [
    "COMMANDS.md",
    "INVARIANTS.md",
    "SIGILS.md",
    "commands/CMD_DEHYDRATE.md",
    "commands/CMD_RESUME_SESSION.md",
    "commands/CMD_PARSE_PARAMETERS.md",
];

/// The normalised paths of the core standards (`get_session_start_seeds`).
pub fn core_seeds(ctx: &Context) -> Vec<String> {
    CORE_STANDARDS
        .iter()
        .map(|rel| ctx.normalize(&ctx.paths.directives.join(rel).to_string_lossy()))
        .collect()
}

/// The state file hooks read and write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreloadState {
    /// The file.
    pub path: PathBuf,
    /// True for a session `.state.json`, false for a seed.
    pub is_session: bool,
}

impl PreloadState {
    /// The `.state.json` of the session in `dir`.
    pub fn session(dir: &Path) -> Self {
        Self {
            path: dir.join(STATE_FILE),
            is_session: true,
        }
    }

    /// The seed file at `path` (the owner's, before any session).
    pub fn seed(path: PathBuf) -> Self {
        Self {
            path,
            is_session: false,
        }
    }

    /// The session's directory; `None` for a seed.
    pub fn session_dir(&self) -> Option<&Path> {
        self.path.parent().filter(|_| self.is_session)
    }
}

/// The owner's active session directory, as `session.sh find` resolves it: the PID cache;
/// then the session of the owner's fleet pane (`fleet.sh pane-id`, `fleetPaneId`), unless
/// another live process holds it; then a state whose `pid` is the owner; then one whose
/// `lastKnownPid` is (unless another live process holds it). Beyond the engine, a conversation
/// that comes back in a new process (`--resume`, a compaction after a restart) finds the session
/// it ran in (`sessionId`, or the engine's transcript key) when that session's owner is gone,
/// and takes it over. The cache is rewritten on success.
///
/// Past the PID cache, the session index names the candidates (checked against their states);
/// only when it names none that is the owner's are all states read, which rebuilds the index.
pub fn find_session(ctx: &Context) -> Option<PathBuf> {
    let pid = ctx.owner_pid;
    let cache = cache_file(ctx);
    let cached = cached_session(ctx);
    if let Some(dir) = &cached {
        if state_pid(&dir.join(STATE_FILE), fields::PID) == Some(pid) {
            return Some(held(ctx, dir.clone()));
        }
    }
    // Without a session, every call would read every state again. A session becomes this
    // owner's through activation, which writes the PID cache (`session.sh activate` and
    // `continue`, `preload activate`), or in a new session directory; so while neither the
    // cache nor the sessions directories changed since a scan that found nothing for this
    // owner (with the same pane and conversation), the answer stands.
    let roots = ctx.sessions_dirs();
    let none = no_session_file(ctx);
    let print = fingerprint(ctx, &roots, &cache).to_string();
    if file::read_text(&none, CACHE_MAX_BYTES).is_some_and(|t| t.trim() == print) {
        return None;
    }
    let pane = fleet_pane(ctx);
    if let (Some(dir), Some(pane)) = (&cached, pane.as_deref()) {
        if let Some(state) =
            peek_fields(&dir.join(STATE_FILE), &[fields::PID, fields::FLEET_PANE_ID])
        {
            if state.str(fields::FLEET_PANE_ID) == Some(pane) {
                return held_elsewhere(&state, pid).not().then(|| dir.clone());
            }
        }
    }
    let seeker = Seeker {
        pid,
        pane: pane.as_deref(),
        conversation: ctx.conversation.as_deref(),
    };
    let answer = seeker.through_index(&roots).unwrap_or_else(|| {
        // The index directory is made before the fingerprint of the scan's answer (making it
        // changes the sessions directory), so the scan does not make its own answer stale.
        for root in &roots {
            index::prepare(root);
        }
        let print = fingerprint(ctx, &roots, &cache).to_string();
        match seeker.scan(&roots) {
            Scan::Nothing => {
                let _ = file::write_cache(&none, format!("{print}\n").as_bytes());
                Scan::Nothing
            }
            other => other,
        }
    });
    let found = match answer {
        Scan::Found(found) => found,
        Scan::Conversation(found) => take_over(ctx, &found)?,
        Scan::Nothing | Scan::Held => return None,
    };
    remember(ctx, &found);
    Some(held(ctx, found))
}

/// The owner holds the session in `dir`: a remembered "no session" answer is stale (an engine
/// `idle` that removes the PID cache would otherwise bring its fingerprint back).
fn held(ctx: &Context, dir: PathBuf) -> PathBuf {
    let _ = fs::remove_file(no_session_file(ctx));
    dir
}

/// [`find_session`] for a caller that reads the session's state next: when the PID cache names
/// a session this owner holds (the common case), its state is read once, here, and returned
/// with it; otherwise the state is `None` and the caller reads it.
pub fn find_session_state(ctx: &Context) -> Option<(PathBuf, Option<state::Read>)> {
    if let Some(dir) = cached_session(ctx) {
        if let Ok(read) = state::load_read(&dir.join(STATE_FILE)) {
            if read.state.pid(fields::PID) == Some(ctx.owner_pid) {
                return Some((held(ctx, dir), Some(read)));
            }
        }
    }
    find_session(ctx).map(|dir| (dir, None))
}

/// The session directory the owner's PID cache names (`session.sh find`'s first answer, not
/// yet checked against its state).
pub fn cached_session(ctx: &Context) -> Option<PathBuf> {
    file::read_text(&cache_file(ctx), CACHE_MAX_BYTES)
        .map(|t| PathBuf::from(t.trim()))
        .filter(|d| !d.as_os_str().is_empty())
}

/// Write the owner's PID cache (`session.sh find`'s) and index entry: `dir` is its session.
/// The index learns the PID only from a state that holds it (a session found by its last-known
/// PID is indexed by that).
pub fn remember(ctx: &Context, dir: &Path) {
    let _ = file::write_cache(&cache_file(ctx), format!("{}\n", dir.display()).as_bytes());
    if state_pid(&dir.join(STATE_FILE), fields::PID) == Some(ctx.owner_pid) {
        note(dir, &[Key::Pid(ctx.owner_pid)]);
    }
}

/// Note in the session index that the session in `dir` now holds `keys` (after the state write
/// that made it so; the index is checked on every use, so a note is only ever a hint).
pub fn note(dir: &Path, keys: &[Key]) {
    index::record(dir, keys);
}

/// How long `fleet.sh pane-id` may take.
const FLEET_TIMEOUT: Duration = Duration::from_secs(1);

/// The owner's fleet pane as the engine's `fleet.sh pane-id` prints it, when that script is
/// installed (`~/.claude/scripts/fleet.sh`) and names one within its time limit.
pub fn fleet_pane(ctx: &Context) -> Option<String> {
    let script = ctx.paths.claude.join("scripts/fleet.sh");
    if !script.is_file() {
        return None;
    }
    let limit = Instant::now() + FLEET_TIMEOUT;
    let deadline = limit.min(ctx.deadline);
    let out = process::output_within(
        Command::new(&script).arg("pane-id").current_dir(&ctx.cwd),
        deadline,
    )?;
    let pane = out.lines().next()?.trim().to_owned();
    (!pane.is_empty()).then_some(pane)
}

/// True when a process other than `owner` holds the state and is alive.
fn held_elsewhere(state: &State, owner: u32) -> bool {
    state
        .pid(fields::PID)
        .is_some_and(|holder| holder != owner && process::is_alive(holder))
}

/// A conversation's session whose owner is gone becomes this owner's (as the engine's
/// `continue` and restore do): `pid` set, the old owner kept in `lastKnownPid`.
fn take_over(ctx: &Context, dir: &Path) -> Option<PathBuf> {
    let owner = ctx.owner_pid;
    let path = dir.join(STATE_FILE);
    let taken = state::update(&path, Write::durable(ctx.lock_deadline()), |s| {
        if held_elsewhere(s, owner) {
            return false;
        }
        if let Some(old) = s.pid(fields::PID).filter(|old| *old != owner) {
            s.set_count(fields::LAST_KNOWN_PID, u64::from(old));
        }
        s.set_pid(owner);
        true
    });
    matches!(taken, Ok(true)).then(|| dir.to_path_buf())
}

/// `<cache>.none`: the fingerprint of the sessions when a scan last found nothing for the owner.
fn no_session_file(ctx: &Context) -> PathBuf {
    let mut name = cache_file(ctx).into_os_string();
    name.push(".none");
    PathBuf::from(name)
}

/// Whether `state` holds the context window of conversation `conversation` for this owner: it
/// names the conversation, and no other live process owns it.
fn holds_conversation(ctx: &Context, state: &State, conversation: &str) -> bool {
    state.window_conversation() == Some(conversation)
        && !state
            .pid(fields::PID)
            .is_some_and(|pid| pid != ctx.owner_pid && process::is_alive(pid))
}

/// Whether the session in `dir` holds the context window of conversation `conversation` (see
/// [`find_conversation`]): one look at its state.
pub fn serves_conversation(ctx: &Context, dir: &Path, conversation: &str) -> bool {
    !conversation.is_empty()
        && keys_of(dir).is_some_and(|state| holds_conversation(ctx, &state, conversation))
}

/// The state that holds the context window of Claude Code conversation `conversation`
/// (`sessionId`): a session first, then a seed; never one owned by another live process.
///
/// Used on `resume`, when the client replays that conversation: what the state says is in
/// context is in the replayed transcript. The session index names the session; when it names
/// none that holds the conversation, every state is read (and the index rebuilt).
pub fn find_conversation(ctx: &Context, conversation: &str) -> Option<PreloadState> {
    find_window(ctx, conversation, |state| {
        holds_conversation(ctx, state, conversation)
    })
}

/// The record of conversation `conversation`'s context window, whoever owns it now: the state
/// [`find_conversation`] finds, or one a live client holds (what `preload audit` compares a
/// transcript with while the client runs).
pub fn conversation_record(ctx: &Context, conversation: &str) -> Option<PreloadState> {
    find_window(ctx, conversation, |state| {
        state.window_conversation() == Some(conversation)
    })
}

/// The state `holds` takes for conversation `conversation`: the session the index names, then
/// every session, then the seeds and ended records, newest first.
fn find_window(
    ctx: &Context,
    conversation: &str,
    holds: impl Fn(&State) -> bool,
) -> Option<PreloadState> {
    if conversation.is_empty() {
        return None;
    }
    let roots = ctx.sessions_dirs();
    let indexed = roots
        .iter()
        .filter_map(|root| index::lookup(root, Key::Conversation(conversation)))
        .find(|dir| keys_of(dir).is_some_and(|s| holds(&s)));
    if let Some(dir) = indexed {
        return Some(PreloadState::session(&dir));
    }
    let surveyed = survey(&roots);
    let scanned = surveyed
        .iter()
        .flat_map(|(_, states)| states)
        .find(|(_, state)| holds(state));
    if let Some((dir, _)) = scanned {
        return Some(PreloadState::session(dir));
    }
    roots.iter().find_map(|root| {
        let mut seeds: Vec<PathBuf> = fs::read_dir(root.join(SEEDS_DIR))
            .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        // The newest record first: a conversation resumed, ended again and replaced again
        // leaves one record per process.
        seeds.sort_by_cached_key(|path| {
            let modified = fs::symlink_metadata(path).and_then(|m| m.modified()).ok();
            (std::cmp::Reverse(modified), path.clone())
        });
        // The conversation of a seed is kept in its carry (`<pid>.carry.json`); a seed whose
        // process ended left one whole record (`<pid>.<conversation>.ended.json`).
        seeds.into_iter().find_map(|file| {
            let name = file.to_str()?;
            let seed = match name.strip_suffix(".carry.json") {
                Some(stem) => PathBuf::from(format!("{stem}.json")),
                None if name.ends_with(ENDED_SUFFIX) => file.clone(),
                None => return None,
            };
            let held = peek(&file)
                .filter(|text| text.contains(conversation))
                .and_then(|text| {
                    let keys = [fields::PID, fields::SESSION_ID, fields::WINDOW_CONVERSATION];
                    State::parse_fields(&text, &keys).ok()
                })
                .is_some_and(|state| holds(&state));
            (held && seed.is_file()).then(|| PreloadState::seed(seed))
        })
    })
}

/// `find_preload_state()`: the owner's session state, else its seed, else a new seed.
///
/// `None` when the project has no sessions directory (no engine here: stay silent).
pub fn find_preload_state(ctx: &Context) -> Result<Option<PreloadState>, StateError> {
    if let Some(state) = find_session(ctx).map(|dir| PreloadState::session(&dir)) {
        if state.path.is_file() {
            return Ok(Some(state));
        }
    }
    let Some(sessions) = ctx.sessions_dir() else {
        return Ok(None);
    };
    let path = seed_path(&sessions, ctx.owner_pid);
    if !path.exists() {
        let seeds_dir = sessions.join(SEEDS_DIR);
        fs::create_dir_all(&seeds_dir).map_err(|source| StateError::Io {
            action: "create",
            path: seeds_dir.clone(),
            source,
        })?;
        state::create_if_absent(
            &path,
            &new_seed(ctx.owner_pid, &core_seeds(ctx)),
            ctx.lock_deadline(),
        )?;
    }
    Ok(Some(PreloadState::seed(path)))
}

/// The owner's session state or existing seed, without creating anything.
pub fn existing_preload_state(ctx: &Context) -> Option<PreloadState> {
    if let Some(state) = find_session(ctx).map(|dir| PreloadState::session(&dir)) {
        if state.path.is_file() {
            return Some(state);
        }
    }
    let path = seed_path(&ctx.sessions_dir()?, ctx.owner_pid);
    path.is_file().then(|| PreloadState::seed(path))
}

#[cfg(test)]
mod tests;
