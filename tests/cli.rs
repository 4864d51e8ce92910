//! The `preload` commands, one file per command (named after its module in
//! `crates/preload-cli/src/`), run as users run them: the built binary against a sandbox.

mod diagnostics;
mod doctor;
mod explain;
mod install;
mod plugin;
mod session;
