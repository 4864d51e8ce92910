//! The integration test harness: the real binaries, run in a sandbox, judged by their stdout,
//! exit code, state files and delivery log.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::missing_panics_doc)]

mod architecture;
mod cli;
mod delivery;
mod hooks;
mod reliability;
