//! `preload`: the command line (activate, phase, install, uninstall, doctor, status, report,
//! …) and every hook, by the name it is started under. Every binary of the package is this
//! one program (`preload_cli::multi_call`); `make release` builds it alone and links it
//! under every hook's name.
#![no_main]

preload_core::hook_entry!(preload_cli::multi_call);
