//! The hook library of the native preload hooks: every hook's logic, nothing about processes
//! beyond [`runner`], which alone writes to stdout.
//!
//! The modules stand in five layers, declared below in that order. A module uses modules of
//! its own layer or of lower ones, never of a higher one, and there are no import cycles
//! (`tests/architecture.rs` checks both, and that `docs/architecture.md` names the same layers):
//!
//! 1. **policies**: `hooks`, one module per hook binary;
//! 2. **pipeline**: the protocol and the decisions every hook shares: [`runner`] (stdin to
//!    stdout, for one policy or an event's several), [`rules`] (`guards.json`), [`preload`]
//!    (queue, claim, deliver), [`activation`];
//! 3. **mechanisms**: what a context window is made of: [`context`], [`session`], [`ledger`],
//!    [`counters`], [`skill`], [`discovery`], [`report`], [`stash`], [`heartbeat`],
//!    [`start_cache`], [`dehydrated`], [`reread`], [`dispatch`], [`packs`];
//! 4. **state**: the files' contents: [`state`], [`fields`], [`dedup`], [`refs`], [`stamps`];
//! 5. **primitives**: [`input`], [`mod@env`], [`paths`], [`process`], [`mod@file`], [`lock`],
//!    [`journal`], [`markers`], [`delivery`], [`clock`], [`artifacts`], [`layout`], [`tmux`],
//!    [`rng`], [`choice`], [`watchdog`], [`start`], [`memo`], [`bytes`], [`transcript`],
//!    [`wiring`].

// Layer 1: policies.
pub mod hooks;

// Layer 2: pipeline.
pub mod activation;
pub mod preload;
pub mod rules;
pub mod runner;

// Layer 3: mechanisms.
pub mod context;
pub mod counters;
pub mod dehydrated;
pub mod discovery;
pub mod dispatch;
pub mod heartbeat;
pub mod ledger;
pub mod packs;
pub mod report;
pub mod reread;
pub mod session;
pub mod skill;
pub mod start_cache;
pub mod stash;

// Layer 4: state.
pub mod dedup;
pub mod fields;
pub mod refs;
pub mod stamps;
pub mod state;

// Layer 5: primitives.
pub mod artifacts;
pub mod bytes;
pub mod choice;
pub mod clock;
pub mod delivery;
pub mod env;
pub mod file;
pub mod input;
pub mod journal;
pub mod layout;
pub mod lock;
pub mod markers;
pub mod memo;
pub mod paths;
pub mod process;
pub mod rng;
pub mod start;
pub mod tmux;
pub mod transcript;
pub mod watchdog;
pub mod wiring;

pub use context::Context;
pub use input::HookInput;
pub use runner::{HookError, HookEvent, HookOutput};
