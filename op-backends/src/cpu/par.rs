//! How a `cpu` kernel splits its work over threads: [`for_each_chunk`], the one helper, public
//! for kernel authors. Owns the partition of an output into chunks and where the chunks run;
//! must not know any op or instruction set, and never lets the thread count move a chunk
//! boundary (so an exact op, and a reduction whose partial results are combined in a fixed
//! order, gives the same bits on any number of threads).
//!
//! The chunks of `len` elements with grain `g` are `count = clamp(len / g, 1, MAX_CHUNKS)`
//! contiguous ranges, the first `len % count` of them one element longer: a function of
//! `(len, g)` only. Where they run: when the kernel was called through dispatch (the backend sets
//! its pool for the call, [`CpuBackend::with_threads`]), on the calling thread and `threads - 1`
//! jobs of that pool, each taking the next chunk from a shared counter (so the caller never idles
//! while the pool's threads wake); else on the current rayon pool (the global one outside any
//! pool), split recursively with `rayon::join`. An output of at most `g` elements, or a pool of
//! one thread, runs on the calling thread, in chunk order, without touching rayon.
//!
//! [`CpuBackend::with_threads`]: super::CpuBackend::with_threads

use rayon::ThreadPool;
use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Most chunks one call creates (bounds the bookkeeping for huge outputs with a small grain;
/// chunks then grow above the grain).
pub const MAX_CHUNKS: usize = 1024;

/// Number of chunks [`for_each_chunk`] splits `len` elements into for `grain`:
/// `clamp(len / grain, 1, MAX_CHUNKS)` (a grain of 0 counts as 1). A function of
/// `(len, grain)` only.
#[inline]
pub fn chunk_count(len: usize, grain: usize) -> usize {
    (len / grain.max(1)).clamp(1, MAX_CHUNKS)
}

/// Start of chunk `c` of `count` chunks over `len` elements: the first `len % count` chunks
/// have `len / count + 1` elements, the rest `len / count`, so every chunk has at least
/// `grain` elements whenever `len >= grain`. `chunk_start(len, count, count) == len`; a
/// `count` of 0 counts as 1.
#[inline]
pub fn chunk_start(len: usize, count: usize, c: usize) -> usize {
    let count = count.max(1);
    let (base, extra) = (len / count, len % count);
    c * base + c.min(extra)
}

thread_local! {
    /// The pool of the CPU backend running a kernel on this thread (set by `run_in`).
    static POOL: RefCell<Option<Arc<ThreadPool>>> = const { RefCell::new(None) };
}

/// Runs `f` (a kernel, on the calling thread) with `pool` as the pool its
/// [`for_each_chunk`] calls split over. Nothing is handed to the pool unless a chunked call
/// is large enough to split, so a small call costs no thread hand-off.
pub fn run_in<R>(pool: &Arc<ThreadPool>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<ThreadPool>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            POOL.with(|p| *p.borrow_mut() = prev);
        }
    }
    let _restore = Restore(POOL.with(|p| p.borrow_mut().replace(pool.clone())));
    f()
}

/// The number of threads a [`for_each_chunk`] call made here would split over: the CPU
/// backend's pool during a kernel called through dispatch, else the current rayon pool's.
pub fn current_threads() -> usize {
    POOL.with(|p| p.borrow().as_ref().map(|p| p.current_num_threads())).unwrap_or_else(rayon::current_num_threads)
}

/// Runs `f(offset, chunk)` on the contiguous chunks of `out` described in the module doc
/// (each of at least `grain` elements unless `out` itself is shorter; `offset` is the chunk's
/// position in `out`), in parallel where the module doc says. Chunk boundaries are a function
/// of `(out.len(), grain)` only. Returns when every chunk is done; a panic in `f` propagates.
pub fn for_each_chunk<T: Send>(out: &mut [T], grain: usize, f: impl Fn(usize, &mut [T]) + Sync + Send) {
    let len = out.len();
    let count = chunk_count(len, grain);
    if len <= grain.max(1) || count == 1 {
        f(0, out);
        return;
    }
    let pool = POOL.with(|p| p.borrow().clone());
    let threads = pool.as_ref().map_or_else(rayon::current_num_threads, |p| p.current_num_threads());
    if threads <= 1 {
        let mut rest = out;
        for c in 0..count {
            let (start, end) = (chunk_start(len, count, c), chunk_start(len, count, c + 1));
            let (head, tail) = rest.split_at_mut(end - start);
            f(start, head);
            rest = tail;
        }
        return;
    }
    match pool {
        Some(pool) => shared(&pool, out, count, len, threads, &f),
        None => split(out, 0, 0, count, count, len, &f),
    }
}

