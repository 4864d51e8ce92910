//! Hook binary: see `preload_core::hooks::phase_commands`.

fn main() -> std::process::ExitCode {
    preload_core::hooks::phase_commands::main()
}
