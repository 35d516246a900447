//! The f64 instance of `conv1d` (valid correlation `out[i] = sum_j x[i + j] w[j]`) and the
//! pairwise order its sums share with the f64 `conv1d` VJP. Owns that layout and order; must
//! not allocate the output or validate shapes.
//!
//! Order (fixed: independent of the thread count and of the instruction set): the taps are cut
//! into groups of [`GROUP`]; a group is summed in order from `+0`, a product then an add
//! (unfused), and the group sums are combined by a binary counter (the pairwise tree that splits
//! every range at the largest power of two, as `reduce` combines blocks). A product is rounded
//! at most `GROUP + ceil(log2 ceil(m / GROUP))` times, within the `accum(2)` bound
//! (`2 * max(1, ceil(log2 m))` ulps of `sum |terms|`) on every input, biased ones included (a
//! sum in plain order is not: `m` roundings). The speed comes from the other axis: `NV L`
//! consecutive outputs are accumulated at once, one vector per `L` of them, each tap broadcast;
//! the outputs past the last full tile take the same order in scalar code ([`pairwise`]), so
//! every output has the same bits wherever a chunk boundary falls.
//!
//! Non-finite inputs, and finite ones large enough that some partial sum may overflow
//! ([`overflow_free`] says which), are where the order decides between a finite sum, an
//! infinity and NaN: there every output is the reference's own sum in its order
//! ([`in_reference_order`]), so the kernel agrees with it about every non-finite result.
//!
//! Preconditions (the callers check them; dispatch validated the shapes): `1 <= w.len() <=
//! x.len()`, `out.len() == x.len() - w.len() + 1`.

use super::reduce::compensated_in_order;
use crate::cpu::par::for_each_chunk;
use crate::cpu::simd::{Isa, Vf};
use crate::cpu::simd64::Vd;
use crate::with_isa;
use std::mem::MaybeUninit;

/// Vectors of outputs accumulated together (independent add chains).
const NV: usize = 4;
/// Taps summed in order before the pairwise combination (fixed: part of the order).
pub const GROUP: usize = 8;
/// Levels of the binary counter: enough for `2^40` groups.
const LEVELS: usize = 40;

/// `out[i] = sum_j x[i + j] w[j]` in f64, parallel over chunks of outputs.
pub fn conv1d_f64(x: &[f64], w: &[f64], out: &mut [f64]) {
    let m = w.len();
    debug_assert!(m >= 1 && m <= x.len() && out.len() == x.len() + 1 - m);
    let grain = 4096usize.max((1usize << 20) / m);
    if !overflow_free(x, w, m) {
        for_each_chunk(out, grain, |off, o| {
            for (t, o) in o.iter_mut().enumerate() {
                *o = in_reference_order(x[off + t..off + t + m].iter().copied().zip(w.iter().copied()));
            }
        });
        return;
    }
    let isa = Isa::current();
    for_each_chunk(out, grain, |off, o| {
        let x = &x[off..off + o.len() + m - 1];
        with_isa!(isa, V, (x: &[f64], w: &[f64], o: &mut [f64]) -> (), chunk::<<V as Vf>::D>(x, w, o))
    });
}

/// Whether no partial sum of `len` products `a_i b_j` can overflow in any order: every element
/// finite and `len max|a| max|b|` at most a quarter of `f64::MAX` (room for the roundings).
pub fn overflow_free(a: &[f64], b: &[f64], len: usize) -> bool {
    let max = |v: &[f64]| f64::from_bits(v.iter().map(|x| x.to_bits() & 0x7fff_ffff_ffff_ffff).max().unwrap_or(0));
    let (ma, mb) = (max(a), max(b));
    ma.is_finite() && mb.is_finite() && ma * mb * len as f64 <= f64::MAX / 4.0
}

/// The sum of the products `(a, b)` as the references form it (`builtins::sum64`): in order,
/// compensated, so its infinities and NaN are theirs.
pub fn in_reference_order(terms: impl Iterator<Item = (f64, f64)>) -> f64 {
    compensated_in_order(terms.map(|(a, b)| a * b))
}

