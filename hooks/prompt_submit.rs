//! UserPromptSubmit: records a skill expansion's SKILL.md as in context; the session gate.

fn main() -> std::process::ExitCode {
    preload_core::hooks::prompt_submit::main()
}
