//! Reduction kernels of the built-ins: sum, mean, mse_loss. Owns their summation order; must
//! not allocate outputs or validate shapes (the built-ins' `cpu` functions and dispatch do).
//!
//! Accumulation is in f64: every f32 term widens exactly (`(a - b)^2` is formed in f64), so
//! no partial sum can overflow (|sum| <= n * f32::MAX is far inside f64), infinities and NaNs
//! combine exactly as in the exact (f64 reference) result, and the only f32 rounding is the
//! final one. (An f32 accumulator in any order but the reference's can overflow where the
//! reference does not, e.g. `[+inf, f32::MIN, f32::MIN]` summed as `inf + (MIN + MIN)` = NaN
//! while the reference and the f64 result are `+inf`; the conformance engine rejects that.)
//!
//! Summation order (the same on every ISA and for every thread count, so results are
//! bit-identical across both): the terms are cut into fixed blocks of [`BLOCK`] = 4096
//! elements. Inside a block, the terms form rows of 16 lanes (the last row zero-padded); the
//! rows are summed lane-wise by a pairwise tree ("split at the largest power of two below the
//! count": a perfect binary tree for a full block), then the 16 lanes by the tree
//! `(l, l+8)`, `(l, l+4)`, `(l, l+2)`, `(l, l+1)`. The block sums are combined by the same
//! pairwise tree shape. Every term goes through at most `ceil(log2 n) + 1` f64 additions, so
//! the error is `<= (ceil(log2 n) + 1) * 2^-53 * sum|x_i|` before the final rounding to f32
//! (`<= 2^-24 |result|`): the result is within about half an f32 ulp of the exact sum, far
//! inside the `accum(k)` bound `k * max(1, ceil(log2 n)) * eps * sum|x_i|` for every n. Blocks
//! are summed in parallel (chunks of [`GRAIN_BLOCKS`] blocks, through [`for_each_chunk`]); the
//! tree over block sums runs on the calling thread. A final `+ 0.0` maps a `-0` total to `+0`
//! like the reference, which starts from `+0`.
//!
//! Precondition of `mse_loss`: `a.len() == b.len()` (the built-in's `cpu` function passes equal
//! lengths; dispatch validated them).

use crate::backends::cpu::par::for_each_chunk;
use crate::backends::cpu::simd::{Isa, Vf};
use crate::with_isa;

/// Elements per block (fixed: part of the summation order).
pub(crate) const BLOCK: usize = 4096;
/// Blocks per parallel chunk (at least): 32K elements.
pub(crate) const GRAIN_BLOCKS: usize = 8;

/// Where a block's rows of 16 terms come from (a trait rather than a closure so that the
/// vector code inlines into the caller's target-feature context).
trait Terms<V: Vf> {
    /// Full rows in the block.
    fn rows(&self) -> usize;
    /// Row `i` (`i < rows()`).
    unsafe fn row(&self, i: usize) -> V::Row;
    /// The zero-padded partial last row, if any.
    unsafe fn tail(&self) -> Option<V::Row>;
}

/// The terms `x_i`.
struct Plain<'a>(&'a [f32]);
impl<V: Vf> Terms<V> for Plain<'_> {
    #[inline(always)]
    fn rows(&self) -> usize {
        self.0.len() / 16
    }
    #[inline(always)]
    unsafe fn row(&self, i: usize) -> V::Row {
        unsafe { V::row_load(self.0.as_ptr().add(16 * i)) }
    }
    #[inline(always)]
    unsafe fn tail(&self) -> Option<V::Row> {
        let (rows, rem) = (self.0.len() / 16, self.0.len() % 16);
        if rem == 0 {
            return None;
        }
        let mut t = [0f32; 16];
        t[..rem].copy_from_slice(&self.0[rows * 16..]);
        unsafe { Some(V::row_load(t.as_ptr())) }
    }
}

