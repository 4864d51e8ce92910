//! `PreToolUse` (`*`): the guard engine (counter, directive discovery, guards.json, preload claim).
#![no_main]

preload_core::hook_entry!(preload_core::policies::guards::main);
