//! The arithmetic of the built-ins' VJP rules that is not a plain elementwise op (those reuse
//! `elementwise`), in f32 and f64: each computes the rule's operations in the rule's order, so
//! IEEE operations give the rule's bits and the transcendental ones stay within their vector
//! polynomial's error. Owns that vector code and the full convolution of `conv1d`'s input
//! gradient; must not allocate outputs or validate shapes.
//!
//! Precondition of every kernel here: every slice has the output's length (the built-ins'
//! `cpu` functions pass equal lengths; dispatch validated them), except `conv1d_dx`'s (stated
//! there).

use super::conv1d_f64::{in_reference_order, overflow_free};
use super::elementwise::GRAIN;
use super::reduce::dot_f64;
use crate::cpu::math;
use crate::cpu::par::for_each_chunk;
use crate::cpu::simd::{map2_uninit, Isa, Vf};
use crate::cpu::simd64::{map2d_uninit, Vd};
use crate::with_isa;
use std::mem::MaybeUninit;

/// `op[i] = f(a[i], b[i], c[i])` for `i < n` in `L`-lane blocks, the tail through a zero-padded
/// block. Safety: the slices hold `n` elements and `op` has `n` writable floats.
#[inline(always)]
unsafe fn map3<V: Vf>(a: &[f32], b: &[f32], c: &[f32], op: *mut f32, n: usize, f: impl Fn(V, V, V) -> V) {
    let l = V::L;
    let main = n - n % l;
    let mut i = 0;
    unsafe {
        while i < main {
            f(V::load(a.as_ptr().add(i)), V::load(b.as_ptr().add(i)), V::load(c.as_ptr().add(i))).store(op.add(i));
            i += l;
        }
        if main < n {
            let (mut ta, mut tb, mut tc, mut to) = ([0f32; 16], [0f32; 16], [0f32; 16], [0f32; 16]);
            ta[..n - main].copy_from_slice(&a[main..n]);
            tb[..n - main].copy_from_slice(&b[main..n]);
            tc[..n - main].copy_from_slice(&c[main..n]);
            f(V::load(ta.as_ptr()), V::load(tb.as_ptr()), V::load(tc.as_ptr())).store(to.as_mut_ptr());
            std::ptr::copy_nonoverlapping(to.as_ptr(), op.add(main), n - main);
        }
    }
}

/// [`map3`] in f64.
#[inline(always)]
unsafe fn map3d<D: Vd>(a: &[f64], b: &[f64], c: &[f64], op: *mut f64, n: usize, f: impl Fn(D, D, D) -> D) {
    let l = D::L;
    let main = n - n % l;
    let mut i = 0;
    unsafe {
        while i < main {
            f(D::load(a.as_ptr().add(i)), D::load(b.as_ptr().add(i)), D::load(c.as_ptr().add(i))).store(op.add(i));
            i += l;
        }
        if main < n {
            let (mut ta, mut tb, mut tc, mut to) = ([0f64; 16], [0f64; 16], [0f64; 16], [0f64; 16]);
            ta[..n - main].copy_from_slice(&a[main..n]);
            tb[..n - main].copy_from_slice(&b[main..n]);
            tc[..n - main].copy_from_slice(&c[main..n]);
            f(D::load(ta.as_ptr()), D::load(tb.as_ptr()), D::load(tc.as_ptr())).store(to.as_mut_ptr());
            std::ptr::copy_nonoverlapping(to.as_ptr(), op.add(main), n - main);
        }
    }
}

/// Elements per f64 tile of the f32 `exp` VJP (its inputs widened on the stack).
const TILE64: usize = 256;

/// `e^x g` for a finite `x` outside `[-708, 709]`, where f64's `e^x` is subnormal, zero or
/// infinite but the product may be an ordinary number: a zero or infinite `g` is the product;
/// any other `g` is scaled by `h = e^(x / 4)` four times (`x / 4` is exact, and each partial
/// product lies between `g` and the result). The kernels' scalar fix-up; the same function as
/// the rule's (`builtins::exp_vjp`).
fn exp_times_slow(x: f64, g: f64) -> f64 {
    if g == 0.0 || g.is_infinite() {
        return g;
    }
    let h = (x * 0.25).exp();
    g * h * h * h * h
}

/// Whether `x` needs [`exp_times_slow`]: finite and outside `[-708, 709]`.
#[inline(always)]
fn exp_slow(x: f64) -> bool {
    x.is_finite() && !(-708.0..=709.0).contains(&x)
}

