//! The one entry point of every hook binary: bounded stdin read, context, handler, exactly one
//! compact JSON object (or nothing) on stdout, a time budget, and fail-open on every error.
//!
//! This is the only module that writes to stdout.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Value, json};

use crate::context::Context;
use crate::env::{self, Env};
use crate::input::{HookInput, InputError};
use crate::lock::LockError;
use crate::state::StateError;
use crate::watchdog;

/// How long stdin may take to arrive and close.
pub const STDIN_TIMEOUT: Duration = Duration::from_secs(2);

/// The Claude Code events the hooks serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// SessionStart.
    SessionStart,
    /// UserPromptSubmit.
    UserPromptSubmit,
    /// PreToolUse.
    PreToolUse,
    /// PostToolUse.
    PostToolUse,
    /// PreCompact.
    PreCompact,
    /// Stop.
    Stop,
    /// SessionEnd.
    SessionEnd,
    /// SubagentStart.
    SubagentStart,
}

impl HookEvent {
    /// Every event the hooks serve.
    pub const ALL: [Self; 8] = [
        Self::SessionStart,
        Self::UserPromptSubmit,
        Self::PreToolUse,
        Self::PostToolUse,
        Self::PreCompact,
        Self::Stop,
        Self::SessionEnd,
        Self::SubagentStart,
    ];

    /// The event Claude Code calls `name`, when the hooks serve it.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The name Claude Code uses (`hookEventName`).
    pub fn name(self) -> &'static str {
        match self {
            Self::SessionStart => "SessionStart",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::PreCompact => "PreCompact",
            Self::Stop => "Stop",
            Self::SessionEnd => "SessionEnd",
            Self::SubagentStart => "SubagentStart",
        }
    }

    /// The default time budget of one call.
    pub fn default_budget(self) -> Duration {
        match self {
            Self::PreToolUse => Duration::from_millis(300),
            Self::SessionStart => Duration::from_secs(5),
            _ => Duration::from_secs(1),
        }
    }
}

/// What a handler answers.
#[derive(Debug, Clone, PartialEq)]
pub enum HookOutput {
    /// Print nothing.
    Silent,
    /// `hookSpecificOutput.additionalContext` (empty text prints nothing, except PreToolUse,
    /// which always prints its allow decision).
    Context(String),
    /// PreToolUse allow, with optional context.
    Allow(Option<String>),
    /// PreToolUse deny with a reason.
    Deny(String),
    /// Top-level `decision: "block"` with a reason (Stop, PreCompact, PostToolUse).
    Block(String),
}

/// A handler's internal failure; the runner fails open on every one.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// A state file could not be read, parsed or written.
    #[error(transparent)]
    State(#[from] StateError),
    /// A lock could not be taken.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// Another file operation failed.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: std::path::PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The call ran out of its time budget.
    #[error("time budget exhausted")]
    OutOfTime,
    /// Anything else, described.
    #[error("{0}")]
    Other(String),
}

