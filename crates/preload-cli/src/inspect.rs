//! `preload doctor`, `preload status` and `preload report`: look at an installation, the
//! current session and a delivery log without changing anything.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::install::{
    self, BINARIES, Options, SESSION_START_CHUNKS, SHIMS, Targets, WIRING, Wiring,
};
use preload_core::context::Context;
use preload_core::delivery;
use preload_core::env::{self, Env};
use preload_core::fields;
use preload_core::input::HookInput;
use preload_core::lock::{self, LockHealth};
use preload_core::paths;
use preload_core::report::Report;
use preload_core::runner;
use preload_core::session::{self, CORE_STANDARDS, SEEDS_DIR, STATE_FILE};
use preload_core::state::{self, State, StateError};

/// `preload doctor`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DoctorArgs {
    /// Where the binaries are installed (default: ~/.claude/engine/bin).
    #[arg(long, value_name = "DIR", value_parser = crate::path_arg)]
    pub prefix: Option<PathBuf>,
    /// A settings file to check besides the project's and the user's.
    #[arg(long, value_name = "PATH", value_parser = crate::path_arg)]
    pub settings: Option<PathBuf>,
}

/// `preload status`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StatusArgs {
    /// Print JSON, for scripts.
    #[arg(long)]
    pub json: bool,
}

/// `preload report`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ReportArgs {
    /// The delivery event log (default: `$PRELOAD_TEST_LOG`).
    #[arg(value_parser = crate::path_arg)]
    pub log: Option<PathBuf>,
}

fn process_cwd() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
}

// ---------------------------------------------------------------------------------------------
// doctor

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

