//! PostToolUse (`Skill`, `Bash`): delivers a starting skill's phase commands and templates.
//!
//! The one program users run (`preload_cli::multi_call`), under this hook's name.
#![no_main]

preload_core::hook_entry!(preload_cli::multi_call);
