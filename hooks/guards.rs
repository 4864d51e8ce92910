//! `PreToolUse` (`*`): the guard engine (counter, directive discovery, guards.json, preload claim).
//!
//! The one program users run (`preload_cli::multi_call`), under this hook's name.
#![no_main]

preload_core::hook_entry!(preload_cli::multi_call);
