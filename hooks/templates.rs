//! PostToolUse (`Skill`, `Bash`): delivers a starting skill's phase commands and templates.
#![no_main]

preload_core::hook_entry!(preload_core::policies::templates::main);
