//! `preload timings`: every installed hook timed on harmless inputs in a sandbox copy of the
//! project's state, against a bare process start and against its time budget.
//!
//! Each registration of the wiring (SessionStart's first chunk standing for its parallel
//! registrations) runs `--runs` times in a [`Sandbox`] built from the current project, so the
//! real state files are never read-modify-written. The floor is `preload noop` from the same
//! directory: the same kind of process, which reads its stdin and prints `{}`, run right before
//! each run of a hook (interleaved, so both see the same load, as `make bench` pairs them).
//! Each line names the registration (its matcher and its `if`, as `preload doctor` does) and
//! gives the median and the 95th percentile in milliseconds, the median's ratio to the floor's
//! median (over all its runs, spread over the whole measurement), and the event's budget (`PRELOAD_BUDGET_MS`, else 300 ms PreToolUse, 5 s SessionStart, 1 s
//! others); a hook whose 95th percentile is over it is flagged. The figures are this machine's,
//! now: a loaded machine gives larger ones.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Value, json};

use crate::calls::{self, CallError};
use crate::exit::{self, CommandError, Exit};
use crate::install::wiring::{BINARIES, DEFAULT_PREFIX, WIRING, Wiring};
use crate::sandbox::{Sandbox, SandboxError};
use crate::words::plural;
use preload_core::mechanisms::context::Context;
use preload_core::pipeline::runner;
use preload_core::primitives::env::{self, Env};
use preload_core::primitives::hook::HookEvent;
use preload_core::primitives::input::HookInput;
use preload_core::primitives::paths;

/// How many times each hook runs by default.
pub const DEFAULT_RUNS: u16 = 20;

/// `preload timings`.
#[derive(Debug, Clone, clap::Args)]
pub struct TimingsArgs {
    /// Where the binaries are (default: ~/.claude/engine/bin when the hooks are installed
    /// there, else the directory of this preload).
    #[arg(long, value_name = "DIR", value_parser = crate::path_arg)]
    pub prefix: Option<PathBuf>,
    /// How many times each hook runs.
    #[arg(long, default_value_t = DEFAULT_RUNS, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub runs: u16,
}