/// The terms `(a_i - b_i)^2`, computed as the reference does (`d = a - b; d * d`, unfused).
struct SqDiff<'a>(&'a [f32], &'a [f32]);
impl<V: Vf> Terms<V> for SqDiff<'_> {
    #[inline(always)]
    fn rows(&self) -> usize {
        self.0.len() / 16
    }
    #[inline(always)]
    unsafe fn row(&self, i: usize) -> V::Row {
        unsafe {
            let d = V::row_sub(V::row_load(self.0.as_ptr().add(16 * i)), V::row_load(self.1.as_ptr().add(16 * i)));
            V::row_mul(d, d)
        }
    }
    #[inline(always)]
    unsafe fn tail(&self) -> Option<V::Row> {
        let (rows, rem) = (self.0.len() / 16, self.0.len() % 16);
        if rem == 0 {
            return None;
        }
        let mut ta = [0f32; 16];
        let mut tb = [0f32; 16];
        ta[..rem].copy_from_slice(&self.0[rows * 16..]);
        tb[..rem].copy_from_slice(&self.1[rows * 16..]);
        unsafe {
            let d = V::row_sub(V::row_load(ta.as_ptr()), V::row_load(tb.as_ptr()));
            Some(V::row_mul(d, d))
        }
    }
}

/// Sum of one block's terms by the fixed tree of the module doc. The row tree is a binary
/// counter: pushing nodes left to right (a node of level `h` sums `2^h` consecutive rows and
/// is pushed when the row count is a multiple of `2^h`) and finally adding the pending nodes
/// right to left yields the pairwise tree that splits every range of `c` rows at the largest
/// power of two below `c`. Full groups of 8 rows are pre-summed as level-3 nodes.
#[inline(always)]
unsafe fn block_tree<V: Vf, T: Terms<V>>(t: &T) -> f64 {
    unsafe {
        let rows = t.rows();
        let zero = V::row_load([0f32; 16].as_ptr());
        let mut stack = [zero; 10];
        let mut count: usize = 0;
        let mut i = 0;
        while i + 8 <= rows {
            let s01 = V::row_add(t.row(i), t.row(i + 1));
            let s23 = V::row_add(t.row(i + 2), t.row(i + 3));
            let s45 = V::row_add(t.row(i + 4), t.row(i + 5));
            let s67 = V::row_add(t.row(i + 6), t.row(i + 7));
            let mut node = V::row_add(V::row_add(s01, s23), V::row_add(s45, s67));
            let mut c = count >> 3;
            let mut l = 3;
            while c & 1 == 1 {
                node = V::row_add(stack[l], node);
                c >>= 1;
                l += 1;
            }
            stack[l] = node;
            count += 8;
            i += 8;
        }
        let tail = t.tail();
        let total = rows + tail.is_some() as usize;
        while count < total {
            // `count < total`: row `i` exists, or `i == rows` and the tail does.
            let mut node = match tail {
                Some(last) if i >= rows => last,
                _ => t.row(i.min(rows.saturating_sub(1))),
            };
            let mut c = count;
            let mut l = 0;
            while c & 1 == 1 {
                node = V::row_add(stack[l], node);
                c >>= 1;
                l += 1;
            }
            stack[l] = node;
            count += 1;
            i += 1;
        }
        if count == 0 {
            return 0.0;
        }
        let mut acc: Option<V::Row> = None;
        for (l, s) in stack.iter().enumerate() {
            if count >> l & 1 == 1 {
                acc = Some(match acc {
                    None => *s,
                    Some(a) => V::row_add(*s, a),
                });
            }
        }
        let mut v = [0f64; 16];
        V::row_store(acc.unwrap_or(zero), v.as_mut_ptr());
        lane_tree(v)
    }
}

/// The fixed 16-lane tree: `(l, l+8)`, `(l, l+4)`, `(l, l+2)`, `(l, l+1)`.
#[inline(always)]
fn lane_tree(mut v: [f64; 16]) -> f64 {
    let mut h = 8;
    while h >= 1 {
        for l in 0..h {
            v[l] += v[l + h];
        }
        h /= 2;
    }
    v[0]
}

