//! Hook binary: see `preload_core::hooks::templates`.

fn main() -> std::process::ExitCode {
    preload_core::hooks::templates::main()
}
