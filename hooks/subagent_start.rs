//! SubagentStart: gives a starting sub-agent its own start-up context, once per agent.
#![no_main]

preload_core::hook_entry!(preload_core::policies::subagent_start::main);
