//! SubagentStart: gives a starting sub-agent its own start-up context, once per agent.

fn main() -> std::process::ExitCode {
    preload_core::hooks::subagent_start::main()
}
