//! SessionStart (every source; `--chunk I/N` for one of N registrations): standards, the active skill, artifacts, recovery.

fn main() -> std::process::ExitCode {
    preload_core::hooks::session_start::main()
}
