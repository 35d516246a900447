//! The `cpu` kernels of the row built-ins: those that order values (`sort_rows`, `median_rows`,
//! `max_rows`, `min_rows`, `argmax_rows`) map each row's elements to unsigned keys whose integer
//! order is IEEE 754 total order and sort, select or scan them; the sums (`sum_rows`,
//! `mean_rows`) add each row in f64 and round once. Equal keys are equal bits, so an unstable sort or selection gives the
//! reference's (stable) result bit for bit. Rows are spread over the CPU backend's threads with
//! `par::for_each_chunk` (chunk boundaries never depend on the thread count). Owns the key
//! mapping and the per-row work; must not allocate outputs or validate shapes.
//!
//! Precondition of every kernel here: `c >= 1` (`c >= 0` for the sums) and `x.len()` is `c` times
//! the number of rows.

use crate::cpu::par::for_each_chunk;

/// Elements of work per chunk (at least): rows are grouped until they hold this many.
const GRAIN: usize = 32 * 1024;

/// The total-order key of an f32: negative values have every bit flipped, the rest only the
/// sign bit, so unsigned comparison of keys is `f32::total_cmp`.
#[inline(always)]
pub fn key(v: f32) -> u32 {
    let b = v.to_bits();
    if b >> 31 == 1 {
        !b
    } else {
        b | 0x8000_0000
    }
}

/// The f32 whose key is `k` (the inverse of [`key`]).
#[inline(always)]
pub fn unkey(k: u32) -> f32 {
    f32::from_bits(if k >> 31 == 1 { k & 0x7fff_ffff } else { !k })
}

/// Rows per chunk for rows of `c` elements.
fn rows_grain(c: usize) -> usize {
    (GRAIN / c.max(1)).max(1)
}

/// Each row of `x` (rows of `c`) sorted in total order into the same row of `out`.
pub fn sort_rows(x: &[f32], c: usize, out: &mut [f32]) {
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
pub fn median_rows(x: &[f32], c: usize, out: &mut [f32]) {
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

/// Each row of `x` (rows of `c >= 0`) summed in f64 (exact for f32 terms up to 2^29 of them, and
/// never overflowing), divided by `div`, rounded once.
pub fn sum_rows(x: &[f32], c: usize, out: &mut [f32], div: f64) {
    for_each_chunk(out, rows_grain(c), |off, o| {
        for (k, d) in o.iter_mut().enumerate() {
            let r = off + k;
            let s: f64 = x[r * c..(r + 1) * c].iter().map(|v| *v as f64).sum();
            *d = (s / div) as f32;
        }
    });
}

/// The position of the selected element of a row (rows of `c >= 1`): the largest key, the last
/// of equal ones (`larger`), or the smallest, the first of equal ones.
#[inline]
fn select_in(row: &[f32], larger: bool) -> usize {
    let mut best = 0;
    let mut kb = key(row[0]);
    for (j, v) in row.iter().enumerate().skip(1) {
        let k = key(*v);
        if (larger && k >= kb) || (!larger && k < kb) {
            best = j;
            kb = k;
        }
    }
    best
}

/// Each row's largest (`larger`) or smallest element in total order.
pub fn select_rows(x: &[f32], c: usize, larger: bool, out: &mut [f32]) {
    for_each_chunk(out, rows_grain(c), |off, o| {
        for (k, d) in o.iter_mut().enumerate() {
            let row = &x[(off + k) * c..(off + k + 1) * c];
            *d = row[select_in(row, larger)];
        }
    });
}

/// Each row's position of its largest element in total order (the last of equal ones).
pub fn argmax_rows(x: &[f32], c: usize, out: &mut [u32]) {
    for_each_chunk(out, rows_grain(c), |off, o| {
        for (k, d) in o.iter_mut().enumerate() {
            *d = select_in(&x[(off + k) * c..(off + k + 1) * c], true) as u32;
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
