//! The real Codex CLI: where it is installed, whether it starts, its private `CODEX_HOME`
//! pointed at the scripted model, and one bounded `codex exec` run.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::client::{Run, in_world};
use crate::codex_model::CodexModel;
use crate::world::World;

/// The Codex CLI version the Codex scenarios are written against (`make e2e-setup` installs
/// exactly this).
pub const CODEX_VERSION: &str = "0.171.0";
/// Names the Codex executable to use instead of the project-local install.
pub const CODEX_ENV: &str = "PRELOAD_E2E_CODEX";
/// The model name the scripted provider serves: one of the client's bundled models, whose
/// metadata offers the `apply_patch` tool (an unknown name gets none).
pub const MODEL: &str = "gpt-5.5";
/// The variable the provider's key is read from (`env_key`); the scripted model ignores it.
const KEY_ENV: &str = "PRELOAD_E2E_MODEL_KEY";
/// The auto-compaction limit every run gets: above what a scripted conversation holds, below
/// what a heavy answer reports (`codex_model::HEAVY_INPUT_TOKENS`).
pub const COMPACT_LIMIT: u64 = 200_000;
/// How long one client run may take before it is killed.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);
/// What makes the Codex scenarios run.
const HINT: &str = "`make e2e-setup` installs the pinned Codex CLI into .e2e/ (or set \
                    PRELOAD_E2E_CODEX to a codex executable)";

/// The client executable, checked to start, or why there is none. Probed once per process.
pub fn locate() -> Result<PathBuf, String> {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let path = find()?;
            probe(&path)?;
            Ok(path)
        })
        .clone()
}

/// The client for `scenario`. When it cannot run (missing, or it does not start), fails with
/// the reason under `PRELOAD_E2E=require`, else prints the reason and returns `None`; records
/// either way for the summary line. A product failure is never a reason: the scenario runs.
pub fn codex_or_skip(scenario: &str) -> Option<PathBuf> {
    crate::support::run_or_skip(scenario, locate(), HINT)
}

fn find() -> Result<PathBuf, String> {
    // The native binary of the platform package (the npm wrapper only starts it).
    let installed = [
        "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
        "@openai/codex-linux-arm64/vendor/aarch64-unknown-linux-musl/bin/codex",
        "@openai/codex-darwin-arm64/vendor/aarch64-apple-darwin/bin/codex",
        "@openai/codex-darwin-x64/vendor/x86_64-apple-darwin/bin/codex",
    ];
    let what = format!("the Codex CLI {CODEX_VERSION}");
    crate::client::find_client(CODEX_ENV, &installed, &what)
}

/// `codex --version` must start and answer in a clean environment; the project-local install
/// must be the pinned version.
fn probe(codex: &Path) -> Result<(), String> {
    let version = crate::client::version_of(codex, "the Codex CLI", |cmd, home| {
        cmd.env("CODEX_HOME", home);
    })?;
    let pinned = std::env::var_os(CODEX_ENV).is_none_or(|p| p.is_empty());
    if pinned && version != format!("codex-cli {CODEX_VERSION}") {
        return Err(format!(
            "the Codex CLI in .e2e/ is {version:?}, the scenarios are pinned to {CODEX_VERSION}"
        ));
    }
    Ok(())
}

/// The client's private `CODEX_HOME` (`<sandbox>/codex-home`): its `config.toml` names the
/// scripted model as the only provider, runs every command without asking and outside a
/// sandbox, compacts past [`COMPACT_LIMIT`] tokens, and with `trust_project` trusts the world's
/// project, without which the client skips the project's `.codex/hooks.json` (else that is
/// left to `preload install --trust-project`).
pub fn codex_home_with(world: &World, model: &CodexModel, trust_project: bool) -> PathBuf {
    let home = world.sandbox.root().join("codex-home");
    fs::create_dir_all(&home).expect("CODEX_HOME");
    let project = toml_string(&world.sandbox.project.to_string_lossy());
    let config = format!(
        "model = \"{MODEL}\"\n\
         model_provider = \"scripted\"\n\
         approval_policy = \"never\"\n\
         sandbox_mode = \"danger-full-access\"\n\
         model_auto_compact_token_limit = {COMPACT_LIMIT}\n\
         \n\
         [model_providers.scripted]\n\
         name = \"Scripted model\"\n\
         base_url = {url}\n\
         env_key = \"{KEY_ENV}\"\n\
         wire_api = \"responses\"\n",
        url = toml_string(&model.base_url()),
    );
    let config = if trust_project {
        format!("{config}\n[projects.{project}]\ntrust_level = \"trusted\"\n")
    } else {
        config
    };
    fs::write(home.join("config.toml"), config).expect("config.toml");
    home
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// How one client run starts, beyond the prompt.
#[derive(Debug, Clone, Default)]
pub enum Mode {
    /// `codex exec <prompt>`: a new conversation.
    #[default]
    New,
    /// `codex exec resume --last <prompt>`: the latest conversation goes on.
    ResumeLast,
    /// `codex exec fork <id> <prompt>`: a new conversation over a copy of conversation `id`.
    Fork(String),
}

/// One `codex exec` run of `prompt` in the world's project against the scripted model, with
/// the world's `HOME`, `PATH` and delivery log and the private `CODEX_HOME`; killed after
/// [`RUN_TIMEOUT`]. With `bypass` the hooks run without review
/// (`--dangerously-bypass-hook-trust`); without it only those trusted in `config.toml` run
/// (what `preload install --agent codex --trust` writes).
pub fn run(
    codex: &Path,
    world: &World,
    codex_home: &Path,
    prompt: &str,
    mode: Mode,
    bypass: bool,
) -> Run {
    let mut cmd = Command::new(codex);
    cmd.arg("exec");
    let forked = match mode {
        Mode::New => None,
        Mode::ResumeLast => {
            cmd.args(["resume", "--last"]);
            None
        }
        Mode::Fork(id) => {
            cmd.arg("fork");
            Some(id)
        }
    };
    if bypass {
        cmd.arg("--dangerously-bypass-hook-trust");
    }
    cmd.arg("--skip-git-repo-check");
    if let Some(id) = forked {
        cmd.arg(id);
    }
    cmd.arg(prompt);
    let own: [(&str, &OsStr); 3] = [
        ("CODEX_HOME", codex_home.as_ref()),
        ("SHELL", "/bin/bash".as_ref()),
        (KEY_ENV, "e2e-placeholder".as_ref()),
    ];
    let (out_path, err_path) = in_world(&mut cmd, world, &world.sandbox.log, &own, "codex");
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn the Codex CLI");
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

/// The lines where the client reports a hook it took for failed (`hook: <Event> Failed`): an
/// answer it rejected, such as a PreToolUse `allow` without `updatedInput`, whose context it
/// then drops.
pub fn failed_hooks(run: &Run) -> Vec<String> {
    run.stdout
        .lines()
        .chain(run.stderr.lines())
        .filter(|l| l.starts_with("hook: ") && l.trim_end().ends_with(" Failed"))
        .map(str::to_owned)
        .collect()
}

/// The conversation (thread) id the client printed (`session id: …`).
pub fn session_id(run: &Run) -> Option<String> {
    run.stdout
        .lines()
        .chain(run.stderr.lines())
        .find_map(|l| l.strip_prefix("session id: "))
        .map(|s| s.trim().to_owned())
}