/// `exp`'s VJP in f32: `e^x g` formed in f64 (the vector `exp_f64`, within 1 ulp) and rounded
/// once, as the rule (`builtins::exp_vjp`); `x` outside `[-708, 709]` through the rule's scalar
/// path.
pub fn exp_vjp_f32(x: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) {
    let isa = Isa::current();
    for_each_chunk(out, GRAIN, |off, o| {
        let (x, g) = (&x[off..off + o.len()], &g[off..off + o.len()]);
        with_isa!(isa, V, (x: &[f32], g: &[f32], o: &mut [MaybeUninit<f32>]) -> (), {
            type D = <V as Vf>::D;
            let (mut xd, mut gd) = ([0f64; TILE64], [0f64; TILE64]);
            let mut rd = [MaybeUninit::<f64>::uninit(); TILE64];
            for ((x, g), o) in x.chunks(TILE64).zip(g.chunks(TILE64)).zip(o.chunks_mut(TILE64)) {
                let n = x.len();
                for i in 0..n {
                    xd[i] = x[i] as f64;
                    gd[i] = g[i] as f64;
                }
                map2d_uninit::<D>(&xd[..n], &gd[..n], &mut rd[..n], |x: D, g: D| unsafe { math::exp_f64(x).mul(g) });
                for i in 0..n {
                    // SAFETY: `map2d_uninit` wrote the first `n` elements.
                    o[i].write(unsafe { rd[i].assume_init() } as f32);
                }
            }
        });
        for ((o, x), g) in o.iter_mut().zip(x).zip(g) {
            if exp_slow(*x as f64) {
                o.write(exp_times_slow(*x as f64, *g as f64) as f32);
            }
        }
    });
}

/// `exp`'s VJP in f64 (as [`exp_vjp_f32`], without the widening): `e^x g` where `e^x` is
/// normal, the rule's scalar path elsewhere.
pub fn exp_vjp_f64(x: &[f64], g: &[f64], out: &mut [MaybeUninit<f64>]) {
    let isa = Isa::current();
    for_each_chunk(out, GRAIN, |off, o| {
        let (x, g) = (&x[off..off + o.len()], &g[off..off + o.len()]);
        with_isa!(isa, V, (x: &[f64], g: &[f64], o: &mut [MaybeUninit<f64>]) -> (), {
            type D = <V as Vf>::D;
            map2d_uninit::<D>(x, g, o, |x: D, g: D| unsafe { math::exp_f64(x).mul(g) })
        });
        for ((o, x), g) in o.iter_mut().zip(x).zip(g) {
            if exp_slow(*x) {
                o.write(exp_times_slow(*x, *g));
            }
        }
    });
}

/// `tanh`'s VJP in f32: `h = e^(0 - |x|)`, `q = 2h / (1 + h h)`, `(g q) q` (the rule's form).
pub fn tanh_vjp_f32(x: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) {
    let isa = Isa::current();
    for_each_chunk(out, GRAIN, |off, o| {
        let (x, g) = (&x[off..off + o.len()], &g[off..off + o.len()]);
        with_isa!(isa, V, (x: &[f32], g: &[f32], o: &mut [MaybeUninit<f32>]) -> (),
        map2_uninit::<V>(x, g, o, |x: V, g: V| unsafe {
            let ax = x.and(V::splat_bits(0x7fff_ffff));
            let h = math::exp(V::splat(0.0).sub(ax));
            let q = V::splat(2.0).mul(h).div(V::splat(1.0).add(h.mul(h)));
            g.mul(q).mul(q)
        }))
    });
}

/// `tanh`'s VJP in f64 (as [`tanh_vjp_f32`]).
pub fn tanh_vjp_f64(x: &[f64], g: &[f64], out: &mut [MaybeUninit<f64>]) {
    let isa = Isa::current();
    for_each_chunk(out, GRAIN, |off, o| {
        let (x, g) = (&x[off..off + o.len()], &g[off..off + o.len()]);
        with_isa!(isa, V, (x: &[f64], g: &[f64], o: &mut [MaybeUninit<f64>]) -> (), {
            type D = <V as Vf>::D;
            map2d_uninit::<D>(x, g, o, |x: D, g: D| unsafe {
                let ax = x.and(D::splat_bits(0x7fff_ffff_ffff_ffff));
                let h = math::exp_f64(D::splat(0.0).sub(ax));
                let q = D::splat(2.0).mul(h).div(D::splat(1.0).add(h.mul(h)));
                g.mul(q).mul(q)
            })
        })
    });
}

