//! Values: a magnitude range must meet the input's domain; `10..100` lies outside `0 < x < 1`,
//! so gradcheck could draw nothing there.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/logit",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = transcendental,
    tolerance = ulp(16),
    backward = none,
    domain(0 < x < 1),
    magnitude(x: 10..100),
)]
pub fn logit<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| (*v / (T::one() - *v)).ln()).collect()
}

fn main() {
    let _ = logit(&[0.5f32]);
}
