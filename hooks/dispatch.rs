//! Every event, one process per event (`preload install --dispatch`): `preload-dispatch <Event>`
//! runs the event's policies in the wiring table's order and prints one answer.
#![no_main]

use preload_core::policies::dispatch;
use preload_core::policies::wiring::WIRING;

preload_core::hook_entry!(run);

fn run() -> std::process::ExitCode {
    dispatch::main(WIRING)
}
