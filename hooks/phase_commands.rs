//! PostToolUse (`Bash`): queues the commands of the phase a `Phase:` output announces.
#![no_main]

preload_core::hook_entry!(preload_core::policies::phase_commands::main);
