//! One policy module per hook binary; each exposes `main()` for its thin binary.

pub mod compaction_reread;
pub mod e2e_auto_answer;
pub mod injections;
pub mod overflow;
pub mod phase_commands;
pub mod prompt_submit;
pub mod session_end;
pub mod session_start;
pub mod subagent_start;
pub mod templates;
