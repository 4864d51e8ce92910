//! `preload doctor`: check the installation, the wiring, the engine and the state files.
//!
//! Nothing is changed; each problem comes with what to do about it. The checks run in order:
//! the binaries, the wiring (`wiring`, with the enabled `plugins`), the engine and its rules,
//! the context packs (`packs`), the largest files a session would preload (`sizes`), then the
//! state files and locks of the project (`sessions`) and `preload audit` of its latest
//! conversation. With `--canary`, the binaries also run
//! end to end in a throwaway sandbox (`canary`).

pub mod canary;
mod codex;
mod packs;
pub mod plugins;
mod sessions;
pub mod sizes;
mod wiring;

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::exit::Exit;
use crate::install::wiring::{BINARIES, DEFAULT_PREFIX};
use crate::words::plural;
use preload_core::mechanisms::session::CORE_STANDARDS;
use preload_core::pipeline::runner;
use preload_core::primitives::env::{self, Env};
use preload_core::primitives::paths;

/// `preload doctor`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DoctorArgs {
    /// Where the binaries are installed (default: ~/.claude/engine/bin).
    #[arg(long, value_name = "DIR", value_parser = crate::path_arg)]
    pub prefix: Option<PathBuf>,
    /// A settings file to check besides the project's and the user's.
    #[arg(long, value_name = "PATH", value_parser = crate::path_arg)]
    pub settings: Option<PathBuf>,
    /// Also run the binaries end to end in a throwaway sandbox: a SessionStart and a
    /// PreToolUse round trip must each deliver a known file exactly once.
    #[arg(long)]
    pub canary: bool,
    /// The client whose wiring must be there (Codex: its hooks.json instead of Claude Code's
    /// settings; a Codex wiring found is checked either way).
    #[arg(long, value_enum, default_value_t)]
    pub agent: crate::install::AgentArg,
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Fine.
    Ok,
    /// Worth knowing; not an error.
    Warn,
    /// Something is wrong (doctor exits 1).
    Fail,
}

/// One thing the doctor found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// How bad.
    pub level: Level,
    /// What was found.
    pub what: String,
    /// What to do about it.
    pub hint: Option<String>,
}

impl Finding {
    fn ok(what: impl Into<String>) -> Self {
        Self {
            level: Level::Ok,
            what: what.into(),
            hint: None,
        }
    }

    fn warn(what: impl Into<String>, hint: impl Into<String>) -> Self {
        Self {
            level: Level::Warn,
            what: what.into(),
            hint: Some(hint.into()),
        }
    }

    fn fail(what: impl Into<String>, hint: impl Into<String>) -> Self {
        Self {
            level: Level::Fail,
            what: what.into(),
            hint: Some(hint.into()),
        }
    }
}

/// The last line: `all good (1 warning)`, `1 problem, 0 warnings`.
fn summary(fails: usize, warns: usize) -> String {
    if fails == 0 {
        format!("all good ({})", plural(warns, "warning", "warnings"))
    } else {
        format!(
            "{}, {}",
            plural(fails, "problem", "problems"),
            plural(warns, "warning", "warnings")
        )
    }
}

/// Run `preload doctor`.
pub fn run(args: &DoctorArgs) -> ExitCode {
    let vars = Env::from_process();
    let cwd = crate::process_cwd();
    let findings = doctor(args, &vars, &cwd);
    report_pack_errors(&vars, &cwd);
    let mut out = String::new();
    for f in &findings {
        let tag = match f.level {
            Level::Ok => "ok  ",
            Level::Warn => "warn",
            Level::Fail => "FAIL",
        };
        let _ = writeln!(out, "{tag}  {}", f.what);
        if let Some(hint) = &f.hint {
            let _ = writeln!(out, "      hint: {hint}");
        }
    }
    let fails = findings.iter().filter(|f| f.level == Level::Fail).count();
    let warns = findings.iter().filter(|f| f.level == Level::Warn).count();
    let _ = write!(out, "{}", summary(fails, warns));
    runner::print_text(&out);
    if fails == 0 {
        Exit::Success.into()
    } else {
        Exit::Failure.into()
    }
}

