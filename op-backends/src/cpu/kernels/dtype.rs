//! The built-ins' `cpu` kernels at every float dtype they declare: one trait, [`Elem`], whose
//! methods are the kernels' entry points, implemented by f32 (the vector kernels of
//! `elementwise`, `reduce`, `conv1d`, `vjp`), f64 (their f64 twins) and the half types (through
//! f32, see `half`). The built-ins' generic `cpu` functions (`builtins::*_cpu`) call it, so one
//! `cpu(...)` entry serves every instance. Owns which kernel runs at which dtype; must not
//! allocate outputs (except the f32 copies of half inputs that reductions and convolutions
//! take whole) or validate shapes.
//!
//! Summation: f32 and half reductions accumulate in f64 and round once (see `reduce`); f64
//! reductions sum in f64 by the same fixed pairwise tree where no partial sum can overflow,
//! and as the reference does where one can (`reduce::sum_f64_checked`); the f64 convolutions
//! sum pairwise too (`conv1d_f64`). Every result is the same on any number of threads.

use super::conv1d::conv1d as conv1d_f32;
use super::conv1d_f64::{conv1d_f64, in_reference_order, overflow_free, pairwise};
use super::elementwise::{binary_f32, binary_f64, scale, scale_f64, unary_f32, unary_f64, Bin, Un};
use super::half::{self, Half};
use super::reduce::{dot_f64, sqdiff_f64, sqdiff_f64_checked, sum_f64, sum_f64_checked};
use super::vjp;
use op_core::real::Real;
use std::mem::MaybeUninit;

/// A float dtype the built-ins' `cpu` kernels serve. Slices passed together have equal lengths
/// (the built-ins' `cpu` functions make sure); `out` may be uninitialised and is fully written.
pub trait Elem: Real + Send + Sync + 'static {
    /// `out[i] = a[i] op b[i]`.
    fn binary(op: Bin, a: &[Self], b: &[Self], out: &mut [MaybeUninit<Self>]);
    /// `out[i] = op(x[i])`.
    fn unary(op: Un, x: &[Self], out: &mut [MaybeUninit<Self>]);
    /// `out[i] = x[i] * s`.
    fn scale(x: &[Self], s: Self, out: &mut [MaybeUninit<Self>]);
    /// `sum x` in f64 (see the module doc).
    fn sum(x: &[Self]) -> f64;
    /// `sum (a_i - b_i)^2` in f64.
    fn sq_diff(a: &[Self], b: &[Self]) -> f64;
    /// Valid correlation (`1 <= w.len() <= x.len()`, `out.len() == x.len() - w.len() + 1`).
    fn conv1d(x: &[Self], w: &[Self], out: &mut [Self]);
    /// `conv1d`'s VJP: `(dx, dw)` for the cotangent `g` (lengths as `conv1d`'s `x`, `w`, `out`).
    fn conv1d_vjp(x: &[Self], w: &[Self], g: &[Self]) -> (Vec<Self>, Vec<Self>);
    /// `exp`'s VJP: `e^x g` formed in f64 and rounded once (see `vjp::exp_vjp_f32`).
    fn exp_vjp(x: &[Self], g: &[Self], out: &mut [MaybeUninit<Self>]);
    /// `tanh`'s VJP: `h = e^(0 - |x|)`, `q = 2h / (1 + h h)`, `(g q) q`.
    fn tanh_vjp(x: &[Self], g: &[Self], out: &mut [MaybeUninit<Self>]);
    /// `relu`'s VJP: `x > 0 ? g : +0`.
    fn relu_vjp(x: &[Self], g: &[Self], out: &mut [MaybeUninit<Self>]);
    /// `div`'s gradient with respect to `b`: `-(g a) / (b b)`.
    fn div_db(a: &[Self], b: &[Self], g: &[Self], out: &mut [MaybeUninit<Self>]);
    /// `mse_loss`'s gradient with respect to `a`: `(a - b) k` in f64, rounded once.
    fn sub_scale(a: &[Self], b: &[Self], k: f64, out: &mut [MaybeUninit<Self>]);
}

