//! Everything a handler needs besides its input: environment, engine paths, project root,
//! owner PID, clock, deadlines, output budget and the delivery log.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

use crate::mechanisms::packs;
use crate::mechanisms::skill::Skills;
use crate::primitives::delivery::{self, EventLog, FileBody};
use crate::primitives::env::{self, Env};
use crate::primitives::input::HookInput;
use crate::primitives::lock;
use crate::primitives::memo::Memo;
use crate::primitives::paths::{self, EnginePaths, PhysicalDirs};
use crate::primitives::transcript;
use crate::state::Write;
use crate::state::dedup::FileIds;

/// Default largest file delivered by content.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 256 * 1024;

/// Largest `config.sh` read.
const CONFIG_MAX_BYTES: u64 = 1024 * 1024;

/// `NAME=value` settings of the engine's `config.sh`, read as text and never executed.
#[derive(Debug, Clone, Default)]
pub struct Config {
    values: HashMap<String, String>,
}

impl Config {
    /// Parse `NAME=value` lines: `export ` prefixes, quotes and trailing comments are removed.
    pub fn parse(text: &str) -> Self {
        let mut values = HashMap::new();
        for line in text.lines() {
            let line = line.trim();
            let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
            if line.starts_with('#') {
                continue;
            }
            let Some((name, value)) = line.split_once('=') else {
                continue;
            };
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                continue;
            }
            let value = value.trim();
            let value = if let Some(inner) = value
                .strip_prefix('"')
                .and_then(|v| v.split_once('"'))
                .map(|(a, _)| a)
            {
                inner
            } else if let Some(inner) = value
                .strip_prefix('\'')
                .and_then(|v| v.split_once('\''))
                .map(|(a, _)| a)
            {
                inner
            } else {
                value.split_once(" #").map_or(value, |(a, _)| a).trim()
            };
            values.insert(name.to_owned(), value.to_owned());
        }
        Self { values }
    }

    /// A value.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }
}

/// The per-call context.
#[derive(Debug)]
pub struct Context {
    /// The environment snapshot.
    pub env: Env,
    /// Binary name without the `preload-` prefix (the log's `hook`).
    pub hook: &'static str,
    /// The engine layout under `$HOME/.claude`.
    pub paths: EnginePaths,
    /// Where Claude is working: stdin `cwd`, else `CLAUDE_PROJECT_DIR`, else the process's.
    pub cwd: PathBuf,
    /// The project: the nearest ancestor of `cwd` with a `.claude/` directory, else `cwd`
    /// itself (the engine's `resolve_sessions_dir` falls back to `$PWD` the same way).
    pub project_root: PathBuf,
    /// The owning Claude process.
    pub owner_pid: u32,
    /// The Claude Code conversation of the call (stdin `session_id`), when given.
    pub conversation: Option<String>,
    /// When the call started.
    pub now: SystemTime,
    /// When the call must be finished.
    pub deadline: Instant,
    /// The latest a lock may be waited for: two thirds into the budget, so a call that cannot
    /// take its lock still has a third of it to decide and answer.
    lock_until: Instant,
    /// Character budget of one output string (what this call's policy may still print: the
    /// dispatcher narrows it for a policy that shares an answer with others).
    pub budget: usize,
    /// Character budget of a whole output, which the size of a split file's parts derives from:
    /// the same on every call, however much of the answer a policy shares.
    pub part_budget: usize,
    /// The delivery event log.
    pub log: EventLog,
    /// File identities looked up during this call (inode dedup), shared by every pass.
    pub file_ids: FileIds,
    /// Physical paths of directories resolved during this call, shared by every
    /// normalisation.
    pub physical_dirs: PhysicalDirs,
    /// Skills loaded during this call, shared by every step that asks for one.
    pub skills: Skills,
    /// Files read for delivery during this call, by path and byte limit: a call that decides
    /// twice (without the lock, then under it) reads each file once.
    delivery_reads: Memo<(PathBuf, u64), (FileBody, Option<std::fs::Metadata>)>,
    config: OnceLock<Config>,
    packs: OnceLock<packs::Loaded>,
    /// The client's transcript (`transcript_path`), when given.
    transcript: Option<PathBuf>,
    turn: OnceLock<Option<transcript::branch::Turn>>,
}

