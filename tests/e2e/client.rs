//! The real Claude Code client: where it is installed, whether it starts, and one bounded
//! `claude -p` run against the scripted model.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use preload_core::primitives::env;
use serde_json::Value;

use crate::model::ModelServer;
use crate::world::World;
use preload_test_support::sandbox::repo;

/// The client version the scenarios are written against (`make e2e-setup` installs exactly
/// this).
pub const CLIENT_VERSION: &str = "2.1.332";
/// Names the client executable to use instead of the project-local install.
pub const CLIENT_ENV: &str = "PRELOAD_E2E_CLAUDE";
/// How long one client run may take before it is killed.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);
/// How long `claude --version` may take when the harness checks that the client starts.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);
/// The tools the scripted model may use without a permission prompt.
pub const ALLOWED_TOOLS: &[&str] = &[
    "Bash", "Read", "Edit", "Write", "Skill", "Agent", "Glob", "Grep",
];

/// The client executable, checked to start, or why there is none. Probed once per process.
pub fn locate() -> Result<PathBuf, String> {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FOUND.get_or_init(find_and_probe).clone()
}

fn find_and_probe() -> Result<PathBuf, String> {
    let path = find()?;
    probe(&path)?;
    Ok(path)
}

/// A client executable: the file `var` names when it is set (or why it is not one), else the
/// first of the `installed` packages' files under `.e2e/node_modules` that is a real
/// executable (a wrapper package's placeholder stub is a few hundred bytes), else why there is
/// none: `what` is not installed there and `var` is not set.
pub fn find_client(var: &str, installed: &[&str], what: &str) -> Result<PathBuf, String> {
    if let Some(named) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        let path = PathBuf::from(named);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("{var}={} is not a file", path.display()))
        };
    }
    let local = repo().join(".e2e/node_modules");
    installed
        .iter()
        .map(|rel| local.join(rel))
        .find(|c| fs::metadata(c).is_ok_and(|m| m.is_file() && m.len() > 1 << 20))
        .ok_or_else(|| format!("{what} is not installed in .e2e/ and {var} is not set"))
}

fn find() -> Result<PathBuf, String> {
    let installed = [
        "@anthropic-ai/claude-code/bin/claude.exe",
        "@anthropic-ai/claude-code-linux-x64/claude",
        "@anthropic-ai/claude-code-linux-arm64/claude",
    ];
    let what = format!("the Claude Code client {CLIENT_VERSION}");
    find_client(CLIENT_ENV, &installed, &what)
}

/// `claude --version` must start and answer in a clean environment; the project-local install
/// must be the pinned version.
fn probe(claude: &Path) -> Result<(), String> {
    let version = version_of(claude, "the client", |cmd, _| {
        cmd.env("DISABLE_AUTOUPDATER", "1");
    })?;
    let pinned = std::env::var_os(CLIENT_ENV).is_none_or(|p| p.is_empty());
    if pinned && !version.starts_with(CLIENT_VERSION) {
        return Err(format!(
            "the client in .e2e/ is {version:?}, the scenarios are pinned to {CLIENT_VERSION}"
        ));
    }
    Ok(())
}

/// What `program --version` prints, run in a clean environment (a temporary `HOME`,
/// `PATH=/usr/bin:/bin`, and what `more` adds, given that home); or why not: it did not start,
/// did not answer within [`PROBE_TIMEOUT`], or failed. `what` names it in the reasons.
pub fn version_of(
    program: &Path,
    what: &str,
    more: impl FnOnce(&mut Command, &Path),
) -> Result<String, String> {
    let home = tempfile::tempdir().map_err(|e| format!("temporary HOME for the probe: {e}"))?;
    let mut cmd = Command::new(program);
    cmd.arg("--version")
        .env_clear()
        .env(env::HOME, home.path())
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    more(&mut cmd, home.path());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("{what} {} does not start: {e}", program.display()))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < PROBE_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{what} {} did not answer `--version` within {PROBE_TIMEOUT:?}",
                    program.display()
                ));
            }
        }
    };
    let output = child
        .wait_with_output()
        .map_err(|e| format!("{what}'s `--version`: {e}"))?;
    if !status.success() {
        return Err(format!(
            "{what} {} failed to start ({status}): {}",
            program.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// The outcome of one client run.
#[derive(Debug)]
pub struct Run {
    /// Exit code (`None` when killed).
    pub code: Option<i32>,
    /// The client's PID (the `CLAUDE_PID` its hooks and tools see).
    pub pid: u32,
    /// stdout (the `--output-format json` result).
    pub stdout: String,
    /// stderr.
    pub stderr: String,
    /// How long it took.
    pub elapsed: Duration,
}

impl Run {
    /// The session id the client reported.
    pub fn session_id(&self) -> Option<String> {
        serde_json::from_str::<Value>(self.stdout.trim())
            .ok()
            .and_then(|v| v["session_id"].as_str().map(str::to_owned))
    }

    /// Fails with the client's output unless it exited 0.
    pub fn assert_ok(&self) {
        assert_eq!(
            self.code,
            Some(0),
            "client run failed after {:?}\nstdout: {}\nstderr: {}",
            self.elapsed,
            self.stdout,
            self.stderr
        );
    }
}

/// How one client run is started, beyond the prompt.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--resume <id>`.
    pub resume: Option<String>,
    /// With `resume`: `--fork-session`, a new conversation that starts as a copy of it.
    pub fork: bool,
    /// With `resume`: `--resume-session-at <message uuid>`, the conversation rewound to that
    /// message (the client drops what came after it from the context).
    pub resume_at: Option<String>,
    /// The delivery log the hooks append to (`PRELOAD_TEST_LOG`); the world's when `None`.
    pub log: Option<PathBuf>,
    /// Answer `AskUserQuestion` with `preload-e2e-auto-answer`: the test-session settings of
    /// `hooks/settings.e2e.json` (`--settings`), and a permission prompt channel, without which
    /// the client disables `AskUserQuestion` in print mode.
    pub auto_answer: bool,
}

impl Options {
    /// `--resume <id>`, nothing else.
    pub fn resuming(id: impl Into<String>) -> Self {
        Self {
            resume: Some(id.into()),
            ..Self::default()
        }
    }

    /// `--resume <id> --fork-session`, nothing else.
    pub fn forking(id: impl Into<String>) -> Self {
        Self {
            fork: true,
            ..Self::resuming(id)
        }
    }
}

/// A started client run; [`Running::wait`] bounds it by [`RUN_TIMEOUT`].
pub struct Running {
    child: std::process::Child,
    pid: u32,
    started: Instant,
    timeout: Duration,
    out_path: PathBuf,
    err_path: PathBuf,
}

impl Running {
    /// Waits for the run (killing it after the world's run timeout, [`RUN_TIMEOUT`] unless
    /// the world says otherwise).
    pub fn wait(mut self) -> Run {
        let code = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status.code(),
                Ok(None) if self.started.elapsed() < self.timeout => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
            }
        };
        Run {
            code,
            pid: self.pid,
            stdout: fs::read_to_string(&self.out_path).unwrap_or_default(),
            stderr: fs::read_to_string(&self.err_path).unwrap_or_default(),
            elapsed: self.started.elapsed(),
        }
    }
}

