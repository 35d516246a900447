//! Host buffers for tensor storage and `cpu` kernel outputs, at memory speed when large: new
//! large buffers are advised for transparent huge pages before anything touches them, and the
//! buffers of dropped large host tensors are kept in a bounded pool and handed out again. Owns
//! the advice and the pool; must not change what a buffer holds where the caller can read it
//! (a pooled buffer comes back empty, zeroed, or, from [`for_overwrite`] only, holding
//! initialised values the caller overwrites), nor keep more than the pool's limit.
//!
//! Why: a fresh 64 MB output (16M f32) is mapped by the OS as the kernel first writes it; at
//! 4 KiB per page fault that is 16k faults per call, and their system time was three to four
//! times the kernel's own (exp at 16M ran at 0.72x numpy). Linux maps a range marked
//! `MADV_HUGEPAGE` with 2 MiB pages where the THP setting is `always` or `madvise`
//! (`/sys/kernel/mm/transparent_hugepage/enabled`; with `never`, or on other systems, the advice
//! does nothing): 32 faults instead of 16k. The OS still zeroes every new page, which costs
//! about as much as the kernel's own pass over the output; a buffer that was mapped before
//! costs nothing, hence the pool.
//!
//! The pool: when a host `Tensor` whose storage is at least
//! [`HUGE_PAGE_MIN_BYTES`] is dropped, its vector is kept (oldest evicted first, at most
//! [`pool_limit`] bytes in all: 256 MiB, or 1/16 of the host's memory if less; see
//! [`set_pool_limit`]); a request for a large buffer of the same element type takes the
//! smallest kept one that holds it with at most a quarter to spare. Smaller buffers go to the
//! allocator as usual.
//!
//! A kernel author gets all this by allocating outputs with [`with_capacity`], [`zeroed`] or
//! [`for_overwrite`] (public as `op_runtime::cpu::hostmem`) instead of
//! `Vec::with_capacity` / `vec![0.0; n]`; the built-ins' kernels and the tensor constructors do.

use std::any::Any;
use std::collections::VecDeque;
use std::sync::Mutex;

/// Buffers of at least this many bytes are advised and pooled (smaller ones would gain at most
/// one huge page and pay a system call, and are cheap to allocate).
pub const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;

/// The host's physical memory in bytes (Linux: `MemTotal` of `/proc/meminfo`), read once;
/// `None` where it cannot be read.
pub fn host_memory() -> Option<u64> {
    static MEM: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *MEM.get_or_init(|| {
        let text = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        kib.checked_mul(1024)
    })
}

/// The default pool limit: 256 MiB, or 1/16 of the host's physical memory if that is less.
fn default_limit() -> usize {
    let mem = host_memory().map_or(usize::MAX, |m| usize::try_from(m / 16).unwrap_or(usize::MAX));
    (256usize << 20).min(mem)
}

/// A kept buffer: a `Vec<T>` (its length is how many elements were initialised), its capacity
/// in bytes.
struct Kept {
    vec: Box<dyn Any + Send>,
    bytes: usize,
}

/// The kept buffers, oldest first, their total bytes and the limit (`None`: the default).
struct Pool {
    kept: VecDeque<Kept>,
    bytes: usize,
    limit: Option<usize>,
}

static POOL: Mutex<Pool> = Mutex::new(Pool { kept: VecDeque::new(), bytes: 0, limit: None });

fn pool() -> std::sync::MutexGuard<'static, Pool> {
    // A panic while holding the lock leaves a consistent pool (every update is one push or
    // remove with its byte count), so a poisoned lock is used as is.
    POOL.lock().unwrap_or_else(|p| p.into_inner())
}

/// The most bytes the pool keeps.
pub fn pool_limit() -> usize {
    pool().limit.unwrap_or_else(default_limit)
}

/// Sets the most bytes the pool keeps (0 turns pooling off), freeing the oldest kept buffers
/// beyond it.
pub fn set_pool_limit(bytes: usize) {
    let evicted = {
        let mut p = pool();
        p.limit = Some(bytes);
        evict(&mut p, bytes)
    };
    drop(evicted);
}

/// Bytes the pool keeps now.
pub fn pooled_bytes() -> usize {
    pool().bytes
}

/// Frees every kept buffer.
pub fn clear_pool() {
    let evicted = {
        let mut p = pool();
        p.bytes = 0;
        std::mem::take(&mut p.kept)
    };
    drop(evicted);
}

