//! PostToolUse (`Bash`): queues the commands of the phase a `Phase:` output announces.

fn main() -> std::process::ExitCode {
    preload_core::hooks::phase_commands::main()
}
