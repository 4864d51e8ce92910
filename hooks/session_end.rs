//! SessionEnd (every reason): the ended context window's compaction marker and, when the Claude
//! process ends, the owner's seed go; sessions stay.
//!
//! The one program users run (`preload_cli::multi_call`), under this hook's name.
#![no_main]

preload_core::hook_entry!(preload_cli::multi_call);
