//! `media::heap::configure`: a large block freed by a worker thread (as
//! CTranslate2's are) is reused by the next one instead of being unmapped
//! and faulted in afresh. Runs as its own `main` (Cargo.toml: `harness =
//! false`) so the heap is set up before any other thread exists, as in the
//! binary.

use clipforge_actors::media::heap;

const BLOCK: usize = 96 << 20;
const PAGE: usize = 4096;

/// Minor page faults of the calling thread so far.
fn faults() -> i64 {
    // SAFETY: getrusage fills the struct it is given.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut u);
        u.ru_minflt
    }
}

/// Allocates a block, writes every page, frees it; the faults it took and
/// the bytes malloc had mapped on its own for it meanwhile.
fn round() -> (i64, usize) {
    let before = faults();
    let mut block = vec![0u8; BLOCK];
    for i in (0..BLOCK).step_by(PAGE) {
        block[i] = 1;
    }
    // SAFETY: mallinfo2 only reads malloc's counters.
    let mapped = unsafe { libc::mallinfo2() }.hblkhd;
    std::hint::black_box(&block);
    drop(block);
    (faults() - before, mapped)
}

fn main() {
    heap::configure();
    let rounds = std::thread::spawn(|| (0..3).map(|_| round()).collect::<Vec<_>>())
        .join()
        .expect("the worker thread");
    let pages = (BLOCK / PAGE) as i64;
    println!("{pages} pages a block; faults and mmapped bytes per round: {rounds:?}");
    for (i, &(_, mapped)) in rounds.iter().enumerate() {
        assert_eq!(mapped, 0, "round {i}: the block was mmapped on its own");
    }
    for (i, &(f, _)) in rounds.iter().enumerate().skip(1) {
        assert!(
            f < pages / 10,
            "round {i}: {f} page faults for {pages} pages: the freed block was not reused"
        );
    }
    heap::release();
    println!("ok: the block is reused");
}
