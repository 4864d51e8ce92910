//! `preload explain`: what one hook input would do, without changing any state.
//!
//! The input (stdin, or `--input FILE`) runs through every registration the wiring gives its
//! event, exactly as the client would run them (one after the other), but in a [`Sandbox`]
//! holding a copy of the project's state; the real files are never written. The explanation:
//! which owner and state file (session or seed) the input resolves to; for a tool call, which
//! rules of `guards.json` match and why ([`rules`]); each registration's answer and its size
//! against the budget and Claude Code's 10,000-character cap; what was delivered, stashed,
//! queued, carried over or skipped as already delivered, and from where ([`changes`]); and how
//! the state file changed.

pub mod changes;
pub mod rules;

use std::fmt::Write as _;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Value, json};

use crate::calls::{self, CallError};
use crate::doctor::sizes::CLIENT_CAP;
use crate::exit::{self, CommandError, Exit};
use crate::sandbox::{Sandbox, SandboxError};
use crate::timings::binaries_dir;
use crate::words::plural;
use preload_core::mechanisms::context::Context;
use preload_core::mechanisms::session::{self, PreloadState};
use preload_core::pipeline::rules::{self as guard_rules, Facts};
use preload_core::primitives::env::{self, Env};
use preload_core::primitives::input::{HookInput, MAX_STDIN_BYTES};
use preload_core::primitives::paths;
use preload_core::state::fields;
use preload_core::state::{self, IN_CONTEXT, Phase, QUEUED, State};

/// `preload explain`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ExplainArgs {
    /// Read the hook input from this file instead of stdin.
    #[arg(long, value_name = "FILE", value_parser = crate::path_arg)]
    pub input: Option<PathBuf>,
    /// Where the binaries are (default: ~/.claude/engine/bin when the hooks are installed
    /// there, else the directory of this preload).
    #[arg(long, value_name = "DIR", value_parser = crate::path_arg)]
    pub prefix: Option<PathBuf>,
    /// The owning Claude process (default: as the hooks find it: `CLAUDE_SUPERVISOR_PID`,
    /// `CLAUDE_PID`, the nearest ancestor that is not a shell).
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,
}

/// Why nothing was explained.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    /// The input could not be read.
    #[error("cannot read {what}: {source}")]
    Read {
        /// The file, or stdin.
        what: String,
        /// The underlying error.
        source: io::Error,
    },
    /// The input is not a hook input.
    #[error(
        "{0}; give one hook input as Claude Code sends it, e.g. {{\"hook_event_name\": \"PreToolUse\", \"tool_name\": \"Read\", \"tool_input\": {{\"file_path\": \"...\"}}, \"cwd\": \"...\"}}"
    )]
    Input(String),
    /// The sandbox could not be made.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// A hook could not be run.
    #[error("{0}; check the binaries with `preload doctor`")]
    Call(#[from] CallError),
    /// `HOME` is not set.
    #[error("HOME is not set")]
    NoHome,
}

impl CommandError for ExplainError {
    fn exit(&self) -> Exit {
        match self {
            Self::Input(_) => Exit::Usage,
            _ => Exit::Failure,
        }
    }
}

/// Run `preload explain`.
pub fn run(args: &ExplainArgs) -> ExitCode {
    let result = read_input(args.input.as_deref())
        .and_then(|text| explain(args, &Env::from_process(), &crate::process_cwd(), &text));
    exit::finish("explain", result)
}

fn read_input(file: Option<&Path>) -> Result<String, ExplainError> {
    let mut text = String::new();
    let (what, result) = match file {
        Some(path) => (
            path.display().to_string(),
            std::fs::File::open(path)
                .and_then(|f| f.take(MAX_STDIN_BYTES).read_to_string(&mut text)),
        ),
        None => (
            "stdin".to_owned(),
            io::stdin()
                .lock()
                .take(MAX_STDIN_BYTES)
                .read_to_string(&mut text),
        ),
    };
    result.map_err(|source| ExplainError::Read { what, source })?;
    Ok(text)
}

/// Where the owner PID comes from, as the hooks look for it.
fn owner_source(args: &ExplainArgs, vars: &Env) -> &'static str {
    if args.pid.is_some() {
        "--pid"
    } else if vars
        .number::<u32>(env::CLAUDE_SUPERVISOR_PID)
        .is_some_and(|p| p > 0)
    {
        "CLAUDE_SUPERVISOR_PID"
    } else if vars.number::<u32>(env::CLAUDE_PID).is_some_and(|p| p > 0) {
        "CLAUDE_PID"
    } else {
        "the nearest ancestor process that is not a shell"
    }
}