/// The sum of the products `(a, b)` in the order of the module doc (groups of [`GROUP`] in
/// order, combined pairwise); `+0` for none.
pub fn pairwise(terms: impl Iterator<Item = (f64, f64)>) -> f64 {
    let mut stack = [0f64; LEVELS];
    let (mut count, mut acc, mut in_group) = (0usize, 0f64, 0usize);
    let mut push = |node: f64, count: &mut usize| {
        let (mut node, mut c, mut l) = (node, *count, 0);
        while c & 1 == 1 {
            // The earlier partial sum on the left, as the order the module doc fixes.
            #[allow(clippy::assign_op_pattern)]
            {
                node = stack[l] + node;
            }
            c >>= 1;
            l += 1;
        }
        stack[l] = node;
        *count += 1;
    };
    for (a, b) in terms {
        acc += a * b;
        in_group += 1;
        if in_group == GROUP {
            push(acc, &mut count);
            (acc, in_group) = (0.0, 0);
        }
    }
    if in_group > 0 {
        push(acc, &mut count);
    }
    finish(&stack, count)
}

/// The pending nodes of a binary counter of `count` nodes, added right to left (low levels
/// first): the last step of the pairwise tree.
#[inline(always)]
fn finish(stack: &[f64; LEVELS], count: usize) -> f64 {
    let mut acc: Option<f64> = None;
    for (l, s) in stack.iter().enumerate() {
        if count >> l & 1 == 1 {
            acc = Some(match acc {
                None => *s,
                Some(a) => *s + a,
            });
        }
    }
    acc.unwrap_or(0.0)
}

/// One chunk: `x.len() == out.len() + w.len() - 1`.
#[inline(always)]
fn chunk<D: Vd>(x: &[f64], w: &[f64], out: &mut [f64]) {
    let (l, n) = (D::L, out.len());
    let mut i = 0;
    while i + NV * l <= n {
        // SAFETY: a tile at `i` reads `x[i .. i + NV L + m - 1]` and writes `out[i .. i + NV L]`,
        // both inside the slices while `i + NV L <= n`.
        unsafe { tile::<D>(x, w, out, i) };
        i += NV * l;
    }
    for (t, o) in out.iter_mut().enumerate().skip(i) {
        *o = pairwise(x[t..t + w.len()].iter().copied().zip(w.iter().copied()));
    }
}

/// The `NV L` outputs at `i`, each in the order of [`pairwise`], lane by lane.
///
/// Safety: `i + NV L <= out.len()` and `x.len() == out.len() + w.len() - 1`; the vector's
/// target feature is enabled.
#[inline(always)]
unsafe fn tile<D: Vd>(x: &[f64], w: &[f64], out: &mut [f64], i: usize) {
    let l = D::L;
    unsafe {
        let zero = D::splat(0.0);
        // Level `l` is read only after it was written (the counter's bit `l` is set).
        let mut stack = [MaybeUninit::<[D; NV]>::uninit(); LEVELS];
        let mut count = 0usize;
        for (g, taps) in w.chunks(GROUP).enumerate() {
            let mut acc = [zero; NV];
            for (j, wj) in taps.iter().enumerate() {
                let wv = D::splat(*wj);
                let at = i + g * GROUP + j;
                for (k, a) in acc.iter_mut().enumerate() {
                    *a = a.add(D::load(x.as_ptr().add(at + k * l)).mul(wv));
                }
            }
            let (mut c, mut lvl) = (count, 0);
            while c & 1 == 1 {
                for (a, s) in acc.iter_mut().zip(&stack[lvl].assume_init()) {
                    *a = s.add(*a);
                }
                c >>= 1;
                lvl += 1;
            }
            stack[lvl] = MaybeUninit::new(acc);
            count += 1;
        }
        let mut total: Option<[D; NV]> = None;
        for (lvl, s) in stack.iter().enumerate() {
            if count >> lvl & 1 == 1 {
                let s = s.assume_init();
                total = Some(match total {
                    None => s,
                    Some(mut a) => {
                        for (a, s) in a.iter_mut().zip(&s) {
                            *a = s.add(*a);
                        }
                        a
                    }
                });
            }
        }
        for (k, a) in total.unwrap_or([zero; NV]).iter().enumerate() {
            a.store(out.as_mut_ptr().add(i + k * l));
        }
    }
}
