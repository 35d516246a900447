//! Software prefetch for the streaming map loops of [`simd`](super::simd) and
//! [`simd64`](super::simd64), and for the output tiles of the matmul kernel. Owns the prefetch
//! distance; must not read or write memory (a prefetch is a hint with no architectural effect).

/// How far ahead (in bytes) the map loops prefetch their inputs: on a machine whose large L3
/// holds the data (1M f32 elementwise), the loads of a compute-heavy kernel (tanh, log)
/// otherwise wait on L3 with few requests in flight. (Prefetching the output for writing as
/// well made some 16M runs twice as slow on the same machine; it is not done.)
const PREFETCH_BYTES: usize = 2048;

/// `_mm_prefetch`'s hints: into L1 (`_MM_HINT_T0`) and into L2 (`_MM_HINT_T1`).
const INTO_L1: i32 = 3;
const INTO_L2: i32 = 2;
#[cfg(target_arch = "x86_64")]
const _: () = assert!(INTO_L1 == std::arch::x86_64::_MM_HINT_T0 && INTO_L2 == std::arch::x86_64::_MM_HINT_T1);

/// Hints the cache line holding `p` into the cache level `HINT` names (never faults: any
/// address; a no-op off x86-64).
#[inline(always)]
fn hint<const HINT: i32, T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch has no architectural effect and cannot fault on any address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<HINT>(p as *const i8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Hints the cache line `PREFETCH_BYTES` past element `i` of `p` into L1 (never faults: the
/// address may lie past the end; a no-op off x86-64).
#[inline(always)]
pub fn prefetch_ahead<T>(p: *const T, i: usize) {
    prefetch_line(p.wrapping_add(i).wrapping_byte_add(PREFETCH_BYTES));
}

/// Hints the cache line holding `p` into L1 (never faults: any address; a no-op off x86-64).
#[inline(always)]
pub fn prefetch_line<T>(p: *const T) {
    hint::<INTO_L1, T>(p);
}

/// Hints the cache line holding `p` into L2 (never faults: any address; a no-op off x86-64).
#[inline(always)]
pub fn prefetch_line_l2<T>(p: *const T) {
    hint::<INTO_L2, T>(p);
}