fn describe_state(
    found: Option<&PreloadState>,
    state: Option<&State>,
    real: &dyn Fn(&str) -> String,
) -> String {
    let Some(found) = found else {
        return "no session and no seed yet for this owner (a hook creates the seed when it needs one)".into();
    };
    let path = real(&found.path.to_string_lossy());
    let Some(state) = state else {
        return format!("{path} (unreadable or not JSON: the hooks fail open and leave it alone)");
    };
    let get = |k: &str| state.str(k).unwrap_or("-").to_owned();
    format!(
        "{} {path}: skill {}, phase {}, lifecycle {}; {} in context, {} queued, {} stashed",
        if found.is_session { "session" } else { "seed" },
        get(fields::SKILL),
        state.current_phase().map_or("-", Phase::as_str),
        get(fields::LIFECYCLE),
        plural(state.path_list(IN_CONTEXT).len(), "file", "files"),
        state.path_list(QUEUED).len(),
        state.stash().len(),
    )
}

/// The parsed hook input: the object and its event; `cwd` filled in when it is missing.
fn parse_input(text: &str, cwd: &Path) -> Result<(Value, String), ExplainError> {
    let mut input: Value = serde_json::from_str(text)
        .map_err(|e| ExplainError::Input(format!("the input is not JSON ({e})")))?;
    let event = input
        .get("hook_event_name")
        .and_then(Value::as_str)
        .ok_or_else(|| ExplainError::Input("the input has no hook_event_name".into()))?
        .to_owned();
    if input.get("cwd").and_then(Value::as_str).is_none() {
        input["cwd"] = json!(cwd);
    }
    Ok((input, event))
}

/// One input in its sandbox: the copy of the input, the hooks' environment and context there.
struct Trial {
    sandbox: Sandbox,
    copy: Value,
    hook_env: Vec<(String, String)>,
    ctx: Context,
}

impl Trial {
    fn new(input: &Value, vars: &Env, owner: u32) -> Result<Self, ExplainError> {
        let real_ctx = Context::new(
            vars.clone(),
            "preload",
            &HookInput::from_value(input.clone()),
            Duration::from_secs(5),
        );
        let sandbox = Sandbox::of_project("explain", &real_ctx)?;
        let hook_env = sandbox.env(vars, owner);
        let copy: Value = serde_json::from_str(&sandbox.to_sandbox(&input.to_string()))
            .map_err(|e| ExplainError::Input(e.to_string()))?;
        let sb_vars = Env::from_pairs(hook_env.iter().map(|(k, v)| (k.as_str(), v.clone())));
        let ctx = Context::new(
            sb_vars,
            "preload",
            &HookInput::from_value(copy.clone()),
            Duration::from_secs(5),
        );
        Ok(Self {
            sandbox,
            copy,
            hook_env,
            ctx,
        })
    }

    /// Runs every registration of the input; the answers' lines and the largest answer.
    fn answers(&self, bin_dir: &Path) -> Result<(String, usize), ExplainError> {
        let cwd = if self.ctx.cwd.is_dir() {
            self.ctx.cwd.clone()
        } else {
            self.sandbox.project.clone()
        };
        let stdin = self.copy.to_string();
        let registrations = calls::registrations_for(&self.copy);
        let mut out = format!(
            "answers ({} the wiring runs for this input):\n",
            plural(registrations.len(), "registration", "registrations")
        );
        let (mut largest, mut idle) = (0, 0);
        for reg in &registrations {
            let call = calls::call(
                bin_dir,
                reg.row.binary,
                &reg.args,
                &self.hook_env,
                &cwd,
                &stdin,
            )?;
            let size = preload_core::primitives::delivery::chars(&call.text());
            largest = largest.max(size);
            if size == 0 && call.decision().is_none() && call.code == Some(0) {
                idle += 1;
                continue;
            }
            let _ = writeln!(
                out,
                "  {}: {}{size} characters{}",
                reg.label(),
                call.decision()
                    .map(|d| format!("{d}, "))
                    .unwrap_or_default(),
                match call.code {
                    Some(0) => String::new(),
                    Some(code) => format!(" (exit {code})"),
                    None => " (killed: it did not finish)".into(),
                }
            );
        }
        if idle > 0 {
            let _ = writeln!(out, "  ({idle} more printed nothing)");
        }
        let budget = self.ctx.budget;
        let _ = writeln!(
            out,
            "output size: the largest answer is {largest} characters; budget {budget}, Claude Code's cap {CLIENT_CAP}{}",
            if largest > CLIENT_CAP {
                " (OVER THE CAP: the client would replace it by a file path)"
            } else if largest > budget {
                " (over the budget)"
            } else {
                ""
            }
        );
        Ok((out, largest))
    }