/// Starts `claude -p <prompt>` in the world's project, against `server`, with the world's
/// `HOME` and `PATH`.
pub fn start(
    claude: &Path,
    world: &World,
    server: &ModelServer,
    prompt: &str,
    options: &Options,
) -> Running {
    let mut cmd = Command::new(claude);
    cmd.arg("-p")
        .arg(prompt)
        .args(["--output-format", "json", "--max-turns", "60"])
        // A 100k window, so a scripted answer reporting a nearly full one triggers compaction.
        .args(["--autocompact", "100000"]);
    cmd.arg("--allowedTools").args(ALLOWED_TOOLS);
    if options.auto_answer {
        cmd.arg("--settings")
            .arg(world.auto_answer_settings())
            .args(["--permission-prompt-tool", "stdio"]);
    }
    if let Some(id) = &options.resume {
        cmd.args(["--resume", id]);
        if options.fork {
            cmd.arg("--fork-session");
        }
        if let Some(at) = &options.resume_at {
            cmd.args(["--resume-session-at", at]);
        }
    }
    if let Some(dir) = &world.plugin_dir {
        cmd.arg("--plugin-dir").arg(dir);
    }
    let log = options.log.as_ref().unwrap_or(&world.sandbox.log);
    let base_url = server.base_url();
    let own: [(&str, &OsStr); 6] = [
        ("ANTHROPIC_BASE_URL", base_url.as_ref()),
        ("ANTHROPIC_API_KEY", "sk-ant-e2e-placeholder".as_ref()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".as_ref()),
        ("DISABLE_AUTOUPDATER", "1".as_ref()),
        ("DISABLE_TELEMETRY", "1".as_ref()),
        ("DISABLE_ERROR_REPORTING", "1".as_ref()),
    ];
    let (out_path, err_path) = in_world(&mut cmd, world, log, &own, "client");
    let started = Instant::now();
    let child = cmd.spawn().expect("spawn the Claude Code client");
    Running {
        pid: child.id(),
        child,
        started,
        timeout: world.run_timeout,
        out_path,
        err_path,
    }
}

/// Gives a client's `cmd` the world it runs in: only the world's `HOME`, `PATH`, delivery `log`
/// and temporary directories in its environment, the client's `own` variables, then the
/// world's `client_env` over them; it runs in the world's `cwd` with no input, writing its
/// output to files of the run named after the client (`<name>-<run>.out` and `.err` in the
/// sandbox), which it returns.
pub fn in_world(
    cmd: &mut Command,
    world: &World,
    log: &Path,
    own: &[(&str, &OsStr)],
    name: &str,
) -> (PathBuf, PathBuf) {
    let sandbox = &world.sandbox;
    let n = world.next_run();
    let out_path = sandbox.root().join(format!("{name}-{n}.out"));
    let err_path = sandbox.root().join(format!("{name}-{n}.err"));
    cmd.env_clear()
        .env(env::HOME, &sandbox.home)
        .env("PATH", world.path_var())
        .env(env::PRELOAD_TEST_LOG, log)
        .env(env::TMPDIR, sandbox.root())
        .env(env::CLAUDE_SESSION_CACHE_DIR, sandbox.root())
        .env("NO_COLOR", "1")
        .env("LANG", "C.UTF-8")
        .envs(own.iter().copied())
        .envs(world.client_env.iter().map(|(k, v)| (k, v)))
        .current_dir(&world.cwd)
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out_path).expect("client stdout file"))
        .stderr(fs::File::create(&err_path).expect("client stderr file"));
    (out_path, err_path)
}

/// One whole run: [`start`], then [`Running::wait`].
pub fn run(
    claude: &Path,
    world: &World,
    server: &ModelServer,
    prompt: &str,
    options: &Options,
) -> Run {
    start(claude, world, server, prompt, options).wait()
}
