//! Contraction built-ins: matrix product and valid 1-D convolution (correlation), with their
//! VJPs and their `cpu` functions (kernels with fixed summation orders:
//! `backends::cpu::kernels::{matmul, conv1d, conv1d_f64, vjp}`; conv1d and both VJPs at every
//! declared dtype, matmul's forward at f32). The references and VJP rules form products and
//! sums in f64 (compensated, `sum64`) and round each element once, at every dtype.

use super::sum64::Sum64;
use crate::{op, Real};
use half::slice::HalfFloatSliceExt;
use op_backends::cpu::kernels::dtype::Elem;
use op_backends::cpu::kernels::{matmul as mm_kern, vjp as vjp_kern};
use op_core::hostmem;
use op_core::tensor::{bf16, f16};

#[cfg(test)]
#[path = "matmul_kernel_tests.rs"]
mod matmul_kernel_tests;

/// Matrix product `a (m x k) * b (k x n)`, row-major.
#[op(
    name = "builtin/matmul",
    version = 1,
    signature<T: f16 | bf16 | f32 | f64>(a: T[m, k], b: T[k, n]) -> T[m, n],
    category = contraction,
    tolerance = accum(2),
    nan = propagate,
    backward = vjp(
        matmul_vjp,
        kernel(wgsl = "kernels/matmul_vjp.wgsl", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(m, k, n)), threads = m * k + k * n),
        kernel(cuda = "kernels/vjp.cu", entry = "matmul_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(m, k, n)), threads = m * k + k * n, block = 256),
        cpu = matmul_vjp_cpu,
    ),
    cpu(matmul_cpu, dtypes(T: f32)),
    cpu(matmul_cpu_f64, dtypes(T: f64)),
    cpu(matmul_cpu_f16, dtypes(T: f16)),
    cpu(matmul_cpu_bf16, dtypes(T: bf16)),
    kernel(wgsl = "kernels/matmul.wgsl", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(m, k, n)), threads = ((m + 15) / 16) * ((n + 15) / 16) * 256),
    kernel(cuda = "kernels/linalg.cu", entry = "matmul", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(m, k, n)), threads = ((m + 15) / 16) * ((n + 15) / 16) * 256, block = 256),
    license = "MIT OR Apache-2.0",
    visibility = public,
)]
pub fn matmul<T: Real>(a: &[T], b: &[T], m: usize, k: usize, n: usize) -> Vec<T> {
    // Products and sums in f64 (compensated), each output rounded once.
    let mut out = vec![T::zero(); m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = T::from_f64(Sum64::sum_of((0..k).map(|p| a[i * k + p].to_f64() * b[p * n + j].to_f64())));
        }
    }
    out
}
/// VJP of `matmul`: `g b^T` and `a^T g`.
pub fn matmul_vjp<T: Real>(a: &[T], b: &[T], m: usize, k: usize, n: usize, g: &[T]) -> (Vec<T>, Vec<T>) {
    // Accumulated in f64 (compensated), each gradient element rounded once.
    let mut ga = vec![Sum64::default(); m * k];
    let mut gb = vec![Sum64::default(); k * n];
    for i in 0..m {
        for j in 0..n {
            let gij = g[i * n + j].to_f64();
            for p in 0..k {
                ga[i * k + p].add_term(gij * b[p * n + j].to_f64());
                gb[p * n + j].add_term(a[i * k + p].to_f64() * gij);
            }
        }
    }
    let round = |v: Vec<Sum64>| v.into_iter().map(|s| T::from_f64(s.compensated())).collect();
    (round(ga), round(gb))
}
/// `cpu` kernel of `matmul` at f32 (cache-blocked; see `kernels::matmul` for its summation
/// order).
fn matmul_cpu(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    matmul_with(a, b, m, k, n, mm_kern::matmul)
}
/// `cpu` kernel of `matmul` at f64: the same blocked order, or the reference's own where a
/// partial sum could overflow (see `kernels::matmul`).
fn matmul_cpu_f64(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    matmul_with(a, b, m, k, n, mm_kern::matmul_f64)
}
/// `cpu` kernel of `matmul` at f16: computed in f32 (inputs widened exactly), rounded once.
fn matmul_cpu_f16(a: &[f16], b: &[f16], m: usize, k: usize, n: usize) -> Vec<f16> {
    matmul_in_f32(a, b, m, k, n)
}
/// `cpu` kernel of `matmul` at bf16: computed in f32 (inputs widened exactly), rounded once.
fn matmul_cpu_bf16(a: &[bf16], b: &[bf16], m: usize, k: usize, n: usize) -> Vec<bf16> {
    matmul_in_f32(a, b, m, k, n)
}

