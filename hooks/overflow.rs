//! `PreToolUse` (`*`): the guard engine (counter, directive discovery, guards.json, preload claim).

fn main() -> std::process::ExitCode {
    preload_core::hooks::overflow::main()
}
