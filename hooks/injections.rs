//! PostToolUse (`*`): delivers the guard engine's stashed injections for this agent.

fn main() -> std::process::ExitCode {
    preload_core::hooks::injections::main()
}
