//! The shared library of the native preload hooks.
//!
//! Layers, top to bottom (imports point down only):
//! 1. `hooks`: one policy module per hook binary;
//! 2. the pipeline: [`runner`], [`preload`], [`skill`], [`rules`], [`activation`];
//! 3. mechanisms: [`ledger`] (a context window's record across the engine's files),
//!    [`counters`], [`state`], [`refs`], [`dedup`], [`discovery`], [`session`], [`context`];
//! 4. primitives: [`paths`], [`process`], [`lock`], [`markers`], [`delivery`], [`input`],
//!    [`mod@env`], [`clock`], [`mod@file`], [`report`] (delivery log summaries).
//!
//! Nothing here writes to stdout except [`runner`].

pub mod activation;
pub mod clock;
pub mod context;
pub mod counters;
pub mod dedup;
pub mod delivery;
pub mod discovery;
pub mod env;
pub mod fields;
pub mod file;
pub mod hooks;
pub mod input;
pub mod ledger;
pub mod lock;
pub mod markers;
pub mod paths;
pub mod preload;
pub mod process;
pub mod refs;
pub mod report;
pub mod rules;
pub mod runner;
pub mod session;
pub mod skill;
pub mod state;

pub use context::Context;
pub use input::HookInput;
pub use runner::{HookError, HookEvent, HookOutput};
