//! UserPromptSubmit: records a skill expansion's SKILL.md as in context; the session gate.
//!
//! The one program users run (`preload_cli::multi_call`), under this hook's name.
#![no_main]

preload_core::hook_entry!(preload_cli::multi_call);