impl Elem for f32 {
    fn binary(op: Bin, a: &[f32], b: &[f32], out: &mut [MaybeUninit<f32>]) {
        binary_f32(op, a, b, out)
    }
    fn unary(op: Un, x: &[f32], out: &mut [MaybeUninit<f32>]) {
        unary_f32(op, x, out)
    }
    fn scale(x: &[f32], s: f32, out: &mut [MaybeUninit<f32>]) {
        scale(x, s, out)
    }
    fn sum(x: &[f32]) -> f64 {
        sum_f64(x)
    }
    fn sq_diff(a: &[f32], b: &[f32]) -> f64 {
        sqdiff_f64(a, b)
    }
    fn conv1d(x: &[f32], w: &[f32], out: &mut [f32]) {
        conv1d_f32(x, w, out)
    }
    fn conv1d_vjp(x: &[f32], w: &[f32], g: &[f32]) -> (Vec<f32>, Vec<f32>) {
        // dw[j] = sum_i g[i] x[i + j]: exact products summed in f64 (a long reduction of
        // `n - m + 1` terms whose bound counts only `m`), rounded once.
        let dw = (0..w.len()).map(|j| dot_f64(&x[j..j + g.len()], g) as f32).collect();
        let mut dx = vec![0f32; x.len()];
        let edge = |it: &mut dyn Iterator<Item = (f32, f32)>| it.fold(0f64, |s, (a, b)| s + a as f64 * b as f64) as f32;
        vjp::conv1d_dx(g, w, &mut dx, conv1d_f32, edge);
        (dx, dw)
    }
    fn exp_vjp(x: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) {
        vjp::exp_vjp_f32(x, g, out)
    }
    fn tanh_vjp(x: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) {
        vjp::tanh_vjp_f32(x, g, out)
    }
    fn relu_vjp(x: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) {
        vjp::relu_vjp_f32(x, g, out)
    }
    fn div_db(a: &[f32], b: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) {
        vjp::div_db_f32(a, b, g, out)
    }
    fn sub_scale(a: &[f32], b: &[f32], k: f64, out: &mut [MaybeUninit<f32>]) {
        vjp::sub_scale_f32(a, b, k, out)
    }
}

