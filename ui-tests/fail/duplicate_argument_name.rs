//! Rule: inputs, parameters and outputs have distinct names.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/add",
    version = 1,
    signature(x: f32[n], x: f32[n]) -> f32[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
)]
pub fn add<T: Real>(x: &[T], y: &[T]) -> Vec<T> {
    x.iter().zip(y).map(|(a, b)| *a + *b).collect()
}

fn main() {
    let _ = add(&[1.0f32], &[2.0f32]);
}