/// Removes the oldest kept buffers until at most `limit` bytes remain; returns them, to be
/// freed after the lock is released.
fn evict(p: &mut Pool, limit: usize) -> Vec<Kept> {
    let mut out = Vec::new();
    while p.bytes > limit {
        let Some(k) = p.kept.pop_front() else { break };
        p.bytes -= k.bytes;
        out.push(k);
    }
    out
}

/// Keeps `v` for reuse if it is large enough and fits under the limit (evicting the oldest
/// kept buffers to make room); otherwise it is simply freed.
pub fn keep<T: Send + 'static>(v: Vec<T>) {
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < HUGE_PAGE_MIN_BYTES {
        return;
    }
    let evicted = {
        let mut p = pool();
        let limit = p.limit.unwrap_or_else(default_limit);
        if bytes > limit {
            return;
        }
        let evicted = evict(&mut p, limit - bytes);
        p.bytes += bytes;
        p.kept.push_back(Kept { vec: Box::new(v), bytes });
        evicted
    };
    drop(evicted);
}

/// The smallest kept `Vec<T>` with room for `n` elements and at most `n / 4` to spare, the most
/// recently kept among equals (its lines are the likeliest still in cache: taking the oldest
/// would cycle a loop's outputs through every kept buffer, each write a cache miss), taken out
/// of the pool, with its length (the elements its last owner initialised) unchanged.
fn take<T: Send + 'static>(n: usize) -> Option<Vec<T>> {
    let size = std::mem::size_of::<T>();
    let bytes = n.checked_mul(size)?;
    if bytes < HUGE_PAGE_MIN_BYTES {
        return None;
    }
    let mut p = pool();
    let best = p
        .kept
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, k)| k.bytes >= bytes && k.bytes - bytes <= bytes / 4 && k.vec.is::<Vec<T>>())
        .min_by_key(|(_, k)| k.bytes)
        .map(|(i, _)| i)?;
    let k = p.kept.remove(best)?;
    p.bytes -= k.bytes;
    drop(p);
    k.vec.downcast::<Vec<T>>().ok().map(|b| *b)
}

/// A pooled vector of length 0 with room for `n` elements, for the tensor constructors'
/// fallible allocation (`None`: nothing suitable is kept).
pub fn take_empty<T: Send + 'static>(n: usize) -> Option<Vec<T>> {
    let mut v = take::<T>(n)?;
    v.clear();
    Some(v)
}

/// A vector of length 0 with room for at least `n` elements (as `Vec::with_capacity`): a kept
/// buffer if a suitable one is pooled, else a new allocation advised for huge pages when large.
/// Write the elements (`spare_capacity_mut` then `set_len`, or `push`/`extend`) before reading
/// them, as with any `Vec`. Panics, as `Vec::with_capacity` does, where allocation fails.
pub fn with_capacity<T: Send + 'static>(n: usize) -> Vec<T> {
    if let Some(v) = take_empty(n) {
        return v;
    }
    let mut v = Vec::with_capacity(n);
    advise(&mut v);
    v
}

/// `n` zero elements (all bits zero): a kept buffer zeroed, or a new one allocated zeroed (the
/// OS zeroes fresh pages, so a large one costs no pass of writes) and advised for huge pages
/// before its first write.
pub fn zeroed<T: bytemuck::Zeroable + Send + 'static>(n: usize) -> Vec<T> {
    if let Some(mut v) = take_empty::<T>(n) {
        // SAFETY: the vector has room for `n` elements (`take`), and all-zero bits are a valid
        // `T` (`Zeroable`), so all `n` are initialised before the length says so.
        unsafe {
            std::ptr::write_bytes(v.as_mut_ptr(), 0, n);
            v.set_len(n);
        }
        return v;
    }
    let mut v = bytemuck::zeroed_vec::<T>(n);
    advise(&mut v);
    v
}

/// `n` elements of unspecified values, for a kernel that overwrites every one of them: a kept
/// buffer holding what its last owner (a dropped tensor) wrote, or a new zeroed one as
/// [`zeroed`] gives. Never uninitialised memory (`T: Pod`: every bit pattern is a value; where
/// the kept buffer's last owner initialised fewer than `n` elements, the rest are zeroed), but
/// an element the kernel does not write keeps whatever was there: use [`zeroed`] unless every
/// element is written. The cheapest large output: neither page faults nor a zeroing pass.
pub fn for_overwrite<T: bytemuck::Pod + Send + 'static>(n: usize) -> Vec<T> {
    let Some(mut v) = take::<T>(n) else { return zeroed(n) };
    let init = v.len().min(n);
    // SAFETY: room for `n` elements (`take`); the first `init` were initialised by the last
    // owner (its length), the rest are zeroed here, and zero bits are a valid `T` (`Pod`).
    unsafe {
        std::ptr::write_bytes(v.as_mut_ptr().add(init), 0, n - init);
        v.set_len(n);
    }
    v
}