/// A broken context-packs file on stderr too, with its file, line and column.
#[allow(clippy::print_stderr)]
fn report_pack_errors(vars: &Env, cwd: &Path) {
    let Some(home) = vars.get(env::HOME).map(PathBuf::from) else {
        return;
    };
    let root = paths::find_project_root(cwd);
    for error in packs::errors(&home, root.as_deref()) {
        eprintln!("preload doctor: {error}");
    }
}

/// Every check, in order: binaries, settings, engine paths, rules, context packs, state files
/// and locks.
pub fn doctor(args: &DoctorArgs, vars: &Env, cwd: &Path) -> Vec<Finding> {
    let mut findings = Vec::new();
    let Some(home) = vars.get(env::HOME).map(PathBuf::from) else {
        findings.push(Finding::fail(
            "HOME is not set",
            "run it from your login shell",
        ));
        return findings;
    };
    let project_root = paths::find_project_root(cwd);
    let settings_files = wiring::settings_files(args, &home, cwd, project_root.as_deref());
    let plugins = plugins::plugins_wiring_ours(&home, &settings_files);
    let default_prefix = home.join(DEFAULT_PREFIX);
    let bin_dir = match (&args.prefix, plugins.first()) {
        (Some(p), _) => Ok(BinDir::installed(cwd.join(p))),
        // Only a plugin wires the hooks: its own binary for this machine is the one that runs.
        (None, Some(plugin)) if !default_prefix.join(BINARIES[0]).is_file() => {
            plugins::plugin_bin_dir(plugin)
        }
        (None, _) => Ok(BinDir::installed(default_prefix)),
    };
    match bin_dir {
        Ok(bin_dir) => {
            check_binaries(&bin_dir, &mut findings);
            if args.canary {
                canary::check_canary(&bin_dir.path, &mut findings);
            }
        }
        Err(finding) => findings.push(finding),
    }
    let codex = args.agent == crate::install::AgentArg::Codex;
    if !codex {
        wiring::check_settings(&settings_files, &plugins, &home, &mut findings);
    }
    codex::check_codex(vars, cwd, codex, &mut findings);
    check_engine(&home, &mut findings);
    packs::check_packs(&home, project_root.as_deref(), &mut findings);
    sizes::check_sizes(vars, cwd, &mut findings);
    match project_root {
        Some(root) => {
            for dir in paths::sessions_dirs(&root, vars.get(env::WORKSPACE)) {
                sessions::check_sessions(&dir, &mut findings);
            }
            check_latest_conversation(vars, cwd, &mut findings);
        }
        None => findings.push(Finding::ok(format!(
            "state: no project at {} (no .claude/ above it), nothing to check",
            cwd.display()
        ))),
    }
    findings
}

/// `preload audit` of the project's latest conversation: what its transcript shows the model
/// received, against the session's record.
fn check_latest_conversation(vars: &Env, cwd: &Path, findings: &mut Vec<Finding>) {
    let args = crate::audit::AuditArgs::default();
    match crate::audit::audit(&args, vars, cwd) {
        Err(crate::audit::AuditError::NoConversation(_)) => findings.push(Finding::ok(
            "conversations: none of this project yet, nothing to audit",
        )),
        Err(err) => findings.push(Finding::warn(
            format!("latest conversation: {err}"),
            "`preload audit --transcript PATH` reads another one",
        )),
        Ok(found) => {
            let id = found.receipt.conversation.as_deref().unwrap_or("(unknown)");
            if found.is_clean() {
                findings.push(Finding::ok(format!(
                    "latest conversation {id}: {} preloaded files on its active branch, each \
                     once{}",
                    found.receipt.files.len(),
                    if found.record.is_some() {
                        ", as its record says"
                    } else {
                        " (no record of it here)"
                    }
                )));
                return;
            }
            let mut what = Vec::new();
            if !found.duplicates.is_empty() {
                what.push(format!("twice: {}", found.duplicates.join(", ")));
            }
            if !found.missing.is_empty() {
                what.push(format!(
                    "recorded as sent but never received: {}",
                    found.missing.join(", ")
                ));
            }
            findings.push(Finding::warn(
                format!("latest conversation {id}: {}", what.join("; ")),
                format!(
                    "`preload audit --transcript {}` lists every file; files twice often \
                     mean hooks wired twice (see the wiring above)",
                    found.transcript.display()
                ),
            ));
        }
    }
}

