//! `PreToolUse` (`AskUserQuestion`), test sessions only: answers the agent's questions by
//! strategy while `E2E_AUTO_ANSWER` is set; otherwise exits at once without reading stdin.
#![no_main]

preload_core::hook_entry!(preload_core::policies::e2e_auto_answer::main);
