//! The process's two heaps. Rust's allocations go to jemalloc (per-thread
//! caches, no lock shared by the request threads); glibc's malloc serves
//! the C and C++ libraries (CTranslate2, oneMKL, oneDNN), set to one arena
//! that keeps CTranslate2's freed tensors for reuse
//! (`clipforge_actors::media::heap`). One glibc arena for every thread
//! instead made the API 15–20 % slower (measured with `make bench-api`);
//! mimalloc for Rust kept 571 MB after 100,000 accounts were passivated
//! (target < 500 MB).

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Gives both heaps' free pages back to the system: jemalloc's dirty and
/// muzzy pages of every arena, and glibc's (`malloc_trim`).
pub fn release() {
    // MALLCTL_ARENAS_ALL: every arena.
    const PURGE_ALL: &[u8] = b"arena.4096.purge\0";
    // SAFETY: a mallctl that takes and returns nothing.
    unsafe {
        tikv_jemalloc_sys::mallctl(
            PURGE_ALL.as_ptr().cast(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        );
    }
    clipforge_actors::media::heap::release();
}
