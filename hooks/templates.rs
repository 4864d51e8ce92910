//! PostToolUse (`Skill`, `Bash`): delivers a starting skill's phase commands and templates.

fn main() -> std::process::ExitCode {
    preload_core::hooks::templates::main()
}
