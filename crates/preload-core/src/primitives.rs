//! Layer 5, the primitives: [`input`], [`hook`], [`mod@env`], [`paths`], [`process`], [`mod@file`],
//! [`lock`], [`journal`], [`markers`], [`delivery`], [`clock`], [`artifacts`], [`layout`],
//! [`tmux`], [`rng`], [`choice`], [`memo`], [`bytes`], [`transcript`], and
//! [`system`], which holds all the `unsafe`.

pub mod artifacts;
pub mod bytes;
pub mod choice;
pub mod clock;
pub mod delivery;
pub mod env;
pub mod file;
pub mod hook;
pub mod input;
pub mod journal;
pub mod layout;
pub mod lock;
pub mod markers;
pub mod memo;
pub mod paths;
pub mod process;
pub mod rng;
pub mod shell;
pub mod system;
pub mod tmux;
pub mod transcript;
