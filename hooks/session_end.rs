//! SessionEnd (every reason): the ended context window's compaction marker and, when the Claude
//! process ends, the owner's seed go; sessions stay.
#![no_main]

preload_core::hook_entry!(preload_core::policies::session_end::main);
