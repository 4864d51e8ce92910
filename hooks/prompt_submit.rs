//! Hook binary: see `preload_core::hooks::prompt_submit`.

fn main() -> std::process::ExitCode {
    preload_core::hooks::prompt_submit::main()
}
