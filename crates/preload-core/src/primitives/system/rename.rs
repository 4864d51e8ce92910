//! `renameat2(2)`: a rename that refuses to replace, or that exchanges two names, made as the
//! system call itself (glibc has a wrapper for it, musl has none).

use std::io;
use std::path::Path;

/// How [`rename_with`] renames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rename {
    /// Fail with `AlreadyExists` when the new name is taken.
    NoReplace,
    /// Swap the two names, both of which must exist.
    Exchange,
}

/// Whether [`rename_with`] can rename atomically here: `renameat2` is a Linux system call.
pub const HAS_RENAMEAT2: bool = cfg!(target_os = "linux");

/// `renameat2` with [`Rename::NoReplace`] or [`Rename::Exchange`], made as the system call
/// itself: glibc has a wrapper for it, musl has none. Elsewhere ([`HAS_RENAMEAT2`]) it fails
/// with `ENOSYS`, and a file system without the flag fails with `EINVAL` ([`is_unsupported`]).
#[cfg(target_os = "linux")]
pub fn rename_with(from: &Path, to: &Path, how: Rename) -> io::Result<()> {
    use nix::libc;
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c_path = |path: &Path| CString::new(path.as_os_str().as_bytes()).map_err(io::Error::from);
    let (from, to) = (c_path(from)?, c_path(to)?);
    let flags = match how {
        Rename::NoReplace => libc::RENAME_NOREPLACE,
        Rename::Exchange => libc::RENAME_EXCHANGE,
    };
    // SAFETY: both names are NUL-terminated strings that outlive the call, which only reads
    // them; the other arguments are plain integers.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            flags,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// See the Linux version.
#[cfg(not(target_os = "linux"))]
pub fn rename_with(_from: &Path, _to: &Path, _how: Rename) -> io::Result<()> {
    Err(io::Error::from_raw_os_error(nix::libc::ENOSYS))
}

/// True for the errors of a [`rename_with`] the system or the file system cannot do.
pub fn is_unsupported(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(code) if code == nix::libc::EINVAL || code == nix::libc::ENOSYS
            || code == nix::libc::EOPNOTSUPP
    )
}
