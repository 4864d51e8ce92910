//! SubagentStart: gives a starting sub-agent its own start-up context, once per agent.
//!
//! The one program users run (`preload_cli::multi_call`), under this hook's name.
#![no_main]

preload_core::hook_entry!(preload_cli::multi_call);