/// Advises the whole pages inside `v`'s allocation for transparent huge pages (Linux; a no-op
/// elsewhere, for zero-sized types, and for allocations under [`HUGE_PAGE_MIN_BYTES`]). Never
/// changes the contents: `MADV_HUGEPAGE` only lets the OS back the range with 2 MiB pages
/// (faulted in zeroed, or collapsed from the existing 4 KiB ones). Errors are ignored: the
/// advice is an optimisation (refused, e.g., where THP is compiled out).
pub fn advise<T>(v: &mut Vec<T>) {
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < HUGE_PAGE_MIN_BYTES {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = v.as_mut_ptr() as usize;
        let (lo, hi) = (start.next_multiple_of(PAGE), (start + bytes) / PAGE * PAGE);
        if hi > lo {
            // SAFETY: `[lo, hi)` is whole pages inside the vector's own allocation (rounded
            // inwards), and MADV_HUGEPAGE neither reads nor writes memory.
            let _ = unsafe { rustix::mm::madvise(lo as *mut std::ffi::c_void, hi - lo, rustix::mm::Advice::LinuxHugepage) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An element type no other code pools, so that tests running in parallel with these (the
    /// pool is one per process) cannot take or add buffers of it.
    #[derive(Clone, Copy, Debug, PartialEq)]
    #[repr(transparent)]
    struct Mark(u32);
    // SAFETY: a transparent u32: every bit pattern is a value, zero included.
    unsafe impl bytemuck::Zeroable for Mark {}
    // SAFETY: as above; `Copy`, no padding.
    unsafe impl bytemuck::Pod for Mark {}

    /// Kept buffers of `Mark`: how many, and their bytes.
    fn kept_marks() -> (usize, usize) {
        let p = pool();
        let k: Vec<&Kept> = p.kept.iter().filter(|k| k.vec.is::<Vec<Mark>>()).collect();
        (k.len(), k.iter().map(|k| k.bytes).sum())
    }

    /// Tests that change the limit run one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn serial() -> std::sync::MutexGuard<'static, ()> {
        SERIAL.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Elements of the smallest pooled buffer of 4-byte elements.
    const BIG: usize = HUGE_PAGE_MIN_BYTES / 4;

    #[test]
    fn buffers_are_what_vec_would_give() {
        for n in [0usize, 1, 1000, BIG + 3, 3 << 20] {
            let v: Vec<f32> = with_capacity(n);
            assert_eq!((v.len(), v.capacity() >= n), (0, true));
            let z: Vec<f64> = zeroed(n);
            assert_eq!(z.len(), n);
            assert!(z.iter().all(|x| x.to_bits() == 0), "zeroed means all bits zero");
            let o: Vec<Mark> = for_overwrite(n);
            assert_eq!(o.len(), n);
        }
        assert!(with_capacity::<()>(1 << 30).is_empty(), "zero-sized types allocate nothing");
    }

    #[test]
    fn kept_buffers_come_back_empty_zeroed_or_initialised_never_of_another_type_or_size() {
        let _s = serial();
        let n = 2 * BIG;
        keep(vec![Mark(9); n]);
        assert_eq!(kept_marks(), (1, 4 * n));
        assert!(take_empty::<Mark>(4 * n).is_none(), "too small");
        assert!(take_empty::<Mark>(BIG).is_none(), "more than a quarter to spare");
        let _other_type = take_empty::<u32>(n);
        assert_eq!(kept_marks().0, 1, "a request for another element type never takes it");
        let o: Vec<Mark> = for_overwrite(n);
        assert!(o.iter().all(|x| *x == Mark(9)), "for_overwrite: what the last owner wrote");
        keep(o);
        let z: Vec<Mark> = zeroed(n);
        assert!(z.iter().all(|x| *x == Mark(0)));
        keep(z);
        let v: Vec<Mark> = with_capacity(n);
        assert!(v.is_empty());
        drop(v);
        assert_eq!(kept_marks(), (0, 0), "a plain Vec dropped is freed, not kept");
        // Elements the last owner never initialised are zeroed, not exposed.
        let mut part: Vec<Mark> = Vec::with_capacity(n);
        part.resize(BIG, Mark(3));
        keep(part);
        let o: Vec<Mark> = for_overwrite(n);
        assert!(o[..BIG].iter().all(|x| *x == Mark(3)) && o[BIG..].iter().all(|x| *x == Mark(0)));
    }

    #[test]
    fn among_equal_buffers_the_most_recently_kept_comes_back_first() {
        let _s = serial();
        while take_empty::<Mark>(BIG).is_some() {}
        for i in 0..3 {
            keep(vec![Mark(10 + i); BIG]);
        }
        for want in [12, 11, 10] {
            let o: Vec<Mark> = for_overwrite(BIG);
            assert!(o.iter().all(|x| x.0 == want), "want the buffer marked {want}, got {}", o[0].0);
        }
        // A loop that keeps its output and asks again reuses that one buffer.
        keep(vec![Mark(20); BIG]);
        keep(vec![Mark(21); BIG]);
        for _ in 0..3 {
            let o: Vec<Mark> = for_overwrite(BIG);
            assert_eq!(o[0], Mark(21));
            keep(o);
        }
        while take_empty::<Mark>(BIG).is_some() {}
    }

    #[test]
    fn the_pool_keeps_at_most_its_limit_evicting_the_oldest() {
        let _s = serial();
        let before = pool_limit();
        set_pool_limit(3 * 4 * BIG);
        for i in 0..5 {
            keep(vec![Mark(i); BIG]);
        }
        assert!(pooled_bytes() <= 3 * 4 * BIG);
        let newest: Vec<Mark> = for_overwrite(BIG);
        assert!(newest.iter().all(|x| x.0 >= 2), "the oldest were evicted first");
        keep(vec![Mark(0); 16 * BIG]);
        assert!(kept_marks().1 <= 3 * 4 * BIG, "a buffer over the limit is freed, not kept");
        set_pool_limit(0);
        assert_eq!(pooled_bytes(), 0);
        keep(vec![Mark(1); BIG]);
        assert_eq!(kept_marks(), (0, 0), "limit 0: pooling off");
        set_pool_limit(before);
    }

    #[test]
    fn threads_keeping_and_taking_at_once_lose_no_buffer_and_share_none() {
        let _s = serial();
        std::thread::scope(|s| {
            for t in 0..4u32 {
                s.spawn(move || {
                    for i in 0..20u32 {
                        let mut v: Vec<Mark> = with_capacity(BIG);
                        let mark = Mark(t * 100 + i);
                        v.resize(BIG, mark);
                        std::thread::yield_now();
                        assert!(v.iter().all(|x| *x == mark), "no other thread wrote the buffer this one owns");
                        keep(v);
                    }
                });
            }
        });
        let (count, bytes) = kept_marks();
        assert!((1..=4).contains(&count), "at most one buffer per thread was ever needed ({count} kept)");
        assert_eq!(bytes, count * 4 * BIG);
        while take_empty::<Mark>(BIG).is_some() {}
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_new_large_buffer_is_marked_for_huge_pages_where_the_os_offers_them() {
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
        if !(thp.contains("[always]") || thp.contains("[madvise]")) {
            eprintln!("skipped: transparent huge pages are off here ({})", thp.trim());
            return;
        }
        let mut v: Vec<f32> = Vec::with_capacity(16 << 20);
        advise(&mut v);
        v.resize(16 << 20, 1.0);
        let mid = v.as_ptr() as usize + (32 << 20);
        // The mapping holding the buffer's middle carries the `hg` (VM_HUGEPAGE) flag.
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let (mut inside, mut flagged) = (false, false);
        for line in smaps.lines() {
            let range = line.split_once(' ').and_then(|(r, _)| r.split_once('-'));
            if let Some((a, b)) = range.and_then(|(a, b)| Some((usize::from_str_radix(a, 16).ok()?, usize::from_str_radix(b, 16).ok()?))) {
                inside = a <= mid && mid < b;
            } else if inside && line.starts_with("VmFlags:") {
                flagged = line.split_whitespace().any(|f| f == "hg");
            }
        }
        assert!(flagged, "the middle of a 64 MB buffer lies in a mapping advised MADV_HUGEPAGE");
    }
}
