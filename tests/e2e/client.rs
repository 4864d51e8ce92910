//! The real Claude Code client: where it is installed, and one bounded `claude -p` run against
//! the scripted model.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use preload_core::env;
use serde_json::Value;

use crate::common::repo;
use crate::model::ModelServer;
use crate::world::World;

/// The client version the scenarios are written against (`.ci/run` installs exactly this).
pub const CLIENT_VERSION: &str = "2.1.330";
/// Names the client executable to use instead of the project-local install.
pub const CLIENT_ENV: &str = "PRELOAD_E2E_CLAUDE";
/// How long one client run may take before it is killed.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);
/// The tools the scripted model may use without a permission prompt.
pub const ALLOWED_TOOLS: &[&str] = &[
    "Bash", "Read", "Edit", "Write", "Skill", "Agent", "Glob", "Grep",
];

/// The client executable, or why there is none.
pub fn locate() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os(CLIENT_ENV).filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("{CLIENT_ENV}={} is not a file", path.display()))
        };
    }
    let local = repo().join(".e2e/node_modules");
    let candidates = [
        local.join("@anthropic-ai/claude-code/bin/claude.exe"),
        local.join("@anthropic-ai/claude-code-linux-x64/claude"),
        local.join("@anthropic-ai/claude-code-linux-arm64/claude"),
    ];
    candidates
        .iter()
        .find(|c| is_native(c))
        .cloned()
        .ok_or_else(|| {
            format!(
                "the Claude Code client is not installed: set {CLIENT_ENV}, or run \
                 `npm install --prefix .e2e @anthropic-ai/claude-code@{CLIENT_VERSION}` \
                 (what `.ci/run` does)"
            )
        })
}

/// A real executable (the wrapper package's placeholder stub is a few hundred bytes).
fn is_native(path: &PathBuf) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > 1 << 20)
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

/// Runs `claude -p <prompt>` (resuming `resume` when given) in the world's project, against
/// `server`, with the world's `HOME` and `PATH`, bounded by [`RUN_TIMEOUT`].
pub fn run(
    claude: &PathBuf,
    world: &World,
    server: &ModelServer,
    prompt: &str,
    resume: Option<&str>,
) -> Run {
    let sandbox = &world.sandbox;
    let n = world.next_run();
    let out_path = sandbox.root().join(format!("client-{n}.out"));
    let err_path = sandbox.root().join(format!("client-{n}.err"));
    let mut cmd = Command::new(claude);
    cmd.arg("-p")
        .arg(prompt)
        .args(["--output-format", "json", "--max-turns", "60"])
        // A 100k window, so a scripted answer reporting a nearly full one triggers compaction.
        .args(["--autocompact", "100000"]);
    cmd.arg("--allowedTools").args(ALLOWED_TOOLS);
    if let Some(id) = resume {
        cmd.args(["--resume", id]);
    }
    cmd.env_clear()
        .env(env::HOME, &sandbox.home)
        .env("PATH", world.path_var())
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .env("ANTHROPIC_API_KEY", "sk-ant-e2e-placeholder")
        .env(env::PRELOAD_TEST_LOG, &sandbox.log)
        .env(env::TMPDIR, sandbox.root())
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("NO_COLOR", "1")
        .env("LANG", "C.UTF-8")
        .current_dir(&world.cwd)
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out_path).expect("client stdout file"))
        .stderr(fs::File::create(&err_path).expect("client stderr file"));
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn the Claude Code client");
    let pid = child.id();
    let code = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status.code(),
            Ok(None) if started.elapsed() < RUN_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    Run {
        code,
        pid,
        stdout: fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: fs::read_to_string(&err_path).unwrap_or_default(),
        elapsed: started.elapsed(),
    }
}
