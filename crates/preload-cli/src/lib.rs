//! The `preload` command line: parses it and hands each subcommand to the module of its name.
//!
//! Subcommands: `activate` and `phase` (session state, enforcing what `session.sh` enforces),
//! `install` and `uninstall` (wiring), `plugin`, `doctor`, `status`, `report`, `audit`, over the hook library
//! `preload-core`. Parsed with `clap`: each subcommand has its `--help`; an unknown subcommand
//! or flag exits 2 with a usage error on stderr ([`exit`] holds the exit codes). Every binary
//! of the package is one program, [`multi_call`]: a hook under a hook's name, else this.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use exit::Exit;
use preload_core::pipeline::runner;
use preload_core::primitives::system::entry;

pub mod audit;
pub mod calls;
pub mod doctor;
pub mod exit;
pub mod explain;
pub mod install;
pub mod plugin;
pub mod report;
pub mod sandbox;
pub mod schema;
pub mod session;
pub mod status;
pub mod timings;
pub mod transition;
pub mod words;

/// What every subcommand reads from the environment.
const ENV_HELP: &str =
    "Env: HOME, CLAUDE_SUPERVISOR_PID / CLAUDE_PID, WORKSPACE, CLAUDE_PROJECT_DIR,
     CLAUDE_SESSION_CACHE_DIR, PRELOAD_TEST_LOG.";

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "preload",
    version,
    about = "The command line of the native preload hooks.",
    after_help = ENV_HELP,
    arg_required_else_help = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Create or update a session's .state.json, merging this process's seed; session
    /// parameters as JSON on stdin (as `session.sh activate` enforces them).
    Activate(session::ActivateArgs),
    /// Move a session to a phase, as `session.sh phase` enforces it; proof as JSON on stdin;
    /// prints `Phase: …`.
    Phase(session::PhaseArgs),
    /// Copy the binaries and wire them into the project's settings (or write shims).
    Install(install::InstallArgs),
    /// Take the wiring (or the shims) out again; the binaries stay.
    Uninstall(install::uninstall::UninstallArgs),
    /// Write the hooks as a Claude Code plugin directory (manifest, hooks.json, bin/,
    /// marketplace), for `claude --plugin-dir DIR` or `/plugin marketplace add DIR`.
    Plugin(plugin::PluginArgs),
    /// Check the installation, the engine, the rules and the state files.
    Doctor(doctor::DoctorArgs),
    /// The active session or seed of this Claude process.
    Status(status::StatusArgs),
    /// A summary of a delivery event log.
    Report(report::ReportArgs),
    /// What the model received on a conversation's active branch, read from the client's
    /// transcript: each preloaded file's count, the duplicates, and what the session's record
    /// claims that never arrived. Exit 0 clean, 1 duplicates or missing, 2 unreadable.
    Audit(audit::AuditArgs),
    /// Time every installed hook on harmless inputs in a sandbox copy of the project's state,
    /// against a bare process start and the hook's budget.
    Timings(timings::TimingsArgs),
    /// Say what one hook input (stdin or --input FILE) would do: session and owner, matching
    /// rules, what is delivered, queued, stashed or skipped, and the output's size; run in a
    /// sandbox copy of the state, so nothing changes.
    Explain(explain::ExplainArgs),
    /// Read stdin and print `{}`: a bare process start, the floor `preload timings` measures.
    #[command(hide = true)]
    Noop,
}

/// The one program every binary of the package is: started under a hook's name
/// (`preload-overflow`, …), that hook ([`preload_core::policies::main_of`]); else the command
/// line ([`main`]).
pub fn multi_call() -> ExitCode {
    match preload_core::policies::main_of(entry::program()) {
        Some(hook) => hook(),
        None => main(),
    }
}

/// The command line: the arguments its entry was given (`entry::args`: the binary starts
/// without the standard library's start-up).
pub fn main() -> ExitCode {
    let args = std::iter::once("preload").chain(entry::args().iter().map(String::as_str));
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            // Help and version go to stdout (exit 0); a usage error to stderr (exit 2).
            let _ = err.print();
            return if err.use_stderr() {
                Exit::Usage.into()
            } else {
                Exit::Success.into()
            };
        }
    };
    match cli.command {
        Command::Activate(args) => session::activate(&args),
        Command::Phase(args) => session::phase(&args),
        Command::Install(args) => install::run(&args),
        Command::Uninstall(args) => install::uninstall::run(&args),
        Command::Plugin(args) => plugin::run(&args),
        Command::Doctor(args) => doctor::run(&args),
        Command::Status(args) => status::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Audit(args) => audit::run(&args),
        Command::Timings(args) => timings::run(&args),
        Command::Explain(args) => explain::run(&args),
        Command::Noop => noop(),
    }
}

/// `preload noop`: what every hook does besides its work, reading stdin and printing one
/// JSON object, and nothing else.
fn noop() -> ExitCode {
    use std::io::Read;
    let mut sink = Vec::new();
    let _ = std::io::stdin()
        .lock()
        .take(preload_core::primitives::input::MAX_STDIN_BYTES)
        .read_to_end(&mut sink);
    runner::print_text("{}");
    Exit::Success.into()
}

/// Why a path argument was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathArgError {
    /// The argument is empty.
    #[error("an empty path")]
    Empty,
}

/// A path argument with a leading `~` expanded against `HOME` (the shell does not expand it
/// after `=` or in quotes).
pub fn path_arg(text: &str) -> Result<PathBuf, PathArgError> {
    if text.is_empty() {
        return Err(PathArgError::Empty);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    Ok(match (text.strip_prefix('~'), home) {
        (Some(""), Some(home)) => home,
        (Some(rest), Some(home)) if rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(text),
    })
}

/// The working directory of the process (`/` when it is gone).
pub(crate) fn process_cwd() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn unknown_subcommands_and_flags_are_usage_errors() {
        for args in [
            vec!["preload", "nope"],
            vec!["preload", "status", "--nope"],
            vec!["preload", "install", "--shim"],
        ] {
            let err = Cli::try_parse_from(args).unwrap_err();
            assert!(err.use_stderr(), "{err}");
        }
    }

    #[test]
    fn a_tilde_in_a_path_argument_is_home() {
        let home = PathBuf::from(std::env::var_os("HOME").unwrap());
        assert_eq!(path_arg("~/x/y").unwrap(), home.join("x/y"));
        assert_eq!(path_arg("~").unwrap(), home);
        assert_eq!(path_arg("a/~b").unwrap(), PathBuf::from("a/~b"));
        assert!(path_arg("").is_err());
    }
}
