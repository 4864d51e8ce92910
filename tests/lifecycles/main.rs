//! Generated lifecycles against a model of the Claude Code client: random sequences of client
//! events (start-ups, resumes, `/clear`, compactions, prompts, skills, activations, phase
//! changes, tool calls alone and at once, files changed or grown on disk, sub-agents, two owners,
//! killed hooks, the engine's restart, dehydrate, continue, idle and statusline) played through
//! the real binaries, with the product's promise checked after every step and failing sequences
//! shrunk (proptest). See `run.rs` for the knobs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::missing_panics_doc,
    clippy::print_stderr,
    clippy::unused_self,
    clippy::type_complexity,
    clippy::needless_pass_by_value,
    clippy::format_push_string
)]

mod client;
mod hooks;
mod invariants;
mod ops;
mod regressions;
mod run;
mod world;
