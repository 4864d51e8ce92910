//! The hook library of the native preload hooks: every hook's logic, nothing about processes
//! beyond [`pipeline::runner`], which alone writes to stdout.
//!
//! The modules stand in five layers, each a folder, declared below in that order. A module uses
//! modules of its own layer or of lower ones, never of a higher one, and there are no import
//! cycles (`tests/architecture.rs` checks both, and that `docs/architecture.md` names the same
//! layers):
//!
//! 1. [`policies`]: one module per hook binary;
//! 2. [`pipeline`]: the protocol and the decisions every hook shares;
//! 3. [`mechanisms`]: what a context window is made of;
//! 4. [`state`]: the files' contents: the state document, its fields, what is in context, the
//!    references between files, the stamps of what was delivered;
//! 5. [`primitives`]: input, environment, paths, processes, files, locks and the like.

// Layer 1: policies.
pub mod policies;

// Layer 2: pipeline.
pub mod pipeline;

// Layer 3: mechanisms.
pub mod mechanisms;

// Layer 4: state.
pub mod state;

// Layer 5: primitives.
pub mod primitives;

pub use mechanisms::context::Context;
pub use pipeline::runner::{HookError, HookOutput};
pub use primitives::hook::HookEvent;
pub use primitives::input::HookInput;
