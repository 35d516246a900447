//! Rule: the `builtin` namespace is op-runtime's, the bare name `builtin` included.

use op_runtime::{op, Real};

#[op(
    name = "builtin",
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
