//! PostToolUse (`*`): delivers the guard engine's stashed injections for this agent.
#![no_main]

preload_core::hook_entry!(preload_core::policies::injections::main);
