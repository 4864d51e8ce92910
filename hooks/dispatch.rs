//! Every event, one process per event (`preload install --dispatch`): `preload-dispatch <Event>`
//! runs the event's policies in the wiring table's order and prints one answer.
//!
//! The one program users run (`preload_cli::multi_call`), under this hook's name.
#![no_main]

preload_core::hook_entry!(preload_cli::multi_call);