/// A matmul kernel: `(a, b, m, k, n, out)`, writing every element of `out`.
type Kernel<T> = fn(&[T], &[T], usize, usize, usize, &mut [T]);

/// The output of `kern` (which writes every element) in a buffer from the pool. Shapes the
/// signature does not admit (never passed by dispatch, which validated `a: [m, k]`,
/// `b: [k, n]`) run the reference, which is what they would run anyway.
fn matmul_with<T: Real + bytemuck::Pod>(a: &[T], b: &[T], m: usize, k: usize, n: usize, kern: Kernel<T>) -> Vec<T> {
    match (m.checked_mul(k), k.checked_mul(n), m.checked_mul(n)) {
        (Some(mk), Some(kn), Some(mn)) if a.len() == mk && b.len() == kn => {
            let mut out = hostmem::for_overwrite(mn);
            kern(a, b, m, k, n, &mut out);
            out
        }
        _ => matmul(a, b, m, k, n),
    }
}

/// `cpu` kernel of `matmul`'s VJP at every declared dtype: on f64 copies of the inputs, each
/// element summed in f64 and rounded once (see `kernels::vjp::matmul_vjp_f64`). Shapes the
/// signature does not admit (never passed by dispatch) run the rule.
fn matmul_vjp_cpu<T: Elem>(a: &[T], b: &[T], m: usize, k: usize, n: usize, g: &[T]) -> (Vec<T>, Vec<T>) {
    let fits = |len: usize, r: usize, c: usize| r.checked_mul(c) == Some(len);
    if !(fits(a.len(), m, k) && fits(b.len(), k, n) && fits(g.len(), m, n)) {
        return matmul_vjp(a, b, m, k, n, g);
    }
    let wide = |v: &[T]| -> Vec<f64> { v.iter().map(|x| x.to_f64()).collect() };
    let (da, db) = vjp_kern::matmul_vjp_f64(&wide(a), &wide(b), &wide(g), m, k, n);
    (da.into_iter().map(T::from_f64).collect(), db.into_iter().map(T::from_f64).collect())
}

/// A half-precision product through the f32 kernel: every input element widened exactly, the
/// f32 result (within f32's `accum` bound, far inside the half type's) rounded once to nearest
/// even. Overflow and NaN follow from the f32 result (its non-finite fix-up included).
fn matmul_in_f32<H: Real>(a: &[H], b: &[H], m: usize, k: usize, n: usize) -> Vec<H>
where
    [H]: HalfFloatSliceExt,
{
    let (Some(mn), true) = (m.checked_mul(n), a.len() == m.saturating_mul(k) && b.len() == k.saturating_mul(n)) else {
        return matmul(a, b, m, k, n);
    };
    let widen = |x: &[H]| {
        let mut v = hostmem::for_overwrite::<f32>(x.len());
        x.convert_to_f32_slice(&mut v);
        v
    };
    let (a32, b32) = (widen(a), widen(b));
    let mut o32 = hostmem::for_overwrite::<f32>(mn);
    mm_kern::matmul(&a32, &b32, m, k, n, &mut o32);
    let mut out = vec![H::zero(); mn];
    out.convert_from_f32_slice(&o32);
    for v in [a32, b32, o32] {
        hostmem::keep(v);
    }
    out
}

