//! Reduction built-ins: sum, mean and the mean-squared-error loss.

use crate::{op, Real};

/// Sum of all elements (a rank-0 result).
#[op(name = "builtin/sum", version = 1, signature(x: f32[n]) -> f32[],
     category = reduction, tolerance = accum(2), nan = propagate, backward = vjp(sum_vjp), kernel(wgsl = "kernels/sum.wgsl", entry = "sum_main", bindings(x: read, out: read_write, uniform(n)), threads = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn sum<T: Real>(x: &[T]) -> Vec<T> {
    let mut s = T::zero();
    for v in x {
        s += *v;
    }
    vec![s]
}
/// VJP of `sum`: the cotangent broadcast.
pub fn sum_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    vec![g[0]; x.len()]
}

/// Mean of all elements (`n >= 1`).
#[op(name = "builtin/mean", version = 1, signature(x: f32[n] where n >= 1) -> f32[],
     category = reduction, tolerance = accum(2), nan = propagate, backward = vjp(mean_vjp), kernel(wgsl = "kernels/sum.wgsl", entry = "mean_main", bindings(x: read, out: read_write, uniform(n)), threads = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn mean<T: Real>(x: &[T]) -> Vec<T> {
    let mut s = T::zero();
    for v in x {
        s += *v;
    }
    vec![s / T::from_f64(x.len() as f64)]
}
/// VJP of `mean`.
pub fn mean_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    vec![g[0] / T::from_f64(x.len() as f64); x.len()]
}

/// Mean squared error `mean((a - b)^2)` (`n >= 1`).
#[op(name = "builtin/mse_loss", version = 1, signature(a: f32[n], b: f32[n] where n >= 1) -> f32[],
     category = reduction, tolerance = accum(4), nan = propagate, backward = vjp(mse_loss_vjp), kernel(wgsl = "kernels/mse_loss.wgsl", bindings(a: read, b: read, out: read_write, uniform(n)), threads = 256),
     license = "MIT OR Apache-2.0", visibility = public)]
pub fn mse_loss<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    let mut s = T::zero();
    for (x, y) in a.iter().zip(b) {
        let d = *x - *y;
        s += d * d;
    }
    vec![s / T::from_f64(a.len() as f64)]
}
/// VJP of `mse_loss`: `2 (a - b) g / n` and its negation.
pub fn mse_loss_vjp<T: Real>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    let k = T::from_f64(2.0 / a.len() as f64) * g[0];
    let ga: Vec<T> = a.iter().zip(b).map(|(x, y)| (*x - *y) * k).collect();
    let gb = ga.iter().map(|v| -*v).collect();
    (ga, gb)
}
