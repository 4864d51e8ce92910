//! Layer 3, the mechanisms: what a context window is made of: [`context`], [`session`],
//! [`ledger`], [`counters`], [`skill`], [`discovery`], [`stash`], [`heartbeat`],
//! [`start_text`], [`dehydrated`], [`reread`], [`work_files`], [`packs`], [`receipt`].

pub mod context;
pub mod counters;
pub mod dehydrated;
pub mod discovery;
pub mod heartbeat;
pub mod ledger;
pub mod packs;
pub mod receipt;
pub mod reread;
pub mod session;
pub mod skill;
pub mod start_text;
pub mod stash;
pub mod work_files;