/// The output's base pointer, shared by the threads of one [`shared`] call.
struct Base<T>(*mut T);
// SAFETY: the threads of a `shared` call write disjoint chunks through it (each chunk is claimed
// once), and `T: Send` lets the elements be written from another thread.
unsafe impl<T: Send> Sync for Base<T> {}

impl<T> Base<T> {
    /// The pointer (a method, so a closure captures the whole `Base`, not its `!Sync` field).
    fn ptr(&self) -> *mut T {
        self.0
    }
}

/// Runs the `count` chunks on the calling thread and `threads - 1` jobs of the backend's pool,
/// each taking the next unclaimed chunk from a shared counter until none is left. The caller
/// starts at once and the pool's threads join as they wake (a sleeping worker can take
/// milliseconds to wake on a VM: with the whole call handed to the pool, the caller idled and
/// the workers' late start cost up to half the speedup).
fn shared<T: Send, F: Fn(usize, &mut [T]) + Sync + Send>(
    pool: &ThreadPool,
    out: &mut [T],
    count: usize,
    len: usize,
    threads: usize,
    f: &F,
) {
    let next = AtomicUsize::new(0);
    let base = Base(out.as_mut_ptr());
    let work = || loop {
        let c = next.fetch_add(1, Ordering::Relaxed);
        if c >= count {
            break;
        }
        let (a, b) = (chunk_start(len, count, c), chunk_start(len, count, c + 1));
        // SAFETY: chunk `c` lies inside `out` (`chunk_start` is at most `len`), is claimed by
        // this thread alone, and does not overlap any other chunk; `out` outlives the scope.
        let chunk = unsafe { std::slice::from_raw_parts_mut(base.ptr().add(a), b - a) };
        f(a, chunk);
    };
    pool.in_place_scope(|s| {
        for _ in 1..threads.min(count) {
            s.spawn(|_| work());
        }
        work();
    });
}