impl Elem for f64 {
    fn binary(op: Bin, a: &[f64], b: &[f64], out: &mut [MaybeUninit<f64>]) {
        binary_f64(op, a, b, out)
    }
    fn unary(op: Un, x: &[f64], out: &mut [MaybeUninit<f64>]) {
        unary_f64(op, x, out)
    }
    fn scale(x: &[f64], s: f64, out: &mut [MaybeUninit<f64>]) {
        scale_f64(x, s, out)
    }
    fn sum(x: &[f64]) -> f64 {
        sum_f64_checked(x)
    }
    fn sq_diff(a: &[f64], b: &[f64]) -> f64 {
        sqdiff_f64_checked(a, b)
    }
    fn conv1d(x: &[f64], w: &[f64], out: &mut [f64]) {
        conv1d_f64(x, w, out)
    }
    fn conv1d_vjp(x: &[f64], w: &[f64], g: &[f64]) -> (Vec<f64>, Vec<f64>) {
        // dw[j] = sum_i g[i] x[i + j]: a long reduction (`n - m + 1` terms), by the pairwise tree
        // of `reduce`; dx the full convolution, in the pairwise order of `conv1d_f64` (its edge
        // outputs too).
        // Where a partial sum may overflow (or an input is not finite), both in the references'
        // own order (see `conv1d_f64`): terms `i` ascending.
        let (m, k) = (w.len(), g.len());
        if !overflow_free(g, w, m) || !overflow_free(g, x, k) {
            let dw = (0..m).map(|j| in_reference_order((0..k).map(|i| (g[i], x[i + j])))).collect();
            let dx =
                (0..x.len()).map(|t| in_reference_order(((t + 1).saturating_sub(m)..=t.min(k - 1)).map(|i| (g[i], w[t - i])))).collect();
            return (dx, dw);
        }
        let dw = (0..m).map(|j| dot_f64(&x[j..j + k], g)).collect();
        let mut dx = vec![0f64; x.len()];
        let edge = |it: &mut dyn Iterator<Item = (f64, f64)>| pairwise(it);
        vjp::conv1d_dx(g, w, &mut dx, conv1d_f64, edge);
        (dx, dw)
    }
    fn exp_vjp(x: &[f64], g: &[f64], out: &mut [MaybeUninit<f64>]) {
        vjp::exp_vjp_f64(x, g, out)
    }
    fn tanh_vjp(x: &[f64], g: &[f64], out: &mut [MaybeUninit<f64>]) {
        vjp::tanh_vjp_f64(x, g, out)
    }
    fn relu_vjp(x: &[f64], g: &[f64], out: &mut [MaybeUninit<f64>]) {
        vjp::relu_vjp_f64(x, g, out)
    }
    fn div_db(a: &[f64], b: &[f64], g: &[f64], out: &mut [MaybeUninit<f64>]) {
        vjp::div_db_f64(a, b, g, out)
    }
    fn sub_scale(a: &[f64], b: &[f64], k: f64, out: &mut [MaybeUninit<f64>]) {
        vjp::sub_scale_f64(a, b, k, out)
    }
}