/// Run `preload doctor`.
pub fn doctor_main(args: &DoctorArgs) -> ExitCode {
    let opts = Options {
        prefix: args.prefix.clone(),
        settings: args.settings.clone(),
        ..Options::default()
    };
    let findings = doctor(&opts, &Env::from_process(), &process_cwd());
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
    let _ = write!(
        out,
        "{}",
        if fails == 0 {
            format!("all good ({warns} warnings)")
        } else {
            format!("{fails} problems, {warns} warnings")
        }
    );
    runner::print_text(&out);
    if fails == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Every check, in order: binaries, settings, engine paths, rules, state files and locks.
pub fn doctor(opts: &Options, vars: &Env, cwd: &Path) -> Vec<Finding> {
    let mut findings = Vec::new();
    let Some(home) = vars.get(env::HOME).map(PathBuf::from) else {
        findings.push(Finding::fail(
            "HOME is not set",
            "run it from your login shell",
        ));
        return findings;
    };
    let prefix = opts
        .prefix
        .clone()
        .map_or_else(|| home.join(install::DEFAULT_PREFIX), |p| cwd.join(p));
    check_binaries(&prefix, &mut findings);
    let project_root = paths::find_project_root(cwd);
    let settings_files = settings_files(opts, &home, cwd, project_root.as_deref());
    check_settings(&settings_files, &home, &mut findings);
    check_engine(&home, &mut findings);
    match project_root {
        Some(root) => {
            for dir in paths::sessions_dirs(&root, vars.get(env::WORKSPACE)) {
                check_sessions(&dir, &mut findings);
            }
        }
        None => findings.push(Finding::ok(format!(
            "state: no project at {} (no .claude/ above it), nothing to check",
            cwd.display()
        ))),
    }
    findings
}

fn check_binaries(prefix: &Path, findings: &mut Vec<Finding>) {
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
            "binaries: {} present and runnable in {}",
            BINARIES.len(),
            prefix.display()
        )));
    } else {
        findings.push(Finding::fail(
            format!("binaries in {}: {}", prefix.display(), bad.join(", ")),
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

/// The settings files Claude Code merges for this project, the one we wire first.
fn settings_files(opts: &Options, home: &Path, cwd: &Path, root: Option<&Path>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let targets = Targets::resolve(
        opts,
        &Env::from_pairs([(env::HOME, home.to_string_lossy())]),
        cwd,
    );
    if let Ok(t) = targets {
        files.push(t.settings);
    }
    if let Some(root) = root {
        files.push(root.join(".claude/settings.local.json"));
        files.push(root.join(".claude/settings.json"));
    }
    files.push(home.join(".claude/settings.json"));
    let mut seen = BTreeSet::new();
    files.retain(|f| seen.insert(f.clone()));
    files
}

/// A handler found in one of the settings files.
struct Found {
    file: PathBuf,
    event: String,
    handler: Value,
}

/// The identity of a native handler for double-wiring checks: command and arguments, with a
/// chunk index reduced to its count (`--chunk 3/8` → `--chunk */8`).
fn route_key(handler: &Value) -> String {
    let command = handler.get("command").and_then(Value::as_str).unwrap_or("");
    let args: Vec<String> = handler
        .get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|a| match a.split_once('/') {
            Some((i, n)) if i.parse::<u32>().is_ok() && n.parse::<u32>().is_ok() => {
                format!("*/{n}")
            }
            _ => a.to_owned(),
        })
        .collect();
    format!("{command} {}", args.join(" "))
}

fn args_of(handler: &Value) -> Vec<&str> {
    handler
        .get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// True when a native handler is the one `row` describes (same binary and arguments, a chunk
/// argument standing for the chunked row).
fn is_row(row: &Wiring, handler: &Value) -> bool {
    if install::our_binary(handler) != Some(row.binary) {
        return false;
    }
    let args = args_of(handler);
    let plain: Vec<&str> = if row.chunked {
        let Some(at) = args.iter().position(|a| *a == "--chunk") else {
            return false;
        };
        args[..at]
            .iter()
            .chain(args.iter().skip(at + 2))
            .copied()
            .collect()
    } else {
        args
    };
    plain == row.args
}

/// Every handler of the settings files that exist; `None` when none exists.
fn collect_handlers(files: &[PathBuf], findings: &mut Vec<Finding>) -> Option<Vec<Found>> {
    let mut found = Vec::new();
    let mut read_any = false;
    for file in files {
        let Ok(text) = fs::read_to_string(file) else {
            continue;
        };
        read_any = true;
        let Ok(doc @ Value::Object(_)) = serde_json::from_str::<Value>(&text) else {
            findings.push(Finding::fail(
                format!("settings: {} is not a JSON object", file.display()),
                "Claude Code ignores broken parts of it; fix the JSON (preload install refuses to touch it)",
            ));
            continue;
        };
        for (event, _, handler) in install::all_handlers(&doc) {
            found.push(Found {
                file: file.clone(),
                event: event.to_owned(),
                handler: handler.clone(),
            });
        }
    }
    read_any.then_some(found)
}

fn check_settings(files: &[PathBuf], home: &Path, findings: &mut Vec<Finding>) {
    let Some(found) = collect_handlers(files, findings) else {
        findings.push(Finding::fail(
            "settings: no settings file wires the preload hooks",
            "run `preload install` in your project (or `make install`)",
        ));
        return;
    };
    let hooks_dir = home.join(".claude/hooks");
    let mut problems = 0;
    for row in WIRING {
        problems += check_row(row, &found, &hooks_dir, findings);
    }
    if problems == 0 {
        findings.push(Finding::ok(format!(
            "settings: every hook wired once ({})",
            files
                .iter()
                .filter(|f| f.is_file())
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
}

/// The findings for one wiring row; returns how many problems it found.
fn check_row(
    row: &Wiring,
    found: &[Found],
    hooks_dir: &Path,
    findings: &mut Vec<Finding>,
) -> usize {
    let mut problems = 0;
    let native: Vec<&Found> = found
        .iter()
        .filter(|f| f.event == row.event && is_row(row, &f.handler))
        .collect();
    let routes: BTreeSet<String> = native.iter().map(|f| route_key(&f.handler)).collect();
    let bash: Vec<(&Found, &str)> = found
        .iter()
        .filter(|f| f.event == row.event)
        .filter_map(|f| install::replaced_script(&f.handler).map(|s| (f, s)))
        .filter(|(_, s)| {
            SHIMS
                .iter()
                .any(|x| x.script == *s && x.binary == row.binary)
        })
        .collect();
    let label = if row.args.is_empty() {
        format!("{} ({})", row.binary, row.event)
    } else {
        format!("{} {} ({})", row.binary, row.args.join(" "), row.event)
    };
    if routes.len() > 1 {
        problems += 1;
        findings.push(Finding::fail(
            format!(
                "settings: {label} is wired twice: {}",
                routes.iter().cloned().collect::<Vec<_>>().join(" | ")
            ),
            "Claude Code runs both, so files are delivered twice; run `preload install` again (it replaces older wiring of ours) or remove one",
        ));
    }
    if !native.is_empty() {
        for (f, script) in &bash {
            problems += 1;
            let kind = if install::is_shim(&hooks_dir.join(script)) {
                "the shim"
            } else {
                "the bash hook"
            };
            findings.push(Finding::fail(
                format!(
                    "settings: {label} is wired natively and through {kind} {script} in {}",
                    f.file.display()
                ),
                "both run on every call (double injection); `preload install` removes the bash entry, or remove it by hand",
            ));
        }
        if row.chunked && routes.len() == 1 {
            let mut chunks: Vec<String> = native
                .iter()
                .map(|f| args_of(&f.handler).join(" "))
                .collect();
            chunks.sort();
            chunks.dedup();
            let total = routes
                .iter()
                .next()
                .and_then(|r| r.rsplit_once("*/"))
                .and_then(|(_, n)| n.parse::<usize>().ok())
                .unwrap_or(SESSION_START_CHUNKS);
            if chunks.len() != total {
                problems += 1;
                findings.push(Finding::fail(
                    format!(
                        "settings: {label} has {} of {total} --chunk registrations",
                        chunks.len()
                    ),
                    "the missing slices are never delivered; run `preload install` again",
                ));
            }
        }
    } else if bash.is_empty() {
        problems += 1;
        findings.push(Finding::fail(
            format!("settings: {label} is not wired"),
            "run `preload install` in your project",
        ));
    } else if !bash
        .iter()
        .any(|(_, s)| install::is_shim(&hooks_dir.join(s)))
    {
        problems += 1;
        findings.push(Finding::warn(
            format!(
                "settings: {label} still runs the engine's bash hook {}",
                bash[0].1
            ),
            "run `preload install` (native wiring) or `preload install --shims`",
        ));
    }
    problems
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
                "rules: {} rules in {}",
                rules.len(),
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

/// State files, seeds and lock directories under one sessions directory.
fn check_sessions(dir: &Path, findings: &mut Vec<Finding>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut states = 0;
    let mut problems = 0;
    let mut scan_dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir() && p.extension().is_none_or(|x| x != "lock"))
        .collect();
    scan_dirs.sort();
    for sub in scan_dirs {
        let is_seeds = sub.file_name().is_some_and(|n| n == SEEDS_DIR);
        let Ok(files) = fs::read_dir(&sub) else {
            continue;
        };
        let mut files: Vec<PathBuf> = files.filter_map(Result::ok).map(|e| e.path()).collect();
        files.sort();
        for path in files {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if path.extension().is_some_and(|x| x == "lock") && path.is_dir() {
                match lock::inspect(&path) {
                    LockHealth::DeadHolder(pid) => {
                        problems += 1;
                        findings.push(Finding::fail(
                            format!(
                                "lock: {} is stale (holder PID {pid} is dead)",
                                path.display()
                            ),
                            format!(
                                "the next writer reclaims it; safe to remove now: rm -r '{}'",
                                path.display()
                            ),
                        ));
                    }
                    LockHealth::Stale => {
                        problems += 1;
                        findings.push(Finding::fail(
                            format!(
                                "lock: {} is stale (no holder recorded, older than {} s)",
                                path.display(),
                                lock::STALE_AFTER.as_secs()
                            ),
                            format!(
                                "the next writer reclaims it; safe to remove now: rm -r '{}'",
                                path.display()
                            ),
                        ));
                    }
                    LockHealth::Held(_) | LockHealth::Fresh => {}
                }
                continue;
            }
            let is_state = if is_seeds {
                path.extension().is_some_and(|x| x == "json") && !name.contains(".tmp.")
            } else {
                name == STATE_FILE
            };
            if !is_state {
                continue;
            }
            states += 1;
            match state::load(&path) {
                Err(StateError::Corrupt { reason: why, .. }) => {
                    problems += 1;
                    findings.push(Finding::fail(
                        format!(
                            "state: {} is corrupt ({why}); left untouched",
                            path.display()
                        ),
                        "the hooks skip it and fail open; fix the JSON or move the file aside",
                    ));
                }
                Err(_) | Ok(_) if is_seeds && session::seed_is_stale(&path) => {
                    findings.push(Finding::warn(
                        format!("seed: {} belongs to a process that is gone", path.display()),
                        "SessionStart removes stale seeds; safe to delete",
                    ));
                }
                _ => {}
            }
        }
    }
    if problems == 0 {
        findings.push(Finding::ok(format!(
            "state: {states} state files in {} readable, no stale locks",
            dir.display()
        )));
    }
}

// ---------------------------------------------------------------------------------------------
// status

/// Run `preload status`.
pub fn status_main(args: &StatusArgs) -> ExitCode {
    let json_out = args.json;
    let input = HookInput::from_value(json!({ "cwd": process_cwd() }));
    let ctx = Context::new(
        Env::from_process(),
        "preload",
        &input,
        Duration::from_secs(1),
    );
    let status = status(&ctx);
    let failed = status.get("error").is_some();
    if json_out {
        runner::print_text(&status.to_string());
    } else {
        runner::print_text(&render_status(&status));
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn file_entry(path: &str) -> Value {
    let size = fs::metadata(path)
        .ok()
        .filter(fs::Metadata::is_file)
        .map(|m| m.len());
    json!({"path": path, "bytes": size})
}

/// The status of the owner's session or seed as a JSON value.
pub fn status(ctx: &Context) -> Value {
    let mut out = json!({
        "project": ctx.project_root,
        "ownerPid": ctx.owner_pid,
    });
    let Some(found) = session::existing_preload_state(ctx) else {
        out["state"] = Value::Null;
        return out;
    };
    out["state"] = json!(found.path);
    out["kind"] = json!(if found.is_session { "session" } else { "seed" });
    let state = match state::load(&found.path) {
        Ok(s) => s,
        Err(e) => {
            out["error"] = json!(e.to_string());
            return out;
        }
    };
    out[fields::LIFECYCLE] = json!(state.str(fields::LIFECYCLE));
    out[fields::SKILL] = json!(state.str(fields::SKILL));
    out["phase"] = json!(state.str(fields::CURRENT_PHASE));
    out["counters"] = json!({
        (fields::TOOL_CALLS_BY_TRANSCRIPT): state.get(fields::TOOL_CALLS_BY_TRANSCRIPT),
        (fields::TOOL_CALLS_SINCE_LAST_LOG): state.get(fields::TOOL_CALLS_SINCE_LAST_LOG),
    });
    let preloaded: Vec<Value> = state
        .strings(fields::PRELOADED_FILES)
        .iter()
        .map(|p| file_entry(p))
        .collect();
    let pending: Vec<Value> = state
        .strings(fields::PENDING_PRELOADS)
        .iter()
        .map(|p| file_entry(p))
        .collect();
    out["preloaded"] = json!(preloaded);
    out["pending"] = json!(pending);
    out["parts"] = state
        .get(fields::PRELOAD_PARTS)
        .cloned()
        .unwrap_or(Value::Null);
    out["stashed"] = json!(stashed(&state));
    let chars = context_chars(&state, ctx.max_file_bytes());
    out["contextChars"] = json!(chars);
    out["estimatedTokens"] = json!(chars / 4);
    out
}

fn stashed(state: &State) -> Vec<Value> {
    state
        .get(fields::STASH)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            json!({
                "ruleId": e.get("ruleId"),
                "agentId": e.get("agentId"),
                "chars": e.get("content").and_then(Value::as_str).map_or(0, delivery::chars),
            })
        })
        .collect()
}

/// Characters the preloaded files put in context (content only, as delivered).
fn context_chars(state: &State, max: u64) -> usize {
    state
        .strings(fields::PRELOADED_FILES)
        .iter()
        .map(|p| match delivery::read_for_delivery(Path::new(p), max) {
            delivery::FileBody::Text(t) => delivery::chars(delivery::trim_trailing_newlines(&t)),
            _ => 0,
        })
        .sum()
}

fn render_status(s: &Value) -> String {
    let mut out = String::new();
    let text = |v: &Value| v.as_str().map_or_else(|| "-".to_owned(), str::to_owned);
    let _ = writeln!(out, "project:   {}", text(&s["project"]));
    let _ = writeln!(out, "owner PID: {}", s["ownerPid"]);
    if s["state"].is_null() {
        let _ = write!(
            out,
            "no session or seed for this process yet (SessionStart creates the seed)"
        );
        return out;
    }
    let _ = writeln!(out, "{}:  {}", text(&s["kind"]), text(&s["state"]));
    if let Some(err) = s.get("error") {
        let _ = write!(out, "cannot read it: {}", text(err));
        return out;
    }
    let _ = writeln!(out, "lifecycle: {}", text(&s[fields::LIFECYCLE]));
    let _ = writeln!(out, "skill:     {}", text(&s[fields::SKILL]));
    let _ = writeln!(out, "phase:     {}", text(&s["phase"]));
    let _ = writeln!(
        out,
        "counters:  since last log {}, by transcript {}",
        s["counters"][fields::TOOL_CALLS_SINCE_LAST_LOG],
        s["counters"][fields::TOOL_CALLS_BY_TRANSCRIPT]
    );
    for (title, key) in [("preloaded", "preloaded"), ("pending", "pending")] {
        let list = s[key].as_array().cloned().unwrap_or_default();
        let _ = writeln!(out, "{title} ({}):", list.len());
        for f in list {
            let size = f["bytes"]
                .as_u64()
                .map_or_else(|| "missing".to_owned(), |b| format!("{b} B"));
            let _ = writeln!(out, "  {}  {size}", text(&f["path"]));
        }
    }
    if let Some(parts) = s["parts"].as_object() {
        for (path, done) in parts {
            let _ = writeln!(out, "  partly delivered: {path} ({done} parts out)");
        }
    }
    let stash = s["stashed"].as_array().cloned().unwrap_or_default();
    let _ = writeln!(out, "stashed injections ({}):", stash.len());
    for e in stash {
        let _ = writeln!(
            out,
            "  {} agent '{}' {} chars",
            text(&e["ruleId"]),
            text(&e["agentId"]),
            e["chars"]
        );
    }
    let _ = write!(
        out,
        "in context: {} chars, about {} tokens",
        s["contextChars"], s["estimatedTokens"]
    );
    out
}

// ---------------------------------------------------------------------------------------------
// report

/// Run `preload report`.
pub fn report_main(args: &ReportArgs) -> ExitCode {
    let path = args.log.clone().or_else(|| {
        Env::from_process()
            .get(env::PRELOAD_TEST_LOG)
            .map(PathBuf::from)
    });
    let Some(path) = path else {
        install::complain(
            "preload report: usage: preload report [LOG] (default $PRELOAD_TEST_LOG)",
        );
        return ExitCode::from(2);
    };
    match fs::read_to_string(&path) {
        Ok(text) => {
            runner::print_text(&Report::from_log(&text).render());
            ExitCode::SUCCESS
        }
        Err(e) => {
            install::complain(&format!(
                "preload report: cannot read {}: {e}",
                path.display()
            ));
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_registrations_reduce_to_one_route() {
        let a = json!({"command": "/b/preload-session-start", "args": ["--chunk", "0/8"]});
        let b = json!({"command": "/b/preload-session-start", "args": ["--chunk", "7/8"]});
        let c = json!({"command": "/b/preload-session-start", "args": ["--chunk", "7/16"]});
        assert_eq!(route_key(&a), route_key(&b));
        assert_ne!(route_key(&a), route_key(&c));
        assert!(is_row(&WIRING[0], &a));
        let reread = json!({"command": "/b/preload-compaction-reread", "args": ["stop"]});
        assert!(
            WIRING
                .iter()
                .any(|r| is_row(r, &reread) && r.event == "Stop")
        );
        assert!(
            !WIRING
                .iter()
                .any(|r| r.event == "PreCompact" && is_row(r, &reread))
        );
    }
}
