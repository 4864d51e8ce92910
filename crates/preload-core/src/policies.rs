//! Layer 1, the policies: one module per hook binary; each exposes `main()` for its thin binary
//! ([`dispatch`] runs the others, one process per event), and [`main_of`] finds it by the
//! binary's name for the one release binary installed under every name.

use std::process::ExitCode;

pub mod compaction_reread;
pub mod dispatch;
pub mod e2e_auto_answer;
pub mod guards;
pub mod injections;
pub mod phase_commands;
pub mod prompt_submit;
pub mod session_end;
pub mod session_start;
pub mod subagent_start;
pub mod templates;

/// The `main` of the hook binary named `binary` (`preload-overflow`, …); `None` for any other
/// name. The release build is one binary, `preload`, installed under every hook binary's name
/// too: started as a hook, it runs that hook's `main`, as its own thin binary does.
pub fn main_of(binary: &str) -> Option<fn() -> ExitCode> {
    let main: fn() -> ExitCode = match binary {
        "preload-session-start" => session_start::main,
        "preload-prompt-submit" => prompt_submit::main,
        "preload-templates" => templates::main,
        "preload-phase-commands" => phase_commands::main,
        "preload-overflow" => guards::main,
        "preload-injections" => injections::main,
        "preload-session-end" => session_end::main,
        "preload-compaction-reread" => compaction_reread::main,
        "preload-subagent-start" => subagent_start::main,
        "preload-e2e-auto-answer" => e2e_auto_answer::main,
        "preload-dispatch" => || dispatch::main(crate::primitives::wiring::WIRING),
        _ => return None,
    };
    Some(main)
}

#[cfg(test)]
mod tests {
    use crate::primitives::wiring::BINARIES;

    #[test]
    fn every_hook_binary_has_its_main_and_nothing_else_does() {
        for binary in BINARIES {
            assert_eq!(
                super::main_of(binary).is_some(),
                *binary != "preload",
                "{binary}"
            );
        }
        assert!(super::main_of("preload-nothing").is_none());
    }
}
