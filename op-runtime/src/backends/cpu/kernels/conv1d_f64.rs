//! The f64 instance of `conv1d` (valid correlation `out[i] = sum_j x[i + j] w[j]`). Owns its
//! layout and order; must not allocate the output or validate shapes.
//!
//! Order: every output is summed over its taps in order, from `+0`, a product then an add
//! (unfused): the reference's own operations in its order, so the result is bit-identical to
//! it on every input (infinities and NaN included) and on any number of threads. The speed
//! comes from the other axis: `4 L` consecutive outputs are accumulated at once, one vector
//! per `L` of them, each tap broadcast.
//!
//! Preconditions (the callers check them; dispatch validated the shapes): `1 <= w.len() <=
//! x.len()`, `out.len() == x.len() - w.len() + 1`.

use crate::backends::cpu::par::for_each_chunk;
use crate::backends::cpu::simd::{Isa, Vf};
use crate::backends::cpu::simd64::Vd;
use crate::with_isa;

/// Vectors of outputs accumulated together (independent add chains).
const NV: usize = 4;

/// `out[i] = sum_j x[i + j] w[j]` in f64, parallel over chunks of outputs.
pub(crate) fn conv1d_f64(x: &[f64], w: &[f64], out: &mut [f64]) {
    let m = w.len();
    debug_assert!(m >= 1 && m <= x.len() && out.len() == x.len() + 1 - m);
    let isa = Isa::current();
    let grain = 4096usize.max((1usize << 20) / m);
    for_each_chunk(out, grain, |off, o| {
        let x = &x[off..off + o.len() + m - 1];
        with_isa!(isa, V, (x: &[f64], w: &[f64], o: &mut [f64]) -> (), chunk::<<V as Vf>::D>(x, w, o))
    });
}

/// One chunk: `x.len() == out.len() + w.len() - 1`.
#[inline(always)]
fn chunk<D: Vd>(x: &[f64], w: &[f64], out: &mut [f64]) {
    let (l, n) = (D::L, out.len());
    let mut i = 0;
    // SAFETY: a tile at `i` reads `x[i .. i + NV L + m - 1]` and writes `out[i .. i + NV L]`,
    // both inside the slices while `i + NV L <= n`.
    unsafe {
        while i + NV * l <= n {
            let mut acc = [D::splat(0.0); NV];
            for (j, wj) in w.iter().enumerate() {
                let wv = D::splat(*wj);
                for (k, a) in acc.iter_mut().enumerate() {
                    *a = a.add(D::load(x.as_ptr().add(i + k * l + j)).mul(wv));
                }
            }
            for (k, a) in acc.iter().enumerate() {
                a.store(out.as_mut_ptr().add(i + k * l));
            }
            i += NV * l;
        }
    }
    for (t, o) in out.iter_mut().enumerate().skip(i) {
        let mut s = 0f64;
        for (j, wj) in w.iter().enumerate() {
            s += x[t + j] * wj;
        }
        *o = s;
    }
}