/// Render `output` as the one JSON line for `event`, or nothing.
pub fn render(event: HookEvent, output: &HookOutput) -> Option<String> {
    let name = event.name();
    let value: Value = match output {
        HookOutput::Silent => return None,
        HookOutput::Context(text) if text.is_empty() => {
            if event == HookEvent::PreToolUse {
                return render(event, &HookOutput::Allow(None));
            }
            return None;
        }
        HookOutput::Context(text) if event == HookEvent::PreToolUse => {
            return render(event, &HookOutput::Allow(Some(text.clone())));
        }
        HookOutput::Context(text) => {
            json!({"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}})
        }
        HookOutput::Allow(context) => {
            let mut specific = json!({"hookEventName": name, "permissionDecision": "allow"});
            if let Some(text) = context.as_ref().filter(|t| !t.is_empty()) {
                specific["additionalContext"] = Value::String(text.clone());
            }
            json!({ "hookSpecificOutput": specific })
        }
        HookOutput::Deny(reason) => json!({"hookSpecificOutput": {
            "hookEventName": name,
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }}),
        HookOutput::Block(reason) => json!({"decision": "block", "reason": reason}),
    };
    Some(value.to_string())
}

impl HookOutput {
    /// The text of the answer that counts against the output budget: the context or the
    /// reason (empty for [`HookOutput::Silent`]).
    pub fn text(&self) -> &str {
        match self {
            Self::Silent | Self::Allow(None) => "",
            Self::Context(text)
            | Self::Allow(Some(text))
            | Self::Deny(text)
            | Self::Block(text) => text,
        }
    }
}

/// Log an answer whose text is over the call's output budget (nothing is cut: the packing
/// upstream splits files and carries them over; this line says when that was not enough).
fn log_oversize(ctx: &Context, output: &HookOutput) {
    let size = crate::delivery::chars(output.text());
    if size > ctx.budget {
        let note = crate::delivery::output_note(size, ctx.budget);
        ctx.log.record(
            crate::delivery::Event::OverBudget,
            "",
            ctx.hook,
            false,
            &note,
        );
    }
}

/// What a failed call prints for `event`: the allow decision for PreToolUse, else nothing.
pub fn fail_open(event: HookEvent) -> HookOutput {
    if event == HookEvent::PreToolUse {
        HookOutput::Allow(None)
    } else {
        HookOutput::Silent
    }
}

/// Write `line` (one JSON object) and a newline to stdout, or nothing.
pub(crate) fn emit(line: Option<String>) {
    if let Some(mut line) = line {
        line.push('\n');
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        // A closed pipe (Claude Code gave up) is not an error of ours.
        let _ = out.write_all(line.as_bytes());
        let _ = out.flush();
    }
}

/// With `HOOK_DEBUG` set, say on stderr why a call failed open.
#[allow(clippy::print_stderr)]
pub(crate) fn debug_note(env: &Env, hook: &str, message: &str) {
    if env.get(env::HOOK_DEBUG).is_some() {
        eprintln!("preload-{hook}: {message}");
    }
}

/// The time budget for `event`, honouring `PRELOAD_BUDGET_MS`.
pub fn budget_for(env: &Env, event: HookEvent) -> Duration {
    env.number::<u64>(env::PRELOAD_BUDGET_MS)
        .map_or_else(|| event.default_budget(), Duration::from_millis)
}

/// What a hook binary is: its name, event and `--help` text.
#[derive(Debug, Clone, Copy)]
pub struct HookSpec {
    /// Binary name without `preload-` (the delivery log's `hook`).
    pub name: &'static str,
    /// The event it serves.
    pub event: HookEvent,
    /// One screen: the event, the env vars it reads, the files it touches.
    pub help: &'static str,
}

/// Print text to stdout as the answer to `--help` or `--version` (not a hook call).
pub fn print_text(text: &str) {
    emit(Some(text.trim_end().to_owned()));
}

/// The `--version` line of a binary.
pub fn version_line(binary: &str) -> String {
    format!("{binary} {}", env!("CARGO_PKG_VERSION"))
}

/// If the first argument is `--help`/`-h` or `--version`/`-V`, answer it and return true.
pub fn answer_meta_flag(binary: &str, help: &str, args: &[String]) -> bool {
    match args.first().map(String::as_str) {
        Some("--help" | "-h") => {
            print_text(help);
            true
        }
        Some("--version" | "-V") => {
            print_text(&version_line(binary));
            true
        }
        _ => false,
    }
}

/// The `main` of a hook binary: `--help`, `--version`, else one hook call.
pub fn main<H>(spec: &HookSpec, handler: H) -> ExitCode
where
    H: FnOnce(&HookInput, &Context) -> Result<HookOutput, HookError>,
{
    let args = crate::start::args();
    if answer_meta_flag(&format!("preload-{}", spec.name), spec.help, args) {
        return ExitCode::SUCCESS;
    }
    run(spec.name, spec.event, handler)
}

/// How long past its budget a call may take to print its own answer before the watchdog prints
/// the fail-open one (the time to release a lock and write one line).
pub const GRACE: Duration = Duration::from_millis(50);

/// Run one hook call in this process and return its exit code (always success).
///
/// Everything runs on this thread. A watchdog timer ([`crate::watchdog`]) prints the fail-open
/// answer and ends the process when stdin does not close within [`STDIN_TIMEOUT`], or when the
/// handler outlives its budget (plus [`GRACE`]); past its deadline the handler can commit
/// nothing (`state::commit_before`). A panicking handler fails open too.
pub fn run<H>(hook: &'static str, event: HookEvent, handler: H) -> ExitCode
where
    H: FnOnce(&HookInput, &Context) -> Result<HookOutput, HookError>,
{
    let env = Env::from_process();
    if env.get(env::HOOK_DEBUG).is_none() {
        std::panic::set_hook(Box::new(|_| {}));
    }
    let budget = budget_for(&env, event);
    let fallback = render(event, &fail_open(event))
        .map(|line| format!("{line}\n"))
        .unwrap_or_default();
    if let Err(err) = watchdog::arm(STDIN_TIMEOUT, fallback.as_bytes()) {
        // Without a watchdog there is no bound on the call: answer now.
        debug_note(&env, hook, &err.to_string());
        emit(render(event, &fail_open(event)));
        return ExitCode::SUCCESS;
    }
    let output = match HookInput::read_from(std::io::stdin().lock()) {
        // Another event's input (a wiring mistake): this hook has nothing to say to it.
        Ok(input) if input.event_name().is_some_and(|name| name != event.name()) => {
            debug_note(&env, hook, "input of another event: nothing to answer");
            HookOutput::Silent
        }
        Ok(input) => {
            let ctx = Context::new(env.clone(), hook, &input, budget);
            let _ = watchdog::arm(budget + GRACE, fallback.as_bytes());
            // Past the deadline the watchdog answers without us: commit nothing then.
            crate::state::commit_before(Some(ctx.deadline));
            let called =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(&input, &ctx)));
            match called {
                Ok(Ok(output)) => {
                    log_oversize(&ctx, &output);
                    output
                }
                Ok(Err(err)) => {
                    debug_note(&env, hook, &err.to_string());
                    fail_open(event)
                }
                Err(_) => {
                    debug_note(&env, hook, "handler panicked");
                    fail_open(event)
                }
            }
        }
        Err(InputError::Empty) => {
            debug_note(&env, hook, "empty stdin");
            fail_open(event)
        }
        Err(err) => {
            debug_note(&env, hook, &err.to_string());
            fail_open(event)
        }
    };
    // From here on this process answers; a signal already sent is handled before this returns.
    watchdog::disarm();
    emit(render(event, &output));
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests;