/// Why no timings were taken.
#[derive(Debug, thiserror::Error)]
pub enum TimingsError {
    /// The sandbox could not be made.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// A binary could not be run.
    #[error("{0}; check the binaries with `preload doctor`")]
    Call(#[from] CallError),
    /// `HOME` is not set.
    #[error("HOME is not set")]
    NoHome,
}

impl CommandError for TimingsError {
    fn exit(&self) -> Exit {
        Exit::Failure
    }
}

/// Run `preload timings`.
pub fn run(args: &TimingsArgs) -> ExitCode {
    exit::finish(
        "timings",
        timings(args, &Env::from_process(), &crate::process_cwd()),
    )
}

/// The directory of the binaries: `prefix`, else the install directory when it holds them
/// all, else the directory of the running `preload`.
pub fn binaries_dir(prefix: Option<&Path>, home: &Path, cwd: &Path) -> PathBuf {
    if let Some(p) = prefix {
        return cwd.join(p);
    }
    let installed = home.join(DEFAULT_PREFIX);
    if BINARIES.iter().all(|b| installed.join(b).is_file()) {
        return installed;
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
        .unwrap_or(installed)
}

/// A harmless input for `row`, the `n`-th run: no skill starts, no phase changes, a tool call
/// of `true` (or, behind an `if` filter, the filtered command's `--help`); SessionStart gets a new conversation and SubagentStart a new sub-agent each run,
/// so they build their text each time.
pub fn harmless_input(row: &Wiring, cwd: &Path, transcript: &Path, n: usize) -> Value {
    let mut input = json!({
        "hook_event_name": row.event.name(),
        "session_id": "preload-timings",
        "cwd": cwd,
        "transcript_path": transcript,
    });
    let tool = match row.matcher {
        Some("Skill") => "Skill",
        _ => "Bash",
    };
    // A row behind an `if` filter runs only for its command: that command's help.
    let command = row.filter.and_then(calls::filter_parts).map_or_else(
        || "true".to_owned(),
        |(_, prefix)| format!("{prefix} --help"),
    );
    let extra = match row.event {
        HookEvent::SessionStart => json!({
            "source": if row.matcher == Some("compact") { "compact" } else { "startup" },
            "session_id": format!("preload-timings-{n}"),
        }),
        HookEvent::UserPromptSubmit => json!({"prompt": "preload timings: a harmless prompt"}),
        HookEvent::PreToolUse => json!({"tool_name": tool, "tool_input": {"command": command}}),
        HookEvent::PostToolUse => json!({
            "tool_name": tool,
            "tool_input": if tool == "Skill" { json!({"skill": "preload-timings"}) } else { json!({"command": command}) },
            "tool_response": {"stdout": "", "stderr": "", "interrupted": false},
        }),
        HookEvent::PreCompact => json!({"trigger": "manual", "custom_instructions": ""}),
        // The process-end path, the longer one; sessions stay, and it is the sandbox's seed.
        HookEvent::SessionEnd => json!({"reason": "other"}),
        // A new sub-agent each run, so it builds its text each time.
        HookEvent::SubagentStart => {
            json!({"agent_id": format!("preload-timings-{n}"), "agent_type": "general-purpose"})
        }
        HookEvent::Stop => json!({"stop_hook_active": false}),
    };
    if let (Some(input), Value::Object(extra)) = (input.as_object_mut(), extra) {
        input.extend(extra);
    }
    input
}

/// The median and the 95th percentile (nearest rank) of `samples`.
pub fn median_and_p95(samples: &[Duration]) -> (Duration, Duration) {
    let mut sorted = samples.to_vec();
    sorted.sort();
    if sorted.is_empty() {
        return (Duration::ZERO, Duration::ZERO);
    }
    let median = sorted[(sorted.len() - 1) / 2];
    let rank = (sorted.len() * 95).div_ceil(100).max(1);
    (median, sorted[rank - 1])
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

/// One timed registration.
struct Timed {
    label: String,
    event: &'static str,
    samples: Vec<Duration>,
    /// The floor's runs, one right before each of `samples`.
    floor: Vec<Duration>,
    failed: usize,
    budget: Duration,
}

/// How a line names a registration: the binary and its arguments, and what tells it from the
/// other registrations of that binary (its matcher and its `if`), as `preload doctor` does.
fn label_of(row: &Wiring, args: &[String]) -> String {
    let mut label = std::iter::once(row.binary.to_owned())
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    let tells: Vec<String> = row
        .matcher
        .map(|m| format!("matcher {m}"))
        .into_iter()
        .chain(row.filter.map(|f| format!("if {f}")))
        .collect();
    if !tells.is_empty() {
        let _ = write!(label, " ({})", tells.join(", "));
    }
    label
}

fn timings(args: &TimingsArgs, vars: &Env, cwd: &Path) -> Result<String, TimingsError> {
    let home = vars.get(env::HOME).ok_or(TimingsError::NoHome)?;
    let bin_dir = binaries_dir(args.prefix.as_deref(), Path::new(home), cwd);
    let input = HookInput::from_value(json!({ "cwd": cwd }));
    let ctx = Context::new(vars.clone(), "preload", &input, Duration::from_secs(5));
    let sandbox = Sandbox::of_project("timings", &ctx)?;
    let hook_env = sandbox.env(vars, paths::owner_pid(vars));
    let budgets = Env::from_pairs(hook_env.iter().map(|(k, v)| (k.as_str(), v.clone())));
    let hook_cwd = sandbox.to_sandbox(&ctx.cwd.to_string_lossy());
    let hook_cwd = Path::new(&hook_cwd);
    let transcript = sandbox.root().join("preload-timings.jsonl");

    let mut rows = Vec::new();
    for row in WIRING {
        let args_of = row.registrations().swap_remove(0);
        let mut timed = Timed {
            label: label_of(row, &args_of),
            event: row.event.name(),
            samples: Vec::new(),
            floor: Vec::new(),
            failed: 0,
            budget: runner::budget_for(&budgets, row.event),
        };
        for n in 0..args.runs {
            let stdin = harmless_input(row, hook_cwd, &transcript, usize::from(n)).to_string();
            let noop = ["noop".to_owned()];
            let floor = calls::call(&bin_dir, "preload", &noop, &hook_env, hook_cwd, &stdin)?;
            timed.floor.push(floor.elapsed);
            let call = calls::call(&bin_dir, row.binary, &args_of, &hook_env, hook_cwd, &stdin)?;
            if call.code != Some(0) {
                timed.failed += 1;
            }
            timed.samples.push(call.elapsed);
        }
        rows.push(timed);
    }
    Ok(render(usize::from(args.runs), &bin_dir, &sandbox, &rows))
}

fn render(runs: usize, bin_dir: &Path, sandbox: &Sandbox, rows: &[Timed]) -> String {
    let floor: Vec<Duration> = rows.iter().flat_map(|r| r.floor.iter().copied()).collect();
    let width = rows
        .iter()
        .map(|r| r.label.len())
        .chain([4])
        .max()
        .unwrap_or(4);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "timings: {} of each hook, binaries in {}, in a sandbox copy of the state of {} (the real files are not touched)",
        plural(runs, "run", "runs"),
        bin_dir.display(),
        sandbox.real_project.display()
    );
    let (floor_median, floor_p95) = median_and_p95(&floor);
    let _ = writeln!(
        out,
        "floor: `preload noop` (a bare process start: it reads stdin and prints {{}}), run right before each hook run: median {} ms, p95 {} ms",
        ms(floor_median),
        ms(floor_p95)
    );
    let _ = writeln!(
        out,
        "x floor: a hook's median over the floor's (1.0: no slower than starting a process)"
    );
    let _ = writeln!(
        out,
        "{:<width$} {:<17} {:>9} {:>9} {:>7} {:>9}",
        "hook", "event", "median ms", "p95 ms", "x floor", "budget ms"
    );
    let mut over = 0;
    let mut below_one = false;
    for row in rows {
        let (median, p95) = median_and_p95(&row.samples);
        let ratio = median.as_secs_f64() / floor_median.as_secs_f64().max(1e-6);
        below_one |= ratio < 1.0;
        let mut flags = Vec::new();
        if p95 > row.budget {
            over += 1;
            flags.push("OVER BUDGET".to_owned());
        }
        if row.failed > 0 {
            flags.push(format!(
                "{} not exit 0",
                plural(row.failed, "run did", "runs did")
            ));
        }
        let _ = writeln!(
            out,
            "{:<width$} {:<17} {:>9} {:>9} {:>7.1} {:>9}{}",
            row.label,
            row.event,
            ms(median),
            ms(p95),
            ratio,
            row.budget.as_millis(),
            if flags.is_empty() {
                String::new()
            } else {
                format!("  {}", flags.join("; "))
            }
        );
    }
    let _ = writeln!(
        out,
        "SessionStart runs its registrations in parallel: chunk 0 is timed, with a new conversation each run, so it builds the text every time."
    );
    if below_one {
        let _ = writeln!(
            out,
            "note: a ratio below 1 is within the noise of one machine's load"
        );
    }
    for note in &sandbox.notes {
        let _ = writeln!(out, "note: {note}");
    }
    let _ = write!(
        out,
        "{}",
        if over == 0 {
            "every hook within its budget".to_owned()
        } else {
            format!(
                "{} over {} budget (95th percentile)",
                plural(over, "hook", "hooks"),
                if over == 1 { "its" } else { "their" }
            )
        }
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_p95_by_nearest_rank() {
        let samples: Vec<Duration> = (1..=20).rev().map(Duration::from_millis).collect();
        assert_eq!(
            median_and_p95(&samples),
            (Duration::from_millis(10), Duration::from_millis(19))
        );
        let one = [Duration::from_millis(7)];
        assert_eq!(median_and_p95(&one), (one[0], one[0]));
        assert_eq!(median_and_p95(&[]), (Duration::ZERO, Duration::ZERO));
    }

    #[test]
    fn every_row_gets_an_input_of_its_own_event_that_it_matches() {
        let cwd = Path::new("/p");
        for row in WIRING {
            let input = harmless_input(row, cwd, Path::new("/t.jsonl"), 3);
            assert_eq!(input["hook_event_name"], row.event.name());
            assert!(input.get("stop_hook_active").is_none() || row.event == HookEvent::Stop);
            assert!(
                calls::matches(row, &input),
                "{} {:?}: {input}",
                row.binary,
                row.args
            );
        }
    }
}
