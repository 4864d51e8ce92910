//! `PreCompact`, `SessionStart` (`compact`), `PreToolUse`, `Stop` and `PostToolUse` (`Skill`),
//! one subcommand each: re-reads a handler's, worker's or loop's state files after compaction.
#![no_main]

preload_core::hook_entry!(preload_core::policies::compaction_reread::main);