    /// The rules part of a tool call, on the state before and after the call.
    fn rules(&self, before: Option<&State>, after: Option<&State>, events: &[Value]) -> String {
        let Some(tool) = self.copy.get("tool_name").and_then(Value::as_str) else {
            return "rules: a PreToolUse input without tool_name meets no rule\n".into();
        };
        let input = HookInput::from_value(self.copy.clone());
        let queued: Vec<String> = events
            .iter()
            .filter(|e| e["event"] == "queue-pending")
            .filter_map(|e| e["file"].as_str().map(|f| self.sandbox.to_sandbox(f)))
            .collect();
        let mut stand_in = State::default();
        stand_in.set_lifecycle(&preload_core::state::Lifecycle::None);
        let view = rules::decision_state(
            before.unwrap_or(&stand_in),
            after.unwrap_or(&stand_in),
            &queued,
        );
        let key = match input.agent_id() {
            Some(id) => format!("sub:{id}"),
            None => input.transcript_key().unwrap_or("unknown").to_owned(),
        };
        let facts = Facts {
            state: &view,
            counter_key: Some(&key),
            tool: Some(tool),
            overflow_threshold: guard_rules::overflow_threshold(
                self.ctx.env.is_one(env::DISABLE_AUTO_COMPACT),
                self.ctx.config().get("OVERFLOW_THRESHOLD"),
            ),
        };
        let guards = &self.ctx.paths.guards;
        let (rule_set, read) = match std::fs::read_to_string(guards) {
            Err(_) => (Vec::new(), " (not found: no rule applies)"),
            Ok(text) => guard_rules::parse(&text).map_or_else(
                |_| (Vec::new(), " (not a rules array: read as no rules)"),
                |rules| (rules, ""),
            ),
        };
        format!(
            "rules: {} in {}{read}, as preload-overflow decided on this call (its count made, its discoveries queued):\n{}\n  (an engine command, a session still loading or in a quiet lifecycle passes without the rules)\n",
            rule_set.len(),
            guards.display(),
            rules::explain_rules(&rule_set, &facts, tool, input.tool_input())
        )
    }
}

/// The explanation of the hook input `text` (see the module).
pub fn explain(
    args: &ExplainArgs,
    vars: &Env,
    cwd: &Path,
    text: &str,
) -> Result<String, ExplainError> {
    let (input, event) = parse_input(text, cwd)?;
    let home = vars.get(env::HOME).ok_or(ExplainError::NoHome)?.to_owned();
    let mut vars = vars.clone();
    if let Some(pid) = args.pid {
        vars.set(env::CLAUDE_SUPERVISOR_PID, pid.to_string());
    }
    let owner = paths::owner_pid(&vars);
    let trial = Trial::new(&input, &vars, owner)?;
    let real = |s: &str| trial.sandbox.to_real(s);
    let sessions = trial.ctx.sessions_dirs();
    let files_before = changes::snapshot(&sessions);
    let found = session::existing_preload_state(&trial.ctx);
    let before = found.as_ref().and_then(|f| state::load(&f.path).ok());

    let mut out = String::new();
    let tool = input
        .get("tool_name")
        .and_then(Value::as_str)
        .map(|t| format!(" {t}"));
    let _ = writeln!(
        out,
        "input: {event}{} in {} (a sandbox copy of its state; the real files are not touched)",
        tool.unwrap_or_default(),
        trial.sandbox.real_project.display()
    );
    let _ = writeln!(
        out,
        "owner: Claude process {owner} (from {})",
        owner_source(args, &vars)
    );
    let _ = writeln!(
        out,
        "state: {}",
        describe_state(found.as_ref(), before.as_ref(), &real)
    );

    let bin_dir = binaries_dir(args.prefix.as_deref(), Path::new(&home), cwd);
    let (answers, _) = trial.answers(&bin_dir)?;
    let after_found = session::existing_preload_state(&trial.ctx).or(found);
    let after = after_found.as_ref().and_then(|f| state::load(&f.path).ok());
    let events = trial.sandbox.events();
    if event == "PreToolUse" {
        out.push_str(&trial.rules(before.as_ref(), after.as_ref(), &events));
    } else {
        out.push_str("rules: guards.json is only consulted on PreToolUse (preload-overflow)\n");
    }
    out.push_str(&answers);
    out.push_str(&real(&changes::render_events(&events)));
    let _ = writeln!(out, "state changes:");
    out.push_str(&changes::render_state_diff(
        before.as_ref(),
        after.as_ref(),
        &real,
    ));
    let after_files = changes::snapshot(&sessions);
    for line in changes::file_changes(&files_before, &after_files, &|p| real(&p.to_string_lossy()))
    {
        let _ = writeln!(out, "  {line}");
    }
    for note in &trial.sandbox.notes {
        let _ = writeln!(out, "note: {note}");
    }
    Ok(out.trim_end().to_owned())
}