/// `relu`'s VJP in f32: `x > 0 ? g : +0` (exact).
pub fn relu_vjp_f32(x: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) {
    let isa = Isa::current();
    for_each_chunk(out, GRAIN, |off, o| {
        let (x, g) = (&x[off..off + o.len()], &g[off..off + o.len()]);
        with_isa!(isa, V, (x: &[f32], g: &[f32], o: &mut [MaybeUninit<f32>]) -> (),
            map2_uninit::<V>(x, g, o, |x: V, g: V| unsafe { V::select(x.gt(V::splat(0.0)), g, V::splat(0.0)) }))
    });
}

/// `relu`'s VJP in f64 (as [`relu_vjp_f32`]).
pub fn relu_vjp_f64(x: &[f64], g: &[f64], out: &mut [MaybeUninit<f64>]) {
    let isa = Isa::current();
    for_each_chunk(out, GRAIN, |off, o| {
        let (x, g) = (&x[off..off + o.len()], &g[off..off + o.len()]);
        with_isa!(isa, V, (x: &[f64], g: &[f64], o: &mut [MaybeUninit<f64>]) -> (), {
            type D = <V as Vf>::D;
            map2d_uninit::<D>(x, g, o, |x: D, g: D| unsafe { D::select(x.gt(D::splat(0.0)), g, D::splat(0.0)) })
        })
    });
}

/// `div`'s gradient with respect to the divisor in f32: `-(g a) / (b b)`, the rule's
/// operations in its order (bit-identical to it).
pub fn div_db_f32(a: &[f32], b: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) {
    let isa = Isa::current();
    for_each_chunk(out, GRAIN, |off, o| {
        let r = off..off + o.len();
        let (a, b, g) = (&a[r.clone()], &b[r.clone()], &g[r]);
        let (op, n) = (o.as_mut_ptr() as *mut f32, o.len());
        with_isa!(isa, V, (a: &[f32], b: &[f32], g: &[f32], op: *mut f32, n: usize) -> (),
            // SAFETY: `o` has `n` writable floats; the inputs `n` elements each.
            unsafe { map3::<V>(a, b, g, op, n, |a: V, b: V, g: V| g.mul(a).xor(V::splat_bits(0x8000_0000)).div(b.mul(b))) })
    });
}

/// [`div_db_f32`] in f64.
pub fn div_db_f64(a: &[f64], b: &[f64], g: &[f64], out: &mut [MaybeUninit<f64>]) {
    let isa = Isa::current();
    for_each_chunk(out, GRAIN, |off, o| {
        let r = off..off + o.len();
        let (a, b, g) = (&a[r.clone()], &b[r.clone()], &g[r]);
        let (op, n) = (o.as_mut_ptr() as *mut f64, o.len());
        with_isa!(isa, V, (a: &[f64], b: &[f64], g: &[f64], op: *mut f64, n: usize) -> (), {
            type D = <V as Vf>::D;
            // SAFETY: as in `div_db_f32`.
            unsafe { map3d::<D>(a, b, g, op, n, |a: D, b: D, g: D| g.mul(a).xor(D::splat_bits(1 << 63)).div(b.mul(b))) }
        })
    });
}

/// `mse_loss`'s gradient with respect to `a` in f32: `(a - b) k` in f64, rounded once
/// (bit-identical to the rule).
pub fn sub_scale_f32(a: &[f32], b: &[f32], k: f64, out: &mut [MaybeUninit<f32>]) {
    let isa = Isa::current();
    for_each_chunk(out, GRAIN, |off, o| {
        let (a, b) = (&a[off..off + o.len()], &b[off..off + o.len()]);
        // A plain loop, vectorised by the compiler under the instruction set's features.
        with_isa!(isa, V, (a: &[f32], b: &[f32], k: f64, o: &mut [MaybeUninit<f32>]) -> (), {
            for ((o, a), b) in o.iter_mut().zip(a).zip(b) {
                o.write(((*a as f64 - *b as f64) * k) as f32);
            }
        })
    });
}

/// [`sub_scale_f32`] in f64.
pub fn sub_scale_f64(a: &[f64], b: &[f64], k: f64, out: &mut [MaybeUninit<f64>]) {
    let isa = Isa::current();
    for_each_chunk(out, GRAIN, |off, o| {
        let (a, b) = (&a[off..off + o.len()], &b[off..off + o.len()]);
        with_isa!(isa, V, (a: &[f64], b: &[f64], k: f64, o: &mut [MaybeUninit<f64>]) -> (), {
            type D = <V as Vf>::D;
            map2d_uninit::<D>(a, b, o, |a: D, b: D| unsafe { a.sub(b).mul(D::splat(k)) })
        })
    });
}

