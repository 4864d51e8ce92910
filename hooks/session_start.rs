//! SessionStart (every source; `--chunk I/N` for one of N registrations): standards, the active skill, artifacts, recovery.
#![no_main]

preload_core::hook_entry!(preload_core::policies::session_start::main);