/// Sum of `x` (at most one block).
#[inline(always)]
fn block_sum<V: Vf>(x: &[f32]) -> f64 {
    unsafe { block_tree::<V, _>(&Plain(x)) }
}

/// `sum (a_i - b_i)^2` of one block.
#[inline(always)]
fn block_sqdiff<V: Vf>(a: &[f32], b: &[f32]) -> f64 {
    unsafe { block_tree::<V, _>(&SqDiff(a, b)) }
}

/// Combines block sums by the pairwise tree; `+0.0` for none.
#[allow(clippy::assign_op_pattern)] // `left + right`, written in the tree's order
fn combine(partials: &[f64]) -> f64 {
    let mut stack = [0f64; 64];
    let mut count: u64 = 0;
    for &p in partials {
        let mut node = p;
        let mut c = count;
        let mut l = 0;
        while c & 1 == 1 {
            node = stack[l] + node;
            c >>= 1;
            l += 1;
        }
        stack[l] = node;
        count += 1;
    }
    let mut acc: Option<f64> = None;
    for (l, s) in stack.iter().enumerate() {
        if count >> l & 1 == 1 {
            acc = Some(match acc {
                None => *s,
                Some(a) => *s + a,
            });
        }
    }
    acc.unwrap_or(0.0) + 0.0
}

/// Writes the sums of blocks `off ..` of `x` into `p`.
#[inline(always)]
fn sum_blocks<V: Vf>(x: &[f32], p: &mut [f64], off: usize) {
    for (i, s) in p.iter_mut().enumerate() {
        let start = (off + i) * BLOCK;
        *s = block_sum::<V>(&x[start..x.len().min(start + BLOCK)]);
    }
}

/// Writes the squared-difference sums of blocks `off ..` into `p`.
#[inline(always)]
fn sqdiff_blocks<V: Vf>(a: &[f32], b: &[f32], p: &mut [f64], off: usize) {
    for (i, s) in p.iter_mut().enumerate() {
        let start = (off + i) * BLOCK;
        let end = a.len().min(start + BLOCK);
        *s = block_sqdiff::<V>(&a[start..end], &b[start..end]);
    }
}

/// The sum of `x` in f64 (see the module doc for the order).
pub(crate) fn sum_f64(x: &[f32]) -> f64 {
    let isa = Isa::current();
    let mut partials = vec![0f64; x.len().div_ceil(BLOCK)];
    for_each_chunk(
        &mut partials,
        GRAIN_BLOCKS,
        |off, p| with_isa!(isa, V, (x: &[f32], p: &mut [f64], off: usize) -> (), sum_blocks::<V>(x, p, off)),
    );
    combine(&partials)
}

/// `sum(x)`, rounded once to f32; `sum([]) = +0`.
pub(crate) fn sum(x: &[f32]) -> f32 {
    sum_f64(x) as f32
}

/// `sum(x) / n` (divided in f64, rounded once); NaN for an empty `x`, like the reference's
/// `0 / 0` (the signature requires `n >= 1`).
pub(crate) fn mean(x: &[f32]) -> f32 {
    (sum_f64(x) / x.len() as f64) as f32
}

/// `sum((a_i - b_i)^2) / n`, each term formed in f64 (see the module doc).
pub(crate) fn mse_loss(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let isa = Isa::current();
    let mut partials = vec![0f64; a.len().div_ceil(BLOCK)];
    for_each_chunk(
        &mut partials,
        GRAIN_BLOCKS,
        |off, p| with_isa!(isa, V, (a: &[f32], b: &[f32], p: &mut [f64], off: usize) -> (), sqdiff_blocks::<V>(a, b, p, off)),
    );
    (combine(&partials) / a.len() as f64) as f32
}
