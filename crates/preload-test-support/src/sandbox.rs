//! The test sandbox: a temporary `HOME` with the bundled example engine, a project with
//! `.claude/` and `sessions/`, and helpers to run the real binaries and read what they left.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use assert_cmd::Command;
use preload_core::primitives::env;
use serde_json::{Value, json};

use crate::example;
pub use crate::example::{copy_tree, repo};

/// A binary's path: in `PRELOAD_TEST_BIN_DIR` when it is set (to run the suites against the
/// binaries users install, `make release`'s), else the one cargo built for the tests.
pub fn bin(name: &str) -> PathBuf {
    match std::env::var_os("PRELOAD_TEST_BIN_DIR") {
        Some(dir) => PathBuf::from(dir).join(name),
        None => assert_cmd::cargo::cargo_bin(name),
    }
}

/// The time budget of every hook binary the suites start, unless a test sets its own. The product's
/// defaults (a PreToolUse hook's 300 ms, CONTRACT section 6) are met by a release build on a
/// quiet machine; the suites run debug builds, often on a busy 2-core machine (CI beside
/// another build), where a hook past its budget fails open and a test would read the
/// machine's load as the product's behaviour. Tests of the budget itself set their own. (Lock
/// waits keep their default: the tests of a held lock rely on it, and a hook holds a lock for
/// milliseconds.)
pub const LOADED_MACHINE_LIMITS: [(&str, &str); 1] = [(env::PRELOAD_BUDGET_MS, "20000")];

/// The harness's switch between the two wirings: `PRELOAD_WIRING=dispatch` plays every event
/// of the pipeline scenarios (and of the end-to-end worlds) through `preload-dispatch`, one
/// process per event, as `preload install --dispatch` wires it; unset or anything else, through
/// the hook binaries, as `preload install` wires them.
pub const WIRING_ENV: &str = "PRELOAD_WIRING";

/// How the events of a scenario reach the policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wiring {
    /// One process per hook binary (the default).
    Binaries,
    /// One `preload-dispatch <Event>` process per event.
    Dispatch,
}

impl Wiring {
    /// The wiring this test run plays ([`WIRING_ENV`]).
    pub fn of_run() -> Self {
        match std::env::var(WIRING_ENV).as_deref() {
            Ok("dispatch") => Self::Dispatch,
            _ => Self::Binaries,
        }
    }
}

/// What a hook printed.
#[derive(Debug, Clone)]
pub struct Answer {
    /// Exit code.
    pub code: i32,
    /// Raw stdout.
    pub stdout: String,
    /// Raw stderr.
    pub stderr: String,
    /// stdout parsed, when it is one JSON object.
    pub json: Option<Value>,
    /// True for the joined answers of several registrations of one event (each checked
    /// against the contract on its own).
    pub joined: bool,
}

impl Answer {
    /// From a finished process.
    pub fn from_output(out: &Output) -> Self {
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let json = serde_json::from_str::<Value>(stdout.trim())
            .ok()
            .filter(Value::is_object);
        Self {
            code: out.status.code().unwrap_or(-1),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            json,
            stdout,
            joined: false,
        }
    }

    /// `hookSpecificOutput.additionalContext`, or "".
    pub fn context(&self) -> String {
        self.field(&["hookSpecificOutput", "additionalContext"])
    }

    /// `hookSpecificOutput.permissionDecision`, or "".
    pub fn decision(&self) -> String {
        self.field(&["hookSpecificOutput", "permissionDecision"])
    }

    /// `hookSpecificOutput.permissionDecisionReason`, or "".
    pub fn reason(&self) -> String {
        self.field(&["hookSpecificOutput", "permissionDecisionReason"])
    }

    /// Top-level `decision`, or "".
    pub fn top_decision(&self) -> String {
        self.field(&["decision"])
    }

    /// Top-level `reason`, or "".
    pub fn top_reason(&self) -> String {
        self.field(&["reason"])
    }

