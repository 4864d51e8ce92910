//! SessionStart (every source; `--chunk I/N` for one of N registrations): standards, the active skill, artifacts, recovery.
//!
//! The one program users run (`preload_cli::multi_call`), under this hook's name.
#![no_main]

preload_core::hook_entry!(preload_cli::multi_call);
