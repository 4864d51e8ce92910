//! What the suites (`tests/`), `make demo` and `make bench` share, in one crate rather than
//! files included by path: the bundled example laid out as a user's machine ([`example`]), the
//! test sandbox that runs the real binaries in it ([`sandbox`]), a model of the engine's own
//! `session.sh` writers ([`engine_model`]), the steps of a simulated Claude Code session
//! ([`pipeline_steps`]), where the hook scenarios start from ([`session_openings`]) and files on
//! disk as the suites compare them ([`files`]).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::missing_panics_doc
)]

pub mod engine_model;
pub mod example;
pub mod files;
pub mod pipeline_steps;
pub mod sandbox;
pub mod session_openings;
