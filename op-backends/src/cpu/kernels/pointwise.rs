//! The `cpu` kernels of the op library's pointwise built-ins (`abs`, `sqrt`, `square`,
//! `sigmoid`, `maximum`, `minimum`, `where`) and the chunked scalar maps the shape built-ins
//! use, over the CPU backend's threads with `par::for_each_chunk`. `abs`, `sqrt`, `square`,
//! `maximum` and `minimum` are vector code computing the reference's bits (IEEE square root,
//! total-order selection with NaN first); `sigmoid` is the reference's formula with the vector
//! `exp` of [`math`] (within 1 ulp of `f32::exp`), within 3 ulp of the reference. Owns these
//! kernels and maps; must not validate shapes (the outputs come from the host pool:
//! [`filled`]).
//!
//! Precondition of every map here: every slice has `out`'s length (dispatch expanded
//! broadcast operands and validated the one `n`).

use super::elementwise::{binary, unary};
use crate::cpu::math;
use crate::cpu::par::for_each_chunk;
use crate::cpu::simd::{map1_uninit, map2_uninit, Vf};
use crate::with_isa;
use std::mem::MaybeUninit;

/// Elements per chunk (at least).
const GRAIN: usize = 32 * 1024;

/// `out[i] = f(x[i])`.
pub fn map1(x: &[f32], out: &mut [MaybeUninit<f32>], f: impl Fn(f32) -> f32 + Sync + Send) {
    for_each_chunk(out, GRAIN, |off, o| {
        let x = &x[off..off + o.len()];
        for (d, v) in o.iter_mut().zip(x) {
            d.write(f(*v));
        }
    });
}

/// `out[i] = f(a[i], b[i])`.
pub fn map2(a: &[f32], b: &[f32], out: &mut [MaybeUninit<f32>], f: impl Fn(f32, f32) -> f32 + Sync + Send) {
    for_each_chunk(out, GRAIN, |off, o| {
        let (a, b) = (&a[off..off + o.len()], &b[off..off + o.len()]);
        for ((d, x), y) in o.iter_mut().zip(a).zip(b) {
            d.write(f(*x, *y));
        }
    });
}

/// `out[i] = f(c[i], a[i], b[i])` with an integer first operand.
pub fn map3(c: &[u32], a: &[f32], b: &[f32], out: &mut [MaybeUninit<f32>], f: impl Fn(u32, f32, f32) -> f32 + Sync + Send) {
    for_each_chunk(out, GRAIN, |off, o| {
        let (c, a, b) = (&c[off..off + o.len()], &a[off..off + o.len()], &b[off..off + o.len()]);
        for (((d, k), x), y) in o.iter_mut().zip(c).zip(a).zip(b) {
            d.write(f(*k, *x, *y));
        }
    });
}

/// `out[i] = |x[i]|`: the sign bit cleared.
pub fn abs(x: &[f32], out: &mut [MaybeUninit<f32>]) {
    unary(
        x,
        out,
        |isa, x, o| with_isa!(isa, V, (x: &[f32], o: &mut [MaybeUninit<f32>]) -> (), map1_uninit::<V>(x, o, |v: V| unsafe { v.and(V::splat_bits(0x7fff_ffff)) })),
    )
}

/// `out[i] = sqrt(x[i])` (IEEE).
pub fn sqrt(x: &[f32], out: &mut [MaybeUninit<f32>]) {
    unary(
        x,
        out,
        |isa, x, o| with_isa!(isa, V, (x: &[f32], o: &mut [MaybeUninit<f32>]) -> (), map1_uninit::<V>(x, o, |v: V| unsafe { v.sqrt() })),
    )
}

/// `out[i] = x[i] * x[i]`.
pub fn square(x: &[f32], out: &mut [MaybeUninit<f32>]) {
    unary(
        x,
        out,
        |isa, x, o| with_isa!(isa, V, (x: &[f32], o: &mut [MaybeUninit<f32>]) -> (), map1_uninit::<V>(x, o, |v: V| unsafe { v.mul(v) })),
    )
}

/// `out[i] = 1 / (1 + e^-x[i])`: the reference's operations, the vector `exp` for `f32::exp`
/// (a true division: `1 + e^-x` may be infinite).
pub fn sigmoid(x: &[f32], out: &mut [MaybeUninit<f32>]) {
    unary(x, out, |isa, x, o| {
        with_isa!(isa, V, (x: &[f32], o: &mut [MaybeUninit<f32>]) -> (), map1_uninit::<V>(x, o, |v: V| unsafe {
            let one = V::splat(1.0);
            one.div(one.add(math::exp(v.xor(V::splat_bits(0x8000_0000)))))
        }))
    })
}

/// `out[i]` the larger of `a[i]` and `b[i]` in IEEE total order, a NaN winning (`a`'s first):
/// `max` for distinct values, the and of the bits for equal ones (`+0` over `-0`).
pub fn maximum(a: &[f32], b: &[f32], out: &mut [MaybeUninit<f32>]) {
    binary(a, b, out, |isa, a, b, o| {
        with_isa!(isa, V, (a: &[f32], b: &[f32], o: &mut [MaybeUninit<f32>]) -> (), map2_uninit::<V>(a, b, o, |x: V, y: V| unsafe {
            // `x.max(y)` is `y` where either is NaN: only a NaN `x` needs putting back.
            V::select(x.is_nan(), x, V::select(x.eq(y), x.and(y), x.max(y)))
        }))
    })
}

/// `out[i]` the smaller of `a[i]` and `b[i]` in IEEE total order, a NaN winning (`a`'s first):
/// `min` for distinct values, the or of the bits for equal ones (`-0` under `+0`).
pub fn minimum(a: &[f32], b: &[f32], out: &mut [MaybeUninit<f32>]) {
    binary(a, b, out, |isa, a, b, o| {
        with_isa!(isa, V, (a: &[f32], b: &[f32], o: &mut [MaybeUninit<f32>]) -> (), map2_uninit::<V>(a, b, o, |x: V, y: V| unsafe {
            V::select(x.is_nan(), x, V::select(x.eq(y), x.or(y), x.min(y)))
        }))
    })
}

/// A `Vec` of `n` elements written by `fill` (every element, see the maps above), in a buffer
/// from the host pool (`core::hostmem`).
pub fn filled(n: usize, fill: impl FnOnce(&mut [MaybeUninit<f32>])) -> Vec<f32> {
    super::dtype::filled(n, fill)
}

/// `out[i] = f(i)` for `i < n`: an indexed copy (the shape built-ins), over the CPU backend's
/// threads.
pub fn fill_with(n: usize, f: impl Fn(usize) -> f32 + Sync + Send) -> Vec<f32> {
    filled(n, |out| {
        for_each_chunk(out, GRAIN, |off, o| {
            for (k, d) in o.iter_mut().enumerate() {
                d.write(f(off + k));
            }
        })
    })
}
