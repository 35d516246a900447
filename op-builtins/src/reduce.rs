//! Reduction built-ins: sum, mean and the mean-squared-error loss, with their VJPs and their
//! `cpu` functions, forward and backward, generic over the declared float dtypes (f64
//! accumulation in a fixed pairwise tree, the same bits on any number of threads:
//! `backends::cpu::kernels::{reduce, dtype}`). The references accumulate in f64 too
//! (compensated, `sum64`) and round once, at every dtype; counts never pass through `T`.

use super::sum64::Sum64;
use crate::{op, Real};
use op_backends::cpu::kernels::dtype::{filled, Elem};
use op_backends::cpu::kernels::elementwise::Un;

/// The cotangent of a rank-0 output (dispatch passes exactly one element).
fn cotangent<T: Real>(g: &[T]) -> T {
    g.first().copied().unwrap_or_else(T::zero)
}

/// Sum of all elements (a rank-0 result).
#[op(
    name = "builtin/sum",
    version = 1,
    signature<T: f16 | bf16 | f32 | f64>(x: T[n]) -> T[],
    category = reduction,
    tolerance = accum(2),
    nan = propagate,
    backward = vjp(
        sum_vjp,
        kernel(wgsl = "kernels/unary_vjp.wgsl", entry = "sum_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/vjp.cu", entry = "sum_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n, block = 256),
        cpu = sum_vjp_cpu,
    ),
    cpu = sum_cpu,
    kernel(wgsl = "kernels/sum.wgsl", entry = "sum_main", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = 256),
    kernel(cuda = "kernels/reduce.cu", entry = "sum_kernel", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = 131072, block = 256),
    license = "MIT OR Apache-2.0",
    visibility = public,
)]
pub fn sum<T: Real>(x: &[T]) -> Vec<T> {
    // In f64, compensated, rounded once: right at every dtype (an f16 running sum stalls).
    vec![T::from_f64(Sum64::sum_of(x.iter().map(|v| v.to_f64())))]
}
/// VJP of `sum`: the cotangent broadcast.
pub fn sum_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    vec![g[0]; x.len()]
}
/// `cpu` kernel of `sum` (summed in f64, rounded once).
fn sum_cpu<T: Elem>(x: &[T]) -> Vec<T> {
    vec![T::from_f64(T::sum(x))]
}
/// `cpu` kernel of `sum`'s VJP: the cotangent broadcast.
fn sum_vjp_cpu<T: Elem>(x: &[T], g: &[T]) -> Vec<T> {
    vec![cotangent(g); x.len()]
}

/// Mean of all elements (`n >= 1`).
#[op(
    name = "builtin/mean",
    version = 1,
    signature<T: f16 | bf16 | f32 | f64>(x: T[n] where n >= 1) -> T[],
    category = reduction,
    tolerance = accum(2),
    nan = propagate,
    backward = vjp(
        mean_vjp,
        kernel(wgsl = "kernels/unary_vjp.wgsl", entry = "mean_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/vjp.cu", entry = "mean_vjp", dtypes(T: f32), bindings(x: read, d_out: read, d_x: read_write, uniform(n)), threads = n, block = 256),
        cpu = mean_vjp_cpu,
    ),
    cpu = mean_cpu,
    kernel(wgsl = "kernels/sum.wgsl", entry = "mean_main", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = 256),
    kernel(cuda = "kernels/reduce.cu", entry = "mean_kernel", dtypes(T: f32), bindings(x: read, out: read_write, uniform(n)), threads = 131072, block = 256),
    license = "MIT OR Apache-2.0",
    visibility = public,
)]
pub fn mean<T: Real>(x: &[T]) -> Vec<T> {
    // Summed and divided in f64 (the count never passes through `T`: 131_071 is infinite in
    // f16), rounded once.
    vec![T::from_f64(Sum64::sum_of(x.iter().map(|v| v.to_f64())) / x.len() as f64)]
}
/// VJP of `mean`.
pub fn mean_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    vec![T::from_f64(g[0].to_f64() / x.len() as f64); x.len()]
}
/// `cpu` kernel of `mean` (summed and divided in f64, rounded once; NaN for an empty `x`,
/// like the reference's `0 / 0`: the signature requires `n >= 1`).
fn mean_cpu<T: Elem>(x: &[T]) -> Vec<T> {
    vec![T::from_f64(T::sum(x) / x.len() as f64)]
}
/// `cpu` kernel of `mean`'s VJP: the rule's one division in f64, rounded once, broadcast.
fn mean_vjp_cpu<T: Elem>(x: &[T], g: &[T]) -> Vec<T> {
    vec![T::from_f64(cotangent(g).to_f64() / x.len() as f64); x.len()]
}

