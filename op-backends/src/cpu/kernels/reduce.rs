//! Reduction kernels of the built-ins: sum, mean, mse_loss (and the dot products of `conv1d`'s
//! VJP), over f32 or f64 elements. Owns their summation order; must not allocate outputs or
//! validate shapes (the built-ins' `cpu` functions and dispatch do).
//!
//! Accumulation is in f64. Every f32 term widens exactly (`(a - b)^2` is formed in f64), so
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
//! f64 elements are summed by the same tree (each term through at most `ceil(log2 n) + 1`
//! additions: within the `accum` bound in f64's own epsilon), except where a partial sum may
//! overflow in some order (`n max|x_i|` past `f64::MAX`): there the order decides between a
//! finite sum, an infinity and NaN, and the kernels sum as the references do (in order, with
//! their compensation: `sum_f64_checked`, `sqdiff_f64_checked`).
//!
//! Precondition of `sqdiff_f64` and `dot_f64`: `a.len() == b.len()` (the built-ins' `cpu`
//! functions pass equal lengths; dispatch validated them).

use crate::cpu::par::for_each_chunk;
use crate::cpu::simd::{Isa, Vf};
use crate::with_isa;

/// Elements per block (fixed: part of the summation order).
pub const BLOCK: usize = 4096;
/// Blocks per parallel chunk (at least): 32K elements.
pub const GRAIN_BLOCKS: usize = 8;

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

/// An element type the rows of 16 f64 lanes load from: f32 (widened exactly) or f64.
pub trait Wide: Copy + Default + Send + Sync + 'static {
    /// Row of the 16 elements at `p`.
    ///
    /// # Safety
    /// `p` points at 16 readable elements, and `V`'s target feature is on.
    unsafe fn row<V: Vf>(p: *const Self) -> V::Row;
}
impl Wide for f32 {
    #[inline(always)]
    unsafe fn row<V: Vf>(p: *const f32) -> V::Row {
        unsafe { V::row_load(p) }
    }
}
impl Wide for f64 {
    #[inline(always)]
    unsafe fn row<V: Vf>(p: *const f64) -> V::Row {
        unsafe { V::row_load_f64(p) }
    }
}

/// Row `i` of `x`, or its zero-padded partial last row.
#[inline(always)]
unsafe fn row_of<V: Vf, E: Wide>(x: &[E], i: usize) -> V::Row {
    let start = 16 * i;
    if start + 16 <= x.len() {
        return unsafe { E::row::<V>(x.as_ptr().add(start)) };
    }
    let mut t = [E::default(); 16];
    t[..x.len() - start].copy_from_slice(&x[start..]);
    unsafe { E::row::<V>(t.as_ptr()) }
}

/// The partial last row's index, if any.
#[inline(always)]
fn tail_row(len: usize) -> Option<usize> {
    (!len.is_multiple_of(16)).then_some(len / 16)
}

/// The terms `x_i`.
struct Plain<'a, E>(&'a [E]);
impl<V: Vf, E: Wide> Terms<V> for Plain<'_, E> {
    #[inline(always)]
    fn rows(&self) -> usize {
        self.0.len() / 16
    }
    #[inline(always)]
    unsafe fn row(&self, i: usize) -> V::Row {
        unsafe { E::row::<V>(self.0.as_ptr().add(16 * i)) }
    }
    #[inline(always)]
    unsafe fn tail(&self) -> Option<V::Row> {
        tail_row(self.0.len()).map(|i| unsafe { row_of::<V, E>(self.0, i) })
    }
}

/// The terms `(a_i - b_i)^2`, computed as the reference does (`d = a - b; d * d`, unfused), in
/// f64.
struct SqDiff<'a, E>(&'a [E], &'a [E]);
impl<V: Vf, E: Wide> Terms<V> for SqDiff<'_, E> {
    #[inline(always)]
    fn rows(&self) -> usize {
        self.0.len() / 16
    }
    #[inline(always)]
    unsafe fn row(&self, i: usize) -> V::Row {
        unsafe {
            let d = V::row_sub(E::row::<V>(self.0.as_ptr().add(16 * i)), E::row::<V>(self.1.as_ptr().add(16 * i)));
            V::row_mul(d, d)
        }
    }
    #[inline(always)]
    unsafe fn tail(&self) -> Option<V::Row> {
        tail_row(self.0.len()).map(|i| unsafe {
            let d = V::row_sub(row_of::<V, E>(self.0, i), row_of::<V, E>(self.1, i));
            V::row_mul(d, d)
        })
    }
}

