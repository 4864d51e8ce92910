//! The `preload` command line: activate, phase, install, uninstall, doctor, status, report; and
//! every hook in one binary. `make release` builds this one alone and installs it under every
//! hook binary's name too (`preload-overflow`, …): started under a hook's name, it runs that
//! hook, as the hook's own thin binary does.
#![no_main]

preload_core::hook_entry!(run);

fn run() -> std::process::ExitCode {
    let program = preload_core::primitives::system::entry::program();
    match preload_core::policies::main_of(program) {
        Some(hook) => hook(),
        None => preload_cli::main(),
    }
}
