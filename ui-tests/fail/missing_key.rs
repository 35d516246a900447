//! Rule: name, version, signature, category, tolerance and backward are required; each missing
//! one is reported.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double",
    signature(x: f32[n]) -> f32[n],
    category = elementwise,
    backward = none,
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

fn main() {
    let _ = double(&[1.0f32]);
}
