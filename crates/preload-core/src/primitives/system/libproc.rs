//! macOS process facts through libproc's `proc_pidinfo`, the interface `ps` and Activity Monitor
//! use.
//!
//! `PROC_PIDTBSDINFO` gives the name, the parent and the start time; the kernel answers it for
//! processes of the same user only (or for anyone when we are root). For the others it falls
//! back to `PROC_PIDT_SHORTBSDINFO`, which every user may ask for and which carries the name and
//! the parent but no start time. The owner Claude process is always of the same user.
//!
//! Part of the one module allowed `unsafe` ([`super`]); every block says why it is sound.

use std::mem::{MaybeUninit, size_of};

use nix::libc::{self, c_char, c_int, c_void};

/// What libproc says about one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// The short command name (`comm`).
    pub name: String,
    /// The parent PID.
    pub parent: Option<u32>,
    /// The start time in microseconds since the epoch, when it can be read.
    pub started: Option<u64>,
}

/// `pid` as the kernel's `pid_t`, for PIDs that can name a user process (not 0, the kernel).
fn raw_pid(pid: u32) -> Option<c_int> {
    c_int::try_from(pid).ok().filter(|raw| *raw > 0)
}

/// Ask `proc_pidinfo` for `flavor` of `pid` into a `T`; `None` unless it filled the whole `T`.
///
/// # Safety
///
/// `T` must be the structure the kernel writes for `flavor`, and be valid when all zero (plain
/// integers and integer arrays only).
unsafe fn pid_info<T>(pid: c_int, flavor: c_int) -> Option<T> {
    let size = c_int::try_from(size_of::<T>()).ok()?;
    let mut buffer = MaybeUninit::<T>::zeroed();
    // SAFETY: `buffer` is writable, `size` bytes long and outlives the call; `proc_pidinfo`
    // writes at most `size` bytes into it and returns how many it wrote (0 or less on error).
    let written =
        unsafe { libc::proc_pidinfo(pid, flavor, 0, buffer.as_mut_ptr().cast::<c_void>(), size) };
    // SAFETY: the buffer started all zero, which the caller guarantees is a valid `T`, and the
    // kernel filled it with a `T` of its own.
    (written == size).then(|| unsafe { buffer.assume_init() })
}

/// The facts of `pid`, from `PROC_PIDTBSDINFO`, else `PROC_PIDT_SHORTBSDINFO`.
pub fn facts(pid: u32) -> Option<Facts> {
    let raw = raw_pid(pid)?;
    // SAFETY: `proc_bsdinfo` is what `PROC_PIDTBSDINFO` writes; it holds integers and `c_char`
    // arrays only, so all zero is a valid value.
    if let Some(info) = unsafe { pid_info::<libc::proc_bsdinfo>(raw, libc::PROC_PIDTBSDINFO) } {
        return Some(Facts {
            name: comm(&info.pbi_comm),
            parent: Some(info.pbi_ppid),
            started: start_micros(info.pbi_start_tvsec, info.pbi_start_tvusec),
        });
    }
    // SAFETY: `proc_bsdshortinfo` is what `PROC_PIDT_SHORTBSDINFO` writes; it holds integers
    // and `c_char` arrays only, so all zero is a valid value.
    let info = unsafe { pid_info::<libc::proc_bsdshortinfo>(raw, libc::PROC_PIDT_SHORTBSDINFO) }?;
    Some(Facts {
        name: comm(&info.pbsi_comm),
        parent: Some(info.pbsi_ppid),
        started: None,
    })
}

/// The start time as microseconds since the Unix epoch.
fn start_micros(seconds: u64, micros: u64) -> Option<u64> {
    seconds.checked_mul(1_000_000)?.checked_add(micros)
}

/// A NUL-terminated (or full) `c_char` array as text.
fn comm(raw: &[c_char]) -> String {
    let bytes: Vec<u8> = raw
        .iter()
        .map(|c| c.to_ne_bytes()[0])
        .take_while(|b| *b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{SystemTime, UNIX_EPOCH};

    #[test]
    fn own_start_time_is_microseconds_since_the_epoch_and_recent() {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let now = u64::try_from(now.as_micros()).unwrap();
        let started = facts(std::process::id()).unwrap().started.unwrap();
        assert!(started <= now, "{started} > {now}");
        assert!(
            now - started < 3_600_000_000,
            "started an hour ago or more: {started}"
        );
    }

    #[test]
    fn another_users_process_still_has_a_name_and_parent() {
        // launchd: PID 1, owned by root, its parent is the kernel.
        let launchd = facts(1).unwrap();
        assert_eq!(launchd.name, "launchd");
        assert_eq!(launchd.parent, Some(0));
        if !nix::unistd::geteuid().is_root() {
            assert_eq!(
                launchd.started, None,
                "the kernel keeps it from other users"
            );
        }
    }

    #[test]
    fn the_kernel_and_impossible_pids_have_no_facts() {
        assert_eq!(facts(0), None);
        assert_eq!(facts(u32::MAX), None);
        assert_eq!(facts(999_999), None);
    }

    #[test]
    fn names_stop_at_the_first_nul() {
        let raw: Vec<c_char> = b"zsh\0junk"
            .iter()
            .map(|b| c_char::from_ne_bytes([*b]))
            .collect();
        assert_eq!(comm(&raw), "zsh");
        let full: Vec<c_char> = b"abc".iter().map(|b| c_char::from_ne_bytes([*b])).collect();
        assert_eq!(comm(&full), "abc");
    }

    #[test]
    fn start_times_do_not_overflow() {
        assert_eq!(start_micros(2, 5), Some(2_000_005));
        assert_eq!(start_micros(u64::MAX, 0), None);
    }
}
