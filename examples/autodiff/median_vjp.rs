//! The windowed median's VJP declared as a differentiable op, registered as the median's VJP op
//! (`Registry::register_vjp_op`): its reference is the median's VJP rule, its own VJP the second
//! derivative. The median selects, so its VJP is piecewise constant in `x` (zero second
//! derivative away from order crossings) and linear in the cotangent, whose transpose gathers
//! from the selected elements: the median's JVP. With it the tape runs the median in forward
//! mode (the VJP of the VJP) and in Hessian-vector products.

use crate::median::{argmedian, windowed_median_vjp};
use op_runtime::{op, Real};

/// The VJP of `user/example/windowed_median` (window `w`): each output's cotangent `d_out`
/// routed to the element its window selected.
#[op(
    name = "user/example/windowed_median_vjp", version = 1,
    signature<T: f16 | bf16 | f32 | f64>(x: T[n], w: u32, d_out: T[n - w + 1] where w % 2 == 1, 1 <= w <= 31, w <= n) -> d_x: T[n],
    category = selection, tolerance = exact,
    backward = vjp(windowed_median_vjp_vjp),
    subgradient = "zero in x, whose order crossings only move where a cotangent goes; along d_out, gathered from the selected elements",
    license = "MIT",
)]
pub fn windowed_median_vjp_op<T: Real>(x: &[T], w: u32, d_out: &[T]) -> Vec<T> {
    windowed_median_vjp(x, w, d_out)
}

/// Its VJP: zero for `x`; for `d_out`, the cotangent `c` gathered from each window's selected
/// element (the median's JVP along `c`).
pub fn windowed_median_vjp_vjp<T: Real>(x: &[T], w: u32, _g: &[T], c: &[T]) -> (Vec<T>, Vec<T>) {
    (vec![T::zero(); x.len()], argmedian(x, w).into_iter().map(|j| c[j]).collect())
}
