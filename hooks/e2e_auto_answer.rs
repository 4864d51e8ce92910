//! `PreToolUse` (`AskUserQuestion`), test sessions only: answers the agent's questions by
//! strategy while `E2E_AUTO_ANSWER` is set; otherwise exits at once without reading stdin.
//!
//! The one program users run (`preload_cli::multi_call`), under this hook's name.
#![no_main]

preload_core::hook_entry!(preload_cli::multi_call);
