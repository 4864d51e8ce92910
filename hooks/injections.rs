//! Hook binary: see `preload_core::hooks::injections`.

fn main() -> std::process::ExitCode {
    preload_core::hooks::injections::main()
}
