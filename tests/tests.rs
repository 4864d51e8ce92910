//! The integration test harness: the real binaries, run in a sandbox, judged by their stdout,
//! exit code, state files and delivery log.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::missing_panics_doc)]

mod architecture;
mod auto_answer;
mod changes;
mod codex;
mod compaction_reread;
mod diagnostics;
mod discovery;
mod dispatch;
mod doctor;
mod engine_interplay;
mod explain;
mod faults;
mod guards;
mod install;
mod install_codex;
mod install_files;
mod long_texts;
mod packs;
mod pipeline;
mod pipeline_hooks;
mod plugin;
mod reliability;
mod seed_cases;
mod session_commands;
mod session_end;
mod session_start;
mod subagent_skill;
mod subagent_start;
