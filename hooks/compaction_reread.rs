//! `PreCompact`, `SessionStart` (`compact`), `PreToolUse`, `Stop` and `PostToolUse` (`Skill`),
//! one subcommand each: re-reads a handler's, worker's or loop's state files after compaction.
//!
//! The one program users run (`preload_cli::multi_call`), under this hook's name.
#![no_main]

preload_core::hook_entry!(preload_cli::multi_call);
