//! Layer 1, the policies: one module per hook binary; each exposes the `main()` the one program
//! runs under the hook's name ([`dispatch`] runs the others, one process per event). The folder's root holds the one
//! table of hooks ([`HOOKS`]), from which the binaries' list ([`BINARIES`]), each one's `main`
//! ([`main_of`], for the one release binary installed under every name) and each wiring row's
//! policy ([`Hook::policy`]) derive; [`wiring`] says which hook serves which event.

use std::process::ExitCode;

use crate::mechanisms::start_text::Chunk;
use crate::pipeline::runner::Policy;
use crate::primitives::hook::HookSpec;
use crate::{Context, HookError, HookInput, HookOutput};

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
pub mod wiring;

/// One hook binary of the table: its name, its `main`, and the policy a wiring row of it runs.
#[derive(Debug, Clone, Copy)]
pub struct Hook {
    /// The binary's name (`preload-overflow`, …).
    pub binary: &'static str,
    /// Its `main`: `--help`, `--version`, else one hook call.
    pub main: fn() -> ExitCode,
    /// The policy a wiring row of it runs, by the row's arguments (`chunk`: the slice of a
    /// chunked `SessionStart` row, the whole text when `None`); `None` for arguments it does
    /// not take.
    pub policy: fn(&[&str], Option<Chunk>) -> Option<Policy>,
}

/// A policy's handler, as a function.
type Handle = fn(&HookInput, &Context) -> Result<HookOutput, HookError>;

/// The policy of a hook with one handler and no arguments.
fn only(spec: &'static HookSpec, handler: Handle, args: &[&str]) -> Option<Policy> {
    args.is_empty()
        .then(|| Policy::only(spec.name, spec.event, handler))
}

/// The table of hooks: `module` for a policy with a [`HookSpec`] `SPEC`, a `main` and one
/// `handle`; `module { binary, policy }` for one whose arguments choose the policy.
macro_rules! hooks {
    ($($module:ident $({ binary: $binary:expr, policy: $policy:expr })?),* $(,)?) => {
        /// Every hook binary but the dispatcher, in the order `preload install` lists them.
        pub const HOOKS: &[Hook] = &[$(hooks!(@hook $module $($binary, $policy)?)),*];
    };
    (@hook $module:ident) => {
        Hook {
            binary: $module::SPEC.binary,
            main: $module::main,
            policy: |args, _| only(&$module::SPEC, $module::handle, args),
        }
    };
    (@hook $module:ident $binary:expr, $policy:expr) => {
        Hook { binary: $binary, main: $module::main, policy: $policy }
    };
}

hooks! {
    session_start { binary: session_start::SPEC.binary, policy: session_start::policy },
    prompt_submit,
    templates,
    phase_commands,
    guards,
    injections,
    compaction_reread { binary: compaction_reread::BINARY, policy: compaction_reread::policy },
    session_end,
    subagent_start,
    e2e_auto_answer { binary: e2e_auto_answer::SPEC.binary, policy: e2e_auto_answer::policy },
}

/// The binary that runs every policy of an event in one process (`preload install --dispatch`).
pub const DISPATCHER: &str = "preload-dispatch";

/// Every binary `preload install` copies: `preload`, every hook of [`HOOKS`] (the e2e
/// auto-answer hook included, though it is never wired: it is for test sessions only) and the
/// [`DISPATCHER`].
pub const BINARIES: [&str; HOOKS.len() + 2] = {
    let mut binaries = ["preload"; HOOKS.len() + 2];
    let mut i = 0;
    while i < HOOKS.len() {
        binaries[i + 1] = HOOKS[i].binary;
        i += 1;
    }
    binaries[HOOKS.len() + 1] = DISPATCHER;
    binaries
};

/// The hook of [`HOOKS`] a binary named `binary` is.
///
/// A copy under a hook's name with a suffix after a `.` or `-` (`preload-overflow.real`,
/// `preload-overflow-0.1.0`: a wrapper's or a backup's) is still that hook: a hook call that
/// reached the command line instead would exit 2, which the client takes for a block.
pub fn hook(binary: &str) -> Option<&'static Hook> {
    // The longest name that fits: no hook's name is another's with a suffix, but be exact.
    HOOKS
        .iter()
        .filter(|hook| is_named(binary, hook.binary))
        .max_by_key(|hook| hook.binary.len())
}

/// Whether `binary` is `name`, or `name` with a suffix after a `.` or `-` (see [`hook`]).
fn is_named(binary: &str, name: &str) -> bool {
    binary
        .strip_prefix(name)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '-']))
}

/// The `main` of the hook binary named `binary` (`preload-overflow`, …, the dispatcher, each
/// as [`hook`] tells names); `None` for any other name. The release build is one binary,
/// `preload`, installed under every hook binary's name too: started as a hook, it runs that
/// hook's `main`.
pub fn main_of(binary: &str) -> Option<fn() -> ExitCode> {
    if is_named(binary, DISPATCHER) {
        return Some(|| dispatch::main(wiring::WIRING));
    }
    hook(binary).map(|hook| hook.main)
}

#[cfg(test)]
mod tests {
    use super::BINARIES;

    #[test]
    fn every_hook_binary_has_its_main_and_nothing_else_does() {
        for binary in BINARIES {
            assert_eq!(
                super::main_of(binary).is_some(),
                binary != "preload",
                "{binary}"
            );
        }
        assert!(super::main_of("preload-nothing").is_none());
        assert!(super::main_of("preload-overflowing").is_none());
    }

    #[test]
    fn a_hook_under_its_name_with_a_suffix_is_still_that_hook() {
        let main = |name: &str| super::main_of(name).map(|m| m as usize);
        let guards = main("preload-overflow");
        assert!(guards.is_some());
        assert_eq!(main("preload-overflow.real"), guards);
        assert_eq!(main("preload-overflow-0.1.0"), guards);
        assert_eq!(
            main("preload-session-start.bak"),
            main("preload-session-start")
        );
        assert_ne!(
            main("preload-session-start.bak"),
            main("preload-session-end")
        );
        assert!(main("preload-dispatch.real").is_some());
        assert!(main("preload.real").is_none());
    }
}