/// Half precision: the f32 kernels on widened tiles, rounded once per operation of the
/// reference (see `half`); `neg` and the exact `relu` and its VJP on the bits.
impl<H: Half + Real> Elem for H {
    fn binary(op: Bin, a: &[H], b: &[H], out: &mut [MaybeUninit<H>]) {
        half::tiles([a, b], out, |[a, b], o| binary_f32(op, a, b, half::uninit(o)));
    }
    fn unary(op: Un, x: &[H], out: &mut [MaybeUninit<H>]) {
        let mut bits = |f: fn(u16) -> u16| {
            for (o, v) in out.iter_mut().zip(x) {
                o.write(H::from_u16(f(v.to_u16())));
            }
        };
        match op {
            Un::Neg => bits(|b| b ^ 0x8000),
            // `x > 0 || x is NaN ? x : +0`, on the bits (a NaN keeps its payload).
            Un::Relu => bits(|b| if half::positive::<H>(b) || half::is_nan::<H>(b) { b } else { 0 }),
            _ => half::tiles([x], out, |[x], o| unary_f32(op, x, half::uninit(o))),
        }
    }
    fn scale(x: &[H], s: H, out: &mut [MaybeUninit<H>]) {
        let s = s.to_f64() as f32;
        half::tiles([x], out, |[x], o| scale(x, s, half::uninit(o)));
    }
    fn sum(x: &[H]) -> f64 {
        sum_f64(&half::widened(x))
    }
    fn sq_diff(a: &[H], b: &[H]) -> f64 {
        sqdiff_f64(&half::widened(a), &half::widened(b))
    }
    fn conv1d(x: &[H], w: &[H], out: &mut [H]) {
        let mut o = vec![0f32; out.len()];
        conv1d_f32(&half::widened(x), &half::widened(w), &mut o);
        half::store(&o, as_uninit(out));
    }
    fn conv1d_vjp(x: &[H], w: &[H], g: &[H]) -> (Vec<H>, Vec<H>) {
        let (dx, dw) = f32::conv1d_vjp(&half::widened(x), &half::widened(w), &half::widened(g));
        let narrow = |v: &[f32]| {
            let mut out = vec![H::zero(); v.len()];
            half::store(v, as_uninit(&mut out));
            out
        };
        (narrow(&dx), narrow(&dw))
    }
    fn exp_vjp(x: &[H], g: &[H], out: &mut [MaybeUninit<H>]) {
        // The f32 kernel's product (formed in f64), rounded to f32 and then to `H`: within an
        // ulp of `H` of the rule's single rounding.
        half::tiles([x, g], out, |[x, g], o| vjp::exp_vjp_f32(x, g, half::uninit(o)));
    }
    fn tanh_vjp(x: &[H], g: &[H], out: &mut [MaybeUninit<H>]) {
        half::tiles([x, g], out, |[x, g], o| {
            let t: Vec<f32> = x.iter().map(|v| 0.0 - v.abs()).collect();
            let mut h = vec![0f32; t.len()];
            unary_f32(Un::Exp, &t, half::uninit(&mut h));
            half::round::<H>(&mut h);
            let (mut num, mut den): (Vec<f32>, Vec<f32>) = (h.iter().map(|h| 2.0 * h).collect(), h.iter().map(|h| h * h).collect());
            half::round::<H>(&mut num);
            half::round::<H>(&mut den);
            den.iter_mut().for_each(|d| *d += 1.0);
            half::round::<H>(&mut den);
            let mut q: Vec<f32> = num.iter().zip(&den).map(|(n, d)| n / d).collect();
            half::round::<H>(&mut q);
            for ((o, g), q) in o.iter_mut().zip(g).zip(&q) {
                *o = g * q;
            }
            half::round::<H>(o);
            for (o, q) in o.iter_mut().zip(&q) {
                *o *= q;
            }
        });
    }
    fn relu_vjp(x: &[H], g: &[H], out: &mut [MaybeUninit<H>]) {
        // `x > 0 ? g : +0` on the bits, branch-free (a mask), so the loop vectorises.
        for ((o, x), g) in out.iter_mut().zip(x).zip(g) {
            let keep = 0u16.wrapping_sub(half::positive::<H>(x.to_u16()) as u16);
            o.write(H::from_u16(g.to_u16() & keep));
        }
    }
    fn div_db(a: &[H], b: &[H], g: &[H], out: &mut [MaybeUninit<H>]) {
        half::tiles([a, b, g], out, |[a, b, g], o| {
            let mut p: Vec<f32> = g.iter().zip(a).map(|(g, a)| g * a).collect();
            let mut bb: Vec<f32> = b.iter().map(|b| b * b).collect();
            half::round::<H>(&mut p);
            half::round::<H>(&mut bb);
            for ((o, p), bb) in o.iter_mut().zip(&p).zip(&bb) {
                *o = -p / bb;
            }
        });
    }
    fn sub_scale(a: &[H], b: &[H], k: f64, out: &mut [MaybeUninit<H>]) {
        // The rule's f64 arithmetic on widened tiles, rounded to f32 and then to `H` (within an
        // ulp of `H` of the rule's single rounding).
        half::tiles([a, b], out, |[a, b], o| vjp::sub_scale_f32(a, b, k, half::uninit(o)));
    }
}

/// An initialised slice as the uninitialised one a kernel writes (every element is written).
fn as_uninit<T>(v: &mut [T]) -> &mut [MaybeUninit<T>] {
    // SAFETY: `MaybeUninit<T>` has the layout of `T`; the callers only write through it.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut MaybeUninit<T>, v.len()) }
}

/// The `cpu` functions' output: `n` elements filled by `k`, in a buffer from the host pool
/// (`core::hostmem`).
pub fn filled<T: Send + 'static>(n: usize, k: impl FnOnce(&mut [MaybeUninit<T>])) -> Vec<T> {
    let mut out = op_core::hostmem::with_capacity(n);
    k(&mut out.spare_capacity_mut()[..n]);
    // SAFETY: every kernel behind `Elem` writes every element of its output.
    unsafe { out.set_len(n) };
    out
}
