//! Every event, one process per event (`preload install --dispatch`): `preload-dispatch <Event>`
//! runs the event's policies in the wiring table's order and prints one answer.
#![no_main]

use preload_cli::install::wiring::{WIRING, Wiring};
use preload_core::hooks::dispatcher::{self, Route};

preload_core::hook_entry!(dispatch);

fn dispatch() -> std::process::ExitCode {
    // Only the table's constant data is used here: no code of the command line is linked.
    let routes: Vec<Route> = WIRING.iter().map(Wiring::route).collect();
    dispatcher::main(&routes)
}
