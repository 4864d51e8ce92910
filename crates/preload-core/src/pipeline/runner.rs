//! The one protocol of every hook process: bounded stdin read, the event's policies (one for a
//! hook binary, several for `preload-dispatch`) each with its context, time budget and
//! fail-open, and exactly one compact JSON object (or nothing) on stdout.
//!
//! This is the only module that writes to stdout. What a policy answers and how the answers of
//! several merge is [`answer`]; which calls select a policy is [`policy`].

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use crate::mechanisms::context::Context;
use crate::primitives::env::{self, Env};
use crate::primitives::hook::{HookEvent, HookSpec};
use crate::primitives::input::{HookInput, InputError};
use crate::primitives::lock::LockError;
use crate::primitives::system::watchdog;
use crate::state::StateError;

pub mod answer;
pub mod policy;

pub use answer::{HookOutput, fail_open, render};
pub use policy::{Handler, Policy};

use answer::{answer_if_late, merge, share, used_after};

/// How long stdin may take to arrive and close.
pub const STDIN_TIMEOUT: Duration = Duration::from_secs(2);

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

/// Log an answer whose text is over the call's output budget (nothing is cut: the packing
/// upstream splits files and carries them over; this line says when that was not enough).
fn log_oversize(ctx: &Context, output: &HookOutput) {
    let size = answer::chars_of(output);
    if size > ctx.budget {
        let note = crate::primitives::delivery::output_note(size, ctx.budget);
        ctx.log.record(
            crate::primitives::delivery::Event::OverBudget,
            "",
            ctx.hook,
            false,
            &note,
        );
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

/// The `main` of a hook binary: `--help`, `--version`, else one hook call of its one policy.
pub fn main(
    spec: &HookSpec,
    handler: impl Fn(&HookInput, &Context) -> Result<HookOutput, HookError> + Send + Sync + 'static,
) -> ExitCode {
    let args = crate::primitives::system::entry::args();
    if answer_meta_flag(spec.binary, spec.help, args) {
        return ExitCode::SUCCESS;
    }
    run(spec.event, &[Policy::only(spec.name, spec.event, handler)])
}

/// How long past its budget a call may take to print its own answer before the watchdog prints
/// the fail-open one (the time to release a lock and write one line).
pub const GRACE: Duration = Duration::from_millis(50);

/// Run `policies` one after the other on one call's stdin, each selected by its matchers,
/// with its own time budget and fail-open, the later ones within what is left of the output
/// budget; print their outputs merged ([`answer::merge`]) and return the exit code (always
/// success). A hook binary's one policy is the case of one: its answer alone, as it renders.
///
/// Everything runs on this thread. The watchdog ([`crate::primitives::system::watchdog`]) answers when stdin does
/// not close within [`STDIN_TIMEOUT`]; before each policy it is armed ([`crate::primitives::system::watchdog`]) is armed for that policy's budget (plus [`GRACE`]) with the
/// answer of the policies before it and this one failing open. A policy that outlives its
/// budget can commit nothing past its deadline (`state::commit_before`); the watchdog then
/// prints that answer and ends the process, and the policies after it do not run this time
/// (they committed nothing either, so what they would have delivered waits for the next
/// call). A failing or panicking policy fails open and the next one runs.
pub fn run(event: HookEvent, policies: &[Policy]) -> ExitCode {
    let env = Env::from_process();
    if env.get(env::HOOK_DEBUG).is_none() {
        std::panic::set_hook(Box::new(|_| {}));
    }
    let agent = env.agent();
    let nothing = answer_if_late(event, &[], event, agent);
    if let Err(err) = watchdog::arm(STDIN_TIMEOUT, &nothing) {
        // Without a watchdog there is no bound on the call: answer now.
        debug_note(&env, name_of(policies), &err.to_string());
        emit(render(event, &fail_open(event), agent));
        return ExitCode::SUCCESS;
    }
    let input = match HookInput::read_from(std::io::stdin().lock()) {
        // Another event's input (a wiring mistake): nothing to say to it.
        Ok(input) if input.event_name().is_some_and(|name| name != event.name()) => {
            debug_note(
                &env,
                name_of(policies),
                "input of another event: nothing to answer",
            );
            watchdog::disarm();
            return ExitCode::SUCCESS;
        }
        Ok(input) => input,
        Err(err) => {
            let why = match err {
                InputError::Empty => "empty stdin".to_owned(),
                err => err.to_string(),
            };
            debug_note(&env, name_of(policies), &why);
            watchdog::disarm();
            emit(render(event, &fail_open(event), agent));
            return ExitCode::SUCCESS;
        }
    };
    let mut outputs: Vec<HookOutput> = Vec::with_capacity(policies.len());
    let mut used = 0;
    for policy in policies {
        let output = if policy.selected(event, &input) {
            let budget = budget_for(&env, policy.event);
            let mut ctx = Context::new(env.clone(), policy.name, &input, budget);
            ctx.budget = share(ctx.budget, used);
            let late = answer_if_late(event, &outputs, policy.event, agent);
            let _ = watchdog::arm(budget + GRACE, &late);
            crate::state::commit_before(Some(ctx.deadline));
            let called = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                (policy.handler)(&input, &ctx)
            }));
            match called {
                Ok(Ok(output)) => {
                    log_oversize(&ctx, &output);
                    output
                }
                Ok(Err(err)) => {
                    debug_note(&env, policy.name, &err.to_string());
                    fail_open(policy.event)
                }
                Err(_) => {
                    debug_note(&env, policy.name, "handler panicked");
                    fail_open(policy.event)
                }
            }
        } else {
            HookOutput::Silent
        };
        used = used_after(used, &output);
        outputs.push(output);
    }
    // From here on this process answers; a signal already sent is handled before this returns.
    watchdog::disarm();
    crate::state::commit_before(None);
    emit(merge(event, &outputs).render(event, agent));
    ExitCode::SUCCESS
}

/// The name a failure before any policy runs is reported under (`HOOK_DEBUG`): the one
/// policy's, or the dispatcher's.
fn name_of(policies: &[Policy]) -> &'static str {
    match policies {
        [one] => one.name,
        _ => "dispatch",
    }
}

#[cfg(test)]
mod tests;
