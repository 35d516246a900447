//! The `cpu` kernels of the row built-ins that order values (`sort_rows`, `median_rows`): each
//! row's elements mapped to unsigned keys whose integer order is IEEE 754 total order, sorted or
//! selected, mapped back. Equal keys are equal bits, so an unstable sort or selection gives the
//! reference's (stable) result bit for bit. Rows are spread over the CPU backend's threads with
//! `par::for_each_chunk` (chunk boundaries never depend on the thread count). Owns the key
//! mapping and the per-row work; must not allocate outputs or validate shapes.
//!
//! Precondition of every kernel here: `c >= 1` and `x.len()` is a multiple of `c`.

use crate::backends::cpu::par::for_each_chunk;

/// Elements of work per chunk (at least): rows are grouped until they hold this many.
const GRAIN: usize = 32 * 1024;

/// The total-order key of an f32: negative values have every bit flipped, the rest only the
/// sign bit, so unsigned comparison of keys is `f32::total_cmp`.
#[inline(always)]
pub(crate) fn key(v: f32) -> u32 {
    let b = v.to_bits();
    if b >> 31 == 1 {
        !b
    } else {
        b | 0x8000_0000
    }
}

/// The f32 whose key is `k` (the inverse of [`key`]).
#[inline(always)]
pub(crate) fn unkey(k: u32) -> f32 {
    f32::from_bits(if k >> 31 == 1 { k & 0x7fff_ffff } else { !k })
}

/// Rows per chunk for rows of `c` elements.
fn rows_grain(c: usize) -> usize {
    (GRAIN / c.max(1)).max(1)
}

/// Each row of `x` (rows of `c`) sorted in total order into the same row of `out`.
pub(crate) fn sort_rows(x: &[f32], c: usize, out: &mut [f32]) {
    let mut rows: Vec<&mut [f32]> = out.chunks_mut(c).collect();
    for_each_chunk(&mut rows, rows_grain(c), |off, rs| {
        let mut keys: Vec<u32> = Vec::with_capacity(c);
        for (k, row) in rs.iter_mut().enumerate() {
            let r = off + k;
            keys.clear();
            keys.extend(x[r * c..(r + 1) * c].iter().map(|v| key(*v)));
            keys.sort_unstable();
            for (d, k) in row.iter_mut().zip(&keys) {
                *d = unkey(*k);
            }
        }
    });
}

/// The element of rank `(c - 1) / 2` in total order of each row of `x` (rows of `c`).
pub(crate) fn median_rows(x: &[f32], c: usize, out: &mut [f32]) {
    let mid = (c - 1) / 2;
    for_each_chunk(out, rows_grain(c), |off, o| {
        let mut keys: Vec<u32> = Vec::with_capacity(c);
        for (k, d) in o.iter_mut().enumerate() {
            let r = off + k;
            keys.clear();
            keys.extend(x[r * c..(r + 1) * c].iter().map(|v| key(*v)));
            *d = unkey(*keys.select_nth_unstable(mid).1);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::{key, unkey};

    #[test]
    fn keys_order_floats_totally_and_invert() {
        let vals = [f32::NEG_INFINITY, -1.0, -f32::MIN_POSITIVE, -0.0, 0.0, 1e-45, 1.0, f32::INFINITY, f32::NAN];
        for (a, b) in vals.iter().zip(&vals[1..]) {
            assert!(key(*a) < key(*b), "{a} < {b}");
            assert_eq!(key(*a) < key(*b), a.total_cmp(b).is_lt());
        }
        for v in vals.iter().chain(&[-f32::NAN]) {
            assert_eq!(unkey(key(*v)).to_bits(), v.to_bits());
        }
    }
}