/// A directory holding every binary under its name, and how doctor names it.
pub struct BinDir {
    /// The directory.
    pub path: PathBuf,
    /// What the findings call it.
    pub shown: String,
    /// The throwaway directory `path` is in, when doctor made it (removed when dropped).
    pub links: Option<crate::sandbox::Sandbox>,
}

impl BinDir {
    /// An install directory.
    pub fn installed(path: PathBuf) -> Self {
        Self {
            shown: path.display().to_string(),
            path,
            links: None,
        }
    }
}

fn check_binaries(bin_dir: &BinDir, findings: &mut Vec<Finding>) {
    let (prefix, shown) = (&bin_dir.path, &bin_dir.shown);
    let mut bad = Vec::new();
    for name in BINARIES {
        let path = prefix.join(name);
        if !path.is_file() {
            bad.push(format!("{name} missing"));
        } else if !runs(&path) {
            bad.push(format!("{name} does not run"));
        }
    }
    if bad.is_empty() {
        findings.push(Finding::ok(format!(
            "binaries: {} present and runnable in {shown}",
            BINARIES.len(),
        )));
    } else {
        findings.push(Finding::fail(
            format!("binaries in {shown}: {}", bad.join(", ")),
            "run `make install` (or `preload install --prefix DIR`) from a fresh build",
        ));
    }
}

/// True when `path --version` answers within 2 s with exit 0.
fn runs(path: &Path) -> bool {
    let Ok(mut child) = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.success(),
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
}

fn check_engine(home: &Path, findings: &mut Vec<Finding>) {
    let engine_paths = paths::EnginePaths::new(home);
    let mut missing = Vec::new();
    for (what, path) in [
        ("engine", &engine_paths.engine),
        ("skills", &engine_paths.skills),
        ("directives", &engine_paths.directives),
    ] {
        if !path.is_dir() {
            missing.push(format!("{what} ({})", path.display()));
        }
    }
    if missing.is_empty() {
        let absent: Vec<&str> = CORE_STANDARDS
            .iter()
            .copied()
            .filter(|rel| !engine_paths.directives.join(rel).is_file())
            .collect();
        if absent.is_empty() {
            findings.push(Finding::ok(format!(
                "engine: {} with skills, directives and the six core standards",
                engine_paths.engine.display()
            )));
        } else {
            findings.push(Finding::warn(
                format!("engine: core standards missing: {}", absent.join(", ")),
                "SessionStart skips what is missing; update the engine checkout",
            ));
        }
    } else {
        findings.push(Finding::fail(
            format!("engine: missing {}", missing.join(", ")),
            "install the workflow engine into ~/.claude/engine; ~/.claude/.directives must be a symlink to engine/.directives",
        ));
    }
    match fs::read_to_string(&engine_paths.guards) {
        Err(_) => findings.push(Finding::warn(
            format!("rules: {} not found", engine_paths.guards.display()),
            "without rules the guard engine only preloads and allows every call",
        )),
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Array(rules)) => findings.push(Finding::ok(format!(
                "rules: {} in {}",
                plural(rules.len(), "rule", "rules"),
                engine_paths.guards.display()
            ))),
            Ok(_) => findings.push(Finding::fail(
                format!("rules: {} is JSON but not an array", engine_paths.guards.display()),
                "guards.json holds an array of rule objects; the guard engine ignores it and allows",
            )),
            Err(e) => findings.push(Finding::fail(
                format!("rules: {} is not valid JSON ({e})", engine_paths.guards.display()),
                "the guard engine ignores it and allows every call until it is fixed",
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_counts_in_words() {
        assert_eq!(summary(1, 0), "1 problem, 0 warnings");
        assert_eq!(summary(2, 1), "2 problems, 1 warning");
        assert_eq!(summary(0, 1), "all good (1 warning)");
    }
}
