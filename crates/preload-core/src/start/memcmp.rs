//! The byte comparison of a musl build: `memcmp` (and `bcmp`), eight bytes at a time.
//!
//! musl's `memcmp` is a C loop over single bytes, and every ordering or equality test of byte
//! slices and strings in Rust ends in it (`Ord` and `PartialEq` of `[u8]` and `str`: sorting
//! session names and file paths, the state's map keys, comparing a state with its copy). With
//! 10,000 sessions it was a third of SessionStart's instructions on `startup`, and a third of a
//! `Bash ls` on the large state. This one reads both sides a word at a time and, at the first
//! word that differs, orders them by that word read big-endian, which is the order of its
//! first differing byte. The result has the sign C's `memcmp` gives.
//!
//! Other builds keep their C library's (glibc's and macOS's are vectorised).

use std::ffi::c_int;

/// How the `len` bytes at `left` compare with the `len` bytes at `right`: negative, zero or
/// positive as the first byte that differs is smaller on the left, none differs, or it is
/// larger.
///
/// # Safety
///
/// `left` and `right` are valid for reads of `len` bytes.
pub unsafe fn compare(left: *const u8, right: *const u8, len: usize) -> c_int {
    const WORD: usize = size_of::<u64>();
    let mut at = 0;
    while at + WORD <= len {
        // SAFETY: `at + WORD <= len`, and both sides are valid for `len` bytes (the
        // contract); unaligned reads of plain bytes.
        let (mine, theirs) = unsafe {
            (
                left.add(at).cast::<u64>().read_unaligned(),
                right.add(at).cast::<u64>().read_unaligned(),
            )
        };
        if mine != theirs {
            // Big-endian, the first byte in memory is the most significant.
            return if u64::from_be(mine) < u64::from_be(theirs) {
                -1
            } else {
                1
            };
        }
        at += WORD;
    }
    while at < len {
        // SAFETY: `at < len` (the contract).
        let (mine, theirs) = unsafe { (*left.add(at), *right.add(at)) };
        if mine != theirs {
            return c_int::from(mine) - c_int::from(theirs);
        }
        at += 1;
    }
    0
}

/// The C library's `memcmp`, replaced in a musl build.
///
/// # Safety
///
/// As [`compare`].
#[cfg(target_env = "musl")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcmp(left: *const u8, right: *const u8, len: usize) -> c_int {
    // SAFETY: the caller's contract is `compare`'s.
    unsafe { compare(left, right, len) }
}

/// The C library's `bcmp` (equality only; the compiler calls it for `==` of slices), replaced
/// in a musl build: musl's calls its `memcmp`.
///
/// # Safety
///
/// As [`compare`].
#[cfg(target_env = "musl")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bcmp(left: *const u8, right: *const u8, len: usize) -> c_int {
    // SAFETY: the caller's contract is `compare`'s.
    unsafe { compare(left, right, len) }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    fn order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        let n = a.len().min(b.len());
        // SAFETY: both slices hold at least `n` bytes.
        let c = unsafe { super::compare(a.as_ptr(), b.as_ptr(), n) };
        c.cmp(&0).then(a.len().cmp(&b.len()))
    }

    proptest! {
        /// Slices that share a prefix (as session names and paths do) and then differ in a
        /// byte or in length, at every offset within and across words.
        #[test]
        fn orders_as_slices_do(
            prefix in proptest::collection::vec(any::<u8>(), 0..40),
            a in proptest::collection::vec(any::<u8>(), 0..20),
            b in proptest::collection::vec(any::<u8>(), 0..20),
        ) {
            let x = [prefix.as_slice(), &a].concat();
            let y = [prefix.as_slice(), &b].concat();
            prop_assert_eq!(order(&x, &y), x.cmp(&y));
            prop_assert_eq!(order(&y, &x), y.cmp(&x));
            prop_assert_eq!(order(&x, &x), std::cmp::Ordering::Equal);
        }
    }
}