    fn field(&self, path: &[&str]) -> String {
        let Some(mut v) = self.json.as_ref() else {
            return String::new();
        };
        for key in path {
            match v.get(key) {
                Some(next) => v = next,
                None => return String::new(),
            }
        }
        v.as_str().unwrap_or_default().to_owned()
    }

    /// The contract's output shape: exit 0, empty stderr, stdout empty or exactly one compact
    /// JSON object on one line, with `hookEventName` whenever `hookSpecificOutput` is present,
    /// no literal backslash-n in the texts, every text within the budget.
    pub fn assert_contract(&self) {
        if self.joined {
            return;
        }
        assert_eq!(self.code, 0, "exit code; stderr: {}", self.stderr);
        assert!(
            self.stderr.is_empty(),
            "stderr must stay empty: {}",
            self.stderr
        );
        if self.stdout.is_empty() {
            return;
        }
        assert!(
            self.stdout.ends_with('\n') && self.stdout.matches('\n').count() == 1,
            "one line: {:?}",
            self.stdout
        );
        let v = self.json.as_ref().expect("stdout is one JSON object");
        if let Some(specific) = v.get("hookSpecificOutput") {
            assert!(
                specific
                    .get("hookEventName")
                    .and_then(Value::as_str)
                    .is_some(),
                "hookEventName set"
            );
        }
        for text in [self.context(), self.reason(), self.top_reason()] {
            assert!(
                !text.contains("\\n"),
                "literal backslash-n in output: {text}"
            );
            assert!(text.chars().count() <= 10_000, "over Claude Code's cap");
        }
    }
}

/// A temporary `HOME` + project for running the real hook binaries.
pub struct Sandbox {
    tmp: tempfile::TempDir,
    /// The temporary `HOME`.
    pub home: PathBuf,
    /// The project root (has `.claude/`).
    pub project: PathBuf,
    /// `project/sessions`.
    pub sessions: PathBuf,
    /// The delivery event log.
    pub log: PathBuf,
    /// The owner PID the hooks see (`CLAUDE_SUPERVISOR_PID`): this test process, alive.
    pub pid: u32,
    /// The Claude Code conversation (`session_id`) of every call; a new client process starts
    /// a new one (only `--resume` brings an old one back).
    pub conversation: String,
    /// Extra environment for every call.
    pub extra_env: Vec<(String, String)>,
    /// How the scenario steps run an event's hooks.
    pub wiring: Wiring,
}

impl Sandbox {
    /// A sandbox with the bundled example engine, skills and project.
    #[allow(clippy::new_without_default)] // a sandbox is made on disk, never a default value
    pub fn new() -> Self {
        let sandbox = Self::bare();
        example::lay_out(&sandbox.home, &sandbox.project).unwrap();
        sandbox
    }

    /// A sandbox with empty `~/.claude/{engine,skills}` and a project with `.claude/` and
    /// `sessions/`.
    pub fn bare() -> Self {
        let tmp = tempfile::Builder::new()
            .prefix("preload-test")
            .tempdir()
            .unwrap();
        Self::bare_at(tmp)
    }

    /// [`Sandbox::bare`] in a temporary directory under `base` (created when missing): for a
    /// run whose paths must avoid names the engine's discovery skips (`tmp`, `build`, …).
    pub fn bare_in(base: &Path) -> Self {
        fs::create_dir_all(base).unwrap();
        let tmp = tempfile::Builder::new()
            .prefix("preload-test")
            .tempdir_in(base)
            .unwrap();
        Self::bare_at(tmp)
    }