/// Valid 1-D correlation of `x` with kernel `w`: `out[i] = sum_j x[i + j] w[j]`.
#[op(
    name = "builtin/conv1d",
    version = 1,
    signature<T: f16 | bf16 | f32 | f64>(x: T[n], w: T[m] where 1 <= m, m <= n) -> T[n - m + 1],
    category = contraction,
    tolerance = accum(2),
    nan = propagate,
    backward = vjp(
        conv1d_vjp,
        kernel(wgsl = "kernels/conv1d_vjp.wgsl", dtypes(T: f32), bindings(x: read, w: read, d_out: read, d_x: read_write, d_w: read_write, uniform(n, m)), threads = n + 256 * m),
        kernel(cuda = "kernels/vjp.cu", entry = "conv1d_vjp", dtypes(T: f32), bindings(x: read, w: read, d_out: read, d_x: read_write, d_w: read_write, uniform(n, m)), threads = n + 256 * m, block = 256),
        cpu = conv1d_vjp_cpu,
    ),
    cpu = conv1d_cpu,
    kernel(wgsl = "kernels/conv1d.wgsl", dtypes(T: f32), bindings(x: read, w: read, out: read_write, uniform(n, m)), threads = n - m + 1),
    kernel(cuda = "kernels/linalg.cu", entry = "conv1d", dtypes(T: f32), bindings(x: read, w: read, out: read_write, uniform(n, m)), threads = n - m + 1, block = 256),
    license = "MIT OR Apache-2.0",
    visibility = public,
)]
pub fn conv1d<T: Real>(x: &[T], w: &[T]) -> Vec<T> {
    // Products and sums in f64 (compensated), each output rounded once.
    let m = w.len();
    (0..x.len() + 1 - m).map(|i| T::from_f64(Sum64::sum_of((0..m).map(|j| x[i + j].to_f64() * w[j].to_f64())))).collect()
}
/// VJP of `conv1d`.
pub fn conv1d_vjp<T: Real>(x: &[T], w: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    // Accumulated in f64 (compensated), each gradient element rounded once.
    let m = w.len();
    let mut gx = vec![Sum64::default(); x.len()];
    let mut gw = vec![Sum64::default(); m];
    for (i, gi) in g.iter().enumerate() {
        let gi = gi.to_f64();
        for j in 0..m {
            gx[i + j].add_term(gi * w[j].to_f64());
            gw[j].add_term(gi * x[i + j].to_f64());
        }
    }
    let round = |v: Vec<Sum64>| v.into_iter().map(|s| T::from_f64(s.compensated())).collect();
    (round(gx), round(gw))
}
/// `cpu` kernel of `conv1d` at every declared dtype (see `kernels::conv1d` and
/// `kernels::conv1d_f64` for the layouts and summation orders). Shapes the signature does not
/// admit (never passed by dispatch, which validated `1 <= m <= n`) run the reference.
fn conv1d_cpu<T: Elem>(x: &[T], w: &[T]) -> Vec<T> {
    if w.is_empty() || w.len() > x.len() {
        return conv1d(x, w);
    }
    let mut out = vec![T::zero(); x.len() - w.len() + 1];
    T::conv1d(x, w, &mut out);
    out
}
/// `cpu` kernel of `conv1d`'s VJP: `d_w = conv1d(x, g)` and `d_x` the full convolution of `g`
/// with `w` (see `kernels::dtype::Elem::conv1d_vjp`); shapes the signature does not admit run
/// the rule.
fn conv1d_vjp_cpu<T: Elem>(x: &[T], w: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    if w.is_empty() || w.len() > x.len() || g.len() != x.len() - w.len() + 1 {
        return conv1d_vjp(x, w, g);
    }
    T::conv1d_vjp(x, w, g)
}
