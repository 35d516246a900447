//! Rule: an op name is `/`-separated segments of lowercase letters, digits and `_`.

use op_runtime::{op, Real};

#[op(
    name = "UI/Test/Double Op",
    version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
