//! Hook binary: see `preload_core::hooks::e2e_auto_answer`.

fn main() -> std::process::ExitCode {
    preload_core::hooks::e2e_auto_answer::main()
}
