//! The allocator of a musl build (the Linux release binaries): dlmalloc, behind a spin lock.
//!
//! musl's own allocator maps and unmaps memory for blocks a hook frees and asks again for
//! (about 80 `mmap` and `munmap` in one `preload-overflow` call, against 5 with dlmalloc). The
//! dlmalloc crate's global instance takes a pthread mutex around every call, which musl makes
//! a function call each way: on a large state, whose calls allocate tens of thousands of
//! times, a tenth of a call's instructions. A hook process runs on one thread, so the lock is
//! never contended; an atomic flag keeps the heap safe should a thread ever share it.
//!
//! Part of the one module allowed `unsafe` ([`super`]).

use std::alloc::{GlobalAlloc, Layout};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};

use dlmalloc::Dlmalloc;

/// The process's allocator.
#[global_allocator]
static ALLOCATOR: Allocator = Allocator {
    locked: AtomicBool::new(false),
    heap: UnsafeCell::new(Dlmalloc::new()),
};

/// dlmalloc's heap and the flag that guards it.
struct Allocator {
    locked: AtomicBool,
    heap: UnsafeCell<Dlmalloc>,
}

// SAFETY: the heap is only reached through `with`, which holds `locked` for the whole time a
// reference to it lives.
unsafe impl Sync for Allocator {}

impl Allocator {
    /// Run `f` on the heap, alone.
    fn with<T>(&self, f: impl FnOnce(&mut Dlmalloc) -> T) -> T {
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        // SAFETY: `locked` is held, so no other reference to the heap exists until it is let
        // go below.
        let out = f(unsafe { &mut *self.heap.get() });
        self.locked.store(false, Ordering::Release);
        out
    }
}

// SAFETY: each method hands the layout's size and alignment (and, to free or grow, a block
// this allocator gave out with that layout) to the dlmalloc call of the same meaning, which
// returns a block of at least that size and alignment or null.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl.
        self.with(|heap| unsafe { heap.malloc(layout.size(), layout.align()) })
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: see the impl.
        self.with(|heap| unsafe { heap.free(ptr, layout.size(), layout.align()) });
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl.
        self.with(|heap| unsafe { heap.calloc(layout.size(), layout.align()) })
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: see the impl.
        self.with(|heap| unsafe { heap.realloc(ptr, layout.size(), layout.align(), new_size) })
    }
}