/// The terms `a_i b_i` in f64 (exact for f32 inputs, rounded once for f64 ones).
struct Prod<'a, E>(&'a [E], &'a [E]);
impl<V: Vf, E: Wide> Terms<V> for Prod<'_, E> {
    #[inline(always)]
    fn rows(&self) -> usize {
        self.0.len() / 16
    }
    #[inline(always)]
    unsafe fn row(&self, i: usize) -> V::Row {
        unsafe { V::row_mul(E::row::<V>(self.0.as_ptr().add(16 * i)), E::row::<V>(self.1.as_ptr().add(16 * i))) }
    }
    #[inline(always)]
    unsafe fn tail(&self) -> Option<V::Row> {
        tail_row(self.0.len()).map(|i| unsafe { V::row_mul(row_of::<V, E>(self.0, i), row_of::<V, E>(self.1, i)) })
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

/// A reduction's terms over whole inputs (`x`, or `a` and `b` of one length), summed block
/// by block by one driver ([`partials`]): what one block yields (its sum; for the checked f64
/// sums, with its largest magnitude). A trait with a generic method rather than a closure, so
/// the vector code inlines into each ISA's function.
trait Source: Sync {
    /// What one block yields.
    type Partial: Copy + Default + Send;
    /// Terms in all.
    fn len(&self) -> usize;
    /// The block of terms `start..end` (at most [`BLOCK`] of them).
    unsafe fn block<V: Vf>(&self, start: usize, end: usize) -> Self::Partial;
}

impl<E: Wide> Source for Plain<'_, E> {
    type Partial = f64;
    fn len(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    unsafe fn block<V: Vf>(&self, start: usize, end: usize) -> f64 {
        unsafe { block_tree::<V, _>(&Plain(&self.0[start..end])) }
    }
}

impl<E: Wide> Source for SqDiff<'_, E> {
    type Partial = f64;
    fn len(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    unsafe fn block<V: Vf>(&self, start: usize, end: usize) -> f64 {
        unsafe { block_tree::<V, _>(&SqDiff(&self.0[start..end], &self.1[start..end])) }
    }
}

impl<E: Wide> Source for Prod<'_, E> {
    type Partial = f64;
    fn len(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    unsafe fn block<V: Vf>(&self, start: usize, end: usize) -> f64 {
        unsafe { block_tree::<V, _>(&Prod(&self.0[start..end], &self.1[start..end])) }
    }
}

/// f64 terms whose blocks also yield the bits of the largest magnitude a partial sum of the
/// block can take a term to: `max|x_i|` for a sum, `(max|a| + max|b|)^2` for squared
/// differences. Scanned while the block is in the first-level cache.
struct Checked<S>(S);

impl Source for Checked<Plain<'_, f64>> {
    type Partial = (f64, u64);
    fn len(&self) -> usize {
        self.0 .0.len()
    }
    #[inline(always)]
    unsafe fn block<V: Vf>(&self, start: usize, end: usize) -> (f64, u64) {
        (unsafe { self.0.block::<V>(start, end) }, max_abs_bits(&self.0 .0[start..end]))
    }
}

impl Source for Checked<SqDiff<'_, f64>> {
    type Partial = (f64, u64);
    fn len(&self) -> usize {
        self.0 .0.len()
    }
    #[inline(always)]
    unsafe fn block<V: Vf>(&self, start: usize, end: usize) -> (f64, u64) {
        let m = f64::from_bits(max_abs_bits(&self.0 .0[start..end])) + f64::from_bits(max_abs_bits(&self.0 .1[start..end]));
        (unsafe { self.0.block::<V>(start, end) }, (m * m).to_bits())
    }
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

/// Writes what blocks `off ..` of `src` yield into `p`.
#[inline(always)]
fn blocks<V: Vf, S: Source>(src: &S, p: &mut [S::Partial], off: usize) {
    for (i, out) in p.iter_mut().enumerate() {
        let start = (off + i) * BLOCK;
        // SAFETY: `start < end <= src.len()`: `p` holds blocks that exist.
        *out = unsafe { src.block::<V>(start, src.len().min(start + BLOCK)) };
    }
}

