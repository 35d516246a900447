//! The value keys: `signed_zero = ignore` on an `exact` op with a float output, and a domain
//! per float input; both reach the loaded contract.

use op_runtime::{op, Real};

/// `x` clamped below at `lo` (a zero of either sign may come back where `x` and `lo` are zeros).
#[op(
    name = "ui/pass/floor_at", version = 1,
    signature(x: f32[n], lo: f32) -> f32[n],
    category = selection, tolerance = exact, signed_zero = ignore,
    backward = none,
)]
pub fn floor_at<T: Real>(x: &[T], lo: T) -> Vec<T> {
    x.iter().map(|v| if *v < lo { lo } else { *v }).collect()
}

/// `log(x) + sqrt(y + 1)` where both are defined.
#[op(
    name = "ui/pass/log_sqrt", version = 1,
    signature(x: f32[n], y: f32[n]) -> f32[n],
    category = transcendental, tolerance = ulp(16),
    backward = none,
    domain(x > 0, -1 <= y < 1e6),
)]
pub fn log_sqrt<T: Real>(x: &[T], y: &[T]) -> Vec<T> {
    x.iter().zip(y).map(|(a, b)| a.ln() + (*b + T::one()).sqrt()).collect()
}

pub(crate) fn main() {
    use op_runtime::RegisteredOp;
    let f = RegisteredOp::load(&floor_at::DECL).expect("loads");
    assert!(!f.contract().signed_zero.is_exact(), "signed_zero = ignore reaches the contract");
    let l = RegisteredOp::load(&log_sqrt::DECL).expect("loads");
    let d: Vec<String> = l.contract().domain.iter().map(|d| d.to_string()).collect();
    assert_eq!(d, ["x > 0.0", "-1.0 <= y < 1000000.0"]);
}
