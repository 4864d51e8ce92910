//! Searches for one byte, with the vector instructions every CPU of the target has (SSE2 on
//! x86-64, NEON on 64-bit Arm), chosen when the binary is built; and the equality of two byte
//! strings a word at a time.
//!
//! The `memchr` crate's own functions choose AVX2 at run time: the first search of a process
//! asks the CPU for its features with `cpuid`, and in a virtual machine each `cpuid` leaves for
//! the hypervisor (about 8 us each on the bench's VM: 0.1 ms for the first search, a quarter of
//! a SessionStart registration that reads its slice). A hook process is short, so that first
//! search costs more than all the others.

#[cfg(target_arch = "x86_64")]
use memchr::arch::x86_64::sse2::memchr::One as Vector;

#[cfg(target_arch = "aarch64")]
use memchr::arch::aarch64::neon::memchr::One as Vector;

use memchr::arch::all::memchr::One as Portable;

/// A finder of one byte: the target's vectors, else the portable routine.
enum Finder {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    Vector(Vector),
    Portable(Portable),
}

impl Finder {
    fn new(needle: u8) -> Self {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        if let Some(vector) = Vector::new(needle) {
            return Self::Vector(vector);
        }
        Self::Portable(Portable::new(needle))
    }

    fn find(&self, haystack: &[u8]) -> Option<usize> {
        match self {
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            Self::Vector(v) => v.find(haystack),
            Self::Portable(p) => p.find(haystack),
        }
    }

    fn rfind(&self, haystack: &[u8]) -> Option<usize> {
        match self {
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            Self::Vector(v) => v.rfind(haystack),
            Self::Portable(p) => p.rfind(haystack),
        }
    }
}

/// The first `needle` in `haystack`.
pub fn find(needle: u8, haystack: &[u8]) -> Option<usize> {
    Finder::new(needle).find(haystack)
}

/// The last `needle` in `haystack`.
pub fn rfind(needle: u8, haystack: &[u8]) -> Option<usize> {
    Finder::new(needle).rfind(haystack)
}

/// Every `needle` in `haystack`, front to back.
pub fn find_iter(needle: u8, haystack: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let finder = Finder::new(needle);
    let mut at = 0;
    std::iter::from_fn(move || {
        let found = at + finder.find(haystack.get(at..)?)?;
        at = found + 1;
        Some(found)
    })
}

/// Whether `haystack` holds `needle`: its first capital letter (else its first byte) searched
/// for with [`find_iter`], the whole needle checked where it stands. A state's keys are
/// camelCase and its text is mostly lower-case paths, so the capital is rare there: a 346 KB
/// state is searched for a key in a few thousand instructions, where the standard library's
/// substring search takes hundreds of thousands.
pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    let Some(anchor) = needle
        .iter()
        .position(u8::is_ascii_uppercase)
        .or((!needle.is_empty()).then_some(0))
    else {
        return true;
    };
    find_iter(needle[anchor], haystack).any(|at| {
        at.checked_sub(anchor)
            .and_then(|start| haystack.get(start..start + needle.len()))
            .is_some_and(|candidate| same(candidate, needle))
    })
}

/// Whether `a` and `b` hold the same bytes, compared eight at a time. The equality of slices
/// and strings ends in the C library's `memcmp`, which musl (the Linux release binaries) runs a
/// byte at a time: for a state's 300 KB text, or its 5,000 paths compared with a copy, that was
/// a fifth of a call. Inlined where it is called: a search of thousands of paths calls it once
/// a path, and most of them differ in length (called instead, a large state's search took
/// twice the instructions).
#[inline]
pub fn same(a: &[u8], b: &[u8]) -> bool {
    const WORD: usize = 8;
    if a.len() != b.len() {
        return false;
    }
    let word = |chunk: &[u8]| <[u8; WORD]>::try_from(chunk).map_or(0, u64::from_ne_bytes);
    let (words_a, words_b) = (a.chunks_exact(WORD), b.chunks_exact(WORD));
    let tails = words_a.remainder().iter().eq(words_b.remainder());
    tails && words_a.zip(words_b).all(|(x, y)| word(x) == word(y))
}

#[cfg(test)]
mod tests;