/// What every block of `src` yields, in block order: blocks in parallel (chunks of
/// [`GRAIN_BLOCKS`]), each in the vector width of the ISA found at run time. The one driver
/// of every reduction here.
fn partials<S: Source>(src: &S) -> Vec<S::Partial> {
    let isa = Isa::current();
    let mut p = vec![S::Partial::default(); src.len().div_ceil(BLOCK)];
    for_each_chunk(
        &mut p,
        GRAIN_BLOCKS,
        |off, p| with_isa!(isa, V, <S: Source>, (src: &S, p: &mut [S::Partial], off: usize) -> (), blocks::<V, S>(src, p, off)),
    );
    p
}

/// The sum of `x` (f32 or f64) in f64 (see the module doc for the order).
pub fn sum_f64<E: Wide>(x: &[E]) -> f64 {
    combine(&partials(&Plain(x)))
}

/// `sum (a_i - b_i)^2` in f64 (terms formed in f64; same order as [`sum_f64`]).
pub fn sqdiff_f64<E: Wide>(a: &[E], b: &[E]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    combine(&partials(&SqDiff(a, b)))
}

/// `sum a_i b_i` in f64 (same order as [`sum_f64`]): for f32 inputs (exact products) within
/// about half an f32 ulp of the exact dot product once rounded; for f64 ones pairwise, each
/// product rounded once.
pub fn dot_f64<E: Wide>(a: &[E], b: &[E]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    combine(&partials(&Prod(a, b)))
}

/// The bits of the largest `|x_i|` (a NaN compares above +inf): a vectorisable scan.
#[inline(always)]
fn max_abs_bits(x: &[f64]) -> u64 {
    x.iter().map(|v| v.to_bits() & 0x7fff_ffff_ffff_ffff).max().unwrap_or(0)
}

/// Whether `n` terms of magnitude at most `m` may overflow a partial sum in some order (or one
/// is not finite): then an order other than the reference's can disagree with it about
/// infinities and NaN.
// Written `!(x <= MAX)` so that a NaN `m` counts as overflowing.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn may_overflow(m: f64, n: usize) -> bool {
    !(m * n as f64 <= f64::MAX)
}

/// The largest magnitude of the checked partials, and their pairwise total.
fn combine_checked(p: &[(f64, u64)]) -> (f64, f64) {
    let m = p.iter().map(|(_, m)| *m).max().unwrap_or(0);
    let sums: Vec<f64> = p.iter().map(|(s, _)| *s).collect();
    (f64::from_bits(m), combine(&sums))
}

/// The sum of f64 elements: the pairwise tree of [`sum_f64`] where no partial sum can overflow
/// in any order (`n max|x_i| <= f64::MAX`, every term finite); otherwise, where the order
/// decides between a finite sum, an infinity and NaN, the reference's own sum in its order
/// ([`compensated_in_order`]), so the kernel agrees with it about every non-finite result. The largest
/// magnitude is scanned block by block, while the block is in the first-level cache.
pub fn sum_f64_checked(x: &[f64]) -> f64 {
    let (m, s) = combine_checked(&partials(&Checked(Plain(x))));
    if may_overflow(m, x.len()) {
        return compensated_in_order(x.iter().copied());
    }
    s
}

/// `sum (a_i - b_i)^2` of f64 elements, as [`sum_f64_checked`] (the bound: `n (max|a| +
/// max|b|)^2`); the fallback forms each term as the reference does.
pub fn sqdiff_f64_checked(a: &[f64], b: &[f64]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    let (m, s) = combine_checked(&partials(&Checked(SqDiff(a, b))));
    if may_overflow(m, a.len()) {
        return compensated_in_order(a.iter().zip(b).map(|(x, y)| {
            let d = x - y;
            d * d
        }));
    }
    s
}

/// The references' own sum (`builtins::sum64`): left to right from `+0` with Neumaier's
/// compensation, the compensation applied where the running sum is finite. Its running sum is
/// the plain sum in order, so it overflows (and makes infinities and NaN) exactly where the
/// reference's does; where it stays finite the result is the reference's bits.
pub fn compensated_in_order(terms: impl Iterator<Item = f64>) -> f64 {
    let (mut sum, mut carry) = (0f64, 0f64);
    for v in terms {
        let t = sum + v;
        if sum.abs() >= v.abs() {
            carry += (sum - t) + v;
        } else {
            carry += (v - t) + sum;
        }
        sum = t;
    }
    if sum.is_finite() {
        sum + carry
    } else {
        sum
    }
}
