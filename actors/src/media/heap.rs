//! The C heap (glibc's malloc), set up for CTranslate2.
//!
//! CTranslate2 allocates every intermediate tensor of the encoder and the
//! decoder afresh (through oneMKL's `mkl_malloc`, that is `malloc`), many of
//! them megabytes, the encoder's attention scores over 70 MB, on its own
//! worker threads. A thread other than the process's first allocates in an
//! arena of 64 MB heaps, which serves a block that large with its own
//! `mmap` and unmaps it when it is freed, so each such tensor costs fresh
//! zeroed pages from the kernel: transcribing the 10-minute bench talk took
//! 3.9 million page faults and 8.8 s of system time (faster-whisper, on the
//! same library, as many). [`configure`] gives every thread the main heap,
//! which grows by `brk`, with no `mmap` per block and no trimming on free,
//! so freed blocks are reused: the same transcription took 0.18 million
//! faults and 1.3 s of system time, at the same peak RSS.
//!
//! One arena is one lock: the binary's own (Rust) allocations go to
//! jemalloc instead (its `#[global_allocator]`, `src/allocator.rs`), so
//! glibc's malloc serves the C and C++ libraries only (CTranslate2, oneMKL,
//! oneDNN). Memory freed is given back only by [`release`] (`malloc_trim`,
//! which also returns free pages inside the heap): after a transcription
//! and on the node's idle sweeps. A setting given in glibc's own
//! environment variable (`MALLOC_ARENA_MAX`, `MALLOC_MMAP_MAX_`,
//! `MALLOC_TRIM_THRESHOLD_`) is left as given.

/// Applies the settings above. Call it first in `main`, before any thread
/// starts (a thread keeps the arena it first allocated in).
pub fn configure() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let settings = [
            ("MALLOC_ARENA_MAX", libc::M_ARENA_MAX, 1),
            ("MALLOC_MMAP_MAX_", libc::M_MMAP_MAX, 0),
            ("MALLOC_TRIM_THRESHOLD_", libc::M_TRIM_THRESHOLD, i32::MAX),
        ];
        for (env, param, value) in settings {
            if std::env::var_os(env).is_none() {
                // SAFETY: mallopt only changes malloc's parameters; it takes
                // the arena lock itself.
                unsafe { libc::mallopt(param, value) };
            }
        }
    }
}

/// Returns the C heap's free pages to the system (`malloc_trim`).
pub fn release() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}
