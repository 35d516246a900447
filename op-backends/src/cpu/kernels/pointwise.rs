//! The `cpu` kernels of the op library's pointwise built-ins (`abs`, `sqrt`, `square`,
//! `sigmoid`, `maximum`, `minimum`, `where`): one scalar function per element, the reference's
//! own arithmetic at f32 (so the results are its bits), chunked over the CPU backend's threads
//! with `par::for_each_chunk`. Owns the chunked maps; must not allocate outputs or validate
//! shapes.
//!
//! Precondition of every map here: every slice has `out`'s length (dispatch expanded
//! broadcast operands and validated the one `n`).

use crate::cpu::par::for_each_chunk;
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

/// A `Vec` of `n` elements written by `fill` (every element, see the maps above).
pub fn filled(n: usize, fill: impl FnOnce(&mut [MaybeUninit<f32>])) -> Vec<f32> {
    let mut out = Vec::with_capacity(n);
    fill(&mut out.spare_capacity_mut()[..n]);
    // SAFETY: every map above writes each element of its output slice.
    unsafe { out.set_len(n) };
    out
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
