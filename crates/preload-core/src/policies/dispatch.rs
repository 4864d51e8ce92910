//! `preload-dispatch <Event> [--chunk I/N]` (every event, one process per event): runs the
//! policies the wiring gives the event, in the wiring's order, and prints one merged answer.
//!
//! The wiring table ([`crate::policies::wiring::WIRING`], handed in by the binary's `main`) says
//! which binary and arguments serve which event under which matcher; the table of hooks
//! ([`crate::policies::HOOKS`]) turns each row into its policy, and this module leaves the
//! running to
//! [`crate::pipeline::runner::run`]: each policy with its own time budget and fail-open, later ones
//! within what is left of the output budget, outputs merged as [`crate::pipeline::runner::answer`] says.
//!
//! `SessionStart` keeps its `--chunk I/N` registrations, since each answer is cut at 10,000
//! characters: a registration prints slice I of the chunked policies' text, and the last one
//! also runs the event's other policies (their matchers decide, as the client's would). A
//! row's `if` filter only saves a process; the dispatcher runs the policy on every call its
//! matchers select and the policy itself decides (each checks its own input).

use std::process::ExitCode;

use crate::mechanisms::start_text::{self, Chunk};
use crate::pipeline::runner::{self, Policy};
use crate::policies::wiring::Wiring;
use crate::primitives::hook::HookEvent;

/// The binary name without `preload-`.
pub const NAME: &str = "dispatch";

/// `--help`.
pub const HELP: &str = "preload-dispatch: one process per Claude Code event, for every event.

Usage: preload-dispatch <Event> [--chunk I/N]     (stdin: the hook's JSON)
  Event: SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, PreCompact, Stop,
         SessionEnd, SubagentStart

Runs every policy `preload install` wires for <Event>, in the wiring's order, in this one
process (preload install --dispatch wires it): each policy with its own time budget and
fail-open, their matchers applied as Claude Code applies them. Prints one JSON object: the
additionalContext of all joined in order, the strongest permission decision (deny over
allow), deny and block reasons joined. Later policies get what is left of the output budget;
what does not fit stays queued. SessionStart keeps its N registrations (--chunk I/N: slice I;
the last one also runs the event's other policies).

Env: those of the policies it runs (see their --help); HOOK_DEBUG, PRELOAD_BUDGET_MS (each
     policy's), PRELOAD_OUTPUT_BUDGET (all of them together).
Files: those of the policies it runs.";

/// The policy a wiring row runs (`chunk` for a chunked `SessionStart` row: slice I of N, or
/// the whole text within one budget when `None`); `None` for a binary or arguments the table
/// of hooks does not know.
pub fn handler_of(binary: &str, args: &[&str], chunk: Option<Chunk>) -> Option<Policy> {
    (super::hook(binary)?.policy)(args, chunk)
}

/// The policies registration `chunk` of `event` runs, in the wiring's order: a route that
/// comes back (same binary and arguments under another matcher) adds its matcher to the
/// first; rows the dispatcher does not know, or of another event, are left out.
pub fn plan(routes: &[Wiring], event: HookEvent, chunk: Option<Chunk>) -> Vec<Policy> {
    let last = chunk.is_none_or(|c| c.index + 1 == c.total);
    let mut policies: Vec<(&Wiring, Policy)> = Vec::new();
    for route in routes.iter().filter(|r| r.event == event) {
        if !route.chunked && !last {
            continue;
        }
        let everything = route
            .matcher
            .is_none_or(|m| m.trim().is_empty() || m == "*");
        if let Some((_, known)) = policies
            .iter_mut()
            .find(|(r, _)| r.binary == route.binary && r.args == route.args)
        {
            match route.matcher {
                _ if everything => known.matchers.clear(),
                Some(m) if !known.matchers.is_empty() => known.matchers.push(m),
                _ => {}
            }
            continue;
        }
        let chunk = if route.chunked { chunk } else { None };
        let Some(mut policy) = handler_of(route.binary, route.args, chunk) else {
            continue;
        };
        if let Some(m) = route.matcher.filter(|_| !everything) {
            policy.matchers.push(m);
        }
        policies.push((route, policy));
    }
    policies.into_iter().map(|(_, p)| p).collect()
}

/// Entry point of the binary: `routes` is the wiring table.
#[allow(clippy::print_stderr)]
pub fn main(routes: &[Wiring]) -> ExitCode {
    let args = crate::primitives::system::entry::args();
    if runner::answer_meta_flag("preload-dispatch", HELP, args) {
        return ExitCode::SUCCESS;
    }
    let event = args.first().and_then(|name| HookEvent::from_name(name));
    let chunk = start_text::parse_chunk(args.get(1..).unwrap_or_default());
    if let (Some(event), Ok(chunk)) = (event, &chunk) {
        runner::run(event, &plan(routes, event, *chunk))
    } else {
        // A wiring mistake: what is wrong and the usage on stderr (stdout would reach the
        // model on some events); exit 1 never blocks anything in Claude Code.
        match (args.first(), event, chunk) {
            (None, ..) => eprintln!("preload-dispatch: no event given"),
            (Some(name), None, _) => eprintln!(
                "preload-dispatch: unknown event {name:?} (one of: {})",
                HookEvent::ALL.map(HookEvent::name).join(", ")
            ),
            (_, _, Err(err)) => eprintln!("preload-dispatch: {err}"),
            _ => {}
        }
        eprintln!("{HELP}");
        ExitCode::from(1)
    }
}

#[cfg(test)]
mod tests;
