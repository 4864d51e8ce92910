//! The time budget of a hook process: a one-shot real-time timer (`setitimer`) whose signal
//! prints the fail-open answer and ends the process, so a call never outlives its budget
//! without a thread to watch it.
//!
//! The answer is rendered before the timer is armed and kept for the life of the process; the
//! signal handler does only what is safe in one: one `write(2)` of those bytes to stdout, then
//! `_exit(2)`. Whoever prints the real answer disarms the timer first ([`disarm`]); a signal
//! already on its way is delivered before `disarm` returns, so the process prints one answer,
//! never two. Writes refused after the deadline (`state::commit_before`) keep a late handler from
//! committing what the fail-open answer did not deliver.
//!
//! Part of the one module allowed `unsafe` ([`super`]): installing a signal handler and
//! calling `setitimer`, `write` and `_exit` through the C library.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::time::Duration;

use nix::libc;
use nix::sys::signal::{self, SaFlags, SigAction, SigHandler, SigSet, Signal};

/// The fail-open answer the handler prints (leaked: it lives as long as the process).
static ANSWER: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
/// Its length.
static ANSWER_LEN: AtomicUsize = AtomicUsize::new(0);
/// Whether a timer is armed (between [`arm`] and [`disarm`]).
static ARMED: AtomicBool = AtomicBool::new(false);

/// How long a call that has committed a write (a file marked delivered, a stash entry drained)
/// may still take to print the answer it committed to: it releases a lock, appends to the log
/// and writes one line, which takes far less, but a loaded machine can hold a process back
/// for longer than [`crate::pipeline::runner::GRACE`].
pub const AFTER_COMMIT: Duration = Duration::from_secs(2);

/// The signal handler: print the answer, end the process. Async-signal-safe: two atomic loads,
/// `write`, `_exit`.
extern "C" fn on_alarm(_: libc::c_int) {
    let bytes = ANSWER.load(Ordering::Acquire);
    let len = ANSWER_LEN.load(Ordering::Acquire);
    if !bytes.is_null() && len > 0 {
        // SAFETY: `bytes` points to `len` bytes leaked by `set_answer` and never freed.
        let _ = unsafe { libc::write(libc::STDOUT_FILENO, bytes.cast(), len) };
    }
    // SAFETY: `_exit` is async-signal-safe and takes no pointers.
    unsafe { libc::_exit(0) }
}

/// Keep `answer` as what the handler prints (set once per process; later calls replace it).
fn set_answer(answer: &[u8]) {
    let leaked: &'static mut [u8] = Box::leak(answer.to_vec().into_boxed_slice());
    ANSWER_LEN.store(0, Ordering::Release);
    ANSWER.store(leaked.as_mut_ptr(), Ordering::Release);
    ANSWER_LEN.store(leaked.len(), Ordering::Release);
}

/// Why the watchdog could not be armed.
#[derive(Debug, thiserror::Error)]
pub enum WatchdogError {
    /// The handler or the timer was refused by the system.
    #[error("cannot arm the watchdog timer: {0}")]
    System(#[from] nix::Error),
}

/// Print `answer` (and end the process with status 0) if [`disarm`] is not called within
/// `after`. Arming again replaces the timer and the answer.
pub fn arm(after: Duration, answer: &[u8]) -> Result<(), WatchdogError> {
    set_answer(answer);
    let action = SigAction::new(
        SigHandler::Handler(on_alarm),
        SaFlags::empty(),
        SigSet::empty(),
    );
    // SAFETY: `on_alarm` is async-signal-safe (see above) and this process installs no other
    // SIGALRM handler.
    unsafe { signal::sigaction(Signal::SIGALRM, &action) }?;
    // A mask inherited from the parent could hold the signal back forever.
    let mut alarm = SigSet::empty();
    alarm.add(Signal::SIGALRM);
    alarm.thread_unblock()?;
    ARMED.store(true, Ordering::Release);
    set_timer(after)
}

/// Stop the timer: from now on the caller answers.
pub fn disarm() {
    ARMED.store(false, Ordering::Release);
    let _ = set_timer(Duration::ZERO);
}

/// Run `publish` (the rename that commits a write; true when it did) so that the fail-open
/// answer can no longer replace the answer the commit belongs to: the timer's signal is held
/// back while it runs, and once something is committed the timer is set to [`AFTER_COMMIT`]
/// and a signal that came meanwhile is taken, not delivered. Nothing committed: a signal that
/// came is delivered as usual (the fail-open answer then matches what is on disk). Without an
/// armed timer (the command line), just `publish`.
pub fn committing(publish: impl FnOnce() -> std::io::Result<bool>) -> std::io::Result<bool> {
    if !ARMED.load(Ordering::Acquire) {
        return publish();
    }
    let mut alarm = SigSet::empty();
    alarm.add(Signal::SIGALRM);
    let held = alarm.thread_block().is_ok();
    let published = publish();
    if matches!(published, Ok(true)) {
        let _ = set_timer(AFTER_COMMIT);
        if held && alarm_pending() {
            let _ = alarm.wait();
        }
    }
    if held {
        let _ = alarm.thread_unblock();
    }
    published
}

/// Whether a `SIGALRM` is pending (held back by the caller's mask).
fn alarm_pending() -> bool {
    let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: `sigpending` fills the set it is given; it is read only when the call succeeds.
    let filled = unsafe { libc::sigpending(set.as_mut_ptr()) } == 0;
    // SAFETY: filled by the successful call above.
    filled && unsafe { libc::sigismember(set.as_ptr(), libc::SIGALRM) } == 1
}

/// One-shot `ITIMER_REAL` after `after` (zero stops it; anything shorter than a microsecond
/// fires after one).
// `suseconds_t` is 64 bits on Linux and 32 on macOS: the conversion is fallible on one of them.
// The libc crate marks musl's `time_t` and `suseconds_t` deprecated (they are to become 64-bit
// there); the conversions below saturate whatever their width.
#[allow(clippy::unnecessary_fallible_conversions, deprecated)]
fn set_timer(after: Duration) -> Result<(), WatchdogError> {
    let micros = if after.is_zero() {
        0
    } else {
        after.subsec_micros().max(u32::from(after.as_secs() == 0))
    };
    let value = libc::itimerval {
        it_interval: libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        },
        it_value: libc::timeval {
            tv_sec: libc::time_t::try_from(after.as_secs()).unwrap_or(libc::time_t::MAX),
            tv_usec: libc::suseconds_t::try_from(micros).unwrap_or(0),
        },
    };
    // SAFETY: both pointers are valid for the call (the old value is not asked for).
    let rc = unsafe { libc::setitimer(libc::ITIMER_REAL, &raw const value, std::ptr::null_mut()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(WatchdogError::System(nix::Error::last()))
    }
}
