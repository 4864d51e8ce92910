//! `preload` subcommands (see `cli`).

use std::process::ExitCode;

/// Run subcommand `name` with its arguments.
pub fn main(_name: &str, _args: &[String]) -> ExitCode {
    ExitCode::from(2)
}
