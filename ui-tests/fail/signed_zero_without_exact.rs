//! Values: `signed_zero = ignore` changes only `exact` comparisons; `ulp(1)` already compares
//! +0 and -0 as equal, so the key would declare nothing.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/halve",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    signed_zero = ignore,
    backward = none,
)]
pub fn halve<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * T::from_f64(0.5)).collect()
}

fn main() {
    let _ = halve(&[1.0f32]);
}
