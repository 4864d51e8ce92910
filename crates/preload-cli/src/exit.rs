//! How a command ends: the exit codes in one enum, and what it says on stderr.

use std::fmt::Display;
use std::process::ExitCode;

use preload_core::pipeline::runner;

/// The exit codes of the `preload` commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Done (0).
    Success,
    /// Refused, or something went wrong (1).
    Failure,
    /// The command line was wrong (2).
    Usage,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        match exit {
            Exit::Success => Self::SUCCESS,
            Exit::Failure => Self::from(1),
            Exit::Usage => Self::from(2),
        }
    }
}

/// An error a command can end with: its message, and the exit code it ends with.
pub trait CommandError: Display {
    /// The exit code.
    fn exit(&self) -> Exit;
}

/// End a command: its text on stdout and exit 0, or `preload <command>: <error>` on stderr and
/// the error's exit code.
pub fn finish<E: CommandError>(command: &str, result: Result<String, E>) -> ExitCode {
    match result {
        Ok(text) => {
            runner::print_text(&text);
            Exit::Success.into()
        }
        Err(err) => {
            complain(&format!("preload {command}: {err}"));
            err.exit().into()
        }
    }
}

/// Print one line to stderr.
pub fn complain(line: &str) {
    stderr(&format!("{line}\n"));
}

/// Print text to stderr as it is.
#[allow(clippy::print_stderr)]
pub fn stderr(text: &str) {
    eprint!("{text}");
}
