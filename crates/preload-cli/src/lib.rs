//! The `preload` command line for people and scripts.
//!
//! Subcommands: `activate` and `phase` (session state, for engines and tests without
//! `session.sh`), `install` and `uninstall` (wiring), `doctor`, `status`, `report`.

use std::process::ExitCode;

use preload_core::runner;

pub mod inspect;
pub mod install;
pub mod parameters;
pub mod session_cmd;
pub mod transition;

/// `preload --help`.
pub const HELP: &str = "preload: the command line of the native preload hooks.

Usage:
  preload activate <session-dir> [--skill NAME] [--fast-track] [--user-approved REASON]
                                                  create or update a session's .state.json,
                                                  merging this process's seed; session
                                                  parameters as JSON on stdin
  preload phase <session-dir> \"<label>: <name>\" [--user-approved REASON]
                                                  move to a phase, as session.sh phase
                                                  enforces it; proof as JSON on stdin;
                                                  prints `Phase: …`
  preload install [--prefix DIR] [--settings PATH] [--shims] [--print]
                                                  copy the binaries and wire them (--print:
                                                  show the wiring, change nothing)
  preload uninstall [--settings PATH]
  preload doctor [--prefix DIR] [--settings PATH]  check the installation and state files
  preload status [--json]                         the active session or seed of this process
  preload report [LOG]                            summary of a delivery event log

Env: HOME, CLAUDE_SUPERVISOR_PID / CLAUDE_PID, WORKSPACE, CLAUDE_PROJECT_DIR,
     CLAUDE_SESSION_CACHE_DIR, PRELOAD_TEST_LOG.";

/// Entry point of the `preload` binary.
pub fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        runner::print_text(HELP);
        return ExitCode::from(2);
    }
    if runner::answer_meta_flag("preload", HELP, &args) {
        return ExitCode::SUCCESS;
    }
    let rest = &args[1..];
    match args[0].as_str() {
        "activate" | "phase" => session_cmd::main(&args[0], rest),
        "install" | "uninstall" => install::main(&args[0], rest),
        "doctor" | "status" | "report" => inspect::main(&args[0], rest),
        _ => {
            runner::print_text(HELP);
            ExitCode::from(2)
        }
    }
}