/// Mean squared error `mean((a - b)^2)` (`n >= 1`).
#[op(
    name = "builtin/mse_loss",
    version = 1,
    signature<T: f16 | bf16 | f32 | f64>(a: T[n], b: T[n] where n >= 1) -> T[],
    category = reduction,
    tolerance = accum(4),
    nan = propagate,
    backward = vjp(
        mse_loss_vjp,
        kernel(wgsl = "kernels/mse_loss_vjp.wgsl", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n),
        kernel(cuda = "kernels/vjp.cu", entry = "mse_loss_vjp", dtypes(T: f32), bindings(a: read, b: read, d_out: read, d_a: read_write, d_b: read_write, uniform(n)), threads = n, block = 256),
        cpu = mse_loss_vjp_cpu,
    ),
    cpu = mse_loss_cpu,
    kernel(wgsl = "kernels/mse_loss.wgsl", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = 256),
    kernel(cuda = "kernels/reduce.cu", entry = "mse_loss_kernel", dtypes(T: f32), bindings(a: read, b: read, out: read_write, uniform(n)), threads = 131072, block = 256),
    license = "MIT OR Apache-2.0",
    visibility = public,
)]
pub fn mse_loss<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    // Terms formed and summed in f64, divided by the count in f64, rounded once.
    let terms = a.iter().zip(b).map(|(x, y)| {
        let d = x.to_f64() - y.to_f64();
        d * d
    });
    vec![T::from_f64(Sum64::sum_of(terms) / a.len() as f64)]
}
/// VJP of `mse_loss`: `2 (a - b) g / n` and its negation.
pub fn mse_loss_vjp<T: Real>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    // `2 g / n` in f64 (in f16, `2 / 131_071` is subnormal and `n` itself infinite).
    let k = 2.0 * g[0].to_f64() / a.len() as f64;
    let ga: Vec<T> = a.iter().zip(b).map(|(x, y)| T::from_f64((x.to_f64() - y.to_f64()) * k)).collect();
    let gb = ga.iter().map(|v| -*v).collect();
    (ga, gb)
}
/// `cpu` kernel of `mse_loss` (terms formed and summed in f64, rounded once; the reference
/// zips its inputs, so the length is the shorter one's: dispatch passes equal lengths).
fn mse_loss_cpu<T: Elem>(a: &[T], b: &[T]) -> Vec<T> {
    let n = a.len().min(b.len());
    vec![T::from_f64(T::sq_diff(&a[..n], &b[..n]) / n as f64)]
}
/// `cpu` kernel of `mse_loss`'s VJP: the rule's `(a - b) k` in f64 with `k = 2 g / n`, rounded
/// once, and its negation (bit-identical to the rule).
fn mse_loss_vjp_cpu<T: Elem>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    let n = a.len().min(b.len());
    let k = 2.0 * cotangent(g).to_f64() / a.len() as f64;
    let ga = filled(n, |o| T::sub_scale(&a[..n], &b[..n], k, o));
    let gb = filled(n, |o| T::unary(Un::Neg, &ga, o));
    (ga, gb)
}
