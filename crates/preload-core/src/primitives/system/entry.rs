//! The entry of a hook process, without the standard library's runtime start-up.
//!
//! Before a Rust `fn main` runs, the standard library polls the three standard descriptors,
//! ignores `SIGPIPE`, maps an alternate signal stack and asks glibc for the main thread's stack
//! (which reads `/proc/self/maps`): about 0.05 ms of a process that lives 1 to 2 ms, on every
//! tool call. A hook binary declares `#![no_main]` and [`hook_entry!`](crate::hook_entry): its
//! C `main` does the part that matters to a hook (a closed standard descriptor gets
//! `/dev/null`, three `fcntl`s instead of a `poll`; `SIGPIPE` is ignored, so a client that
//! closed the pipe gets no answer and the hook still ends normally, and child processes start
//! with the default action, as the standard library gives them), runs the hook, flushes stdout
//! and returns the exit status. Arguments and environment are read as
//! usual (`std::env` takes them from the C runtime). A panic that escapes the hook ends the
//! process with status 101, as a panicking `fn main` does. Since the process ends with its
//! call, [`release`] leaves large plain data to the exit instead of freeing it piece by piece.
//!
//! Part of the one module allowed `unsafe` ([`super`]): the C `main` and the signal's
//! disposition.

use std::ffi::{CStr, c_char, c_int};
use std::io::Write;
use std::process::ExitCode;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::signal::{SigHandler, Signal, signal};

/// The exit status of a hook that panicked past its own fail-open handling.
const PANICKED: c_int = 101;

/// Set by [`run`]: this process ends when its one hook call does.
static ONE_CALL: AtomicBool = AtomicBool::new(false);

/// The arguments after the program's name, as [`run`] was given them.
static ARGS: OnceLock<Vec<String>> = OnceLock::new();

/// The file name the program was started as, as [`run`] was given it.
static PROGRAM: OnceLock<String> = OnceLock::new();

/// The file name the process was started as (the last part of its `argv[0]`): the one release
/// binary is installed under every hook binary's name, and runs the hook it is called as.
pub fn program() -> &'static str {
    PROGRAM.get_or_init(|| {
        let first = std::env::args().next().unwrap_or_default();
        name_of(&first).to_owned()
    })
}

fn name_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The process's arguments after the program's name (lossy UTF-8). A hook binary's are those
/// its C `main` was given: musl, unlike glibc, does not hand them to the standard library
/// before `main`, so `std::env::args` is empty in a musl build without the standard library's
/// start-up. A caller that did not start through [`run`] gets `std::env::args`.
pub fn args() -> &'static [String] {
    ARGS.get_or_init(|| std::env::args().skip(1).collect())
}

/// Define the C `main` of a hook binary (whose root declares `#![no_main]`) that runs `$run`,
/// a `fn() -> std::process::ExitCode`, through [`run`].
#[macro_export]
macro_rules! hook_entry {
    ($run:path) => {
        /// The process's entry: the hook, without the standard library's start-up.
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        extern "C" fn main(
            argc: ::std::ffi::c_int,
            argv: *const *const ::std::ffi::c_char,
        ) -> ::std::ffi::c_int {
            // SAFETY: the C runtime passes `main` its own argument vector: `argc` valid
            // NUL-terminated strings that live as long as the process.
            unsafe { $crate::primitives::system::entry::run($run, argc, argv) }
        }
    };
}

/// Run `hook` as the whole process and return its exit status: the code it returned, 101
/// after a panic.
///
/// # Safety
///
/// `vector` holds `count` valid NUL-terminated strings that outlive the process: the
/// arguments the C runtime passes `main`.
pub unsafe fn run(hook: fn() -> ExitCode, count: c_int, vector: *const *const c_char) -> c_int {
    let count = usize::try_from(count).unwrap_or(0);
    if count > 0 {
        // SAFETY: entry 0 is one of the first `count` valid strings (this function's contract).
        let first = unsafe { CStr::from_ptr(*vector) };
        let _ = PROGRAM.set(name_of(&String::from_utf8_lossy(first.to_bytes())).to_owned());
    }
    let given = (1..count)
        .map(|i| {
            // SAFETY: `i < count`, and each of the first `count` entries is a valid string
            // (this function's contract).
            let arg = unsafe { CStr::from_ptr(*vector.add(i)) };
            String::from_utf8_lossy(arg.to_bytes()).into_owned()
        })
        .collect();
    let _ = ARGS.set(given);
    // SAFETY: ignoring a signal installs no handler, so nothing runs in a signal context; no
    // other thread exists yet to race on the disposition.
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigIgn) };
    open_closed_standard_descriptors();
    ONE_CALL.store(true, Ordering::Relaxed);
    let status = match std::panic::catch_unwind(hook) {
        // The code itself: `ExitCode` says what it is only by comparison.
        Ok(code) => (0..=u8::MAX)
            .find(|n| ExitCode::from(*n) == code)
            .map_or(1, c_int::from),
        Err(_) => PANICKED,
    };
    let _ = std::io::stdout().flush();
    status
}

/// Give a closed stdin, stdout or stderr `/dev/null`, as the standard library's start-up does:
/// otherwise the first file the hook opens would take its number, and the answer (or the
/// watchdog's) would be written into that file.
fn open_closed_standard_descriptors() {
    use nix::fcntl::{FcntlArg, OFlag, fcntl, open};
    use nix::sys::stat::Mode;
    use std::os::fd::{BorrowedFd, IntoRawFd};
    for fd in 0..=2 {
        // SAFETY: the descriptor is only asked for its flags, never used or closed through this
        // borrow.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        if fcntl(borrowed, FcntlArg::F_GETFD) == Err(nix::errno::Errno::EBADF) {
            // The lowest free number is this one: the ones below it are open.
            if let Ok(null) = open("/dev/null", OFlag::O_RDWR, Mode::empty()) {
                let _ = null.into_raw_fd();
            }
        }
    }
}

/// Free `value`, or, in a hook process (which ends with its call), leave its memory to the
/// process's exit: a large state is thousands of allocations, and freeing them one by one cost
/// a tenth of a call that writes it. For plain data only (nothing whose drop does more than
/// free memory).
pub fn release<T>(value: T) {
    if ONE_CALL.load(Ordering::Relaxed) {
        std::mem::forget(value);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts its drops.
    struct Counted<'a>(&'a AtomicUsize);

    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn outside_a_hook_process_release_frees() {
        let drops = AtomicUsize::new(0);
        super::release((Counted(&drops), vec![Counted(&drops)]));
        assert_eq!(drops.load(Ordering::Relaxed), 2);
    }
}