/// Recursively halves the chunk range `[c0, c1)` of `count` chunks over `len` elements (`out`
/// holds exactly those chunks, starting at offset `off`) with `rayon::join`.
fn split<T: Send, F: Fn(usize, &mut [T]) + Sync + Send>(out: &mut [T], off: usize, c0: usize, c1: usize, count: usize, len: usize, f: &F) {
    if c1 - c0 <= 1 {
        f(off, out);
        return;
    }
    let mid = c0 + (c1 - c0) / 2;
    let at = chunk_start(len, count, mid);
    let (a, b) = out.split_at_mut(at - off);
    rayon::join(|| split(a, off, c0, mid, count, len, f), || split(b, at, mid, c1, count, len, f));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn pool(threads: usize) -> Arc<ThreadPool> {
        Arc::new(rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool"))
    }

    /// The chunks `(offset, len)` one call makes on `threads` threads (through `run_in`, as
    /// dispatch runs a kernel), after checking they cover the output exactly once.
    fn chunks(len: usize, grain: usize, threads: usize) -> Vec<(usize, usize)> {
        let seen = Mutex::new(Vec::new());
        let mut out = vec![0u8; len];
        run_in(&pool(threads), || {
            for_each_chunk(&mut out, grain, |off, c| {
                c.iter_mut().for_each(|v| *v += 1);
                seen.lock().unwrap_or_else(|p| p.into_inner()).push((off, c.len()));
            })
        });
        assert!(out.iter().all(|v| *v == 1), "len {len} grain {grain}: not covered exactly once");
        let mut v = seen.into_inner().unwrap_or_else(|p| p.into_inner());
        v.sort();
        v
    }

    #[test]
    fn the_partition_is_exact_and_does_not_depend_on_the_thread_count() {
        for len in [0usize, 1, 2, 15, 16, 17, 100, 1000, 4096, 65_537] {
            for grain in [0usize, 1, 7, 16, 1000, 4096] {
                let one = chunks(len, grain, 1);
                for t in [2, 3] {
                    assert_eq!(one, chunks(len, grain, t), "len {len} grain {grain} threads {t}");
                }
                let mut pos = 0;
                for &(off, l) in &one {
                    assert_eq!(off, pos);
                    pos += l;
                    if len >= grain.max(1) {
                        assert!(l >= grain, "len {len} grain {grain}: chunk of {l}");
                    }
                }
                assert_eq!(pos, len);
                assert!(one.len() <= MAX_CHUNKS);
                if len > grain.max(1) {
                    let c = chunk_count(len, grain);
                    assert_eq!(one.len(), c);
                    for (i, &(off, _)) in one.iter().enumerate() {
                        assert_eq!(off, chunk_start(len, c, i));
                    }
                }
            }
        }
        // Huge outputs stop at MAX_CHUNKS chunks.
        assert_eq!(chunk_count(1 << 30, 1), MAX_CHUNKS);
    }

    #[test]
    fn small_outputs_and_one_thread_pools_run_on_the_calling_thread() {
        let me = std::thread::current().id();
        let seen = Mutex::new(Vec::new());
        let record = |_: usize, _: &mut [f32]| seen.lock().unwrap_or_else(|p| p.into_inner()).push(std::thread::current().id());
        let mut small = [0f32; 16];
        run_in(&pool(2), || for_each_chunk(&mut small, 16, record));
        let mut big = vec![0f32; 64];
        run_in(&pool(1), || for_each_chunk(&mut big, 4, record));
        let seen = seen.into_inner().unwrap_or_else(|p| p.into_inner());
        assert_eq!(seen.len(), 1 + 16);
        assert!(seen.iter().all(|t| *t == me));
    }

    #[test]
    fn a_split_call_runs_on_the_caller_and_the_backends_pool_and_the_setting_ends_with_the_call() {
        let p = pool(2);
        let me = std::thread::current().id();
        let (mine, workers) = (Mutex::new(0usize), Mutex::new(0usize));
        let mut big = vec![0f32; 4096];
        run_in(&p, || {
            assert_eq!(current_threads(), 2);
            for_each_chunk(&mut big, 4, |_, c| {
                // Slow enough chunks that the pool's thread wakes before the caller is done.
                std::thread::sleep(std::time::Duration::from_micros(200));
                c.iter_mut().for_each(|v| *v += 1.0);
                if std::thread::current().id() == me {
                    *mine.lock().unwrap_or_else(|e| e.into_inner()) += 1;
                } else if rayon::current_num_threads() == 2 && rayon::current_thread_index().is_some() {
                    *workers.lock().unwrap_or_else(|e| e.into_inner()) += 1;
                }
            })
        });
        let (mine, workers) =
            (mine.into_inner().unwrap_or_else(|e| e.into_inner()), workers.into_inner().unwrap_or_else(|e| e.into_inner()));
        assert_eq!(mine + workers, chunk_count(4096, 4), "every chunk once, on the caller or the pool");
        assert!(mine > 0 && workers > 0, "both took chunks: caller {mine}, pool {workers}");
        assert!(big.iter().all(|v| *v == 1.0));
        assert_eq!(current_threads(), rayon::current_num_threads(), "no pool left set after the call");
    }

    #[test]
    fn a_panicking_chunk_reaches_the_caller_after_the_other_chunks_ran() {
        let p = pool(2);
        let done = AtomicUsize::new(0);
        let mut big = vec![0u8; 1000];
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_in(&p, || {
                for_each_chunk(&mut big, 10, |off, _| {
                    if off == 500 {
                        panic!("chunk at 500");
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                })
            })
        }));
        assert!(r.is_err(), "the panic propagates to the caller");
        assert!(done.load(Ordering::Relaxed) >= 1, "the other chunks are not lost with the pool");
    }
}
