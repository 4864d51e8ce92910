//! `PreCompact`, `SessionStart` (`compact`), `PreToolUse`, `Stop` and `PostToolUse` (`Skill`),
//! one subcommand each: re-reads a handler's, worker's or loop's state files after compaction.

fn main() -> std::process::ExitCode {
    preload_core::hooks::compaction_reread::main()
}
