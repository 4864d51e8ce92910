//! Hook binary: see `preload_core::hooks::overflow`.

fn main() -> std::process::ExitCode {
    preload_core::hooks::overflow::main()
}
