//! Hook binary: see `preload_core::hooks::session_start`.

fn main() -> std::process::ExitCode {
    preload_core::hooks::session_start::main()
}