impl Context {
    /// Build the context of a call for `hook` with the time budget `budget`.
    pub fn new(env: Env, hook: &'static str, input: &HookInput, budget: Duration) -> Self {
        let home = env
            .get(env::HOME)
            .map_or_else(|| PathBuf::from("/"), PathBuf::from);
        let cwd = input
            .cwd()
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| env.get(env::CLAUDE_PROJECT_DIR).map(PathBuf::from))
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("/"));
        let cwd = paths::lexical_clean(&cwd);
        let project_root = paths::find_project_root(&cwd).unwrap_or_else(|| cwd.clone());
        let owner_pid = paths::owner_pid(&env);
        let budget_chars = env
            .number::<usize>(env::PRELOAD_OUTPUT_BUDGET)
            .unwrap_or(delivery::DEFAULT_BUDGET)
            .clamp(delivery::MIN_BUDGET, 9_990);
        let log = EventLog::new(
            env.get(env::PRELOAD_TEST_LOG).map(PathBuf::from),
            hook,
            env.number(env::TOOL_CALL_NUM).unwrap_or(0),
        );
        Self {
            paths: EnginePaths::new(&home),
            hook,
            cwd,
            project_root,
            owner_pid,
            conversation: input
                .session_id()
                .filter(|id| !id.is_empty() && id.len() <= 256)
                .map(str::to_owned),
            now: SystemTime::now(),
            deadline: Instant::now() + budget,
            lock_until: Instant::now() + budget * 2 / 3,
            budget: budget_chars,
            part_budget: budget_chars,
            log,
            env,
            file_ids: FileIds::default(),
            physical_dirs: PhysicalDirs::default(),
            skills: Skills::default(),
            delivery_reads: Memo::default(),
            config: OnceLock::new(),
            packs: OnceLock::new(),
            transcript: input.transcript_path().map(PathBuf::from),
            turn: OnceLock::new(),
        }
    }

    /// The client's transcript (`transcript_path`), when the input names one.
    pub fn transcript(&self) -> Option<&Path> {
        self.transcript.as_deref()
    }

    /// The newest prompt of the client's transcript and what a rewind to before it abandoned
    /// ([`transcript::branch::latest_turn`]), read once in this call.
    pub fn latest_turn(&self) -> Option<&transcript::branch::Turn> {
        self.turn
            .get_or_init(|| {
                self.transcript
                    .as_deref()
                    .and_then(transcript::branch::latest_turn)
            })
            .as_ref()
    }

    /// [`delivery::read_for_delivery_meta`] of `path`, read once in this call.
    pub fn read_for_delivery(
        &self,
        path: &Path,
        max_bytes: u64,
    ) -> (FileBody, Option<std::fs::Metadata>) {
        self.delivery_reads
            .get_or_keep(&(path.to_path_buf(), max_bytes), || {
                delivery::read_for_delivery_meta(path, max_bytes)
            })
    }

    /// The sessions directories, primary first.
    pub fn sessions_dirs(&self) -> Vec<PathBuf> {
        paths::sessions_dirs(&self.project_root, self.env.get(env::WORKSPACE))
    }

    /// The primary sessions directory, when it exists.
    pub fn sessions_dir(&self) -> Option<PathBuf> {
        self.sessions_dirs()
            .into_iter()
            .next()
            .filter(|d| d.is_dir())
    }

    /// The deadline for taking a lock: the lock timeout, cut at two thirds of the call's budget
    /// (the rest is left to decide without the lock and answer).
    pub fn lock_deadline(&self) -> Instant {
        let wait = self
            .env
            .number::<u64>(env::PRELOAD_LOCK_TIMEOUT_MS)
            .map_or(lock::DEFAULT_TIMEOUT, Duration::from_millis);
        (Instant::now() + wait).min(self.lock_until)
    }

    /// The write a tool call makes ([`Write::per_call`]): its lock waited for until
    /// [`Self::lock_deadline`].
    pub fn per_call<'r, T>(&self) -> Write<'r, T> {
        Write::per_call(self.lock_deadline())
    }

    /// True when the call has run out of time.
    pub fn expired(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// The largest file delivered by content.
    pub fn max_file_bytes(&self) -> u64 {
        self.env
            .number(env::PRELOAD_MAX_FILE_BYTES)
            .unwrap_or(DEFAULT_MAX_FILE_BYTES)
    }

    /// The engine's `config.sh`, read once.
    pub fn config(&self) -> &Config {
        self.config.get_or_init(|| {
            crate::primitives::file::read_text(&self.paths.config, CONFIG_MAX_BYTES)
                .map(|t| Config::parse(&t))
                .unwrap_or_default()
        })
    }

    /// The project's context packs and log rules, read once (a broken file contributes
    /// nothing; `preload doctor` names it).
    pub fn packs(&self) -> &packs::Loaded {
        self.packs
            .get_or_init(|| packs::load(&self.project_root, &self.paths.claude, &self.paths.home))
    }

    /// Normalise a path the engine's way against this `HOME`.
    pub fn normalize(&self, path: &str) -> String {
        paths::normalize_with(path, &self.paths.home, &self.physical_dirs)
    }

    /// Normalise a path given relative to `base`.
    pub fn normalize_in(&self, base: &Path, path: &str) -> String {
        if path.starts_with('/') || path.starts_with('~') {
            self.normalize(path)
        } else {
            self.normalize(&base.join(path).to_string_lossy())
        }
    }

    /// True when `HOOK_DEBUG` is set.
    pub fn debug(&self) -> bool {
        self.env.get(env::HOOK_DEBUG).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_is_read_as_text() {
        let cfg = Config::parse(
            "# comment\nOVERFLOW_THRESHOLD=0.80\nexport A=\"quoted value\" # c\nB='x'\nC=plain # trailing\nrm -rf /\n",
        );
        assert_eq!(cfg.get("OVERFLOW_THRESHOLD"), Some("0.80"));
        assert_eq!(cfg.get("A"), Some("quoted value"));
        assert_eq!(cfg.get("B"), Some("x"));
        assert_eq!(cfg.get("C"), Some("plain"));
        assert_eq!(cfg.get("rm -rf /"), None);
    }

    #[test]
    fn cwd_from_input_locates_project_root() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("p/.claude")).unwrap();
        std::fs::create_dir_all(tmp.path().join("p/src")).unwrap();
        let cwd = tmp.path().join("p/src");
        let input = HookInput::from_value(serde_json::json!({"cwd": cwd}));
        let env = Env::from_pairs([(env::HOME, "/h"), (env::CLAUDE_SUPERVISOR_PID, "5")]);
        let ctx = Context::new(env, "t", &input, Duration::from_secs(1));
        assert_eq!(ctx.project_root, tmp.path().join("p"));
        assert_eq!(ctx.owner_pid, 5);
        assert_eq!(ctx.sessions_dirs(), vec![tmp.path().join("p/sessions")]);
    }

    #[test]
    fn without_a_dot_claude_above_the_project_is_the_working_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().join("bare/work");
        std::fs::create_dir_all(&cwd).unwrap();
        let input = HookInput::from_value(serde_json::json!({"cwd": cwd}));
        let env = Env::from_pairs([(env::HOME, "/h"), (env::CLAUDE_SUPERVISOR_PID, "5")]);
        let ctx = Context::new(env, "t", &input, Duration::from_secs(1));
        assert_eq!(ctx.project_root, cwd);
        assert_eq!(ctx.sessions_dirs(), vec![cwd.join("sessions")]);
    }

    #[test]
    fn a_lock_is_never_waited_for_past_two_thirds_of_the_budget() {
        let input = HookInput::parse(br#"{"cwd":"/p"}"#).unwrap();
        let env = Env::from_pairs([(env::PRELOAD_LOCK_TIMEOUT_MS, "60000")]);
        let ctx = Context::new(env, "t", &input, Duration::from_millis(300));
        let room = ctx.deadline.saturating_duration_since(ctx.lock_deadline());
        assert!(room >= Duration::from_millis(99), "{room:?} left to decide");
        let env = Env::from_pairs([(env::PRELOAD_LOCK_TIMEOUT_MS, "10")]);
        let ctx = Context::new(env, "t", &input, Duration::from_millis(300));
        assert!(
            ctx.deadline.saturating_duration_since(ctx.lock_deadline())
                > Duration::from_millis(250)
        );
    }
}
