//! Layer 1, the policies: one module per hook binary; each exposes `main()` for its thin binary
//! ([`per_event`] runs the others, one process per event).

pub mod compaction_reread;
pub mod e2e_auto_answer;
pub mod guards;
pub mod injections;
pub mod per_event;
pub mod phase_commands;
pub mod prompt_submit;
pub mod session_end;
pub mod session_start;
pub mod subagent_start;
pub mod templates;