    fn bare_at(tmp: tempfile::TempDir) -> Self {
        let root = tmp.path().canonicalize().unwrap();
        let home = root.join("home");
        let project = root.join("project");
        fs::create_dir_all(home.join(".claude/engine/.directives/commands")).unwrap();
        fs::create_dir_all(home.join(".claude/skills")).unwrap();
        fs::create_dir_all(project.join(".claude")).unwrap();
        fs::create_dir_all(project.join("sessions")).unwrap();
        Self {
            log: root.join("delivery-log.jsonl"),
            sessions: project.join("sessions"),
            home,
            project,
            pid: std::process::id(),
            conversation: "test-session".to_owned(),
            extra_env: Vec::new(),
            wiring: Wiring::of_run(),
            tmp,
        }
    }

    /// The sandbox's own temporary root.
    pub fn root(&self) -> &Path {
        self.tmp.path()
    }

    /// A command for binary `name` with a clean environment holding only the contract's vars.
    pub fn command(&self, name: &str) -> Command {
        self.command_through(&[], name)
    }

    /// [`Sandbox::command`] started through `wrapper` (a program and its arguments, such as
    /// `timeout 30`), which starts binary `name` as its own child: a hook whose parent is not
    /// the client, as a user's wrapper or supervisor makes it.
    pub fn command_through(&self, wrapper: &[&str], name: &str) -> Command {
        let mut cmd = Command::from_std(self.std_command_through(wrapper, name));
        cmd.timeout(Duration::from_secs(30));
        cmd
    }

    /// [`Sandbox::command`] as the standard library's command (to spawn, or kill, it yourself).
    pub fn std_command(&self, name: &str) -> std::process::Command {
        self.std_command_through(&[], name)
    }

    fn std_command_through(&self, wrapper: &[&str], name: &str) -> std::process::Command {
        self.std_command_at(wrapper, &bin(name), name != "preload")
    }