/// The input gradient of `conv1d`, `dx[t] = sum_i g[i] w[t - i]` over the valid `i` in
/// ascending order (a full convolution), for `g.len() + w.len() - 1 == dx.len()` and
/// `1 <= w.len()`: the outputs whose every tap is valid (`t` in `m - 1 ..= n - m`) through
/// `conv` (a valid correlation of `g` with the reversed `w`, its tap `j'` the term
/// `i = t - m + 1 + j'`: still ascending), the `m - 1` at each edge with the valid terms only,
/// summed by `edge` (so a non-finite tap never meets a padding zero).
pub fn conv1d_dx<T: Copy + Default>(
    g: &[T],
    w: &[T],
    dx: &mut [T],
    conv: impl Fn(&[T], &[T], &mut [T]),
    edge: impl Fn(&mut dyn Iterator<Item = (T, T)>) -> T,
) {
    let (m, n) = (w.len(), dx.len());
    debug_assert!(m >= 1 && g.len() + m - 1 == n);
    let wr: Vec<T> = w.iter().rev().copied().collect();
    let (lo, hi) = (m - 1, n + 1 - m); // full taps: `lo <= t < hi`
    if hi > lo {
        conv(g, &wr, &mut dx[lo..hi]);
    }
    for t in (0..lo.min(n)).chain(hi.max(lo)..n) {
        // Terms i = t - m + 1 .. t within 0 .. g.len(): `w[t - i]`.
        let first = (t + 1).saturating_sub(m);
        let last = t.min(g.len() - 1);
        dx[t] = edge(&mut (first..=last).map(|i| (g[i], w[t - i])));
    }
}

/// `matmul`'s VJP on f64 copies of the inputs (`a: m x k`, `b: k x n`, `g: m x n`, row-major):
/// `d_a = g b^T` and `d_b = a^T g`, each element a dot product of two contiguous rows (`b` and
/// `g` as they are for `d_a`; `a` and `g` transposed for `d_b`) summed by the pairwise tree of
/// `reduce` in f64 (for f32 or half inputs the products are exact, so each result is within
/// about half an ulp of the exact value once rounded to the dtype). Where a partial sum may
/// overflow or an input is not finite, every element is the references' sum in their order
/// (`j` ascending for `d_a`, `i` ascending for `d_b`), with its infinities and NaN. Parallel
/// over output rows. Precondition: the lengths match the dims (the caller checks them).
pub fn matmul_vjp_f64(a: &[f64], b: &[f64], g: &[f64], m: usize, k: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    debug_assert!(a.len() == m * k && b.len() == k * n && g.len() == m * n);
    let (mut da, mut db) = (vec![0f64; m * k], vec![0f64; k * n]);
    if m == 0 || k == 0 {
        return (da, db);
    }
    let ordered = !overflow_free(g, b, n) || !overflow_free(a, g, m);
    let transpose = |v: &[f64], rows: usize, cols: usize| -> Vec<f64> {
        let mut t = vec![0f64; v.len()];
        for r in 0..rows {
            for c in 0..cols {
                t[c * rows + r] = v[r * cols + c];
            }
        }
        t
    };
    let (at, gt) = (transpose(a, m, k), transpose(g, m, n));
    // d_a[i, p] = sum_j g[i, j] b[p, j].
    for_each_chunk(&mut da, k.max(1), |off, o| {
        for (e, o) in o.iter_mut().enumerate() {
            let (i, p) = ((off + e) / k, (off + e) % k);
            let (gr, br) = (&g[i * n..(i + 1) * n], &b[p * n..(p + 1) * n]);
            *o = if ordered { in_reference_order(gr.iter().copied().zip(br.iter().copied())) } else { dot_f64(gr, br) };
        }
    });
    // d_b[p, j] = sum_i a[i, p] g[i, j].
    for_each_chunk(&mut db, n.max(1), |off, o| {
        for (e, o) in o.iter_mut().enumerate() {
            let (p, j) = ((off + e) / n, (off + e) % n);
            let (ar, gr) = (&at[p * m..(p + 1) * m], &gt[j * m..(j + 1) * m]);
            *o = if ordered { in_reference_order(ar.iter().copied().zip(gr.iter().copied())) } else { dot_f64(ar, gr) };
        }
    });
    (da, db)
}
