//! UserPromptSubmit: records a skill expansion's SKILL.md as in context; the session gate.
#![no_main]

preload_core::hook_entry!(preload_core::policies::prompt_submit::main);