    /// [`Sandbox::std_command`] of the program at `path` (a hook when `hook`: it gets the
    /// hooks' budget).
    pub fn std_command_at(
        &self,
        wrapper: &[&str],
        path: &Path,
        hook: bool,
    ) -> std::process::Command {
        let mut cmd = match wrapper.split_first() {
            None => std::process::Command::new(path),
            Some((program, args)) => {
                let mut cmd = std::process::Command::new(program);
                cmd.args(args).arg(path);
                cmd
            }
        };
        cmd.env_clear()
            .env(env::HOME, &self.home)
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env(env::CLAUDE_SUPERVISOR_PID, self.pid.to_string())
            .env(env::PRELOAD_TEST_LOG, &self.log)
            .env(env::CLAUDE_SESSION_CACHE_DIR, self.tmp.path())
            .env(env::TMPDIR, self.tmp.path())
            .current_dir(&self.project);
        // The hooks' budget; the command line (`preload timings` reports the defaults) keeps
        // what the user has.
        if hook {
            cmd.envs(LOADED_MACHINE_LIMITS);
        }
        for (k, v) in &self.extra_env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Run binary `name` with `args` and `input` on stdin (`cwd` defaulted to the project).
    pub fn run_args(&self, name: &str, args: &[&str], mut input: Value) -> Answer {
        if let Some(obj) = input.as_object_mut() {
            obj.entry("cwd").or_insert_with(|| json!(self.project));
            obj.entry("session_id")
                .or_insert_with(|| json!(self.conversation));
            obj.entry("transcript_path")
                .or_insert_with(|| json!("/tmp/x/test.jsonl"));
        }
        let out = self
            .command(name)
            .args(args)
            .write_stdin(input.to_string())
            .output()
            .unwrap();
        Answer::from_output(&out)
    }

    /// Run binary `name` with `input` on stdin.
    pub fn run(&self, name: &str, input: Value) -> Answer {
        self.run_args(name, &[], input)
    }

    /// One `SessionStart` event as Claude Code runs it with the wiring `preload install`
    /// writes: every `--chunk I/N` registration at once, each checked against the output
    /// contract, their contexts joined in registration order into one answer.
    /// (Played through `preload-dispatch SessionStart --chunk I/N` under
    /// [`Wiring::Dispatch`], whose last registration also runs the event's other hooks.)
    pub fn session_start_event(&self, input: &Value) -> Answer {
        let total = preload_cli::install::wiring::SESSION_START_CHUNKS;
        let slices: Vec<Answer> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..total)
                .map(|i| {
                    let input = input.clone();
                    scope.spawn(move || {
                        let chunk = format!("{i}/{total}");
                        match self.wiring {
                            Wiring::Binaries => {
                                self.run_args("preload-session-start", &["--chunk", &chunk], input)
                            }
                            Wiring::Dispatch => self.run_args(
                                "preload-dispatch",
                                &["SessionStart", "--chunk", &chunk],
                                input,
                            ),
                        }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for slice in &slices {
            slice.assert_contract();
        }
        let text: Vec<String> = slices
            .iter()
            .map(Answer::context)
            .filter(|c| !c.is_empty())
            .collect();
        let json = (!text.is_empty()).then(|| {
            json!({"hookSpecificOutput": {"hookEventName": "SessionStart",
                "additionalContext": text.join("\n")}})
        });
        Answer {
            code: 0,
            stdout: json.as_ref().map_or_else(String::new, |j| format!("{j}\n")),
            stderr: String::new(),
            json,
            joined: true,
        }
    }

    /// Run binary `name` with raw stdin bytes.
    pub fn run_raw(&self, name: &str, args: &[&str], stdin: impl Into<Vec<u8>>) -> Answer {
        let out = self
            .command(name)
            .args(args)
            .write_stdin(stdin.into())
            .output()
            .unwrap();
        Answer::from_output(&out)
    }

    /// `~/.claude/engine/.directives/<rel>` written with `body`; returns its path.
    pub fn directive(&self, rel: &str, body: &str) -> PathBuf {
        let path = self.home.join(".claude/engine/.directives").join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, body).unwrap();
        path
    }

    /// The normalised path of an engine directive (what the hooks record).
    pub fn engine_path(&self, rel: &str) -> String {
        self.home
            .join(".claude/engine/.directives")
            .join(rel)
            .to_string_lossy()
            .into_owned()
    }

    /// Write a file under the project; returns its path.
    pub fn project_file(&self, rel: &str, body: &str) -> PathBuf {
        let path = self.project.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, body).unwrap();
        path
    }

    /// Create `sessions/<name>/.state.json` with `state`; returns the session directory.
    pub fn session(&self, name: &str, state: &Value) -> PathBuf {
        let dir = self.sessions.join(name);
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join(".state.json"),
            serde_json::to_string_pretty(state).unwrap(),
        )
        .unwrap();
        dir
    }

    /// An active session owned by this sandbox's PID, with `extra` fields merged in.
    pub fn active_session(&self, name: &str, extra: &Value) -> PathBuf {
        // A new session each time, as an activation makes it (its own `startedAt`).
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mut state = json!({"pid": self.pid, "skill": "implement", "lifecycle": "active",
            "currentPhase": "0: Setup", "startedAt": format!("t{started}"),
            "preloadedFiles": [], "pendingPreloads": [], "touchedDirs": {}});
        if let (Some(base), Some(more)) = (state.as_object_mut(), extra.as_object()) {
            for (k, v) in more {
                base.insert(k.clone(), v.clone());
            }
        }
        self.session(name, &state)
    }

    /// The parsed `.state.json` of session `name`.
    pub fn state(&self, name: &str) -> Value {
        read_json(&self.sessions.join(name).join(".state.json"))
    }

    /// The seed file of this sandbox's PID.
    pub fn seed_path(&self) -> PathBuf {
        self.sessions
            .join(".seeds")
            .join(format!("{}.json", self.pid))
    }

    /// The parsed seed file of this sandbox's PID.
    pub fn seed(&self) -> Value {
        read_json(&self.seed_path())
    }

    /// Every delivery-log event.
    pub fn events(&self) -> Vec<Value> {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("log lines are JSON"))
            .collect()
    }

