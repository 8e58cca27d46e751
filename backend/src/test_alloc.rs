//! Tests only: the global allocator of the library's test build counts, per thread, the bytes
//! live and the most that were live since the last [`reset_peak`]. A `#[tokio::test]` runs its
//! whole world (client, fake apiserver, server) on its own thread, so what it measures is its
//! own, whatever other tests do at the same time on other threads. Bytes allocated on one
//! thread and freed on another move both threads' counts (the first too high, the second too
//! low): a test that measures keeps its work on its own thread (a current-thread runtime, no
//! blocking pool).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

/// The system allocator, counting.
pub struct Counting;

fn add(bytes: isize) {
    // `try_with`: a thread being torn down has no counters left, and allocates nonetheless.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + bytes;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call is forwarded to the system allocator unchanged; only counters move.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as isize);
        // SAFETY: the caller's contract is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(-(layout.size() as isize));
        // SAFETY: the caller's contract is passed on as is.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as isize);
        // SAFETY: the caller's contract is passed on as is.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add(new_size as isize - layout.size() as isize);
        // SAFETY: the caller's contract is passed on as is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Bytes live on this thread now.
pub fn live() -> isize {
    LIVE.with(Cell::get)
}

/// Starts measuring the peak afresh from what is live now.
pub fn reset_peak() {
    PEAK.with(|peak| peak.set(live()));
}

/// The most bytes live on this thread since [`reset_peak`].
pub fn peak() -> isize {
    PEAK.with(Cell::get)
}