    /// How many times a file whose path ends with `suffix` was delivered (direct or claim).
    pub fn delivery_count(&self, suffix: &str) -> usize {
        self.deliveries()
            .iter()
            .filter(|(_, f)| f.ends_with(suffix))
            .count()
    }

    /// (hook, file) of every delivery event; a sub-agent's copy is labelled
    /// `<file> (sub-agent <id>)`, since its context window is its own.
    pub fn deliveries(&self) -> Vec<(String, String)> {
        self.events()
            .into_iter()
            .filter(|e| {
                matches!(
                    e["event"].as_str(),
                    Some("direct-deliver" | "claim-deliver")
                )
            })
            .map(|e| {
                let mut file = e["file"].as_str().unwrap_or("").to_owned();
                let source = e["source"].as_str().unwrap_or("");
                if let Some(agent) = preload_core::primitives::delivery::sub_agent_of_source(source)
                {
                    file = format!("{file} (sub-agent {agent})");
                }
                (e["hook"].as_str().unwrap_or("").to_owned(), file)
            })
            .collect()
    }

    /// Fail with a report when any file was delivered more than once.
    pub fn assert_no_duplicates(&self) {
        let mut seen = std::collections::BTreeMap::<String, Vec<String>>::new();
        for (hook, file) in self.deliveries() {
            seen.entry(file).or_default().push(hook);
        }
        let dupes: Vec<_> = seen.iter().filter(|(_, hooks)| hooks.len() > 1).collect();
        assert!(
            dupes.is_empty(),
            "duplicate deliveries: {dupes:?}\nevents:\n{}",
            self.events()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// Parse a JSON file.
pub fn read_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}\n{text}", path.display()))
}

/// The strings of an array field.
pub fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The `[Preloaded: …]` blocks of a text per file, in order of first appearance: the highest
/// part shown and the number of parts (`(1, 1)` for a whole file).
pub fn shown_parts(text: &str) -> Vec<(String, usize, usize)> {
    let mut out: Vec<(String, usize, usize)> = Vec::new();
    for line in text.lines() {
        let Some(inner) = line
            .strip_prefix("[Preloaded: ")
            .and_then(|l| l.strip_suffix(']'))
        else {
            continue;
        };
        let (path, part, total) = match inner.rsplit_once(" (part ") {
            Some((path, label)) => {
                let (i, n) = label.trim_end_matches(')').split_once('/').unwrap();
                (path, i.parse().unwrap(), n.parse().unwrap())
            }
            None => (inner, 1, 1),
        };
        match out.iter_mut().find(|(p, ..)| p == path) {
            Some(entry) => entry.1 = entry.1.max(part),
            None => out.push((path.to_owned(), part, total)),
        }
    }
    out
}

/// Every file shown in `text` is recorded in `state`: in `preloadedFiles` once it is whole out
/// (its last part included), else queued with its part progress; never both.
pub fn assert_shown_recorded(text: &str, state: &Value) {
    let preloaded = strings(state, "preloadedFiles");
    let pending = strings(state, "pendingPreloads");
    for (path, part, total) in shown_parts(text) {
        if part == total {
            assert!(preloaded.contains(&path), "{path} is out whole: recorded");
            assert!(!pending.contains(&path), "{path} is out whole: not queued");
        } else {
            assert!(
                !preloaded.contains(&path),
                "{path}: only {part}/{total} out"
            );
            assert!(pending.contains(&path), "{path}: the rest stays queued");
            assert_eq!(
                state["preloadParts"][&path],
                json!(part),
                "{path}: progress recorded"
            );
        }
    }
}

/// Names in `dir` that are locks, staged or half-removed locks, or temporaries: what a killed or
/// racing writer could leave (not the counters' previous version, which the next count
/// overwrites and exchanges with the file, nor a directory's spare lock, which is no lock).
pub fn litter(dir: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".lock") || n.contains(".tmp."))
        .filter(|n| !n.ends_with(preload_core::primitives::file::HELD_TEMP_SUFFIX))
        .collect()
}
